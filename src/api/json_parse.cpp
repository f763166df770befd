// The bounded JSON reader (json_parse.hpp): nlohmann's SAX parser drives tree_builder, which
// places each value directly where it belongs and counts depth, values and members.
#include "api/json_parse.hpp"

#include <functional>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "api/errors.hpp"

namespace vks::api {

namespace {

// Objects up to this many members find duplicate keys by a scan; past it, by an index built
// once for that object (so 100k members cost O(n log n), not O(n^2)). The index is an
// ordered map, not a hash table: std::hash<std::string> is unseeded, so a client could send
// keys that all collide and make a hash index quadratic again.
constexpr std::size_t scan_members = 16;

// SAX handler that builds an api::json. Invariant: frames_ holds the open containers, root
// first; only the innermost one grows, so pointers to the outer ones stay valid.
class tree_builder {
 public:
  using string_t = json::string_t;

  tree_builder(json& root, const json_limits& limits) : root_(root), limits_(limits) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const string_t& /*text*/) { return add(json(v)); }
  bool string(string_t& v) { return add(json(std::move(v))); }
  bool binary(json::binary_t& v) { return add(json::binary(std::move(v))); }  // not in JSON text

  bool start_object(std::size_t /*unknown*/) { return open(json::value_t::object); }
  bool start_array(std::size_t /*unknown*/) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k);

  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const nlohmann::detail::exception& e) {
    if (!error_) error_ = invalid_json(e.what());
    return false;
  }

  // Set when the parse stopped (a syntax error or a cap).
  std::optional<vks::error>& error() { return error_; }

 private:
  // An object's members as the std::vector they are (ordered_map hides the vector's [i]).
  using members_t = json::object_t::Container;

  // One open container: exactly one of array and members is set.
  struct frame {
    json::array_t* array = nullptr;
    members_t* members = nullptr;
    std::size_t slot = 0;  // objects: position of the member whose value comes next
    std::unique_ptr<std::map<std::string, std::size_t, std::less<>>> index;  // key -> position
  };

  // Puts v where the next value goes; returns its address in the tree.
  json* place(json&& v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    frame& f = frames_.back();
    if (f.array) {
      f.array->push_back(std::move(v));
      return &f.array->back();
    }
    json& dst = (*f.members)[f.slot].second;
    dst = std::move(v);
    return &dst;
  }

  bool count() {
    if (++n_values_ <= limits_.max_values) return true;
    return refuse("JSON text has more than " + std::to_string(limits_.max_values) + " values");
  }
  bool add(json&& v) {
    if (!count()) return false;
    place(std::move(v));
    return true;
  }
  bool open(json::value_t t) {
    if (frames_.size() >= limits_.max_depth)
      return refuse("JSON nesting exceeds " + std::to_string(limits_.max_depth) + " levels");
    if (!count()) return false;
    json& v = *place(json(t));
    frame f;
    if (t == json::value_t::array)
      f.array = &v.get_ref<json::array_t&>();
    else
      f.members = &v.get_ref<json::object_t&>();
    frames_.push_back(std::move(f));
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  bool refuse(std::string message) {
    error_ = make_error(errc::invalid_argument, std::move(message));
    return false;
  }

  json& root_;
  const json_limits& limits_;
  std::vector<frame> frames_;
  std::size_t n_values_ = 0;
  std::optional<vks::error> error_;
};

// A repeated key keeps its first position and takes the last value (json::parse's rule:
// its DOM builder assigns through operator[]).
bool tree_builder::key(string_t& k) {
  frame& f = frames_.back();
  members_t& o = *f.members;
  if (f.index) {
    auto [it, inserted] = f.index->try_emplace(k, o.size());
    if (!inserted) {
      f.slot = it->second;
      return true;
    }
  } else {
    for (std::size_t i = 0; i < o.size(); ++i)
      if (o[i].first == k) {
        f.slot = i;
        return true;
      }
  }
  if (o.size() >= limits_.max_members)
    return refuse("JSON object has more than " + std::to_string(limits_.max_members) + " members");
  o.emplace_back(std::move(k), json());  // the vector's emplace_back: no key search
  f.slot = o.size() - 1;
  if (!f.index && o.size() > scan_members) {
    f.index = std::make_unique<std::map<std::string, std::size_t, std::less<>>>();
    for (std::size_t i = 0; i < o.size(); ++i) f.index->emplace(o[i].first, i);
  }
  return true;
}

}  // namespace

result<json> parse_json(std::string_view text, const json_limits& limits) {
  try {
    json root;
    tree_builder b(root, limits);
    const bool ok = json::sax_parse(text.begin(), text.end(), &b);
    if (b.error()) return fail(std::move(*b.error()));
    if (!ok) return fail(invalid_json("parse error"));  // unreachable: a false comes with an error
    return root;
  } catch (const std::bad_alloc&) {
    return fail(errc::out_of_memory, "out of memory while parsing JSON");
  } catch (const json::exception& e) {
    return fail(invalid_json(e.what()));
  }
}

std::string json_string_error(std::string_view param, const vks::error& e) {
  if (e.message.rfind("JSON decode error", 0) == 0) return std::string(param) + " is not valid JSON.";
  return std::string(param) + ": " + e.message;
}

json parse_json_or_discarded(std::string_view text, const json_limits& limits) {
  auto r = parse_json(text, limits);
  if (!r) return json(json::value_t::discarded);
  return std::move(*r);
}

}  // namespace vks::api
