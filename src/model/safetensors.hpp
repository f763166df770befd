// safetensors reader and writer (Hugging Face weight files): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets:[begin,end]}, "__metadata__": {...}},
// then the raw data. Reading maps the file and bounds-checks every tensor; hostile files give
// errc::parse, never a crash. Immutable after open(); safe to read from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.hpp"
#include "base/result.hpp"
#include "gpu/dtype.hpp"

namespace vks::model {

struct st_tensor {
  std::string name;
  std::string dtype;                 // as written: "F32", "F16", "BF16", "I64", ...
  std::optional<gpu::dtype> type;    // set for the dtypes we run (F32, F16, BF16)
  std::vector<uint64_t> shape;       // row-major, slowest first (HF/PyTorch order)
  std::span<const std::byte> data;
};

class safetensors_file {
 public:
  static result<safetensors_file> open(const std::string& path);
  // Bytes kept alive by the caller (tests, fuzzing).
  static result<safetensors_file> parse(std::span<const std::byte> bytes, std::string name = "<memory>");

  const std::string& path() const { return path_; }
  const std::vector<st_tensor>& tensors() const { return tensors_; }
  const st_tensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<mapped_file> map_;
  std::string path_;
  std::vector<st_tensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// Bytes per element of a safetensors dtype name, or 0 if unknown.
uint32_t st_dtype_size(std::string_view dtype);

class safetensors_writer {
 public:
  using fill_fn = std::function<void(std::span<std::byte> dst)>;
  // shape in HF order (slowest first); dtype "F32" | "F16" | "BF16" | ...
  void add_tensor(const std::string& name, const std::string& dtype, std::vector<uint64_t> shape, fill_fn fill);
  void add_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  result<void> write(const std::string& path) const;
  bool empty() const { return tensors_.empty(); }

 private:
  struct entry {
    std::string name, dtype;
    std::vector<uint64_t> shape;
    fill_fn fill;
  };
  std::vector<entry> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace vks::model
