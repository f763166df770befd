// The Gemma 3 / Gemma 4 classes of write_test_hf (test_model.cpp): their config.json and the
// names their checkpoints give the language model's tensors. Gemma 4 is written as
// google/gemma-4-* publish it (Gemma4ForConditionalGeneration: text_config, tensors under
// model.language_model.) or as Gemma4ForCausalLM; Gemma 3 as Gemma3ForCausalLM or, asked for by
// test_model_spec::hf_class, as google/gemma-3-{4b,12b,27b}-it publish it
// (Gemma3ForConditionalGeneration of transformers 4: a text_config holding only the keys that
// differ from transformers' defaults, tensors under language_model.).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "testing/test_model.hpp"

namespace vks::model {

// `text`: the Gemma 2/3-style config.json hf_config wrote for sp. Returns it rewritten for sp's
// Gemma 3 / Gemma 4 class (other families: unchanged). errc::unsupported where the class cannot
// hold what the generated GGUF holds: a Gemma 4 spec whose sliding layers rotate part of the head
// (transformers' default rope rotates all of it) or with several global layers owning their KV
// (the generator gives the first its own V and the others K as V; HF's attention_k_eq_v is one
// flag for all); an unknown hf_class.
result<nlohmann::json> hf_gemma_config(const test_model_spec& sp, nlohmann::json text);

// `hf` (a name in the text-only class's layout, "model." / "lm_head.") as sp's class stores it.
std::string hf_gemma_tensor_name(const test_model_spec& sp, const std::string& hf);

}  // namespace vks::model
