// Internal: Hugging Face tokenizer.json / tokenizer_config.json field readers shared by
// the HF loaders. Functions may throw nlohmann exceptions; callers catch at the boundary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "text/tokenizer/tokenizer_impl.hpp"

namespace vks::text {

// vocab: {"piece": id, ...} -> t.pieces (ids must be dense 0..n-1 after added tokens).
result<void> hf_fill_vocab(tokenizer::impl& t, const nlohmann::json& vocab, const std::string& what);

}  // namespace vks::text
