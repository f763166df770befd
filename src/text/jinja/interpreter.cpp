// Statement execution and expression evaluation with Jinja2 semantics: scopes (for bodies
// and macros get their own frame; if does not), loop.* variables, namespace attribute
// assignment, macros with caller(), filter blocks, break/continue, and Jinja2's default
// Undefined (renders empty, falsy, but attribute access on it is an error).
#include "text/jinja/interpreter.hpp"

#include <memory>
#include <optional>

#include "text/jinja/lexer.hpp"

namespace vks::text::jinja {

// Lookups are linear: a frame with thousands of variables is charged for its length.
const value* scope::find(const std::string& name) const {
  for (const scope* s = this; s; s = s->parent) {
    if (s->vars.size() > 32) charge_steps(s->vars.size() / 32);
    for (const auto& [k, v] : s->vars)
      if (k == name) return &v;
  }
  return nullptr;
}

void scope::set(const std::string& name, value v) {
  if (vars.size() > 32) charge_steps(vars.size() / 32);
  for (auto& [k, old] : vars)
    if (k == name) { old = std::move(v); return; }
  vars.emplace_back(name, std::move(v));
}

void interpreter::fail_at(std::size_t offset, const std::string& msg) const {
  template_error e{msg};
  offset_to_line_col(src_, offset, e.line, e.col);
  throw e;
}

// Every buffer (the output, macro and block bodies) counts toward the byte budget.
void interpreter::append(std::string& out, std::string_view text) {
  if (out.size() + text.size() > limits_.max_output_bytes) throw_error("rendered output exceeds the size limit");
  budget_.charge(text.size());
  out.append(text);
}

std::string interpreter::render(const body& b, scope& globals) {
  std::string out;
  scope top{&globals, {}};
  top_ = &top;
  exec(b, top, out);
  top_ = nullptr;
  return out;
}

interpreter::nesting_guard::nesting_guard(int& d, int limit, const char* what) : depth(d) {
  if (++depth > limit) {
    --depth;
    template_error e{std::string(what) + " (limit " + std::to_string(limit) + ")"};
    e.budget = true;
    throw e;
  }
}

namespace {
constexpr const char* too_deep = "chat template recursion too deep";
constexpr const char* too_many_calls = "chat template macro calls nested too deeply";
}  // namespace

interpreter::flow interpreter::exec(const body& b, scope& s, std::string& out) {
  nesting_guard guard(nesting_, limits_.max_recursion, too_deep);
  for (const auto& st : b) {
    flow f;
    try {
      f = exec_stmt(*st, s, out);
    } catch (template_error& e) {
      if (e.line == 0 && !e.raised) offset_to_line_col(src_, st->offset, e.line, e.col);
      throw;
    }
    if (f != flow::normal) return f;
  }
  return flow::normal;
}

interpreter::flow interpreter::exec_stmt(const stmt& st, scope& s, std::string& out) {
  budget_.step();
  switch (st.kind) {
    case stmt_kind::text: append(out, st.text); return flow::normal;
    case stmt_kind::output: {
      value v = eval(*st.value_expr, s);
      if (v.is_string()) append(out, v.str());
      else append(out, v.to_str());
      return flow::normal;
    }
    case stmt_kind::if_: {
      for (std::size_t i = 0; i < st.conds.size(); ++i)
        if (eval(*st.conds[i], s).truthy()) return exec(st.bodies[i], s, out);
      if (st.bodies.size() > st.conds.size()) return exec(st.bodies.back(), s, out);
      return flow::normal;
    }
    case stmt_kind::for_: return exec_for(st, s, out);
    case stmt_kind::set: case stmt_kind::set_block: exec_set(st, s, out); return flow::normal;
    case stmt_kind::macro: s.set(st.text, make_macro(st, s)); return flow::normal;
    case stmt_kind::call_block: exec_call_block(st, s, out); return flow::normal;
    case stmt_kind::filter_block: {
      std::string inner;
      exec(st.bodies[0], s, inner);
      value v(std::move(inner));
      value r = eval_filter(*st.value_expr, s, &v);
      append(out, r.to_str());
      return flow::normal;
    }
    case stmt_kind::block: return exec(st.bodies[0], s, out);
    case stmt_kind::break_: return flow::break_;
    case stmt_kind::continue_: return flow::continue_;
  }
  return flow::normal;
}

static void bind_targets(const std::vector<std::string>& targets, const value& item, scope& s) {
  if (targets.size() == 1) {
    s.set(targets[0], item);
    return;
  }
  std::vector<value> parts = iterate(item);
  if (parts.size() != targets.size())
    throw_error(parts.size() > targets.size() ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
                                              : "not enough values to unpack (expected " + std::to_string(targets.size()) +
                                                    ", got " + std::to_string(parts.size()) + ")");
  for (std::size_t i = 0; i < targets.size(); ++i) s.set(targets[i], parts[i]);
}

interpreter::flow interpreter::exec_for(const stmt& st, scope& s, std::string& out) {
  return run_loop(st, s, eval(*st.value_expr, s), 1, out);
}

// One pass of a for loop over `iterable` at loop.depth `depth`; a recursive loop's
// loop(x) runs another pass over x at depth + 1 and returns its text. The loop object
// lives as long as this pass: calling a kept `loop` later is an error, not a dangling frame.
interpreter::flow interpreter::run_loop(const stmt& st, scope& s, const value& iterable, std::int64_t depth,
                                        std::string& out) {
  std::vector<value> items = iterate(iterable);
  count_iterations(items.size());
  if (st.cond) {
    std::vector<value> kept;
    for (auto& item : items) {
      scope tmp{&s, {}};
      bind_targets(st.targets, item, tmp);
      if (eval(*st.cond, tmp).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (st.bodies.size() > 1) return exec(st.bodies[1], s, out);
    return flow::normal;
  }
  auto alive = std::make_shared<bool>(true);
  struct expire {
    std::shared_ptr<bool> a;
    ~expire() { *a = false; }
  } expire_at_end{alive};
  value recurse;
  if (st.recursive)
    recurse = value::make_function("loop", [this, &st, &s, depth, alive](call_args& a) -> value {
      if (!*alive) throw_error("a recursive loop cannot be called after it ended");
      if (a.pos.size() != 1) throw_error("loop() takes exactly one argument");
      nesting_guard guard(nesting_, limits_.max_recursion, "chat template recursion too deep");
      std::string inner;
      run_loop(st, s, a.pos[0], depth + 1, inner);
      return value(std::move(inner));
    });
  // loop.changed compares with the value of its previous call in this pass.
  auto last_changed = std::make_shared<std::optional<value>>();
  const auto n = static_cast<std::int64_t>(items.size());
  for (std::int64_t i = 0; i < n; ++i) {
    budget_.step();
    scope body_scope{&s, {}};
    bind_targets(st.targets, items[static_cast<std::size_t>(i)], body_scope);
    value loop = value::make_object();
    auto& l = loop.obj().items;
    l.reserve(16);
    l.emplace_back("index", value(i + 1));
    l.emplace_back("index0", value(i));
    l.emplace_back("revindex", value(n - i));
    l.emplace_back("revindex0", value(n - i - 1));
    l.emplace_back("first", value(i == 0));
    l.emplace_back("last", value(i == n - 1));
    l.emplace_back("length", value(n));
    l.emplace_back("depth", value(depth));
    l.emplace_back("depth0", value(depth - 1));
    l.emplace_back("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : value::undefined("there is no previous item"));
    l.emplace_back("nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : value::undefined("there is no next item"));
    l.emplace_back("cycle", value::make_function("cycle", [i](call_args& a) {
      if (a.pos.empty()) throw_error("no items for cycling given");
      return a.pos[static_cast<std::size_t>(i) % a.pos.size()];
    }));
    l.emplace_back("changed", value::make_function("changed", [last_changed](call_args& a) {
      value now = value::make_array(a.pos, seq::tuple);
      if (last_changed->has_value() && equals(**last_changed, now)) return value(false);
      *last_changed = std::move(now);
      return value(true);
    }));
    if (st.recursive) l.emplace_back("__call__", recurse);
    body_scope.set("loop", std::move(loop));
    flow f = exec(st.bodies[0], body_scope, out);
    if (f == flow::break_) break;
  }
  return flow::normal;
}

void interpreter::exec_set(const stmt& st, scope& s, std::string& out) {
  (void)out;
  value v;
  if (st.kind == stmt_kind::set_block) {
    std::string inner;
    exec(st.bodies[0], s, inner);
    v = value(std::move(inner));
    if (st.value_expr) v = eval_filter(*st.value_expr, s, &v);
  } else {
    v = eval(*st.value_expr, s);
  }
  if (!st.attr.empty()) {
    const value* ns = s.find(st.text);
    if (!ns || !ns->is_object() || !ns->obj().is_namespace) throw_error("Cannot assign attribute on non-namespace object");
    ns->obj().set(st.attr, std::move(v));
    return;
  }
  if (st.targets.size() > 1) {
    bind_targets(st.targets, v, s);
    return;
  }
  s.set(st.text, std::move(v));
}

value interpreter::make_macro(const stmt& st, scope& s) {
  (void)s;
  scope* closure = top_;  // macros see the template's top-level variables, not the caller's
  const stmt* def = &st;
  return value::make_function(st.text, [this, def, closure](call_args& a) { return call_macro(*def, a, closure); });
}

value interpreter::call_macro(const stmt& st, call_args& args, scope* closure) {
  nesting_guard calls(call_depth_, limits_.max_call_depth, too_many_calls);
  budget_.step();
  scope frame{closure, {}};
  std::vector<bool> bound(st.params.size(), false);
  array_data extra;
  for (std::size_t i = 0; i < args.pos.size(); ++i) {
    if (i < st.params.size()) {
      frame.set(st.params[i].name, args.pos[i]);
      bound[i] = true;
    } else {
      extra.push_back(args.pos[i]);
    }
  }
  value varargs = value::make_array(std::move(extra));
  value kwargs = value::make_object();
  for (auto& [k, v] : args.kw) {
    bool hit = false;
    for (std::size_t i = 0; i < st.params.size(); ++i)
      if (st.params[i].name == k) {
        frame.set(k, v);
        bound[i] = true;
        hit = true;
      }
    if (!hit && k == "caller") frame.set("caller", v);
    else if (!hit) kwargs.obj().set(k, v);
  }
  for (std::size_t i = 0; i < st.params.size(); ++i) {
    if (bound[i]) continue;
    if (st.params[i].default_value) frame.set(st.params[i].name, eval(*st.params[i].default_value, frame));
    else frame.set(st.params[i].name, value::undefined("parameter '" + st.params[i].name + "' was not provided"));
  }
  frame.set("varargs", varargs);
  frame.set("kwargs", kwargs);
  std::string out;
  exec(st.bodies[0], frame, out);
  return value(std::move(out));
}

void interpreter::exec_call_block(const stmt& st, scope& s, std::string& out) {
  const stmt* def = &st;
  scope* site = &s;
  // `caller` can escape its block (stored in a namespace); its frame's parent `site` dies
  // with the block, so a call after that is an error, never a dangling scope.
  auto live = std::make_shared<bool>(true);
  struct end_of_block {
    std::shared_ptr<bool> live;
    ~end_of_block() { *live = false; }
  } ending{live};
  value caller = value::make_function("caller", [this, def, site, live](call_args& a) {
    if (!*live) throw_error("caller() called outside its call block");
    nesting_guard calls(call_depth_, limits_.max_call_depth, too_many_calls);
    budget_.step();
    scope frame{site, {}};
    for (std::size_t i = 0; i < def->params.size(); ++i) {
      if (i < a.pos.size()) frame.set(def->params[i].name, a.pos[i]);
      else if (def->params[i].default_value) frame.set(def->params[i].name, eval(*def->params[i].default_value, frame));
      else frame.set(def->params[i].name, value::undefined());
    }
    std::string inner;
    exec(def->bodies[0], frame, inner);
    return value(std::move(inner));
  });
  const expr& call = *st.value_expr;
  value fn = eval(*call.args[0], s);
  if (fn.k() != kind::function) throw_error("'" + fn.type_name() + "' object is not callable");
  call_args a = eval_args(call, s, 1);
  a.kw.emplace_back("caller", caller);
  append(out, fn.fn().call(a).to_str());
}

call_args interpreter::eval_args(const expr& e, scope& s, std::size_t first) {
  call_args a;
  for (std::size_t i = first; i < e.args.size(); ++i) a.pos.push_back(e.args[i] ? eval(*e.args[i], s) : value());
  for (const auto& [k, v] : e.kwargs) a.kw.emplace_back(k, eval(*v, s));
  return a;
}

static std::string undefined_message(const value& u, const std::string& fallback) {
  return u.str().empty() ? fallback : u.str();
}

value interpreter::eval(const expr& e, scope& s) {
  nesting_guard guard(nesting_, limits_.max_recursion, too_deep);
  budget_.step();
  switch (e.kind) {
    case expr_kind::literal: return e.lit;
    case expr_kind::name: {
      const value* v = s.find(e.name);
      return v ? *v : value::undefined("'" + e.name + "' is undefined");
    }
    case expr_kind::list: case expr_kind::tuple: {
      array_data items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(eval(*a, s));
      return value::make_array(std::move(items), e.kind == expr_kind::tuple ? seq::tuple : seq::list);
    }
    case expr_kind::dict: {
      value o = value::make_object();
      for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
        value k = eval(*e.args[i], s);
        o.obj().set(k, eval(*e.args[i + 1], s));
      }
      return o;
    }
    case expr_kind::getattr: {
      value obj = eval(*e.args[0], s);
      if (obj.is_undefined()) fail_at(e.offset, undefined_message(obj, "undefined value"));
      return get_attr(obj, e.name);
    }
    case expr_kind::getitem: {
      value obj = eval(*e.args[0], s);
      if (obj.is_undefined()) fail_at(e.offset, undefined_message(obj, "undefined value"));
      return get_item(obj, eval(*e.args[1], s));
    }
    case expr_kind::slice: {
      value obj = eval(*e.args[0], s);
      if (obj.is_undefined()) fail_at(e.offset, undefined_message(obj, "undefined value"));
      auto part = [&](std::size_t i) { return e.args[i] ? eval(*e.args[i], s) : value::none(); };
      return slice_value(obj, part(1), part(2), part(3));
    }
    case expr_kind::call: return eval_call(e, s);
    case expr_kind::filter: return eval_filter(e, s, nullptr);
    case expr_kind::test: {
      value v = eval(*e.args[0], s);
      call_args a = eval_args(e, s, 1);
      return value(apply_test(e.name, v, a) != e.negated);
    }
    case expr_kind::logical_not: return value(!eval(*e.args[0], s).truthy());
    case expr_kind::negate: case expr_kind::plus: {
      value v = eval(*e.args[0], s);
      if (v.k() == kind::floating) return value(e.kind == expr_kind::negate ? -v.as_double() : v.as_double());
      if (v.is_number()) {
        if (e.kind == expr_kind::negate && v.as_int() == INT64_MIN) fail_at(e.offset, "integer overflow");
        return value(e.kind == expr_kind::negate ? -v.as_int() : v.as_int());
      }
      fail_at(e.offset, "bad operand type for unary " + std::string(e.kind == expr_kind::negate ? "-" : "+") + ": '" + v.type_name() + "'");
    }
    case expr_kind::binary: return eval_binary(e, s);
    case expr_kind::compare: return value(eval_compare(e, s));
    case expr_kind::logical_and: {
      value a = eval(*e.args[0], s);
      return a.truthy() ? eval(*e.args[1], s) : a;
    }
    case expr_kind::logical_or: {
      value a = eval(*e.args[0], s);
      return a.truthy() ? a : eval(*e.args[1], s);
    }
    case expr_kind::conditional: {
      if (eval(*e.args[1], s).truthy()) return eval(*e.args[0], s);
      return e.args[2] ? eval(*e.args[2], s) : value::undefined();
    }
  }
  return value();
}

value interpreter::eval_binary(const expr& e, scope& s) {
  value a = eval(*e.args[0], s);
  value b = eval(*e.args[1], s);
  if (e.name == "~") {
    // Without autoescape Jinja's ~ is str.join: plain text, Markups included.
    const value sa = a.is_string() && !a.is_safe() ? a : value(a.is_string() ? a.str() : a.to_str());
    const value sb = b.is_string() && !b.is_safe() ? b : value(b.is_string() ? b.str() : b.to_str());
    return binary_op("+", sa, sb);  // checks the byte budget before building
  }
  if (a.is_undefined()) fail_at(e.offset, undefined_message(a, "undefined value"));
  if (b.is_undefined()) fail_at(e.offset, undefined_message(b, "undefined value"));
  return binary_op(e.name, a, b);  // bounds + and * before materialising them
}

bool interpreter::eval_compare(const expr& e, scope& s) {
  value left = eval(*e.args[0], s);
  for (std::size_t i = 0; i < e.ops.size(); ++i) {
    value right = eval(*e.args[i + 1], s);
    const std::string& op = e.ops[i];
    bool r;
    if (op == "==") r = equals(left, right);
    else if (op == "!=") r = !equals(left, right);
    else if (op == "in") r = contains(right, left);
    else if (op == "notin") r = !contains(right, left);
    else {
      if (left.is_undefined() || right.is_undefined()) fail_at(e.offset, undefined_message(left.is_undefined() ? left : right, "undefined value"));
      if (op == "<") r = less(left, right);
      else if (op == ">") r = less(right, left);
      else if (op == "<=") r = !less(right, left);
      else r = !less(left, right);
    }
    if (!r) return false;
    left = std::move(right);
  }
  return true;
}

value interpreter::eval_call(const expr& e, scope& s) {
  const expr& callee = *e.args[0];
  if (callee.kind == expr_kind::getattr) {
    value obj = eval(*callee.args[0], s);
    if (obj.is_undefined()) fail_at(callee.offset, undefined_message(obj, "undefined value"));
    call_args a = eval_args(e, s, 1);
    budget_.step(1 + (obj.is_string() ? obj.str().size() / 1024 : 0));
    bool found = false;
    value r = call_method(*this, obj, callee.name, a, found);
    if (found) return r;
    value fn = get_attr(obj, callee.name);
    if (fn.k() != kind::function)
      fail_at(callee.offset, fn.is_undefined() ? "'" + obj.type_name() + " object' has no attribute '" + callee.name + "'"
                                               : "'" + fn.type_name() + "' object is not callable");
    return fn.fn().call(a);
  }
  value fn = eval(callee, s);
  if (fn.is_object())  // a recursive loop's `loop(x)`
    if (const value* c = fn.obj().find("__call__"); c && c->k() == kind::function) fn = *c;
  if (fn.k() != kind::function) {
    if (fn.is_undefined()) fail_at(callee.offset, undefined_message(fn, "undefined value"));
    fail_at(callee.offset, "'" + fn.type_name() + "' object is not callable");
  }
  call_args a = eval_args(e, s, 1);
  budget_.step();
  return fn.fn().call(a);
}

value interpreter::eval_filter(const expr& e, scope& s, const value* subject) {
  value v;
  if (e.args[0]) v = (subject && e.args[0]->kind == expr_kind::filter) ? eval_filter(*e.args[0], s, subject) : eval(*e.args[0], s);
  else if (subject) v = *subject;
  call_args a = eval_args(e, s, 1);
  budget_.step(1 + (v.is_string() ? v.str().size() / 1024 : 0));
  try {
    return apply_filter(e.name, v, a);
  } catch (template_error& err) {
    if (err.line == 0 && !err.raised) offset_to_line_col(src_, e.offset, err.line, err.col);
    throw;
  }
}

}  // namespace vks::text::jinja
