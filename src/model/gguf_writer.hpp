// GGUF v3 writer: metadata key/values and tensors, streamed to a file. Used by
// tools/make-test-model (models up to tens of GiB: tensor bytes are produced one tensor at a
// time by a callback, never held all at once) and by tests that build broken files.
// Not thread-safe; one writer per file.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/gguf.hpp"
#include "base/result.hpp"

namespace vks::model {

class gguf_writer {
 public:
  // Fills `dst` (exactly the tensor's byte size) with the tensor's data.
  using fill_fn = std::function<void(std::span<std::byte> dst)>;

  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_f32s(const std::string& key, const std::vector<float>& v);
  void add_i32s(const std::string& key, const std::vector<int32_t>& v);
  // Copies a value read by base/gguf (keeps its element types; used to attach tokenizers).
  void add_value(const std::string& key, const gguf::value& v);

  // dims in GGUF order (dims[0] fastest); ggml_type a ggml type id. The byte size is derived
  // from the type; `fill` is called once by write().
  void add_tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t ggml_type, fill_fn fill);
  // Same with bytes the caller keeps alive until write() returns.
  void add_tensor_bytes(const std::string& name, std::vector<uint64_t> dims, uint32_t ggml_type,
                        std::span<const std::byte> bytes);

  void set_alignment(uint32_t a) { alignment_ = a; }
  // Serialises everything; errc::io on write failure, errc::invalid_argument if a tensor's
  // type is unknown or its row size is not a multiple of the block size.
  result<void> write(const std::string& path) const;
  // Header + metadata + tensor infos + data as one byte vector (small files, tests).
  result<std::vector<std::byte>> to_bytes() const;

 private:
  struct tensor_entry {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type = 0;
    fill_fn fill;
  };
  void put_key(const std::string& key, uint32_t type);
  result<std::vector<std::byte>> header(std::vector<uint64_t>& sizes, std::vector<uint64_t>& offsets) const;

  std::vector<std::byte> kv_;   // serialised metadata
  uint64_t n_kv_ = 0;
  std::vector<tensor_entry> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace vks::model
