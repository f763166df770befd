// safetensors parsing (bounds-checked) and writing. The JSON header is parsed with
// nlohmann::json; its exceptions stop here and become errc::parse.
#include "model/safetensors.hpp"

#include <cstdio>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

namespace vks::model {
namespace {

constexpr uint64_t max_header = 100ull << 20;  // 100 MiB, the format's own limit

std::optional<gpu::dtype> runnable(std::string_view d) {
  if (d == "F32") return gpu::dtype::f32;
  if (d == "F16") return gpu::dtype::f16;
  if (d == "BF16") return gpu::dtype::bf16;
  return std::nullopt;
}

}  // namespace

uint32_t st_dtype_size(std::string_view d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

result<safetensors_file> safetensors_file::open(const std::string& path) {
  auto m = mapped_file::open(path);
  if (!m) return fail(std::move(m).error());
  auto shared = std::make_shared<mapped_file>(std::move(*m));
  auto f = parse(shared->bytes(), path);
  if (!f) return f;
  f->map_ = std::move(shared);
  return f;
}

result<safetensors_file> safetensors_file::parse(std::span<const std::byte> bytes, std::string name) {
  auto bad = [&](const std::string& why) { return fail(errc::parse, name + ": invalid safetensors: " + why); };
  if (bytes.size() < 8) return bad("file shorter than its 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > max_header || n > bytes.size() - 8) return bad("header length " + std::to_string(n) + " exceeds the file");
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), n);
  auto data = bytes.subspan(8 + n);
  safetensors_file f;
  f.path_ = name;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("header is not JSON: ") + e.what());
  }
  if (!j.is_object()) return bad("header is not a JSON object");
  for (auto& [key, v] : j.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) return bad("__metadata__ is not an object");
      for (auto& [mk, mv] : v.items())
        if (mv.is_string()) f.metadata_[mk] = mv.get<std::string>();
      continue;
    }
    auto tb = [&, &name = key](const std::string& why) { return bad("tensor '" + name + "': " + why); };
    if (!v.is_object()) return tb("entry is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) return tb("missing dtype");
    if (sh == v.end() || !sh->is_array()) return tb("missing shape");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      return tb("data_offsets must be [begin, end]");
    st_tensor t;
    t.name = key;
    t.dtype = dt->get<std::string>();
    t.type = runnable(t.dtype);
    uint64_t elems = 1;
    for (auto& d : *sh) {
      if (!d.is_number_unsigned()) return tb("shape entries must be non-negative integers");
      uint64_t x = d.get<uint64_t>();
      if (x != 0 && elems > std::numeric_limits<uint64_t>::max() / x / 8) return tb("shape too large");
      elems *= x;
      t.shape.push_back(x);
    }
    uint32_t es = st_dtype_size(t.dtype);
    if (es == 0) return tb("unknown dtype '" + t.dtype + "'");
    uint64_t b = (*off)[0].get<uint64_t>(), e = (*off)[1].get<uint64_t>();
    if (b > e || e > data.size()) return tb("data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                                            ") lie outside the data (" + std::to_string(data.size()) + " bytes)");
    if (e - b != elems * es) return tb("byte size " + std::to_string(e - b) + " does not match shape and dtype");
    t.data = data.subspan(b, e - b);
    f.index_[t.name] = f.tensors_.size();
    f.tensors_.push_back(std::move(t));
  }
  return f;
}

const st_tensor* safetensors_file::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void safetensors_writer::add_tensor(const std::string& name, const std::string& dtype, std::vector<uint64_t> shape,
                                    fill_fn fill) {
  tensors_.push_back({name, dtype, std::move(shape), std::move(fill)});
}

result<void> safetensors_writer::write(const std::string& path) const {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata_.empty()) h["__metadata__"] = metadata_;
  std::vector<uint64_t> sizes;
  uint64_t off = 0;
  for (auto& t : tensors_) {
    uint64_t n = st_dtype_size(t.dtype);
    if (n == 0) return fail(errc::invalid_argument, "safetensors_writer: unknown dtype " + t.dtype);
    for (auto d : t.shape) n *= d;
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + n}}};
    sizes.push_back(n);
    off += n;
  }
  std::string text = h.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return fail(errc::io, "cannot create " + path);
  uint64_t n = text.size();
  bool good = std::fwrite(&n, 8, 1, f.get()) == 1 && std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  std::vector<std::byte> buf;
  for (size_t i = 0; good && i < tensors_.size(); ++i) {
    buf.assign(sizes[i], std::byte{0});
    tensors_[i].fill(buf);
    good = std::fwrite(buf.data(), 1, buf.size(), f.get()) == buf.size();
  }
  if (!good || std::fflush(f.get()) != 0) return fail(errc::io, "write failed: " + path);
  return ok();
}

}  // namespace vks::model
