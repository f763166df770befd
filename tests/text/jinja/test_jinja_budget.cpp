// Render budgets (issue #17): each hostile template below crashed, ran out of memory or
// held the thread for seconds before the budgets existed; now each ends with its budget's
// error. Also: real templates stay far inside the defaults, variable reads share strings,
// and the parser's recursion is bounded.
#include "catch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "text/jinja/chat_template.hpp"

using vks::text::jinja::chat_template;
using vks::text::jinja::render_limits;
using vks::text::jinja::render_stats;
using json = nlohmann::ordered_json;

namespace {

// The default budgets without the wall-clock deadline, so that which budget ends a render
// does not depend on the machine's speed (sanitizer builds run several times slower); the
// deadline has a test of its own.
render_limits untimed() {
  render_limits lim;
  lim.timeout_ms = 0;
  return lim;
}

vks::result<std::string> render(const std::string& src, const json& ctx = json::object(),
                                const render_limits& lim = render_limits{}) {
  auto t = chat_template::parse(src);
  if (!t) return vks::fail(std::move(t).error());
  return t->render(ctx, lim);
}

// Renders and requires an error whose message contains `want`.
void fails_with(const std::string& src, const std::string& want, const json& ctx = json::object(),
                const render_limits& lim = untimed()) {
  auto r = render(src, ctx, lim);
  INFO("template: " << src.substr(0, 300) << "\nresult: " << (r.ok() ? "ok (" + std::to_string(r->size()) + " bytes)" : r.error().message));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find(want) != std::string::npos);
  CHECK(r.error().code == vks::errc::invalid_argument);
}

const std::string steps = "chat template exceeded its step budget (10000000)";
const std::string bytes = "chat template exceeded its byte budget (67108864 bytes)";
const std::string big = "{% set s = 'x' * 1000000 %}";  // 1 MB

}  // namespace

TEST_CASE("budget: values nest at most max_value_depth deep", "[jinja][budget]") {
  // 1.5M nested lists: destroying the value recursed 1.5M times and crashed.
  fails_with("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% for j in range(1500) %}"
             "{% set ns.x = [ns.x] %}{% endfor %}{% endfor %}{{ ns.x | length }}",
             "value nested too deeply (limit 256)");
  fails_with("{% set ns = namespace(x={}) %}{% for i in range(300) %}{% set ns.x = {'a': ns.x} %}{% endfor %}",
             "value nested too deeply (limit 256)");
  fails_with("{% set ns = namespace(x=1) %}{% for i in range(300) %}{% set ns.x = dict(a=ns.x) %}{% endfor %}",
             "value nested too deeply (limit 256)");
  // A namespace that contains itself: str(), ==, tojson and `in` recursed without end.
  const std::string cyc = "{% set ns = namespace() %}{% set ns.x = ns %}{% set ns.y = [ns] %}";
  fails_with(cyc + "{{ ns }}", "value nested too deeply");
  fails_with(cyc + "{{ ns.y | tojson }}", "value nested too deeply");
  CHECK(render(cyc + "{{ ns.y == [ns] }}").ok());  // identity: no walk
  render_limits lim;
  lim.max_value_depth = 4;
  fails_with("{{ [[[[[1]]]]] }}", "value nested too deeply (limit 4)", json::object(), lim);
  // Request data nested deeper than the limit is refused too (from_json recursed).
  json deep = json::array();
  for (int i = 0; i < 300; ++i) deep = json::array({deep});
  fails_with("{{ x | length }}", "value nested too deeply (limit 256)", json{{"x", deep}});
}

TEST_CASE("budget: strings and lists are charged before they are built", "[jinja][budget]") {
  // Doubling a string 40 times asked for 1 TB.
  fails_with("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", bytes);
  fails_with("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", bytes);
  // `*`'s old size check overflowed: 16 bytes x 2^60 wrapped to 0 and passed.
  fails_with("{{ ('x' * 16) * 1152921504606846976 }}", bytes);
  fails_with("{{ 'xx' * 9223372036854775807 }}", bytes);
  fails_with("{{ [1, 2] * 4611686018427387904 }}", bytes);
  // replace('', s) inserts s between every character: 10^12 bytes.
  fails_with(big + "{{ s.replace('', s) }}", bytes);
  fails_with(big + "{{ s | replace('x', s) }}", bytes);
  std::string fields, percents, args;
  for (int i = 0; i < 100; ++i) {
    fields += "{0}";
    percents += "%s";
    args += i ? ", s" : "s";
  }
  fails_with(big + "{{ '" + fields + "'.format(s) }}", bytes);
  fails_with(big + "{{ '" + percents + "' % (" + args + ") }}", bytes);
  fails_with(big + "{{ '" + percents + "' | format(" + args + ") }}", bytes);
  fails_with(big + "{{ [" + args + "] | sum(start='') }}", bytes);
  fails_with(big + "{{ [" + args + "] | join }}", bytes);
  fails_with(big + "{{ s.join([" + args + "]) }}", bytes);
  fails_with("{{ ('\\n' * 100000) | indent(60000) }}", bytes);
  fails_with("{{ ('<' * 20000000) | e }}", bytes);
  fails_with("{{ [1] | batch(1000000000000, 'x') | list }}", bytes);
  // A value per character / per part: 40M of them were built before anything was counted.
  const std::string many = "{% set s = 'a,' * 20000000 %}";
  fails_with(many + "{% for c in s %}{% endfor %}", bytes);
  fails_with(many + "{{ s.split(',') | length }}", bytes);
  fails_with(many + "{{ s.split() | length }}{{ s.replace(',', ' ').split() | length }}", bytes);
  fails_with("{% set s = '\\n' * 40000000 %}{{ s.splitlines() | length }}", bytes);
  // Lists of big strings: printing 100k references to 1 MB is 100 GB of text.
  fails_with(big + "{% set l = [s] * 100000 %}{{ l }}", bytes);
  fails_with(big + "{% set l = [s] * 100000 %}{{ l | tojson }}", bytes);
  fails_with(big + "{% set l = [s] * 100000 %}{{ l | join }}", bytes);
  // Output written 1 MB at a time, through macros (each body is a buffer of its own).
  fails_with(big + "{% for i in range(100) %}{{ s }}{% endfor %}", bytes);
  fails_with(big + "{% macro m() %}{% for i in range(50) %}{{ s }}{% endfor %}{% endmacro %}{{ m() }}{{ m() }}", bytes);
}

TEST_CASE("budget: every evaluation, call and iteration is a step", "[jinja][budget]") {
  // 2^25 macro calls took 16 s on the I/O thread; under the default budgets they end at the
  // step budget (or the 2 s deadline on a slow machine).
  fails_with("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(24) }}",
             "chat template exceeded its ");
  // The same with a deterministic budget (no deadline).
  render_limits lim;
  lim.max_steps = 1'000'000;
  lim.timeout_ms = 0;
  const std::string steps_1m = "chat template exceeded its step budget (1000000)";
  const json none = json::object();
  fails_with("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(24) }}", steps_1m, none, lim);
  fails_with("{% set r = range(10000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}", steps_1m, none, lim);
  fails_with("{% set r = range(10000) %}{% for i in r %}{% for j in r %}{{ i + j > 0 and '' }}{% endfor %}{% endfor %}",
             steps_1m, none, lim);
  // Quadratic builtins are charged per element they walk.
  fails_with("{{ range(100000) | unique | list | length }}", steps_1m, none, lim);
  fails_with("{% set l = range(100000) | list %}{% for i in range(1000) %}{{ -1 in l }}{% endfor %}", steps_1m, none, lim);
  fails_with("{% set l = range(100000) | list %}{{ l | sort | sort | sort | sort | sort | sort | length }}", steps_1m, none, lim);
  // Walking big text is charged per KiB.
  fails_with("{% set s = 'x' * 10000000 %}{% for i in range(1000) %}{{ s.count('y') }}{% endfor %}", steps_1m, none, lim);
  // Linear lookups in a frame or dict of 50k names: each costs its length.
  std::string sets, keys = "{% set d = {";
  for (int i = 0; i < 50000; ++i) {
    sets += "{% set v" + std::to_string(i) + " = 1 %}";
    keys += (i ? ", 'k" : "'k") + std::to_string(i) + "': 1";
  }
  fails_with(sets + "{% for i in range(100000) %}{{ v0 }}{% endfor %}", steps_1m, none, lim);
  fails_with(keys + "} %}{% for i in range(100000) %}{{ d.k0 }}{% endfor %}", steps_1m, none, lim);
  lim.max_steps = 1000;
  fails_with("{% for i in range(2000) %}{% endfor %}", "step budget (1000)", none, lim);
}

TEST_CASE("budget: Python's str methods and format specs are charged before they build", "[jinja][budget]") {
  fails_with("{{ '{:999999999}'.format(1) }}", "Too many decimal digits in format string");  // > 2^24
  fails_with("{{ '{:16000000}{:16000000}{:16000000}{:16000000}{:16000000}'.format(1, 2, 3, 4, 5) }}", bytes);
  fails_with("{% for i in range(5) %}{{ '{:>{w}}'.format('x', w=16000000) }}{% endfor %}", bytes);
  fails_with("{{ 'x'.center(1000000000) }}", bytes);
  fails_with("{{ 'x'.ljust(1000000000, '*') }}", bytes);
  fails_with("{{ '1'.zfill(1000000000) }}", bytes);
  fails_with("{{ ('\\t' * 1000).expandtabs(1000000) }}", bytes);
  fails_with(big + "{{ ('<' + s) | safe + s }}{{ (s | safe) + ('<' * 20000000) }}", bytes);
  fails_with(big + "{{ ('-' | safe).join([s ~ '<'] * 100) }}", bytes);
  fails_with(big + "{% set l = [s] * 100 %}{{ l | tojson(indent=' ' * 100000) }}", bytes);
  fails_with("{{ 'x' | tojson(ensure_ascii=true) * 1 }}{{ ('\u00e9' * 20000000) | tojson(ensure_ascii=true) }}", bytes);
  // A dict with a big key is charged like its value.
  fails_with(big + "{% set ns = namespace(d={}) %}{% for i in range(100) %}{% set ns.d = {(s, i): ns.d} %}{% endfor %}{{ ns.d }}",
             bytes);
}

TEST_CASE("budget: recursive loops are bounded and a kept loop is not called after it ends", "[jinja][budget]") {
  fails_with("{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}", "chat template recursion too deep (limit 1024)");
  fails_with("{% set ns = namespace() %}{% for x in [1] recursive %}{% set ns.f = loop %}{% endfor %}"
             "{% set f = ns.f %}{{ f([1]) }}",
             "a recursive loop cannot be called after it ended");
  fails_with("{{ {[1]: 2} }}", "unhashable type: 'list'");
  fails_with("{{ {'a': 1, 2: 'b'} | dictsort }}", "'<' not supported between instances of 'int' and 'str'");
}

TEST_CASE("budget: macro recursion and the render's C++ recursion are bounded", "[jinja][budget]") {
  fails_with("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "macro calls nested too deeply (limit 64)");
  fails_with("{% macro f() %}{% call f() %}{% endcall %}{% endmacro %}{{ f() }}", "macro calls nested too deeply (limit 64)");
  // Each macro level evaluates a 50-deep expression: recursion, not the call count, binds.
  std::string open(50, '['), close(50, ']');
  fails_with("{% macro f(n) %}{{ " + open + "f(n + 1)" + close + " }}{% endmacro %}{{ f(0) }}",
             "chat template recursion too deep (limit 1024)");
}

TEST_CASE("caller() kept past its call block is an error, not a dangling scope", "[jinja][budget]") {
  fails_with("{% set ns = namespace() %}{% macro m() %}{% set ns.c = caller %}{% endmacro %}"
             "{% for i in [1] %}{% call m() %}{{ i }}{% endcall %}{% endfor %}{{ ns.c() }}",
             "caller() called outside its call block");
}

TEST_CASE("budget: the deadline ends a render", "[jinja][budget]") {
  render_limits lim;
  lim.max_steps = ~0ull;
  lim.timeout_ms = 50;
  lim.max_bytes = ~0ull;
  fails_with("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
             "chat template exceeded its time budget (50 ms)", json::object(), lim);
}

TEST_CASE("budget: the parser's recursion is bounded", "[jinja][budget]") {
  const std::pair<const char*, const char*> nests[] = {{"(", ")"}, {"[", "]"}, {"{'a': ", "}"}, {"not ", ""},
                                                      {"-", ""}, {"1 if ", ""}, {"x.y(", ")"}, {"x[", "]"}};
  for (auto [open, close] : nests) {
    std::string src = "{{ ";
    for (int i = 0; i < 100000; ++i) src += open;
    src += "1";
    for (int i = 0; i < 100000; ++i) src += close;
    src += " }}";
    auto t = chat_template::parse(src);
    INFO(open << ": " << (t.ok() ? "ok" : t.error().message));
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message.find("nested too deeply") != std::string::npos);
  }
  std::string ifs;
  for (int i = 0; i < 100000; ++i) ifs += "{% if x %}";
  CHECK_FALSE(chat_template::parse(ifs).ok());
}

TEST_CASE("budget: reading a variable shares its string", "[jinja][budget]") {
  // 1,000 reads and passes of a 10 MB request string would copy 10 GB; with shared
  // strings they cost no bytes (the request's own data is not charged either).
  json ctx = {{"s", std::string(10u << 20, 'x')}};
  render_limits lim;
  lim.max_bytes = 1u << 20;
  vks::result<std::string> r = render("{% macro m(x) %}{% set y = x %}{{ y is string }}{% endmacro %}"
                  "{% for i in range(1000) %}{% set t = s %}{% set u = [t, s][0] %}{% set v = m(u) %}{% endfor %}ok",
                  ctx, lim);
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  CHECK(*r == "ok");
}

namespace {
std::string env_or(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

// The golden renders (test_jinja_golden.cpp) run under the default limits; this checks the
// headroom: every real template renders every golden conversation within 1% of the step
// and byte budgets, within a 16-deep value/4-deep call nesting and 64 nested evaluations.
TEST_CASE("budget: real chat templates use a small fraction of the defaults", "[jinja][budget]") {
  const std::string shared = env_or("VKS_SHARED", "../shared");
  const std::string dir = env_or("VKS_SOURCE_ROOT", ".") + "/tests/text/jinja";
  const std::string manifest_text = slurp(dir + "/golden/MANIFEST.json");
  REQUIRE_FALSE(manifest_text.empty());
  if (slurp(shared + "/models/chat-templates/README.md").empty()) {
    WARN("shared test data not found at " << shared << "; skipping");
    return;
  }
  json manifest = json::parse(manifest_text);
  render_limits tight;
  tight.max_steps = render_limits{}.max_steps / 100;
  tight.max_bytes = render_limits{}.max_bytes / 100;
  tight.max_value_depth = 16;
  tight.max_call_depth = 4;
  tight.max_recursion = 64;
  int n = 0;
  render_stats worst;
  for (const auto& t : manifest["templates"]) {
    const std::string path = t["path"].get<std::string>();  // "repo:..." is under the source root
    std::string src = slurp(path.rfind("repo:", 0) == 0 ? env_or("VKS_SOURCE_ROOT", ".") + "/" + path.substr(5)
                                                         : shared + "/" + path);
    REQUIRE_FALSE(src.empty());
    if (!t["json_key"].is_null()) src = json::parse(src)[t["json_key"].get<std::string>()].get<std::string>();
    auto tmpl = chat_template::parse(src);
    REQUIRE(tmpl.ok());
    tmpl->set_fixed_now(0);
    for (const auto& c : manifest["conversations"]) {
      auto req = json::parse(slurp(dir + "/conversations/" + c.get<std::string>() + ".json"));
      auto in = vks::text::jinja::inputs_from_request(req);
      REQUIRE(in.ok());
      in->bos_token = "<s>";
      in->eos_token = "</s>";
      auto ctx = vks::text::jinja::build_context(*in);
      auto loose = tmpl->render(ctx);
      render_stats st;
      auto r = tmpl->render(ctx, tight, &st);
      INFO(t["name"].get<std::string>() << " / " << c.get<std::string>());
      if (!loose.ok()) {  // the template itself refuses this conversation: so must the tight render
        CHECK_FALSE(r.ok());
        continue;
      }
      REQUIRE(r.ok());
      CHECK(*r == *loose);
      worst.steps = std::max(worst.steps, st.steps);
      worst.bytes = std::max(worst.bytes, st.bytes);
      ++n;
    }
  }
  CHECK(n > 20);
  std::printf("real templates: %d renders, worst %llu steps, %llu bytes\n", n,
              static_cast<unsigned long long>(worst.steps), static_cast<unsigned long long>(worst.bytes));
}
