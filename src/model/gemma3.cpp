// gemma3: Gemma 3 (GGUF "gemma3"). The layer is gemma_block.hpp's; what makes it Gemma 3 is
// the config (config.cpp, from llama.cpp's gemma3 hparams): q/k norms, sliding window
// on five of every six layers with a local rope base (10000, unscaled), no soft-capping.
#include "model/gemma_block.hpp"

namespace vks::model {

const architecture arch_gemma3{"gemma3", &record_gemma_layer};

}  // namespace vks::model
