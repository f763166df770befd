#include "text/grammar/json_schema.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "text/grammar/parsers.hpp"

namespace vks::text::grammar {

namespace {

using json = nlohmann::ordered_json;

constexpr int k_max_schema_depth = 64;

sequence lit(std::string_view s) {
  sequence out;
  builder::append_literal(out, s);
  return out;
}

// Compiles one schema into a builder that may hold other rules (structural tags put
// several schemas into one grammar).
class schema_compiler {
 public:
  schema_compiler(builder& b, const json& root, const json_grammar_options& opt) : root_(root), opt_(opt), b_(b) {}

  // One document: whitespace, then the value.
  result<element> document() {
    auto v = visit(root_, 0);
    if (!v) return fail(std::move(v).error());
    auto w = ws();
    if (!w) return fail(std::move(w).error());
    return b_.group({{*w, *v}}, "document");
  }

  result<element> any_object_document() {
    auto w = ws();
    if (!w) return fail(std::move(w).error());
    auto o = object_any();
    if (!o) return fail(std::move(o).error());
    return b_.group({{*w, *o}}, "document");
  }

 private:
  // A rule built once per builder and shared (ws, string, number, value...): its name is
  // fixed, so a second schema compiled into the same builder finds it defined.
  template <class F>
  result<element> shared(const std::string& name, F&& define) {
    if (auto it = shared_.find(name); it != shared_.end()) return element::ref(it->second);
    if (auto known = b_.find(name); known && b_.defined(*known)) return element::ref(*known);
    std::uint32_t r = b_.rule_id(name);
    shared_.emplace(name, r);
    auto alts = define();
    if (!alts) return fail(std::move(alts).error());
    for (auto& a : *alts) b_.add_alt(r, std::move(a));
    b_.define_empty(r);
    return element::ref(r);
  }
  using alts_t = std::vector<sequence>;

  result<element> ws() {
    return shared("ws", [&]() -> result<alts_t> {
      if (!opt_.whitespace_pattern.empty()) {
        auto e = compile_regex(b_, opt_.whitespace_pattern);
        if (!e) return fail(std::move(e).error());
        return alts_t{{*e}};
      }
      if (!opt_.any_whitespace) return alts_t{{}};
      // Nothing, one space, or a newline and an indent of up to 20: what pretty printers
      // write, with no room for the endless whitespace small models fall into.
      auto indent = b_.repeat({element::chars({{'\t', '\t'}, {' ', ' '}})}, 0, 20, "indent");
      if (!indent) return fail(std::move(indent).error());
      return alts_t{{}, {element::one(' ')}, {element::one('\n'), *indent}};
    });
  }

  result<element> regex(const std::string& name, std::string_view pattern) {
    return shared(name, [&]() -> result<alts_t> {
      auto e = compile_regex(b_, pattern);
      if (!e) return fail(std::move(e).error());
      return alts_t{{*e}};
    });
  }

  result<element> string_char() {
    return shared("char", [&]() -> result<alts_t> {
      // \uXXXX escapes: no lone surrogates (parsers refuse them), pairs in order.
      auto uni = compile_regex(b_, "\\\\u([0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}|"
                                   "[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2})");
      if (!uni) return fail(std::move(uni).error());
      sequence plain{element::chars({{'"', '"'}, {'\\', '\\'}, {0, 0x1f}}, true)};
      sequence esc{element::one('\\'),
                   element::chars({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'},
                                   {'r', 'r'}, {'t', 't'}})};
      return alts_t{plain, esc, {*uni}};
    });
  }

  result<element> string_any() {
    return shared("string", [&]() -> result<alts_t> {
      auto c = string_char();
      if (!c) return fail(std::move(c).error());
      auto body = b_.repeat({*c}, 0, k_unbounded, "chars");
      if (!body) return fail(std::move(body).error());
      return alts_t{{element::one('"'), *body, element::one('"')}};
    });
  }

  result<element> integer(bool non_negative) {
    return regex(non_negative ? "uint" : "int", non_negative ? "(0|[1-9][0-9]{0,15})" : "-?(0|[1-9][0-9]{0,15})");
  }
  result<element> number(bool non_negative) {
    return regex(non_negative ? "unumber" : "number",
                 std::string(non_negative ? "" : "-?") + "(0|[1-9][0-9]{0,15})(\\.[0-9]{1,16})?([eE][-+]?[0-9]{1,2})?");
  }

  result<element> value_any() {
    return shared("value", [&]() -> result<alts_t> {
      alts_t alts;
      for (auto make : {&schema_compiler::object_any, &schema_compiler::array_any, &schema_compiler::string_any}) {
        auto e = (this->*make)();
        if (!e) return fail(std::move(e).error());
        alts.push_back({*e});
      }
      auto n = number(false);
      if (!n) return fail(std::move(n).error());
      alts.push_back({*n});
      alts.push_back(lit("true"));
      alts.push_back(lit("false"));
      alts.push_back(lit("null"));
      return alts;
    });
  }

  // `open` members (key ws ":" ws value ws) separated by commas, then `close`.
  result<sequence> members(char open, char close, const sequence& member, int min, int max) {
    auto w = ws();
    if (!w) return fail(std::move(w).error());
    sequence more{element::one(','), *w};
    more.insert(more.end(), member.begin(), member.end());
    sequence out{element::one(static_cast<char32_t>(open)), *w};
    if (max == 0) {
      out.push_back(element::one(static_cast<char32_t>(close)));
      return out;
    }
    auto rest = b_.repeat(more, std::max(min - 1, 0), max == k_unbounded ? k_unbounded : max - 1, "more");
    if (!rest) return fail(std::move(rest).error());
    sequence some = member;
    some.push_back(*rest);
    if (min == 0) out.push_back(b_.group({some, {}}, "opt"));
    else out.insert(out.end(), some.begin(), some.end());
    out.push_back(element::one(static_cast<char32_t>(close)));
    return out;
  }

  result<sequence> kv_member(const element& value) {
    auto w = ws();
    auto s = string_any();
    if (!w || !s) return fail(!w ? w.error() : s.error());
    return sequence{*s, *w, element::one(':'), *w, value, *w};
  }

  result<element> object_any() {
    return shared("object", [&]() -> result<alts_t> {
      auto v = value_any();
      if (!v) return fail(std::move(v).error());
      auto m = kv_member(*v);
      if (!m) return fail(std::move(m).error());
      auto s = members('{', '}', *m, 0, k_unbounded);
      if (!s) return fail(std::move(s).error());
      return alts_t{*s};
    });
  }

  result<element> array_any() {
    return shared("array", [&]() -> result<alts_t> {
      auto v = value_any();
      auto w = ws();
      if (!v || !w) return fail(!v ? v.error() : w.error());
      auto s = members('[', ']', {*v, *w}, 0, k_unbounded);
      if (!s) return fail(std::move(s).error());
      return alts_t{*s};
    });
  }

  static unexpected bad(const std::string& msg) { return fail(errc::invalid_argument, "JSON schema: " + msg); }

  static bool non_negative(const json& s) {
    for (const char* k : {"minimum", "exclusiveMinimum"})
      if (auto it = s.find(k); it != s.end() && it->is_number() && it->get<double>() >= 0) return true;
    return false;
  }

  static int count(const json& s, const char* key, int dflt) {
    auto it = s.find(key);
    if (it == s.end() || !it->is_number_integer()) return dflt;
    auto v = it->get<std::int64_t>();
    if (v < 0) return 0;
    return v > 1'000'000 ? 1'000'000 : static_cast<int>(v);
  }

  result<element> resolve_ref(const std::string& ref, int depth) {
    if (auto it = refs_.find(ref); it != refs_.end()) return element::ref(it->second);
    if (ref.empty() || ref[0] != '#') return bad("only local $ref (\"#...\") is supported: " + ref);
    const json* target = &root_;
    if (ref.size() > 1) {
      try {
        target = &root_.at(json::json_pointer(ref.substr(1)));
      } catch (const std::exception&) {
        return bad("$ref " + ref + " does not resolve");
      }
    }
    std::uint32_t r = b_.fresh("ref");
    refs_.emplace(ref, r);
    auto e = visit(*target, depth + 1);
    if (!e) return fail(std::move(e).error());
    b_.add_alt(r, {*e});
    return element::ref(r);
  }

  result<element> alternatives(const json& list, int depth, const char* key) {
    if (!list.is_array() || list.empty()) return bad(std::string(key) + " must be a non-empty array");
    alts_t alts;
    for (const auto& s : list) {
      auto e = visit(s, depth + 1);
      if (!e) return fail(std::move(e).error());
      alts.push_back({*e});
    }
    return b_.group(std::move(alts), "any-of");
  }

  result<element> all_of(const json& s, int depth) {
    const json& list = s["allOf"];
    if (!list.is_array() || list.empty()) return bad("allOf must be a non-empty array");
    json merged = s;
    merged.erase("allOf");
    for (const auto& part0 : list) {
      const json* part = &part0;
      if (part->is_object() && part->contains("$ref") && (*part)["$ref"].is_string()) {
        const std::string ref = (*part)["$ref"].get<std::string>();
        try {
          part = ref.size() > 1 ? &root_.at(json::json_pointer(ref.substr(1))) : &root_;
        } catch (const std::exception&) {
          return bad("$ref " + ref + " does not resolve");
        }
      }
      if (!part->is_object()) return bad("allOf members must be schemas");
      for (auto it = part->begin(); it != part->end(); ++it) {
        if (it.key() == "properties" && it->is_object()) {
          for (auto p = it->begin(); p != it->end(); ++p) merged["properties"][p.key()] = p.value();
        } else if (it.key() == "required" && it->is_array()) {
          for (const auto& r : *it) merged["required"].push_back(r);
        } else if (it.key() == "allOf" || it.key() == "anyOf" || it.key() == "oneOf") {
          return bad("nested combinators inside allOf are not supported");
        } else {
          merged[it.key()] = it.value();
        }
      }
    }
    return visit(merged, depth + 1);
  }

  result<element> literal_of(const json& v) { return b_.group({lit(v.dump())}, "const"); }

  result<element> visit(const json& s, int depth) {
    if (depth > k_max_schema_depth) return bad("schema nested too deeply (over " + std::to_string(k_max_schema_depth) + " levels)");
    if (s.is_boolean()) {
      if (!s.get<bool>()) return bad("the schema `false` matches nothing");
      return value_any();
    }
    if (!s.is_object()) return bad("a schema must be an object or a boolean");
    if (auto it = s.find("$ref"); it != s.end()) {
      if (!it->is_string()) return bad("$ref must be a string");
      return resolve_ref(it->get<std::string>(), depth);
    }
    if (auto it = s.find("const"); it != s.end()) return literal_of(*it);
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) return bad("enum must be a non-empty array");
      alts_t alts;
      for (const auto& v : *it) alts.push_back(lit(v.dump()));
      return b_.group(std::move(alts), "enum");
    }
    if (s.contains("allOf")) return all_of(s, depth);
    for (const char* k : {"anyOf", "oneOf"})
      if (auto it = s.find(k); it != s.end()) return alternatives(*it, depth, k);

    auto nullable = [&](result<element> e) -> result<element> {
      if (!e) return e;
      auto n = s.find("nullable");
      if (n == s.end() || !n->is_boolean() || !n->get<bool>()) return e;
      return b_.group({{*e}, lit("null")}, "nullable");
    };
    auto t = s.find("type");
    if (t == s.end()) {
      if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
        return nullable(object(s, depth));
      if (s.contains("items") || s.contains("prefixItems")) return nullable(array(s, depth));
      if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength"))
        return nullable(string(s));
      return value_any();
    }
    if (t->is_array()) {
      if (t->empty()) return bad("type must not be an empty list");
      alts_t alts;
      for (const auto& one : *t) {
        if (!one.is_string()) return bad("type entries must be strings");
        auto e = typed(s, one.get<std::string>(), depth);
        if (!e) return fail(std::move(e).error());
        alts.push_back({*e});
      }
      return nullable(b_.group(std::move(alts), "types"));
    }
    if (!t->is_string()) return bad("type must be a string or a list of strings");
    return nullable(typed(s, t->get<std::string>(), depth));
  }

  result<element> typed(const json& s, const std::string& type, int depth) {
    if (type == "object") return object(s, depth);
    if (type == "array") return array(s, depth);
    if (type == "string") return string(s);
    if (type == "integer") return integer(non_negative(s));
    if (type == "number") return number(non_negative(s));
    if (type == "boolean") return b_.group({lit("true"), lit("false")}, "boolean");
    if (type == "null") return b_.group({lit("null")}, "null");
    return bad("unknown type `" + type + "`");
  }

  result<element> string(const json& s) {
    if (auto p = s.find("pattern"); p != s.end()) {
      if (!p->is_string()) return bad("pattern must be a string");
      std::string pat = p->get<std::string>();
      auto e = compile_regex(b_, pat, {{0, 0x1f}, {'"', '"'}, {'\\', '\\'}});
      if (!e) return bad("pattern: " + e.error().message);
      return b_.group({{element::one('"'), *e, element::one('"')}}, "pattern");
    }
    if (auto f = s.find("format"); f != s.end() && f->is_string()) {
      static const std::map<std::string, std::string> formats = {
          {"date", "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"},
          {"time", "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?"},
          {"date-time",
           "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
           "(\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"},
          {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
      };
      if (auto it = formats.find(f->get<std::string>()); it != formats.end()) {
        auto e = regex("format-" + it->first, it->second);
        if (!e) return fail(std::move(e).error());
        return b_.group({{element::one('"'), *e, element::one('"')}}, "format");
      }
    }
    const int lo = count(s, "minLength", 0), hi = count(s, "maxLength", k_unbounded);
    if (lo == 0 && hi == k_unbounded) return string_any();
    if (hi < lo) return bad("maxLength is below minLength");
    auto c = string_char();
    if (!c) return fail(std::move(c).error());
    auto body = b_.repeat({*c}, lo, hi, "chars");
    if (!body) return bad(body.error().message);
    return b_.group({{element::one('"'), *body, element::one('"')}}, "string");
  }

  result<element> array(const json& s, int depth) {
    auto w = ws();
    if (!w) return fail(std::move(w).error());
    auto items = s.find("items");
    if (auto pre = s.find("prefixItems"); pre != s.end()) {
      if (!pre->is_array()) return bad("prefixItems must be an array");
      sequence out{element::one('['), *w};
      bool first = true;
      for (const auto& item : *pre) {
        auto e = visit(item, depth + 1);
        if (!e) return fail(std::move(e).error());
        if (!first) out.insert(out.end(), {element::one(','), *w});
        out.insert(out.end(), {*e, *w});
        first = false;
      }
      if (items != s.end() && !(items->is_boolean() && !items->get<bool>())) {
        auto e = visit(*items, depth + 1);
        if (!e) return fail(std::move(e).error());
        auto more = b_.repeat({element::one(','), *w, *e, *w}, 0, k_unbounded, "more");
        if (!more) return fail(std::move(more).error());
        if (!pre->empty()) out.push_back(*more);
      }
      out.push_back(element::one(']'));
      return b_.group({out}, "tuple");
    }
    element item = element::any();
    if (items == s.end()) {
      auto v = value_any();
      if (!v) return fail(std::move(v).error());
      item = *v;
    } else {
      auto v = visit(*items, depth + 1);
      if (!v) return fail(std::move(v).error());
      item = *v;
    }
    const int lo = count(s, "minItems", 0), hi = count(s, "maxItems", k_unbounded);
    if (hi < lo) return bad("maxItems is below minItems");
    auto seq = members('[', ']', {item, *w}, lo, hi);
    if (!seq) return bad(seq.error().message);
    return b_.group({*seq}, "array");
  }

  result<element> object(const json& s, int depth) {
    auto w = ws();
    if (!w) return fail(std::move(w).error());
    auto props = s.find("properties");
    auto addl = s.find("additionalProperties");
    const bool has_props = props != s.end() && props->is_object() && !props->empty();
    if (props != s.end() && !props->is_object()) return bad("properties must be an object");
    // Members beyond the listed ones: their value's element, or nothing when not allowed.
    std::optional<element> extra;
    bool any_extra = false;
    if (addl != s.end() && addl->is_object()) {
      auto e = visit(*addl, depth + 1);
      if (!e) return fail(std::move(e).error());
      extra = *e;
    } else if (addl != s.end() && addl->is_boolean()) {
      any_extra = addl->get<bool>();
    } else {
      any_extra = !has_props || opt_.allow_additional_properties;
    }
    if (any_extra) {
      auto v = value_any();
      if (!v) return fail(std::move(v).error());
      extra = *v;
    }
    if (!has_props) {
      if (!extra) return b_.group({{element::one('{'), *w, element::one('}')}}, "empty-object");
      auto m = kv_member(*extra);
      if (!m) return fail(std::move(m).error());
      auto seq = members('{', '}', *m, 0, k_unbounded);
      if (!seq) return fail(std::move(seq).error());
      return b_.group({*seq}, "object");
    }
    std::vector<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) return bad("required must be an array");
      for (const auto& x : *r)
        if (x.is_string()) required.push_back(x.get<std::string>());
    }
    // first_k: properties k.. with none written yet; next_k: with some written (each
    // starts with a comma). Optional properties may be skipped.
    const std::size_t n = props->size();
    std::vector<std::uint32_t> first(n + 1), next(n + 1);
    for (std::size_t k = 0; k <= n; ++k) {
      first[k] = b_.fresh("props");
      next[k] = b_.fresh("props");
    }
    if (extra) {
      auto m = kv_member(*extra);
      if (!m) return fail(std::move(m).error());
      sequence more{element::one(','), *w};
      more.insert(more.end(), m->begin(), m->end());
      more.push_back(element::ref(next[n]));
      b_.add_alt(next[n], more);
      b_.add_alt(next[n], {});
      sequence some = *m;
      some.push_back(element::ref(next[n]));
      b_.add_alt(first[n], some);
      b_.add_alt(first[n], {});
    } else {
      b_.add_alt(first[n], {});
      b_.add_alt(next[n], {});
    }
    std::size_t k = n;
    for (auto it = props->rbegin(); it != props->rend(); ++it) {
      --k;
      auto v = visit(it.value(), depth + 1);
      if (!v) return fail(std::move(v).error());
      sequence member = lit(json(it.key()).dump());
      member.insert(member.end(), {*w, element::one(':'), *w, *v, *w});
      const bool req = std::find(required.begin(), required.end(), it.key()) != required.end();
      sequence a = member;
      a.push_back(element::ref(next[k + 1]));
      b_.add_alt(first[k], a);
      sequence bseq{element::one(','), *w};
      bseq.insert(bseq.end(), member.begin(), member.end());
      bseq.push_back(element::ref(next[k + 1]));
      b_.add_alt(next[k], bseq);
      if (!req) {
        b_.add_alt(first[k], {element::ref(first[k + 1])});
        b_.add_alt(next[k], {element::ref(next[k + 1])});
      }
    }
    return b_.group({{element::one('{'), *w, element::ref(first[0]), element::one('}')}}, "object");
  }

  const json& root_;
  json_grammar_options opt_;
  builder& b_;
  std::map<std::string, std::uint32_t> shared_;
  std::map<std::string, std::uint32_t> refs_;
};

}  // namespace

result<element> add_json_schema(builder& b, const nlohmann::ordered_json& schema, const json_grammar_options& opt) {
  return schema_compiler(b, schema, opt).document();
}

result<grammar> compile_json_schema(const nlohmann::ordered_json& schema, const json_grammar_options& opt) {
  builder b;
  std::uint32_t start = b.rule_id("root");
  auto doc = add_json_schema(b, schema, opt);
  if (!doc) return fail(std::move(doc).error());
  b.add_alt(start, {*doc});
  return std::move(b).finish(start);
}

result<grammar> json_object_grammar(const json_grammar_options& opt) {
  static const nlohmann::ordered_json empty = nlohmann::ordered_json::object();
  builder b;
  std::uint32_t start = b.rule_id("root");
  auto doc = schema_compiler(b, empty, opt).any_object_document();
  if (!doc) return fail(std::move(doc).error());
  b.add_alt(start, {*doc});
  return std::move(b).finish(start);
}

result<grammar> choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) return fail(errc::invalid_argument, "choice needs at least one string");
  builder b;
  std::uint32_t root = b.rule_id("root");
  for (const auto& c : choices) b.add_alt(root, lit(c));
  return std::move(b).finish(root);
}

}  // namespace vks::text::grammar
