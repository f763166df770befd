// Read-only memory-mapped file (RAII, move-only). Used for model weights and vocab files:
// the kernel pages bytes in on demand, so opening a large GGUF costs nothing up front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/result.hpp"

namespace vks {

class mapped_file {
 public:
  static result<mapped_file> open(const std::string& path);

  mapped_file() = default;
  mapped_file(mapped_file&& o) noexcept;
  mapped_file& operator=(mapped_file&& o) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

// Whole file into a string (small text files: JSON configs, templates).
result<std::string> read_file(const std::string& path);

}  // namespace vks
