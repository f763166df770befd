// Fuzz target for the model-file parsers: a downloaded or hand-edited model file must give
// an error, never a crash. The first input byte picks the parser, the rest is the file:
// - 0: GGUF (base/gguf): every tensor's data must lie inside the bytes (its first and last
//   byte are read, so ASan sees a span that escapes), then the model config
//   (config_from_gguf, validate) and the tokenizer (tokenizer::from_gguf) from its metadata;
// - 1: safetensors (model/safetensors): the same check of every tensor's data, and each
//   known dtype's data size must be the shape's element count times the element size;
// - 2: config.json text (config_from_hf_json, validate).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#include "base/gguf.hpp"
#include "model/config.hpp"
#include "model/safetensors.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks;

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_model_files: %s\n", what);
    std::abort();
  }
}

volatile unsigned g_sink;

void touch(std::span<const std::byte> d, std::span<const std::byte> all) {
  if (d.empty()) return;
  check(d.data() >= all.data() && d.data() + d.size() <= all.data() + all.size(), "tensor data outside the file");
  g_sink = g_sink + static_cast<unsigned>(d.front()) + static_cast<unsigned>(d.back());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto bytes = std::as_bytes(std::span(data + 1, size - 1));
  switch (data[0] % 3) {
    case 0: {
      auto f = gguf::file::parse(bytes);
      if (!f) return 0;
      for (auto& t : f->tensors()) touch(t.data, bytes);
      if (auto c = model::config_from_gguf(*f)) (void)c->validate();
      (void)text::tokenizer::from_gguf(*f);
      break;
    }
    case 1: {
      auto f = model::safetensors_file::parse(bytes);
      if (!f) return 0;
      for (auto& t : f->tensors()) {
        touch(t.data, bytes);
        if (t.type) {
          std::uint64_t n = 1;
          for (auto d : t.shape) n *= d;
          check(t.data.size() == n * model::st_dtype_size(t.dtype), "tensor data size does not match its shape");
        }
      }
      break;
    }
    default: {
      const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
      if (auto c = model::config_from_hf_json(text)) (void)c->validate();
      break;
    }
  }
  return 0;
}
