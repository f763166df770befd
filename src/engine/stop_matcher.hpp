// When a sequence stops, and which text may be shown so far.
// stop_strings: matches stop strings on the decoded text across token boundaries. Text is
//   released only once it can no longer be the start of a stop string; generation stops
//   at the first character where some stop string is complete (if several complete
//   there, the longest wins), so the result does not depend on how the text was cut into
//   tokens. The output is truncated before the match (or after it with
//   include_stop_str_in_output). Matching is on bytes.
// stop_checker: the per-token rules on top: stop_token_ids (stop_reason = the id), EOS
//   (stop_reason none; ignored with ignore_eos), min_tokens (no stop before it), and
//   max_tokens (finish "length"). The token that ends a sequence by EOS/stop id adds no
//   text unless include_stop_str_in_output (vLLM).
// Not thread-safe; one per sequence.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.hpp"

namespace vks::engine {

class stop_strings {
 public:
  stop_strings(std::vector<std::string> stops, bool include_stop);

  struct step {
    std::string text;                  // releasable now
    std::optional<std::string> match;  // the stop string that ended the text
  };
  // Appends decoded text. Once a match was reported, further calls return nothing.
  // arm = false: matches that complete inside this delta are ignored (min_tokens).
  step push(std::string_view delta, bool arm = true);
  // Releases the held-back text (the sequence ended for another reason).
  std::string flush();
  bool matched() const noexcept { return done_; }

 private:
  std::size_t holdback() const;  // longest suffix of pending_ that is a proper prefix of a stop

  std::vector<std::string> stops_;
  bool include_;
  std::string pending_;            // text not released yet
  std::size_t armed_from_ = 0;     // matches must end after this offset in pending_
  bool done_ = false;
};

class stop_checker {
 public:
  stop_checker(const sampling_params& params, std::span<const token_id> eos_ids);

  struct outcome {
    std::string text;                      // to show now
    std::optional<finish_reason> finish;   // set on the token that ends the sequence
    stop_reason reason;
  };
  // One sampled token and its decoded text delta (from the incremental detokenizer).
  // n_generated: tokens generated so far, this one included (sequence_output counts).
  outcome on_token(token_id t, std::string_view text_delta, int n_generated);

 private:
  bool is_eos(token_id t) const;
  bool is_stop_id(token_id t) const;

  stop_strings strings_;
  std::vector<token_id> stop_ids_;
  std::vector<token_id> eos_ids_;
  int max_tokens_;
  int min_tokens_;
  bool ignore_eos_;
  bool include_stop_;
  bool finished_ = false;
};

}  // namespace vks::engine
