// Locating chat template sources (see template_source.hpp). Library exceptions from the
// JSON parser are caught here and returned as errc::parse.
#include "text/jinja/template_source.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/gguf.hpp"
#include "base/mapped_file.hpp"

namespace vks::text::jinja {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

result<std::string> from_tokenizer_config(const std::string& path, const std::string& name) {
  auto text = read_file(path);
  if (!text) return fail(std::move(text).error());
  try {
    auto j = nlohmann::json::parse(*text);
    if (!j.is_object() || !j.contains("chat_template")) return fail(errc::not_found, path + " has no chat_template");
    const auto& ct = j["chat_template"];
    if (ct.is_string()) return ct.get<std::string>();
    if (ct.is_array()) {
      const std::string want = name.empty() ? "default" : name;
      for (const auto& e : ct)
        if (e.is_object() && e.value("name", "") == want && e.contains("template") && e["template"].is_string())
          return e["template"].get<std::string>();
      if (name.empty() && !ct.empty() && ct[0].is_object() && ct[0].contains("template") && ct[0]["template"].is_string())
        return ct[0]["template"].get<std::string>();
      return fail(errc::not_found, path + " has no chat template named '" + want + "'");
    }
    return fail(errc::parse, path + ": chat_template must be a string or a list");
  } catch (const std::exception& e) {
    return fail(errc::parse, path + ": " + e.what());
  }
}

result<std::string> from_gguf(const std::string& path, const std::string& name) {
  auto f = gguf::file::open(path);
  if (!f) return fail(std::move(f).error());
  std::string key = name.empty() || name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name;
  if (auto s = f->get_string(key)) return *s;
  return fail(errc::not_found, path + " has no " + key);
}

}  // namespace

result<std::string> load_template_source(const std::string& path, const std::string& name) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::string jinja = path + "/chat_template.jinja";
    if (std::filesystem::exists(jinja, ec)) return read_file(jinja);
    std::string cfg = path + "/tokenizer_config.json";
    if (std::filesystem::exists(cfg, ec)) return from_tokenizer_config(cfg, name);
    return fail(errc::not_found, "no chat template in " + path);
  }
  if (ends_with(path, ".gguf")) return from_gguf(path, name);
  if (ends_with(path, ".json")) return from_tokenizer_config(path, name);
  return read_file(path);
}

const std::string& fallback_template() {
  static const std::string t =
      "{%- for message in messages -%}"
      "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
      "{%- if message['content'] is string -%}{{- message['content'] -}}"
      "{%- elif message['content'] is iterable -%}{%- for part in message['content'] -%}{%- if part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}{%- endfor -%}"
      "{%- endif -%}"
      "{{- '<|im_end|>\\n' -}}"
      "{%- endfor -%}"
      "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";
  return t;
}

}  // namespace vks::text::jinja
