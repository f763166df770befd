// GGUF v3 serialisation: little-endian header, metadata, tensor infos, then each tensor's
// bytes at an aligned offset (ggml's layout), padding with zeros.
#include "model/gguf_writer.hpp"

#include <cstdio>
#include <cstring>
#include <memory>

namespace vks::model {
namespace {

template <class T>
void put(std::vector<std::byte>& b, T v) {
  auto n = b.size();
  b.resize(n + sizeof(T));
  std::memcpy(b.data() + n, &v, sizeof(T));
}
void put_str(std::vector<std::byte>& b, const std::string& s) {
  put<uint64_t>(b, s.size());
  auto n = b.size();
  b.resize(n + s.size());
  if (!s.empty()) std::memcpy(b.data() + n, s.data(), s.size());
}

using gvt = gguf::value_type;

void put_item(std::vector<std::byte>& b, gvt t, const std::variant<int64_t, uint64_t, double, bool, std::string>& it) {
  auto as_i = [&]() -> int64_t {
    if (auto i = std::get_if<int64_t>(&it)) return *i;
    if (auto u = std::get_if<uint64_t>(&it)) return static_cast<int64_t>(*u);
    if (auto d = std::get_if<double>(&it)) return static_cast<int64_t>(*d);
    if (auto x = std::get_if<bool>(&it)) return *x;
    return 0;
  };
  auto as_f = [&]() -> double {
    if (auto d = std::get_if<double>(&it)) return *d;
    return static_cast<double>(as_i());
  };
  switch (t) {
    case gvt::u8: put<uint8_t>(b, static_cast<uint8_t>(as_i())); break;
    case gvt::i8: put<int8_t>(b, static_cast<int8_t>(as_i())); break;
    case gvt::u16: put<uint16_t>(b, static_cast<uint16_t>(as_i())); break;
    case gvt::i16: put<int16_t>(b, static_cast<int16_t>(as_i())); break;
    case gvt::u32: put<uint32_t>(b, static_cast<uint32_t>(as_i())); break;
    case gvt::i32: put<int32_t>(b, static_cast<int32_t>(as_i())); break;
    case gvt::u64: put<uint64_t>(b, static_cast<uint64_t>(as_i())); break;
    case gvt::i64: put<int64_t>(b, as_i()); break;
    case gvt::f32: put<float>(b, static_cast<float>(as_f())); break;
    case gvt::f64: put<double>(b, as_f()); break;
    case gvt::boolean: put<uint8_t>(b, as_i() != 0); break;
    case gvt::string: {
      auto s = std::get_if<std::string>(&it);
      put_str(b, s ? *s : std::string());
      break;
    }
    case gvt::array: break;  // nested arrays are not representable (reader rejects them)
  }
}

}  // namespace

void gguf_writer::put_key(const std::string& key, uint32_t type) {
  put_str(kv_, key);
  put<uint32_t>(kv_, type);
  ++n_kv_;
}

void gguf_writer::add_u32(const std::string& k, uint32_t v) { put_key(k, 4); put(kv_, v); }
void gguf_writer::add_i32(const std::string& k, int32_t v) { put_key(k, 5); put(kv_, v); }
void gguf_writer::add_u64(const std::string& k, uint64_t v) { put_key(k, 10); put(kv_, v); }
void gguf_writer::add_f32(const std::string& k, float v) { put_key(k, 6); put(kv_, v); }
void gguf_writer::add_bool(const std::string& k, bool v) { put_key(k, 7); put<uint8_t>(kv_, v); }
void gguf_writer::add_string(const std::string& k, const std::string& v) { put_key(k, 8); put_str(kv_, v); }

void gguf_writer::add_strings(const std::string& k, const std::vector<std::string>& v) {
  put_key(k, 9);
  put<uint32_t>(kv_, 8);
  put<uint64_t>(kv_, v.size());
  for (auto& s : v) put_str(kv_, s);
}
void gguf_writer::add_f32s(const std::string& k, const std::vector<float>& v) {
  put_key(k, 9);
  put<uint32_t>(kv_, 6);
  put<uint64_t>(kv_, v.size());
  for (float x : v) put(kv_, x);
}
void gguf_writer::add_i32s(const std::string& k, const std::vector<int32_t>& v) {
  put_key(k, 9);
  put<uint32_t>(kv_, 5);
  put<uint64_t>(kv_, v.size());
  for (int32_t x : v) put(kv_, x);
}

void gguf_writer::add_value(const std::string& key, const gguf::value& v) {
  if (auto a = std::get_if<gguf::array>(&v)) {
    put_key(key, 9);
    put<uint32_t>(kv_, static_cast<uint32_t>(a->elem));
    put<uint64_t>(kv_, a->items.size());
    for (auto& it : a->items) put_item(kv_, a->elem, it);
    return;
  }
  // Scalars read by base/gguf lost their width; write the widest of the kind.
  if (auto i = std::get_if<int64_t>(&v)) { put_key(key, 11); put(kv_, *i); }
  else if (auto u = std::get_if<uint64_t>(&v)) {
    if (*u <= 0xffffffffu) { put_key(key, 4); put<uint32_t>(kv_, static_cast<uint32_t>(*u)); }
    else { put_key(key, 10); put(kv_, *u); }
  }
  else if (auto d = std::get_if<double>(&v)) { put_key(key, 6); put<float>(kv_, static_cast<float>(*d)); }
  else if (auto b = std::get_if<bool>(&v)) { put_key(key, 7); put<uint8_t>(kv_, *b); }
  else if (auto s = std::get_if<std::string>(&v)) { put_key(key, 8); put_str(kv_, *s); }
}

void gguf_writer::add_tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, fill_fn fill) {
  tensors_.push_back({name, std::move(dims), type, std::move(fill)});
}

void gguf_writer::add_tensor_bytes(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                                   std::span<const std::byte> bytes) {
  add_tensor(name, std::move(dims), type, [bytes](std::span<std::byte> dst) {
    std::memcpy(dst.data(), bytes.data(), std::min(dst.size(), bytes.size()));
  });
}

result<std::vector<std::byte>> gguf_writer::header(std::vector<uint64_t>& sizes, std::vector<uint64_t>& offsets) const {
  std::vector<std::byte> h;
  h.reserve(kv_.size() + 256 * tensors_.size() + 64);
  const char magic[4] = {'G', 'G', 'U', 'F'};
  h.resize(4);
  std::memcpy(h.data(), magic, 4);
  put<uint32_t>(h, 3);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, n_kv_ + (alignment_ != 32 ? 1 : 0));
  h.insert(h.end(), kv_.begin(), kv_.end());
  if (alignment_ != 32) {
    put_str(h, "general.alignment");
    put<uint32_t>(h, 4);
    put<uint32_t>(h, alignment_);
  }
  uint64_t off = 0;
  for (auto& t : tensors_) {
    uint64_t n = 1;
    for (auto d : t.dims) n *= d;
    auto size = gguf::ggml_type_size(t.type, n);
    if (!size) return fail(errc::invalid_argument, "gguf_writer: tensor '" + t.name + "' has an unknown type or ragged rows");
    put_str(h, t.name);
    put<uint32_t>(h, static_cast<uint32_t>(t.dims.size()));
    for (auto d : t.dims) put<uint64_t>(h, d);
    put<uint32_t>(h, t.type);
    put<uint64_t>(h, off);
    sizes.push_back(*size);
    offsets.push_back(off);
    off = (off + *size + alignment_ - 1) / alignment_ * alignment_;
  }
  h.resize((h.size() + alignment_ - 1) / alignment_ * alignment_, std::byte{0});
  return h;
}

result<void> gguf_writer::write(const std::string& path) const {
  std::vector<uint64_t> sizes, offsets;
  auto h = header(sizes, offsets);
  if (!h) return fail(std::move(h).error());
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return fail(errc::io, "cannot create " + path);
  auto io_err = [&] { return fail(errc::io, "write failed: " + path); };
  if (std::fwrite(h->data(), 1, h->size(), f.get()) != h->size()) return io_err();
  std::vector<std::byte> buf;
  uint64_t pos = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (offsets[i] > pos) {
      std::vector<std::byte> pad(offsets[i] - pos, std::byte{0});
      if (std::fwrite(pad.data(), 1, pad.size(), f.get()) != pad.size()) return io_err();
    }
    buf.assign(sizes[i], std::byte{0});
    tensors_[i].fill(buf);
    if (std::fwrite(buf.data(), 1, buf.size(), f.get()) != buf.size()) return io_err();
    pos = offsets[i] + sizes[i];
  }
  if (std::fflush(f.get()) != 0) return io_err();
  return ok();
}

result<std::vector<std::byte>> gguf_writer::to_bytes() const {
  std::vector<uint64_t> sizes, offsets;
  auto h = header(sizes, offsets);
  if (!h) return h;
  std::vector<std::byte> out = std::move(*h);
  uint64_t base = out.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(base + offsets[i] + sizes[i], std::byte{0});
    tensors_[i].fill(std::span<std::byte>(out.data() + base + offsets[i], sizes[i]));
  }
  return out;
}

}  // namespace vks::model
