// One llama.cpp reference checked against our runner on a backend, with the assertions
// every comparison test makes (test_llamacpp's weight types, presets and KV caches,
// test_families' architectures): |logprob| within the reference's tolerance, top-1 and
// greedy equal except at llama.cpp's own near ties; one summary line on stderr.
#pragma once

#include "catch.hpp"

#include <cstdio>
#include <string>

#include "helpers.hpp"
#include "llamacpp_reference.hpp"

namespace vks::model::testing {

// `ref` against its model, already written at `model_path` (write_reference_model). `tuning`:
// the vk kernel tuning `be` was made with, for the messages ("" when not forced).
inline void check_llamacpp_reference(gpu::backend& be, const llamacpp_reference& ref, const std::string& model_path,
                                     const std::string& tuning = "") {
  const auto tol = tolerance_for(ref);
  const auto c = compare_with_llamacpp(ref, be, model_path, tol);
  INFO(ref.name << " on " << be.info().name << (tuning.empty() ? "" : " tuning " + tuning) << ": max |logprob diff| " << c.max_logprob_diff << ", top-1 near ties "
                << c.top1_near_ties << ", greedy steps equal " << c.greedy_compared << "; " << c.detail);
  CHECK(c.max_logprob_diff <= tol.logprob);
  CHECK(c.top1_mismatches == 0);
  CHECK(c.greedy_mismatches == 0);
  std::fprintf(stderr, "%-8s %-8s %s max|dlogprob| %.4f near-ties %d greedy-equal %d/%zu\n", ref.name.c_str(),
               be.info().name.c_str(), tuning.c_str(), c.max_logprob_diff, c.top1_near_ties, c.greedy_compared, ref.greedy.size());
}

// The reference `name`: loads it, writes its model to `model_path`, checks.
inline void check_llamacpp_reference(gpu::backend& be, const std::string& name, const std::string& model_path) {
  auto ref = load_llamacpp_reference(name, shared_dir());
  INFO(name << ": " << (ref ? "" : ref.error().message));
  REQUIRE(ref.ok());
  write_reference_model(*ref, model_path);
  check_llamacpp_reference(be, *ref, model_path);
}

}  // namespace vks::model::testing
