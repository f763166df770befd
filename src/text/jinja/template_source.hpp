// Where a model's chat template comes from: a GGUF file (tokenizer.chat_template[.NAME]),
// a tokenizer_config.json (chat_template as a string or a list of {name, template}), a
// chat_template.jinja file, or a model directory holding either. Also the documented
// fallback template for models that have none.
#pragma once

#include <string>

#include "base/result.hpp"

namespace vks::text::jinja {

// `path`: .gguf file, .json (tokenizer_config), any other file (template text), or a
// directory (chat_template.jinja, then tokenizer_config.json). `name` selects a named
// template ("" = "default", else the only/first one). errc::not_found when absent.
result<std::string> load_template_source(const std::string& path, const std::string& name = {});

// ChatML (<|im_start|>role\ncontent<|im_end|>\n ...), used when a model has no template.
const std::string& fallback_template();

}  // namespace vks::text::jinja
