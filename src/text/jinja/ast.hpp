// Syntax tree of a parsed template. Nodes are immutable after parsing (render() only reads
// them, so one tree serves concurrent renders). Each node records its source offset for
// error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.hpp"

namespace vks::text::jinja {

enum class expr_kind : std::uint8_t {
  literal,    // lit
  name,       // name
  list,       // args
  tuple,      // args
  dict,       // args: key, value, key, value...
  getattr,    // args[0].name
  getitem,    // args[0][args[1]]
  slice,      // args[0][args[1]:args[2]:args[3]] (null parts allowed)
  call,       // args[0](args[1..], kwargs)
  filter,     // name: filter; args[0] subject (null in {% filter %}), args[1..] params
  test,       // name: test; args[0] subject, args[1..] params; negated = `is not`
  logical_not,
  negate,
  plus,
  binary,     // name: + - * / // % ** ~
  compare,    // args[0] op[0] args[1] op[1] args[2] ... ; ops: == != < > <= >= in notin
  logical_and,
  logical_or,
  conditional,  // args[0] if args[1] else args[2] (args[2] may be null)
};

struct expr;
using expr_ptr = std::unique_ptr<expr>;

struct expr {
  expr_kind kind = expr_kind::literal;
  std::size_t offset = 0;
  value lit;
  std::string name;
  bool negated = false;
  int depth = 1;  // height of this subtree (bounded by the parser: eval recursion and destruction)
  std::vector<expr_ptr> args;
  std::vector<std::pair<std::string, expr_ptr>> kwargs;
  std::vector<std::string> ops;
};

enum class stmt_kind : std::uint8_t {
  text, output, if_, for_, set, set_block, macro, call_block, filter_block, break_, continue_, block
};

struct stmt;
using stmt_ptr = std::unique_ptr<stmt>;
using body = std::vector<stmt_ptr>;

struct macro_param {
  std::string name;
  expr_ptr default_value;  // null: required (undefined when missing)
};

struct stmt {
  stmt_kind kind = stmt_kind::text;
  std::size_t offset = 0;
  std::string text;                  // text; macro name; set: target name
  std::string attr;                  // set ns.attr: attribute (text = namespace variable)
  std::vector<std::string> targets;  // for / set tuple targets
  expr_ptr value_expr;               // output, set, for iterable, call_block call, filter_block filter
  expr_ptr cond;                     // for ... if cond
  std::vector<expr_ptr> conds;       // if/elif conditions
  std::vector<body> bodies;          // if: one per cond (+ else); for: body, else; others: body
  std::vector<macro_param> params;   // macro / call-block caller params
  bool recursive = false;
};

}  // namespace vks::text::jinja
