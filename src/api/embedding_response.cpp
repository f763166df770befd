// Finishing pooled vectors and writing the embeddings response.
#include "api/embedding_response.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "engine/pooling.hpp"

namespace vks::api {

std::vector<float> finish_embedding(std::vector<float> v, std::optional<int> dims, bool normalize) {
  if (dims && *dims > 0 && static_cast<std::size_t>(*dims) < v.size()) v.resize(static_cast<std::size_t>(*dims));
  if (normalize) engine::l2_normalize(v);
  return v;
}

std::string base64_f32(std::span<const float> v) {
  static constexpr char k_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto u = std::bit_cast<std::uint32_t>(v[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<std::size_t>(b)] = static_cast<unsigned char>(u >> (8 * b));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t w = std::uint32_t{bytes[i]} << 16;
    if (n > 1) w |= std::uint32_t{bytes[i + 1]} << 8;
    if (n > 2) w |= bytes[i + 2];
    out += k_alpha[(w >> 18) & 63];
    out += k_alpha[(w >> 12) & 63];
    out += n > 1 ? k_alpha[(w >> 6) & 63] : '=';
    out += n > 2 ? k_alpha[w & 63] : '=';
  }
  return out;
}

embedding_accumulator::embedding_accumulator(embedding_output_settings s) : s_(std::move(s)) {
  vecs_.resize(static_cast<std::size_t>(s_.n_inputs));
}

void embedding_accumulator::on_event(int input, const engine::event& ev) {
  if (done() || input < 0 || input >= s_.n_inputs) return;
  if (const auto* e = std::get_if<engine::embedding_event>(&ev)) {
    auto& slot = vecs_[static_cast<std::size_t>(input)];
    if (slot) return;
    slot = finish_embedding(e->embedding, s_.dimensions, s_.normalize);
    prompt_tokens_ += e->n_prompt_tokens;
    ++n_done_;
  } else if (const auto* x = std::get_if<engine::error_event>(&ev)) {
    err_ = x->err;
  } else if (std::holds_alternative<engine::finished_event>(ev)) {
    err_ = make_error(errc::cancelled, "the embedding request was aborted");
  }
}

json embedding_accumulator::build() const {
  json data = json::array();
  for (std::size_t i = 0; i < vecs_.size(); ++i) {
    json item;
    item["object"] = "embedding";
    item["index"] = static_cast<int>(i);
    const auto& v = vecs_[i] ? *vecs_[i] : std::vector<float>{};
    if (s_.encoding == embedding_encoding::base64) item["embedding"] = base64_f32(v);
    else item["embedding"] = v;
    data.push_back(std::move(item));
  }
  json body;
  body["object"] = "list";
  body["data"] = std::move(data);
  body["model"] = s_.model;
  body["usage"] = {{"prompt_tokens", prompt_tokens_}, {"total_tokens", prompt_tokens_}};
  return body;
}

}  // namespace vks::api
