// POST /v1/embeddings response: each input's pooled vector (engine::embedding_event)
// finished here (Matryoshka truncation and/or L2 normalisation) and written as a JSON
// float list or base64 of its little-endian f32 bytes (what the openai SDK asks for by
// default and decodes); data in input order; usage counts the prompt tokens.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api/embedding_request.hpp"
#include "api/json.hpp"
#include "base/error.hpp"
#include "engine/request.hpp"

namespace vks::api {

struct embedding_output_settings {
  std::string model;
  embedding_encoding encoding = embedding_encoding::float_array;
  std::optional<int> dimensions;
  bool normalize = true;
  int n_inputs = 0;
};

// The model's pooled vector -> the client's: truncated to `dims` (when given and smaller),
// then L2-normalised when `normalize`.
std::vector<float> finish_embedding(std::vector<float> v, std::optional<int> dims, bool normalize);
// Standard base64 (with padding) of the vector's little-endian f32 bytes.
std::string base64_f32(std::span<const float> v);

// Collects the embedding_event of each input (source index); an error_event, or a
// finished_event (an embedding request ends only that way when it is aborted), ends it.
class embedding_accumulator {
 public:
  explicit embedding_accumulator(embedding_output_settings s);
  void on_event(int input, const engine::event& ev);
  bool done() const { return err_.has_value() || n_done_ == s_.n_inputs; }
  std::optional<vks::error> error() const { return err_; }
  json build() const;

 private:
  embedding_output_settings s_;
  std::vector<std::optional<std::vector<float>>> vecs_;
  int n_done_ = 0;
  int prompt_tokens_ = 0;
  std::optional<vks::error> err_;
};

}  // namespace vks::api
