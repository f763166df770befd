// Runtime values of the Jinja engine: Python-like dynamic values (undefined, None, bool,
// int, float, str, list, dict, callable). Lists and dicts are shared by reference like
// Python objects; strings are immutable UTF-8 bytes shared by every copy (reading a
// variable never copies its text). Creating a string/list/dict inside a render charges the
// render's budget (budget.hpp); lists and dicts know their nesting depth, which is bounded.
// Not thread-safe except the literals of a parsed tree (copies only touch the refcounts).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vks::text::jinja {

enum class kind : std::uint8_t { undefined, none, boolean, integer, floating, string, array, object, function };
// What a Python sequence value really is: a list, a tuple (repr with parentheses) or a
// one-shot generator (what Jinja's map/select/... return: truthy, no len(), not JSON).
enum class seq : std::uint8_t { list, tuple, generator };

class value;
struct object_data;
struct function_data;
using array_data = std::vector<value>;

// Arguments of a call: positional, then keyword (in source order).
struct call_args {
  std::vector<value> pos;
  std::vector<std::pair<std::string, value>> kw;
};

// Thrown inside the engine only (never across the public API): a template error with the
// 1-based source position when known. chat_template converts it to a vks::error.
struct template_error {
  std::string message;
  int line = 0;
  int col = 0;
  bool raised = false;  // raise_exception(): message is the template's own text
  bool budget = false;  // a render budget was exceeded (budget.hpp)
};
[[noreturn]] void throw_error(std::string msg);

class value {
 public:
  value() = default;  // undefined
  static value undefined(std::string hint = {});
  static value none();
  value(bool b) : k_(kind::boolean), i_(b ? 1 : 0) {}                    // NOLINT
  value(int v) : k_(kind::integer), i_(v) {}                             // NOLINT
  value(std::int64_t v) : k_(kind::integer), i_(v) {}                    // NOLINT
  value(double v) : k_(kind::floating), f_(v) {}                         // NOLINT
  value(std::string s) : k_(kind::string) { set_str(std::move(s)); }     // NOLINT
  value(std::string_view s) : k_(kind::string) { set_str(std::string(s)); }  // NOLINT
  value(const char* s) : k_(kind::string) { set_str(std::string(s)); }   // NOLINT
  // Markupsafe's Markup: a str that is already HTML-safe. Concatenating a plain str to it
  // escapes the plain one (as '|safe' templates expect); see html_escape.
  static value markup(std::string s);
  static value make_array(array_data items = {}, seq flavour = seq::list);
  static value make_object(bool is_namespace = false);
  static value make_function(std::string name, std::function<value(call_args&)> fn);
  // Throws template_error past max_value_depth.
  static value from_json(const nlohmann::ordered_json& j, int depth = 0);

  kind k() const noexcept { return k_; }
  bool is_undefined() const noexcept { return k_ == kind::undefined; }
  bool is_none() const noexcept { return k_ == kind::none; }
  bool is_string() const noexcept { return k_ == kind::string; }
  bool is_safe() const noexcept { return k_ == kind::string && safe_; }  // a Markup
  bool is_number() const noexcept { return k_ == kind::integer || k_ == kind::floating || k_ == kind::boolean; }
  bool is_array() const noexcept { return k_ == kind::array; }
  bool is_object() const noexcept { return k_ == kind::object; }
  bool is_generator() const noexcept { return seq_ == seq::generator; }
  seq flavour() const noexcept { return seq_; }

  bool as_bool() const noexcept { return i_ != 0; }
  std::int64_t as_int() const noexcept { return i_; }  // integer and boolean
  double as_double() const noexcept { return k_ == kind::floating ? f_ : static_cast<double>(i_); }
  const std::string& str() const noexcept { return s_ ? *s_ : empty_str(); }  // string; undefined: hint
  // Nesting of a list/dict (1 + its deepest element); 0 for everything else.
  int depth() const noexcept;
  array_data& arr() const noexcept { return *arr_; }
  object_data& obj() const noexcept { return *obj_; }
  const function_data& fn() const noexcept { return *fn_; }
  bool same_object(const value& o) const noexcept;

  bool truthy() const noexcept;
  std::string to_str() const;   // Python str()
  std::string repr() const;     // Python repr()
  std::string type_name() const;  // Python type name for messages ("dict", "list", ...)
  nlohmann::ordered_json to_json() const;

 private:
  static const std::string& empty_str() noexcept;
  void set_str(std::string s);  // charges the current budget

  kind k_ = kind::undefined;
  seq seq_ = seq::list;
  bool safe_ = false;  // string: Markup
  std::uint16_t depth_ = 0;  // arrays (objects keep theirs in object_data)
  std::int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;  // null: 
  std::shared_ptr<array_data> arr_;
  std::shared_ptr<object_data> obj_;
  std::shared_ptr<function_data> fn_;
};

// Insertion-ordered dict with Python's keys: any hashable value (str, int, float, bool,
// None, tuples of them), equal keys being one key (1 == 1.0 == True); linear lookup
// (template dicts are small). set() charges the budget for a new key and raises `depth`
// (never lowered: an upper bound of the nesting).
struct object_data {
  std::vector<std::pair<value, value>> items;
  bool is_namespace = false;
  int depth = 1;
  const value* find(std::string_view key) const;  // a str key
  const value* find(const std::string& key) const { return find(std::string_view(key)); }
  const value* find(const char* key) const { return find(std::string_view(key)); }
  const value* find(const value& key) const;      // any key; throws if it is unhashable
  void set(const std::string& key, value v);
  void set(const char* key, value v) { set(std::string(key), std::move(v)); }
  void set(const value& key, value v);  // throws if the key is unhashable
};

// Throws Python's "unhashable type: 'list'" unless v can be a dict key.
void check_hashable(const value& v);

struct function_data {
  std::string name;
  std::function<value(call_args&)> call;
};

// Python == (1 == 1.0 == True, dicts by content), and < for sorting (throws on mixed types).
bool equals(const value& a, const value& b);
bool less(const value& a, const value& b);

// markupsafe.escape of a str: & < > ' " as &amp; &lt; &gt; &#39; &#34;.
std::string html_escape(std::string_view s);
// markupsafe.escape(v): a Markup as is, anything else str()-ed and escaped, as a Markup.
value escape_value(const value& v);
// The Markup that has v's text when `safe` (a Markup method's result), else v.
value keep_markup(value v, bool safe);

// Python float repr (shortest round-trip, '1.0', '1e-05', 'inf').
std::string float_repr(double d);

// json.dumps's arguments (HF's tojson passes them through; ensure_ascii defaults to False).
struct json_options {
  std::optional<std::string> indent;  // None: one line; else the text of one level
  std::string item_sep = ", ";        // separators; json.dumps makes it "," with an indent
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ascii = false;  // ensure_ascii
};
std::string to_json_text(const value& v, const json_options& o);
// HF's tojson with indent (< 0: none) and sort_keys, default separators.
std::string to_json_text(const value& v, int indent, bool sort_keys);

}  // namespace vks::text::jinja
