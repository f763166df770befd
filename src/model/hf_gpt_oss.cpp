// gpt-oss's Hugging Face expert tensors (GptOssForCausalLM, openai/gpt-oss-20b's layout) read
// as GGUF's: per layer one fused stack mlp.experts.gate_up_proj whose rows alternate gate (even)
// and up (odd), either MXFP4 (`_blocks` [E, rows, K/32, 16] u8 and `_scales` [E, rows, K/32]
// u8 E8M0) or float ([E, K, rows]: transposed, as transformers multiplies x @ W); down_proj the
// same without interleaving; biases gate_up_proj_bias [E, 2Fe] (interleaved) and
// down_proj_bias [E, C] (mapped by name in model_file.cpp). The facts are llama.cpp's
// converter's (GptOssModel) and transformers' (GptOssExperts, mxfp4 integration).
#include <cstring>

#include "model/model_file.hpp"

namespace vks::model {
namespace {

struct fused_name {
  std::string layer;  // "L"
  std::string src;    // "gate_up_proj" | "down_proj"
  int parity = -1;    // gate 0, up 1 (rows 2j + parity of the fused stack); -1: down, taken whole
  bool bias = false;
};

// blk.L.ffn_{gate,up,down}_exps.weight, blk.L.ffn_{gate,up}_exps.bias; layer empty otherwise.
fused_name parse(std::string_view g) {
  fused_name f;
  if (!g.starts_with("blk.")) return f;
  const auto dot = g.find('.', 4);
  if (dot == std::string_view::npos) return f;
  const std::string_view rest = g.substr(dot + 1);
  struct row { std::string_view name; const char* src; int parity; bool bias; };
  static constexpr row k_rows[] = {{"ffn_gate_exps.weight", "gate_up_proj", 0, false},
                                   {"ffn_up_exps.weight", "gate_up_proj", 1, false},
                                   {"ffn_down_exps.weight", "down_proj", -1, false},
                                   {"ffn_gate_exps.bias", "gate_up_proj", 0, true},
                                   {"ffn_up_exps.bias", "gate_up_proj", 1, true}};
  for (const auto& r : k_rows)
    if (rest == r.name) {
      f.layer = std::string(g.substr(4, dot - 4));
      f.src = r.src;
      f.parity = r.parity;
      f.bias = r.bias;
    }
  return f;
}

size_t elem_size(gpu::dtype t) { return t == gpu::dtype::f32 ? 4 : 2; }

// One MXFP4 block from transformers' layout (byte i: element 2i in its low nibble, 2i+1 in
// its high one) to ggml's block_mxfp4 (E8M0 byte, then byte j: element j low, j + 16 high).
void repack_mxfp4(uint8_t scale, const std::byte* hf, std::byte* out) {
  out[0] = static_cast<std::byte>(scale);
  auto nib = [&](int x) { return (static_cast<uint8_t>(hf[x / 2]) >> ((x & 1) * 4)) & 0xf; };
  for (int j = 0; j < 16; ++j) out[1 + j] = static_cast<std::byte>(nib(j) | (nib(j + 16) << 4));
}

}  // namespace

bool model_file::is_gpt_oss_fused(std::string_view g) { return !parse(g).layer.empty(); }

bool model_file::has_gpt_oss_fused(std::string_view g) const {
  const auto f = parse(g);
  const std::string base = "model.layers." + f.layer + ".mlp.experts." + f.src;
  if (f.bias) return find_hf(base + "_bias") != nullptr;
  return find_hf(base) != nullptr || (find_hf(base + "_blocks") && find_hf(base + "_scales"));
}

result<weight_ref> model_file::gpt_oss_fused(std::string_view g) const {
  const auto f = parse(g);
  const std::string base = "model.layers." + f.layer + ".mlp.experts." + f.src;
  const int64_t E = config_.n_expert, n = f.parity < 0 ? config_.n_embd : config_.n_ff_exp,
                k = f.parity < 0 ? config_.n_ff_exp : config_.n_embd;
  const int64_t rows = f.parity < 0 ? n : 2 * n, stride = f.parity < 0 ? 1 : 2, par = f.parity < 0 ? 0 : f.parity;
  auto bad = [&](const std::string& hf, const std::string& why) -> result<weight_ref> {
    return fail(errc::parse, path_ + ": tensor '" + hf + "' " + why);
  };
  auto shape_is = [](const st_tensor* t, std::initializer_list<int64_t> want) {
    return t->shape.size() == want.size() && std::equal(want.begin(), want.end(), t->shape.begin(),
                                                        [](int64_t w, uint64_t h) { return static_cast<uint64_t>(w) == h; });
  };
  weight_ref w;
  w.name = std::string(g);
  auto bytes = std::make_shared<std::vector<std::byte>>();
  if (f.bias) {  // [E, 2n] -> {n, E}: row e holds the parity's columns
    const std::string hf = base + "_bias";
    const st_tensor* t = find_hf(hf);
    if (!t) return bad(hf, "is missing");
    if (!t->type) return bad(hf, "has dtype " + t->dtype + " (supported: F32, F16, BF16)");
    if (!shape_is(t, {E, rows})) return bad(hf, "does not have shape [" + std::to_string(E) + ", " + std::to_string(rows) + "]");
    const size_t es = elem_size(*t->type);
    bytes->resize(static_cast<size_t>(E * n) * es);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(bytes->data() + static_cast<size_t>(e * n + j) * es, t->data.data() + static_cast<size_t>(e * rows + 2 * j + par) * es, es);
    w.type = *t->type;
    w.ne = {n, E, 1, 1};
    w.n_dims = 2;
  } else if (const st_tensor* t = find_hf(base); t) {  // float [E, k, rows] -> {k, n, E}
    if (!t->type) return bad(base, "has dtype " + t->dtype + " (supported: F32, F16, BF16, or MXFP4 _blocks/_scales)");
    if (!shape_is(t, {E, k, rows}))
      return bad(base, "does not have shape [" + std::to_string(E) + ", " + std::to_string(k) + ", " + std::to_string(rows) + "]");
    const size_t es = elem_size(*t->type);
    bytes->resize(static_cast<size_t>(E * n * k) * es);
    std::byte* out = bytes->data();
    for (int64_t e = 0; e < E; ++e)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < k; ++i, out += es)
          std::memcpy(out, t->data.data() + static_cast<size_t>((e * k + i) * rows + stride * j + par) * es, es);
    w.type = *t->type;
    w.ne = {k, n, E, 1};
    w.n_dims = 3;
  } else {  // MXFP4: blocks [E, rows, k/32, 16], scales [E, rows, k/32] -> mxfp4 {k, n, E}
    const st_tensor* b = find_hf(base + "_blocks");
    const st_tensor* s = find_hf(base + "_scales");
    if (!b || !s) return bad(base, "is missing (neither float nor MXFP4 _blocks and _scales)");
    if (k % 32 != 0) return bad(base + "_blocks", "has rows of " + std::to_string(k) + " (not whole MXFP4 blocks)");
    const int64_t nb = k / 32;
    if (b->dtype != "U8" || !shape_is(b, {E, rows, nb, 16}))
      return bad(base + "_blocks", "is not U8 [" + std::to_string(E) + ", " + std::to_string(rows) + ", " + std::to_string(nb) + ", 16]");
    if (s->dtype != "U8" || !shape_is(s, {E, rows, nb}))
      return bad(base + "_scales", "is not U8 [" + std::to_string(E) + ", " + std::to_string(rows) + ", " + std::to_string(nb) + "]");
    bytes->resize(static_cast<size_t>(E * n * nb) * 17);
    std::byte* out = bytes->data();
    for (int64_t e = 0; e < E; ++e)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t r = e * rows + stride * j + par;
        for (int64_t c = 0; c < nb; ++c, out += 17)
          repack_mxfp4(static_cast<uint8_t>(s->data[static_cast<size_t>(r * nb + c)]), b->data.data() + static_cast<size_t>(r * nb + c) * 16, out);
      }
    w.type = gpu::dtype::mxfp4;
    w.ne = {k, n, E, 1};
    w.n_dims = 3;
  }
  w.data = std::span<const std::byte>(bytes->data(), bytes->size());
  w.owner = std::move(bytes);
  return w;
}

}  // namespace vks::model
