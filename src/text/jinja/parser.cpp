// Parser: tokens -> syntax tree. Follows Jinja2's parser structure and precedence:
// condexpr < or < and < not < compare < + - < ~ < * / // % < ** < unary < filters/tests
// < postfix (. [] ()). Filters bind tighter than arithmetic: `a + b|length` is a + (b|length).
#include "text/jinja/parser.hpp"

#include <algorithm>
#include <set>

namespace vks::text::jinja {

namespace {

class parser {
 public:
  parser(const std::string& src, const std::vector<token>& toks) : src_(src), toks_(toks) {}

  body parse_all() {
    std::string end;
    body b = subparse({}, end);
    if (cur().t != tok::eof) fail("unexpected tag");
    return b;
  }

 private:
  const token& cur() const { return toks_[pos_]; }
  const token& peek(std::size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void advance() { if (pos_ + 1 < toks_.size()) ++pos_; }
  bool is_op(const char* op) const { return cur().t == tok::op && cur().s == op; }
  bool is_name(const char* n) const { return cur().t == tok::name && cur().s == n; }

  [[noreturn]] void fail(const std::string& msg) const { fail_at(cur().offset, msg); }
  [[noreturn]] void fail_at(std::size_t off, const std::string& msg) const {
    template_error e{msg};
    offset_to_line_col(src_, off, e.line, e.col);
    throw e;
  }
  std::string describe(const token& t) const {
    switch (t.t) {
      case tok::eof: return "end of template";
      case tok::block_end: return "end of statement block";
      case tok::var_end: return "end of print statement";
      case tok::name: case tok::op: return "'" + t.s + "'";
      case tok::string: return "string";
      default: return "token";
    }
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
    advance();
  }
  std::string expect_name() {
    if (cur().t != tok::name) fail("expected name, got " + describe(cur()));
    std::string n = cur().s;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().t != tok::block_end) fail("expected end of statement block, got " + describe(cur()));
    advance();
  }

  // Attaches a child, keeping every tree shallower than max_depth so that evaluation and
  // destruction recurse a bounded number of times (`a.b.c...` or `1+1+...` chains).
  static constexpr int max_depth = 256;
  void add_depth(expr& parent, const expr& child) {
    parent.depth = std::max(parent.depth, child.depth + 1);
    if (parent.depth > max_depth) fail_at(parent.offset, "expression nested too deeply");
  }
  void add(expr& parent, expr_ptr child) {
    if (child) add_depth(parent, *child);
    parent.args.push_back(std::move(child));
  }

  static expr_ptr node(expr_kind k, std::size_t off) {
    auto e = std::make_unique<expr>();
    e->kind = k;
    e->offset = off;
    return e;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `ends` (consumed, returned in `end`).
  body subparse(const std::set<std::string>& ends, std::string& end) {
    body out;
    while (cur().t != tok::eof) {
      if (cur().t == tok::text) {
        auto s = std::make_unique<stmt>();
        s->kind = stmt_kind::text;
        s->offset = cur().offset;
        s->text = cur().s;
        out.push_back(std::move(s));
        advance();
      } else if (cur().t == tok::var_begin) {
        auto s = std::make_unique<stmt>();
        s->kind = stmt_kind::output;
        s->offset = cur().offset;
        advance();
        s->value_expr = parse_tuple(true);
        if (cur().t != tok::var_end) fail("expected end of print statement, got " + describe(cur()));
        advance();
        out.push_back(std::move(s));
      } else if (cur().t == tok::block_begin) {
        const token& n = peek();
        if (n.t == tok::name && ends.count(n.s)) {
          end = n.s;
          advance();
          advance();
          return out;
        }
        advance();
        out.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(cur()));
      }
    }
    if (!ends.empty()) {
      std::string want;
      for (const auto& e : ends) want += (want.empty() ? "'" : " or '") + e + "'";
      fail("unexpected end of template; expected " + want);
    }
    return out;
  }

  stmt_ptr parse_statement() {
    if (++depth_ > 200) fail("template nested too deeply");
    if (cur().t != tok::name) fail("tag name expected");
    std::string tag = cur().s;
    std::size_t off = cur().offset;
    advance();
    stmt_ptr s;
    if (tag == "if") s = parse_if();
    else if (tag == "for") s = parse_for();
    else if (tag == "set") s = parse_set();
    else if (tag == "macro") s = parse_macro();
    else if (tag == "call") s = parse_call_block();
    else if (tag == "filter") s = parse_filter_block();
    else if (tag == "generation") s = parse_simple_block(stmt_kind::block, "endgeneration");
    else if (tag == "break" || tag == "continue") {
      s = std::make_unique<stmt>();
      s->kind = tag == "break" ? stmt_kind::break_ : stmt_kind::continue_;
      expect_block_end();
    } else {
      fail_at(off, "Encountered unknown tag '" + tag + "'.");
    }
    s->offset = off;
    --depth_;
    return s;
  }

  stmt_ptr parse_simple_block(stmt_kind k, const char* end_tag) {
    auto s = std::make_unique<stmt>();
    s->kind = k;
    expect_block_end();
    std::string end;
    s->bodies.push_back(subparse({end_tag}, end));
    expect_block_end();
    return s;
  }

  stmt_ptr parse_if() {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::if_;
    while (true) {
      s->conds.push_back(parse_tuple(false));
      expect_block_end();
      std::string end;
      s->bodies.push_back(subparse({"elif", "else", "endif"}, end));
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        s->bodies.push_back(subparse({"endif"}, end));
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = is_op("(");
    if (paren) advance();
    while (true) {
      names.push_back(expect_name());
      if (!is_op(",")) break;
      advance();
      if (cur().t != tok::name || is_name("in")) break;
    }
    if (paren) expect_op(")");
    return names;
  }

  stmt_ptr parse_for() {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::for_;
    s->targets = parse_targets();
    if (!is_name("in")) fail("expected 'in', got " + describe(cur()));
    advance();
    s->value_expr = parse_tuple(false, {"recursive"});
    if (is_name("if")) {
      advance();
      s->cond = parse_expression(true);
    }
    if (is_name("recursive")) {
      advance();
      s->recursive = true;
    }
    expect_block_end();
    std::string end;
    s->bodies.push_back(subparse({"endfor", "else"}, end));
    if (end == "else") {
      expect_block_end();
      s->bodies.push_back(subparse({"endfor"}, end));
    }
    expect_block_end();
    return s;
  }

  stmt_ptr parse_set() {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::set;
    if (cur().t == tok::name && peek().t == tok::op && peek().s == ".") {
      s->text = expect_name();
      advance();
      s->attr = expect_name();
    } else {
      s->targets = parse_targets();
      s->text = s->targets[0];
    }
    if (is_op("=")) {
      advance();
      s->value_expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (!s->attr.empty() || s->targets.size() != 1) fail("expected '='");
    s->kind = stmt_kind::set_block;
    if (is_op("|")) s->value_expr = parse_filter_chain(nullptr);
    expect_block_end();
    std::string end;
    s->bodies.push_back(subparse({"endset"}, end));
    expect_block_end();
    return s;
  }

  std::vector<macro_param> parse_params() {
    std::vector<macro_param> params;
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      macro_param p;
      p.name = expect_name();
      if (is_op("=")) {
        advance();
        p.default_value = parse_expression(true);
      }
      params.push_back(std::move(p));
    }
    advance();
    return params;
  }

  stmt_ptr parse_macro() {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::macro;
    s->text = expect_name();
    s->params = parse_params();
    expect_block_end();
    std::string end;
    s->bodies.push_back(subparse({"endmacro"}, end));
    if (cur().t == tok::name) advance();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  stmt_ptr parse_call_block() {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::call_block;
    if (is_op("(")) s->params = parse_params();
    s->value_expr = parse_expression(true);
    if (s->value_expr->kind != expr_kind::call) fail("expected call");
    expect_block_end();
    std::string end;
    s->bodies.push_back(subparse({"endcall"}, end));
    expect_block_end();
    return s;
  }

  stmt_ptr parse_filter_block() {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::filter_block;
    s->value_expr = parse_filter_chain(nullptr, true);
    expect_block_end();
    std::string end;
    s->bodies.push_back(subparse({"endfilter"}, end));
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  bool is_tuple_end(const std::set<std::string>& extra_end) const {
    if (cur().t == tok::var_end || cur().t == tok::block_end || cur().t == tok::eof) return true;
    if (is_op(")")) return true;
    return cur().t == tok::name && extra_end.count(cur().s) > 0;
  }

  expr_ptr parse_tuple(bool with_condexpr, const std::set<std::string>& extra_end = {}, bool explicit_parens = false) {
    std::size_t off = cur().offset;
    std::vector<expr_ptr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(with_condexpr ? parse_expression(true) : parse_or());
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail("expected an expression, got " + describe(cur()));
    }
    auto t = node(expr_kind::tuple, off);
    for (auto& it : items) add(*t, std::move(it));
    return t;
  }

  expr_ptr parse_expression(bool with_condexpr) {
    if (++depth_ > 200) fail("expression nested too deeply");
    expr_ptr e = with_condexpr ? parse_condexpr() : parse_or();
    --depth_;
    return e;
  }

  expr_ptr parse_condexpr() {
    expr_ptr e1 = parse_or();
    while (is_name("if")) {
      std::size_t off = cur().offset;
      advance();
      expr_ptr cond = parse_or();
      expr_ptr e3;
      if (is_name("else")) {
        advance();
        e3 = parse_condexpr();
      }
      auto c = node(expr_kind::conditional, off);
      add(*c, std::move(e1));
      add(*c, std::move(cond));
      add(*c, std::move(e3));
      e1 = std::move(c);
    }
    return e1;
  }

  expr_ptr binary_chain(expr_kind k, const char* kw, expr_ptr (parser::*next)()) {
    expr_ptr left = (this->*next)();
    while (is_name(kw)) {
      std::size_t off = cur().offset;
      advance();
      auto n = node(k, off);
      add(*n, std::move(left));
      add(*n, (this->*next)());
      left = std::move(n);
    }
    return left;
  }
  expr_ptr parse_or() { return binary_chain(expr_kind::logical_or, "or", &parser::parse_and); }
  expr_ptr parse_and() { return binary_chain(expr_kind::logical_and, "and", &parser::parse_not); }

  expr_ptr parse_not() {
    if (is_name("not")) {
      if (++depth_ > 200) fail("expression nested too deeply");  // `not not not ...` recursed unbounded
      auto n = node(expr_kind::logical_not, cur().offset);
      advance();
      add(*n, parse_not());
      --depth_;
      return n;
    }
    return parse_compare();
  }

  expr_ptr parse_compare() {
    std::size_t off = cur().offset;
    expr_ptr first = parse_math1();
    expr_ptr cmp;
    while (true) {
      std::string op;
      if (cur().t == tok::op && (cur().s == "==" || cur().s == "!=" || cur().s == "<" || cur().s == ">" ||
                                 cur().s == "<=" || cur().s == ">=")) {
        op = cur().s;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().t == tok::name && peek().s == "in") {
        op = "notin";
        advance();
        advance();
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(expr_kind::compare, off);
        add(*cmp, std::move(first));
      }
      cmp->ops.push_back(op);
      add(*cmp, parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  expr_ptr binary_ops(std::initializer_list<const char*> ops, expr_ptr (parser::*next)()) {
    expr_ptr left = (this->*next)();
    while (cur().t == tok::op) {
      const char* hit = nullptr;
      for (const char* o : ops)
        if (cur().s == o) hit = o;
      if (!hit) break;
      auto n = node(expr_kind::binary, cur().offset);
      n->name = hit;
      advance();
      add(*n, std::move(left));
      add(*n, (this->*next)());
      left = std::move(n);
    }
    return left;
  }
  expr_ptr parse_math1() { return binary_ops({"+", "-"}, &parser::parse_concat); }
  expr_ptr parse_concat() { return binary_ops({"~"}, &parser::parse_math2); }
  expr_ptr parse_math2() { return binary_ops({"*", "/", "//", "%"}, &parser::parse_pow); }
  expr_ptr parse_pow() { return binary_ops({"**"}, &parser::parse_unary_f); }
  expr_ptr parse_unary_f() { return parse_unary(true); }

  expr_ptr parse_unary(bool with_filter) {
    if (++depth_ > 200) fail("expression nested too deeply");
    expr_ptr n;
    if (is_op("-") || is_op("+")) {
      n = node(is_op("-") ? expr_kind::negate : expr_kind::plus, cur().offset);
      advance();
      add(*n, parse_unary(false));
    } else {
      n = parse_primary();
    }
    n = parse_postfix(std::move(n));
    if (with_filter) n = parse_filter_expr(std::move(n));
    --depth_;
    return n;
  }

  expr_ptr parse_primary() {
    const token& t = cur();
    std::size_t off = t.offset;
    if (t.t == tok::name) {
      auto n = node(expr_kind::literal, off);
      if (t.s == "true" || t.s == "True") n->lit = value(true);
      else if (t.s == "false" || t.s == "False") n->lit = value(false);
      else if (t.s == "none" || t.s == "None") n->lit = value::none();
      else {
        n->kind = expr_kind::name;
        n->name = t.s;
      }
      advance();
      return n;
    }
    if (t.t == tok::string) {
      std::string s;
      while (cur().t == tok::string) {
        s += cur().s;
        advance();
      }
      auto n = node(expr_kind::literal, off);
      n->lit = value(std::move(s));
      return n;
    }
    if (t.t == tok::integer || t.t == tok::floating) {
      auto n = node(expr_kind::literal, off);
      n->lit = t.t == tok::integer ? value(t.i) : value(t.f);
      advance();
      return n;
    }
    if (is_op("(")) {
      advance();
      expr_ptr e = parse_tuple(true, {}, true);
      expect_op(")");
      return e;
    }
    if (is_op("[")) return parse_list();
    if (is_op("{")) return parse_dict();
    fail("unexpected " + describe(t));
  }

  expr_ptr parse_list() {
    auto n = node(expr_kind::list, cur().offset);
    advance();
    while (!is_op("]")) {
      if (!n->args.empty()) expect_op(",");
      if (is_op("]")) break;
      add(*n, parse_expression(true));
    }
    advance();
    return n;
  }

  expr_ptr parse_dict() {
    auto n = node(expr_kind::dict, cur().offset);
    advance();
    while (!is_op("}")) {
      if (!n->args.empty()) expect_op(",");
      if (is_op("}")) break;
      add(*n, parse_expression(true));
      expect_op(":");
      add(*n, parse_expression(true));
    }
    advance();
    return n;
  }

  expr_ptr parse_postfix(expr_ptr n) {
    while (true) {
      if (is_op(".") || is_op("[")) n = parse_subscript(std::move(n));
      else if (is_op("(")) n = parse_call(std::move(n));
      else return n;
    }
  }

  expr_ptr parse_filter_expr(expr_ptr n) {
    while (true) {
      if (is_op("|")) n = parse_filter_chain(std::move(n));
      else if (is_name("is")) n = parse_test(std::move(n));
      else if (is_op("(")) n = parse_call(std::move(n));
      else return n;
    }
  }

  expr_ptr parse_subscript(expr_ptr obj) {
    std::size_t off = cur().offset;
    if (is_op(".")) {
      advance();
      if (cur().t == tok::integer) {
        auto n = node(expr_kind::getitem, off);
        auto idx = node(expr_kind::literal, off);
        idx->lit = value(cur().i);
        advance();
        add(*n, std::move(obj));
        add(*n, std::move(idx));
        return n;
      }
      auto n = node(expr_kind::getattr, off);
      n->name = expect_name();
      add(*n, std::move(obj));
      return n;
    }
    advance();  // '['
    std::vector<expr_ptr> parts;
    bool is_slice = false;
    for (int k = 0; k < 3; ++k) {
      if (is_op(":") || is_op("]")) parts.push_back(nullptr);
      else parts.push_back(parse_expression(true));
      if (k < 2 && is_op(":")) {
        is_slice = true;
        advance();
        continue;
      }
      break;
    }
    if (!is_slice && is_op(",")) {  // tuple index a[1, 2]
      auto t = node(expr_kind::tuple, off);
      add(*t, std::move(parts[0]));
      while (is_op(",")) {
        advance();
        if (is_op("]")) break;
        add(*t, parse_expression(true));
      }
      parts[0] = std::move(t);
    }
    expect_op("]");
    auto n = node(is_slice ? expr_kind::slice : expr_kind::getitem, off);
    add(*n, std::move(obj));
    if (!is_slice && !parts[0]) fail_at(off, "expected an expression inside []");
    for (auto& p : parts) add(*n, std::move(p));
    while (is_slice && n->args.size() < 4) add(*n, nullptr);
    return n;
  }

  void parse_call_args(expr& n) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (cur().t == tok::name && peek().t == tok::op && peek().s == "=") {
        std::string k = cur().s;
        advance();
        advance();
        expr_ptr v = parse_expression(true);
        add_depth(n, *v);
        n.kwargs.emplace_back(k, std::move(v));
      } else {
        if (!n.kwargs.empty()) fail("positional argument after keyword argument");
        add(n, parse_expression(true));
      }
    }
    advance();
  }

  expr_ptr parse_call(expr_ptr callee) {
    auto n = node(expr_kind::call, cur().offset);
    add(*n, std::move(callee));
    parse_call_args(*n);
    return n;
  }

  std::string dotted_name() {
    std::string name = expect_name();
    while (is_op(".")) {
      advance();
      name += "." + expect_name();
    }
    return name;
  }

  // `| f(args) | g ...` applied to subject (null for {% filter %} blocks).
  expr_ptr parse_filter_chain(expr_ptr subject, bool start_inline = false) {
    while (is_op("|") || start_inline) {
      if (!start_inline) advance();
      start_inline = false;
      auto n = node(expr_kind::filter, cur().offset);
      n->name = dotted_name();
      add(*n, std::move(subject));
      if (is_op("(")) parse_call_args(*n);
      subject = std::move(n);
    }
    return subject;
  }

  expr_ptr parse_test(expr_ptr subject) {
    auto n = node(expr_kind::test, cur().offset);
    advance();  // 'is'
    if (is_name("not")) {
      n->negated = true;
      advance();
    }
    n->name = dotted_name();
    add(*n, std::move(subject));
    const token& t = cur();
    if (is_op("(")) {
      parse_call_args(*n);
    } else if ((t.t == tok::name || t.t == tok::string || t.t == tok::integer || t.t == tok::floating ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      add(*n, parse_postfix(parse_primary()));
    }
    return n;
  }

  const std::string& src_;
  const std::vector<token>& toks_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

body parse_template(const std::string& src, const std::vector<token>& tokens) {
  return parser(src, tokens).parse_all();
}

}  // namespace vks::text::jinja
