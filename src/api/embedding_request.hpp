// POST /v1/embeddings request (OpenAI's shape): `input` as a string, a list of strings, a
// list of token ids or a list of lists of ids; `encoding_format` float | base64;
// `dimensions` (Matryoshka truncation); `user` ignored. Extension: `normalize` (default
// true; false returns the pooled vector as the model gives it). Validation only: the
// server tokenizes the texts and checks `dimensions` against the model's width.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/json.hpp"
#include "base/result.hpp"

namespace vks::api {

enum class embedding_encoding { float_array, base64 };

// One input: text to tokenize, or token ids given as they are.
struct embedding_input {
  std::optional<std::string> text;
  std::vector<std::int32_t> ids;
};

struct embedding_request {
  std::string model;
  std::vector<embedding_input> inputs;  // non-empty, in the client's order
  embedding_encoding encoding = embedding_encoding::float_array;
  std::optional<int> dimensions;        // >= 1; <= the model's width (checked by the server)
  bool normalize = true;
};

// OpenAI allows 2048 inputs per request.
inline constexpr std::size_t k_max_embedding_inputs = 2048;

// 400s name the parameter: a missing or empty input, an empty string or id list, ids out
// of [0, n_vocab) (n_vocab 0: not checked here), more than max_inputs inputs, an unknown
// encoding_format, dimensions < 1.
result<embedding_request> parse_embedding_request(const json& body, int n_vocab,
                                                  std::size_t max_inputs = k_max_embedding_inputs);

}  // namespace vks::api
