// The architecture table (name -> layer recorder).
#include "model/arch.hpp"

namespace vks::model {

const architecture* find_architecture(std::string_view name) {
  for (const architecture* a : {&arch_llama, &arch_qwen2, &arch_qwen3, &arch_qwen3moe, &arch_gpt_oss, &arch_phi3, &arch_smollm3, &arch_mistral3, &arch_gemma2, &arch_gemma3, &arch_gemma4, &arch_qwen35,
                            &arch_qwen35moe, &arch_qwen3next})
    if (a->name == name) return a;
  return nullptr;
}

}  // namespace vks::model
