// Engine semantics: cases in engine_cases.json (expected outputs produced by Python Jinja2
// with HF's environment, see tools/golden-templates), error positions, hostile templates
// (limits instead of crashes/hangs), the HF context builder and thread-safe rendering.
#include "catch.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "text/jinja/chat_template.hpp"

using vks::text::jinja::chat_template;
using json = nlohmann::ordered_json;

namespace {

vks::result<std::string> render(const std::string& src, const json& ctx = json::object()) {
  auto t = chat_template::parse(src);
  if (!t) return vks::fail(std::move(t).error());
  return t->render(ctx);
}

std::string must(const std::string& src, const json& ctx = json::object()) {
  auto r = render(src, ctx);
  INFO("template: " << src << (r.ok() ? std::string() : "\nerror: " + r.error().message));
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("engine cases match Python Jinja2", "[jinja]") {
  const char* root = std::getenv("VKS_SOURCE_ROOT");
  std::ifstream f(std::string(root ? root : ".") + "/tests/text/jinja/engine_cases.json");
  REQUIRE(f.good());
  json cases = json::parse(f);
  REQUIRE(cases.size() > 40);
  for (const auto& c : cases) {
    const std::string src = c["src"].get<std::string>();
    const std::string want = c["out"].get<std::string>();
    auto got = render(src, c["ctx"]);
    INFO("template: " << src << "\nexpected: " << want << "\ngot: " << (got.ok() ? *got : "error " + got.error().message));
    if (want.rfind("!error ", 0) == 0) CHECK_FALSE(got.ok());
    else CHECK((got.ok() && *got == want));
  }
}

TEST_CASE("whitespace control follows trim_blocks and lstrip_blocks", "[jinja]") {
  CHECK(must("{% if true %}\nx\n{% endif %}\n") == "x\n");
  CHECK(must("  {% if true %}a{% endif %}") == "a");
  CHECK(must("  {{ 'v' }}") == "  v");  // lstrip_blocks leaves print tags alone
  CHECK(must("a\r\nb\r\n") == "a\nb");  // newlines normalised, one trailing newline dropped
}

TEST_CASE("errors carry line and column", "[jinja]") {
  auto r = render("line1\n{% if %}");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == vks::errc::parse);
  CHECK(r.error().message.find("line 2") != std::string::npos);

  r = render("{% for x in xs %}\n  {{ x.y.z }}\n{% endfor %}", json{{"xs", json::array({json::object()})}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == vks::errc::invalid_argument);
  CHECK(r.error().message.find("line 2") != std::string::npos);

  r = render("{{ raise_exception('System role not supported') }}");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "System role not supported");

  for (const char* bad : {"{{", "{% if x %}", "{% for %}", "{{ 'unterminated }}", "{{ a. }}", "{% endfor %}",
                          "{% unknown %}", "{{ (1 }}", "{{ [1, 2 }}", "{# open", "{% set %}", "{{ x | }}"}) {
    INFO(bad);
    CHECK_FALSE(render(bad).ok());
  }
  CHECK_FALSE(render("{{ x.y }}").ok());        // attribute of undefined
  CHECK_FALSE(render("{{ 1 / 0 }}").ok());
  CHECK_FALSE(render("{{ 'a' + 1 }}").ok());
  CHECK_FALSE(render("{{ [1].append(2) }}").ok());  // immutable sandbox
  CHECK_FALSE(render("{{ nofunc() }}").ok());
  // appended (#23): a JSON integer past int64 (tool arguments) is an error, never wrapped.
  r = render("{{ n }}", json::parse(R"({"n": 12345678901234567890})"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("integer 12345678901234567890 is out of range") != std::string::npos);
  CHECK(render("{{ n }}", json::parse(R"({"n": 9223372036854775807})")).value() == "9223372036854775807");
}

TEST_CASE("hostile templates hit limits instead of crashing", "[jinja]") {
  CHECK_FALSE(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").ok());
  CHECK_FALSE(render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}").ok());
  CHECK_FALSE(render("{{ 'x' * 1000000000 }}").ok());
  CHECK_FALSE(render("{{ range(10000000) }}").ok());
  std::string deep(5000, '(');
  CHECK_FALSE(render("{{ " + deep + " }}").ok());
  std::string nested;
  for (int i = 0; i < 1000; ++i) nested += "{% if true %}";
  CHECK_FALSE(render(nested).ok());
  CHECK_FALSE(render("{{ '\\xZZ' }}").ok());
  CHECK_FALSE(render("{{ 9223372036854775807 + 1 }}").ok());
  CHECK_FALSE(render("{{ -9223372036854775807 - 2 }}").ok());
  CHECK_FALSE(render("{{ 3 ** 100 }}").ok());
  (void)render("{{ 1e300 | int | abs }}");  // beyond int64: must not be UB (Python would give a big int)
  CHECK(must("{{ range(-9223372036854775807, 9223372036854775807, 9223372036854775807) | list }}") ==
        "[-9223372036854775807, 0]");
  CHECK_FALSE(render("{{ range(-9223372036854775807, 9223372036854775807) }}").ok());
  std::string chain = "{{ x";
  for (int i = 0; i < 100000; ++i) chain += ".a";
  CHECK_FALSE(render(chain + " }}").ok());
  std::string sum = "{{ 1";
  for (int i = 0; i < 100000; ++i) sum += "+1";
  CHECK_FALSE(render(sum + " }}").ok());
  std::string filters = "{{ 'x'";
  for (int i = 0; i < 100000; ++i) filters += "|upper";
  CHECK_FALSE(render(filters + " }}").ok());
  CHECK_FALSE(render("{% macro a(n) %}{% for i in [1] %}{% if true %}{{ a(n) }}{% endif %}{% endfor %}{% endmacro %}{{ a(1) }}").ok());
}

TEST_CASE("build_context matches HF's render arguments", "[jinja]") {
  auto in = vks::text::jinja::inputs_from_request(json::parse(
      R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true,"enable_thinking":false,
          "chat_template_kwargs":{"custom":1}})"));
  REQUIRE(in.ok());
  in->bos_token = "<s>";
  json ctx = vks::text::jinja::build_context(*in);
  CHECK(ctx["tools"].is_null());
  CHECK(ctx["documents"].is_null());
  CHECK(ctx["add_generation_prompt"] == true);
  CHECK(ctx["enable_thinking"] == false);
  CHECK(ctx["custom"] == 1);
  CHECK(must("{{ bos_token }}{{ messages[0].content }}{{ tools is none }}{{ enable_thinking }}", ctx) == "<s>hiTrueFalse");
  CHECK_FALSE(vks::text::jinja::inputs_from_request(json::parse(R"({"messages": 3})")).ok());
}

TEST_CASE("strftime_now is overridable and render is thread-safe", "[jinja]") {
  auto t = chat_template::parse("{{ strftime_now('%Y-%m-%d %d %b %Y %B') }}{% for m in messages %}{{ m }}{% endfor %}");
  REQUIRE(t.ok());
  t->set_fixed_now(1768473000);
  json ctx{{"messages", json::array({"a", "b"})}};
  CHECK(*t->render(ctx) == "2026-01-15 15 Jan 2026 Januaryab");
  const chat_template& shared = *t;
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 200; ++i) ok[static_cast<std::size_t>(k)] += shared.render(ctx).ok() ? 1 : 0;
    });
  for (auto& th : threads) th.join();
  for (int n : ok) CHECK(n == 200);
}
