// Engine events for the response-builder tests: one token chunk, one finished sequence.
#pragma once

#include <string>
#include <utility>

#include "engine/request.hpp"

namespace vks::test {

inline engine::token_event tok(int seq, std::string text, int n_completion) {
  engine::token_event t;
  t.seq = seq;
  t.tokens = {1};
  t.text = std::move(text);
  t.n_completion_tokens = n_completion;
  return t;
}

inline engine::finished_event fin(int seq, std::string text, engine::finish_reason r, engine::stop_reason s,
                                  int n_prompt, int n_completion) {
  engine::finished_event f;
  f.seq = seq;
  f.reason = r;
  f.stop = std::move(s);
  f.text = std::move(text);
  f.tokens = {2};
  f.seq_usage = {n_prompt, n_completion, 0};
  return f;
}

}  // namespace vks::test
