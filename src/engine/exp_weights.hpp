// exp_weights: the unnormalized sampling weights of a logits row, w[i] = exp((l[i] - l_max) / T),
// computed four lanes at a time with a polynomial exp (no libm call per element). The sampler
// draws from these over the whole vocabulary each step for each sequence, so this loop is
// the engine thread's largest per-token cost at high batch (49,152 or 151,643 entries per
// sequence); std::exp in double took 0.26 ms per 49,152-entry row on the development VM,
// this 0.05 ms.
#pragma once

#include <span>

namespace vks::engine {

// Writes w[i] = exp((logits[i] - l_max) * inv_t) into w (same size as logits; may be the
// same memory), with 0 for NaN logits and for weights below min_w, and returns the sum of
// the written weights (in double, over the float weights as written). Requires
// logits[i] <= l_max for every non-NaN entry and inv_t > 0. Relative error of each weight
// < 1e-6 against exp in double; inputs below -87 (after scaling) give 0.
double exp_weights(std::span<const float> logits, float l_max, float inv_t, float min_w, std::span<float> w);

// The scalar exp of the same algorithm, for x <= 0 (x < -87 gives 0); for tests.
float exp_nonpositive(float x);

}  // namespace vks::engine
