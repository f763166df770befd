// GGUF container reader (v2 and v3): metadata key/values and tensor descriptors over a
// memory-mapped file. Generic container parsing only; what the tensors mean is the model
// layer's business and what the tokenizer keys mean is the text layer's. Lives in base so
// both can read it (a vocab-only GGUF feeds the tokenizer without loading a model).
// Thread-safety: immutable after open(); safe to read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/mapped_file.hpp"
#include "base/result.hpp"

namespace vks::gguf {

enum class value_type : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

// An array value keeps its element type; numeric elements are widened on read.
struct array {
  value_type elem = value_type::u8;
  std::vector<std::variant<int64_t, uint64_t, double, bool, std::string>> items;
};

using value = std::variant<int64_t, uint64_t, double, bool, std::string, array>;

struct tensor_info {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF order: dims[0] is the fastest-varying (row length)
  uint32_t type = 0;           // ggml type id (see gpu/dtype.hpp for the ones we run)
  uint64_t offset = 0;         // relative to the data section
  std::span<const std::byte> data;  // set by open(); empty for vocab-only files
  uint64_t n_elements() const;
};

class file {
 public:
  // Parses header, metadata and tensor infos; validates that every tensor lies inside the
  // file (for ggml types whose size is known). Errors are errc::parse with a reason.
  static result<file> open(const std::string& path);
  // Parse from bytes kept alive by the caller (tests, fuzzing).
  static result<file> parse(std::span<const std::byte> bytes, std::string name = "<memory>");

  uint32_t version() const { return version_; }
  const std::string& path() const { return path_; }
  const std::vector<std::pair<std::string, value>>& metadata() const { return kv_; }
  const std::vector<tensor_info>& tensors() const { return tensors_; }
  const tensor_info* find_tensor(std::string_view name) const;
  const value* find(std::string_view key) const;

  // Typed getters: nullopt if absent or of another kind (integers convert to each other
  // and to double when the value fits).
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  const array* get_array(std::string_view key) const;

  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

 private:
  std::shared_ptr<mapped_file> map_;  // shared: tensor spans may outlive a moved file
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, value>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<tensor_info> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Size in bytes of `n_elements` of ggml type `type`, or nullopt for types we do not know
// (n_elements must be a multiple of the type's block size).
std::optional<uint64_t> ggml_type_size(uint32_t type, uint64_t n_elements);
const char* ggml_type_name(uint32_t type);

}  // namespace vks::gguf
