// GGUF parsing: a bounds-checked cursor over the mapped bytes. Every read checks the
// remaining length, so truncated or hostile files yield errc::parse, never a crash.
#include "base/gguf.hpp"

#include <cstring>
#include <limits>

namespace vks::gguf {
namespace {

constexpr uint64_t max_string = 1ull << 30;   // 1 GiB: sanity bound for any string
constexpr uint64_t max_array = 1ull << 32;    // elements
constexpr uint32_t max_dims = 8;

struct cursor {
  std::span<const std::byte> b;
  uint64_t pos = 0;
  std::string err;

  bool need(uint64_t n) {
    if (!err.empty()) return false;
    if (n > b.size() || pos > b.size() - n) {
      err = "truncated at byte " + std::to_string(pos);
      return false;
    }
    return true;
  }
  template <class T>
  T read() {
    T v{};
    if (!need(sizeof(T))) return v;
    std::memcpy(&v, b.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string read_string() {
    auto n = read<uint64_t>();
    if (!err.empty()) return {};
    if (n > max_string) { err = "string length " + std::to_string(n) + " too large"; return {}; }
    if (!need(n)) return {};
    std::string s(reinterpret_cast<const char*>(b.data() + pos), n);
    pos += n;
    return s;
  }
};

using item = std::variant<int64_t, uint64_t, double, bool, std::string>;

item read_scalar(cursor& c, value_type t) {
  switch (t) {
    case value_type::u8: return uint64_t{c.read<uint8_t>()};
    case value_type::i8: return int64_t{c.read<int8_t>()};
    case value_type::u16: return uint64_t{c.read<uint16_t>()};
    case value_type::i16: return int64_t{c.read<int16_t>()};
    case value_type::u32: return uint64_t{c.read<uint32_t>()};
    case value_type::i32: return int64_t{c.read<int32_t>()};
    case value_type::u64: return c.read<uint64_t>();
    case value_type::i64: return c.read<int64_t>();
    case value_type::f32: return double{c.read<float>()};
    case value_type::f64: return c.read<double>();
    case value_type::boolean: return c.read<uint8_t>() != 0;
    case value_type::string: return c.read_string();
    default: c.err = "bad value type " + std::to_string(static_cast<uint32_t>(t)); return int64_t{0};
  }
}

value read_value(cursor& c, value_type t) {
  if (t != value_type::array) {
    item it = read_scalar(c, t);
    return std::visit([](auto&& v) -> value { return v; }, std::move(it));
  }
  array a;
  a.elem = static_cast<value_type>(c.read<uint32_t>());
  uint64_t n = c.read<uint64_t>();
  if (!c.err.empty()) return a;
  if (a.elem == value_type::array) { c.err = "nested arrays are not supported"; return a; }
  if (n > max_array || n > c.b.size()) { c.err = "array length " + std::to_string(n) + " too large"; return a; }
  a.items.reserve(n);
  for (uint64_t i = 0; i < n && c.err.empty(); ++i) a.items.push_back(read_scalar(c, a.elem));
  return a;
}

struct type_traits { const char* name; uint32_t block; uint32_t bytes; };
// ggml type ids (ggml.h): block size in elements and bytes per block.
constexpr type_traits k_types[] = {
    {"f32", 1, 4}, {"f16", 1, 2}, {"q4_0", 32, 18}, {"q4_1", 32, 20}, {nullptr, 0, 0}, {nullptr, 0, 0},
    {"q5_0", 32, 22}, {"q5_1", 32, 24}, {"q8_0", 32, 34}, {"q8_1", 32, 36}, {"q2_K", 256, 84},
    {"q3_K", 256, 110}, {"q4_K", 256, 144}, {"q5_K", 256, 176}, {"q6_K", 256, 210}, {"q8_K", 256, 292},
    {"iq2_xxs", 256, 66}, {"iq2_xs", 256, 74}, {"iq3_xxs", 256, 98}, {"iq1_s", 256, 50}, {"iq4_nl", 32, 18},
    {"iq3_s", 256, 110}, {"iq2_s", 256, 82}, {"iq4_xs", 256, 136}, {"i8", 1, 1}, {"i16", 1, 2},
    {"i32", 1, 4}, {"i64", 1, 8}, {"f64", 1, 8}, {"iq1_m", 256, 56}, {"bf16", 1, 2},
    // 31-33 and 36-38 are retired repacked layouts (never in files); 39: gpt-oss's mxfp4.
    {nullptr, 0, 0}, {nullptr, 0, 0}, {nullptr, 0, 0}, {"tq1_0", 256, 54}, {"tq2_0", 256, 66},
    {nullptr, 0, 0}, {nullptr, 0, 0}, {nullptr, 0, 0}, {"mxfp4", 32, 17},
};

}  // namespace

uint64_t tensor_info::n_elements() const {
  uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

std::optional<uint64_t> ggml_type_size(uint32_t type, uint64_t n) {
  if (type >= std::size(k_types) || k_types[type].name == nullptr) return std::nullopt;
  const auto& t = k_types[type];
  if (n % t.block) return std::nullopt;
  return n / t.block * t.bytes;
}

const char* ggml_type_name(uint32_t type) {
  if (type >= std::size(k_types) || k_types[type].name == nullptr) return "unknown";
  return k_types[type].name;
}

result<file> file::open(const std::string& path) {
  auto m = mapped_file::open(path);
  if (!m) return fail(std::move(m).error());
  auto shared = std::make_shared<mapped_file>(std::move(*m));
  auto f = parse(shared->bytes(), path);
  if (!f) return f;
  f->map_ = std::move(shared);
  return f;
}

result<file> file::parse(std::span<const std::byte> bytes, std::string name) {
  auto bad = [&](const std::string& why) { return fail(errc::parse, name + ": invalid GGUF: " + why); };
  cursor c{bytes};
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0) return bad("wrong magic (not a GGUF file)");
  c.pos = 4;
  file f;
  f.path_ = name;
  f.version_ = c.read<uint32_t>();
  if (f.version_ != 2 && f.version_ != 3)
    return bad("unsupported version " + std::to_string(f.version_) + " (2 and 3 are supported)");
  uint64_t n_tensors = c.read<uint64_t>();
  uint64_t n_kv = c.read<uint64_t>();
  if (!c.err.empty()) return bad(c.err);
  if (n_tensors > bytes.size() || n_kv > bytes.size()) return bad("counts exceed file size");

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string();
    auto t = static_cast<value_type>(c.read<uint32_t>());
    value v = read_value(c, t);
    if (!c.err.empty()) return bad("metadata #" + std::to_string(i) + ": " + c.err);
    f.kv_index_[key] = f.kv_.size();
    f.kv_.emplace_back(std::move(key), std::move(v));
  }
  if (auto a = f.get_int("general.alignment")) {
    if (*a <= 0 || (*a & (*a - 1)) != 0) return bad("general.alignment must be a power of two");
    f.alignment_ = static_cast<uint64_t>(*a);
  }

  for (uint64_t i = 0; i < n_tensors; ++i) {
    tensor_info t;
    t.name = c.read_string();
    uint32_t nd = c.read<uint32_t>();
    if (!c.err.empty()) return bad(c.err);
    if (nd == 0 || nd > max_dims) return bad("tensor '" + t.name + "' has " + std::to_string(nd) + " dims");
    for (uint32_t d = 0; d < nd; ++d) t.dims.push_back(c.read<uint64_t>());
    t.type = c.read<uint32_t>();
    t.offset = c.read<uint64_t>();
    if (!c.err.empty()) return bad(c.err);
    f.tensor_index_[t.name] = f.tensors_.size();
    f.tensors_.push_back(std::move(t));
  }
  uint64_t data = (c.pos + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  f.data_offset_ = data;

  for (auto& t : f.tensors_) {
    uint64_t n = 1;
    for (auto d : t.dims) {
      if (d != 0 && n > std::numeric_limits<uint64_t>::max() / d) return bad("tensor '" + t.name + "' is too large");
      n *= d;
    }
    if (t.type >= std::size(k_types) || k_types[t.type].name == nullptr)
      return bad("tensor '" + t.name + "' has unknown type " + std::to_string(t.type) + " (no ggml type has that id)");
    const auto& tt = k_types[t.type];
    const std::string what = "tensor '" + t.name + "' (type " + tt.name + ")";
    if (t.dims[0] % tt.block != 0)
      return bad(what + ": rows of " + std::to_string(t.dims[0]) + " elements are not a multiple of its block size " +
                 std::to_string(tt.block));
    auto size = ggml_type_size(t.type, n);
    if (!size) return bad(what + ": element count is not a multiple of its block size");
    if (data > bytes.size() || t.offset > bytes.size() - data || *size > bytes.size() - data - t.offset)
      return bad(what + ": its " + std::to_string(*size) + " bytes at data offset " + std::to_string(t.offset) +
                 " lie outside the file (truncated?)");
    t.data = bytes.subspan(data + t.offset, *size);
  }
  return f;
}

const tensor_info* file::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const value* file::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<std::string> file::get_string(std::string_view key) const {
  const value* v = find(key);
  if (!v) return std::nullopt;
  if (auto s = std::get_if<std::string>(v)) return *s;
  return std::nullopt;
}

std::optional<int64_t> file::get_int(std::string_view key) const {
  const value* v = find(key);
  if (!v) return std::nullopt;
  if (auto i = std::get_if<int64_t>(v)) return *i;
  if (auto u = std::get_if<uint64_t>(v)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (auto b = std::get_if<bool>(v)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<double> file::get_float(std::string_view key) const {
  const value* v = find(key);
  if (!v) return std::nullopt;
  if (auto d = std::get_if<double>(v)) return *d;
  if (auto i = get_int(key)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> file::get_bool(std::string_view key) const {
  const value* v = find(key);
  if (!v) return std::nullopt;
  if (auto b = std::get_if<bool>(v)) return *b;
  if (auto i = get_int(key)) return *i != 0;
  return std::nullopt;
}

const array* file::get_array(std::string_view key) const {
  const value* v = find(key);
  return v ? std::get_if<array>(v) : nullptr;
}

}  // namespace vks::gguf
