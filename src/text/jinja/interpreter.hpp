// Tree-walking evaluator: executes a parsed template against a set of variables. One
// interpreter per render() call (it owns the scopes and output); the tree is only read.
// Errors are thrown as template_error inside the engine and caught by chat_template.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/jinja/ast.hpp"
#include "text/jinja/budget.hpp"

namespace vks::text::jinja {

// Variable scope; a chain of frames. Lookups walk parents; assignments go to this frame.
struct scope {
  scope* parent = nullptr;
  std::vector<std::pair<std::string, value>> vars;
  const value* find(const std::string& name) const;
  void set(const std::string& name, value v);
};

class interpreter {
 public:
  // `budget` is the render's (installed as current_budget() by the caller) and outlives this.
  interpreter(const std::string& src, render_budget& budget) : src_(src), budget_(budget), limits_(budget.limits()) {}

  // Renders `b` with `globals` as the outermost frame. Throws template_error.
  std::string render(const body& b, scope& globals);

  // Used by filters (map, select...) and globals.
  value apply_filter(const std::string& name, const value& subject, call_args& args);
  bool apply_test(const std::string& name, const value& v, call_args& args);
  const render_limits& limits() const { return limits_; }
  void count_iterations(std::size_t n) { budget_.step(n); }

 private:
  enum class flow : std::uint8_t { normal, break_, continue_ };

  flow exec(const body& b, scope& s, std::string& out);
  flow exec_stmt(const stmt& st, scope& s, std::string& out);
  flow exec_for(const stmt& st, scope& s, std::string& out);
  flow run_loop(const stmt& st, scope& s, const value& iterable, std::int64_t depth, std::string& out);
  void exec_set(const stmt& st, scope& s, std::string& out);
  void exec_call_block(const stmt& st, scope& s, std::string& out);
  value make_macro(const stmt& st, scope& s);
  value call_macro(const stmt& st, call_args& args, scope* closure);

  value eval(const expr& e, scope& s);
  value eval_call(const expr& e, scope& s);
  value eval_filter(const expr& e, scope& s, const value* subject);
  value eval_binary(const expr& e, scope& s);
  bool eval_compare(const expr& e, scope& s);
  call_args eval_args(const expr& e, scope& s, std::size_t first);
  void append(std::string& out, std::string_view text);
  [[noreturn]] void fail_at(std::size_t offset, const std::string& msg) const;

 public:
  // Bounds recursion through nested statements, expressions, filters and macro calls:
  // throws template_error (budget=true) "<what> (limit N)" past `limit`.
  struct nesting_guard {
    int& depth;
    nesting_guard(int& d, int limit, const char* what);
    ~nesting_guard() { --depth; }
    nesting_guard(const nesting_guard&) = delete;
    nesting_guard& operator=(const nesting_guard&) = delete;
  };
  int& nesting() noexcept { return nesting_; }

 private:

  const std::string& src_;
  render_budget& budget_;
  const render_limits& limits_;
  int call_depth_ = 0;
  int nesting_ = 0;  // statement bodies and expression evaluations in progress (C++ stack)
  scope* top_ = nullptr;  // the template's top-level frame during render()
};

// Shared helpers (builtins.cpp).
value get_attr(const value& obj, const std::string& name);
value get_item(const value& obj, const value& key);
value slice_value(const value& obj, const value& start, const value& stop, const value& step);
std::vector<value> iterate(const value& v);  // Python iter(); throws for non-iterables
bool contains(const value& container, const value& item);
value binary_op(const std::string& op, const value& a, const value& b);
// py::replace, refused before building when the result would not fit the byte budget.
std::string bounded_replace(std::string_view s, std::string_view from, std::string_view to, long count);
// Python's str.format(*pos, **kw) (py_format.cpp).
std::string str_format(const std::string& fmt, const call_args& a);
// Calls a Python method of a builtin type; found=false when `name` is not one.
value call_method(interpreter& in, const value& obj, const std::string& name, call_args& args, bool& found);
void add_globals(interpreter& in, scope& globals);

}  // namespace vks::text::jinja
