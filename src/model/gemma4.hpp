// gemma4: Gemma 4 (text; GGUF "gemma4", llama.cpp's gemma4 graph). The layer (arch_gemma4)
// and the per-layer embedding inputs the runner records once per step before the layers.
// What the config carries for it: model_config's Gemma 4 fields (config.hpp).
#pragma once

#include <span>
#include <vector>

#include "model/arch.hpp"

namespace vks::model {

// With c.n_embd_per_layer = P > 0, after the scaled token embeddings are in s.x: s.ple {P,
// L*T} (rows l*T .. l*T+T-1: layer l's input) = (per_layer_token_embd rows * sqrt(P) +
// rms_norm(per_layer_model_proj . x / sqrt(C)) * per_layer_proj_norm) / sqrt(2), as
// llama.cpp's project_per_layer_inputs. idx {L*T} i32 must hold token[t] * L + l at l*T + t
// (rows of per_layer_token_embd viewed as {P, L*V}); tmp is {P, L*T} scratch.
void record_per_layer_inputs(gpu::backend& be, const model_config& c, const model_weights& mw, const step_views& s,
                             const gpu::tensor& idx, const gpu::tensor& tmp);

// The host side of idx above for tokens[0..T).
std::vector<int32_t> per_layer_input_rows(const model_config& c, std::span<const int32_t> tokens);

}  // namespace vks::model
