// Golden tests: every chat template under $VKS_SHARED/models and tests/text/jinja/templates renders every conversation in
// tests/text/jinja/conversations/ byte-for-byte like Hugging Face (goldens written by
// tools/golden-templates with Python Jinja2). A golden '!error T: msg' means HF raised; we
// must fail too, with exactly `msg` when T is TemplateError (raise_exception).
#include "catch.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "text/jinja/chat_template.hpp"

using vks::text::jinja::chat_template;
using json = nlohmann::ordered_json;

namespace {

std::string env_or(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

std::string show_diff(const std::string& want, const std::string& got) {
  std::size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  std::size_t from = i > 120 ? i - 120 : 0;
  std::ostringstream os;
  os << "first difference at byte " << i << " (expected " << want.size() << " bytes, got " << got.size() << ")\n"
     << "--- expected (from byte " << from << ") ---\n" << want.substr(from, 300)
     << "\n--- got ---\n" << got.substr(from, 300) << "\n---";
  return os.str();
}

}  // namespace

TEST_CASE("chat templates render exactly like Hugging Face", "[jinja][golden]") {
  const std::string shared = env_or("VKS_SHARED", "../shared");
  const std::string root = env_or("VKS_SOURCE_ROOT", ".");
  const std::string dir = root + "/tests/text/jinja";
  std::string text;
  REQUIRE(read_file(dir + "/golden/MANIFEST.json", text));
  json manifest = json::parse(text);
  std::string probe;
  if (!read_file(shared + "/models/chat-templates/README.md", probe)) {
    WARN("shared test data not found at " << shared << "; skipping golden renders");
    return;
  }
  int n_checked = 0;
  for (const auto& t : manifest["templates"]) {
    std::string name = t["name"].get<std::string>();
    std::string source;
    const std::string path = t["path"].get<std::string>();
    const bool in_repo = path.rfind("repo:", 0) == 0;  // tests/text/jinja/templates, not shared/
    REQUIRE(read_file(in_repo ? root + "/" + path.substr(5) : shared + "/" + path, source));
    if (!t["json_key"].is_null()) source = json::parse(source)[t["json_key"].get<std::string>()].get<std::string>();
    auto tmpl = chat_template::parse(source);
    INFO("template " << name);
    REQUIRE(tmpl.ok());
    tmpl->set_fixed_now(1768473000);  // 2026-01-15T10:30:00Z == golden FIXED_NOW
    for (const auto& c : manifest["conversations"]) {
      std::string conv = c.get<std::string>();
      std::string req_text, want;
      REQUIRE(read_file(dir + "/conversations/" + conv + ".json", req_text));
      REQUIRE(read_file(dir + "/golden/" + name + "__" + conv + ".txt", want));
      auto inputs = vks::text::jinja::inputs_from_request(json::parse(req_text));
      REQUIRE(inputs.ok());
      inputs->bos_token = manifest["bos_token"].get<std::string>();
      inputs->eos_token = manifest["eos_token"].get<std::string>();
      auto got = tmpl->render(vks::text::jinja::build_context(*inputs));
      INFO("conversation " << conv);
      ++n_checked;
      if (want.rfind("!error ", 0) == 0) {
        INFO("expected an error: " << want << (got.ok() ? "\ngot output:\n" + *got : std::string()));
        CHECK_FALSE(got.ok());
        const std::string raised = "!error TemplateError: ";
        if (!got.ok() && want.rfind(raised, 0) == 0) CHECK(got.error().message == want.substr(raised.size()));
        continue;
      }
      INFO((got.ok() ? show_diff(want, *got) : "render failed: " + got.error().message));
      CHECK((got.ok() && *got == want));
    }
  }
  CHECK(n_checked > 300);
}
