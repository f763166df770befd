// gemma2: Gemma 2 (GGUF "gemma2"). The layer is gemma_block.hpp's; what makes it Gemma 2 is
// the config (config.cpp, from llama.cpp's gemma2 hparams): sliding window on even layers,
// attention and final logit soft-capping (50 / 30 unless the GGUF says), no q/k norm.
#include "model/gemma_block.hpp"

namespace vks::model {

const architecture arch_gemma2{"gemma2", &record_gemma_layer};

}  // namespace vks::model
