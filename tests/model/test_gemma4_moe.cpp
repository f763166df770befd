// Gemma 4's MoE layers (#22, model/gemma4_moe.hpp) on make-test-model's tiny-gemma4moe: the
// expert keys read from GGUF, the two file layouts of the experts' gate/up (fused
// ffn_gate_up_exps as published, or apart) computing the same logits, a router without
// expert_count refused, the per-expert output scale live; on vk under both kernel families,
// quantized experts against gpu/ref and batched sequences routed to different experts equal
// to each sequence alone. The outside reference (llama.cpp) is tests/model/llamacpp/gemma4moe.json
// in test_llamacpp's families test.
#include "catch.hpp"

#include <functional>
#include <string>
#include <vector>

#include "base/gguf.hpp"
#include "helpers.hpp"
#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

// Copies the GGUF at `src` to `dst`: metadata for which keep(key) holds (rewritten by
// `meta` when set), each tensor through `put` (which adds it, changed or not, to w).
using put_fn = std::function<void(gguf_writer& w, const gguf::tensor_info& t)>;
void rewrite(const std::string& src, const std::string& dst, const std::function<bool(const std::string&)>& keep,
             const put_fn& put, const std::function<void(gguf_writer&)>& meta = {}) {
  auto f = gguf::file::open(src);
  REQUIRE(f.ok());
  gguf_writer w;
  for (const auto& [k, v] : f->metadata())
    if (keep(k)) w.add_value(k, v);
  if (meta) meta(w);
  for (const auto& t : f->tensors()) put(w, t);
  REQUIRE(w.write(dst).ok());
}

void copy_tensor(gguf_writer& w, const gguf::tensor_info& t) { w.add_tensor_bytes(t.name, t.dims, t.type, t.data); }

std::vector<float> logits_of(const std::string& path, gpu::backend& be, const std::vector<int32_t>& toks) {
  return sequence_logits(*load_runner(path, be, 64, 1), toks, 12);
}

std::unique_ptr<gpu::backend> make_vk_tuned(const std::string& tuning) {
  gpu::vk_options o;
  o.tuning = tuning;
  auto be = gpu::make_vk_backend(o);
  REQUIRE(be.ok());
  return std::move(*be);
}

}  // namespace

TEST_CASE("gemma4 MoE: expert keys, fused or separate gate/up stacks, refusals, the expert scale matters",
          "[model][forward][moe][gemma4]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-gemma4moe", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto f = model_file::open(tmp / "m.gguf");
  REQUIRE(f.ok());
  const auto& c = f->config();
  CHECK(c.n_expert == 8);
  CHECK(c.n_expert_used == 2);
  CHECK(c.n_ff_exp == 256);
  CHECK(c.n_ff == 512);  // the dense FFN beside the experts
  CHECK(c.expert_gating == gpu::moe_gating::softmax);
  CHECK(c.expert_norm);
  CHECK(c.expert_scale == 0.f);
  CHECK(f->has_tensor("blk.0.ffn_gate_up_exps.weight"));

  auto be = gpu::make_ref_backend();
  const auto toks = test_tokens(16, spec.config.n_vocab, 5);
  const auto want = logits_of(tmp / "m.gguf", *be, toks);
  auto all = [](const std::string&) { return true; };

  // ffn_gate_up_exps {C, 2Fe, E} split into ffn_gate_exps and ffn_up_exps {C, Fe, E}.
  std::vector<std::vector<std::byte>> keep_alive;
  rewrite(tmp / "m.gguf", tmp / "apart.gguf", all, [&](gguf_writer& w, const gguf::tensor_info& t) {
    const std::string n = t.name;
    const auto at = n.find("ffn_gate_up_exps.weight");
    if (at == std::string::npos) return copy_tensor(w, t);
    const uint64_t half = t.data.size() / (2 * t.dims[2]);
    std::vector<std::byte> g, u;
    for (uint64_t e = 0; e < t.dims[2]; ++e) {
      const auto* p = t.data.data() + 2 * half * e;
      g.insert(g.end(), p, p + half);
      u.insert(u.end(), p + half, p + 2 * half);
    }
    keep_alive.push_back(std::move(g));
    keep_alive.push_back(std::move(u));
    const std::vector<uint64_t> dims = {t.dims[0], t.dims[1] / 2, t.dims[2]};
    w.add_tensor_bytes(n.substr(0, at) + "ffn_gate_exps.weight", dims, t.type, keep_alive[keep_alive.size() - 2]);
    w.add_tensor_bytes(n.substr(0, at) + "ffn_up_exps.weight", dims, t.type, keep_alive.back());
  });
  const auto apart = logits_of(tmp / "apart.gguf", *be, toks);
  CHECK(compare(apart, want).max_abs_diff == 0.f);

  // Without ffn_down_exps.scale the experts' outputs are unscaled: other logits.
  rewrite(tmp / "m.gguf", tmp / "noscale.gguf", all, [&](gguf_writer& w, const gguf::tensor_info& t) {
    if (!t.name.ends_with("ffn_down_exps.scale")) copy_tensor(w, t);
  });
  CHECK(compare(logits_of(tmp / "noscale.gguf", *be, toks), want).max_abs_diff > 1e-2f);

  // expert_feed_forward_length as a per-layer array (llama.cpp reads one): uniform loads.
  auto no_ffe = [](const std::string& k) { return k != "gemma4.expert_feed_forward_length"; };
  rewrite(tmp / "m.gguf", tmp / "arr.gguf", no_ffe, copy_tensor,
          [](gguf_writer& w) { w.add_i32s("gemma4.expert_feed_forward_length", {256, 256, 256, 256, 256}); });
  auto arr = model_file::open(tmp / "arr.gguf");
  REQUIRE(arr.ok());
  CHECK(arr->config().n_ff_exp == 256);
  rewrite(tmp / "m.gguf", tmp / "arr2.gguf", no_ffe, copy_tensor,
          [](gguf_writer& w) { w.add_i32s("gemma4.expert_feed_forward_length", {256, 128, 256, 256, 256}); });
  auto arr2 = model_file::open(tmp / "arr2.gguf");
  REQUIRE_FALSE(arr2.ok());
  CHECK(arr2.error().code == errc::unsupported);

  // Refused with a clear error: no expert width; a router in a file without expert_count.
  rewrite(tmp / "m.gguf", tmp / "noffe.gguf", no_ffe, copy_tensor);
  auto noffe = model_file::open(tmp / "noffe.gguf");
  REQUIRE_FALSE(noffe.ok());
  CHECK_THAT(noffe.error().message, Catch::Contains("expert feed-forward length"));
  rewrite(tmp / "m.gguf", tmp / "nocount.gguf", [](const std::string& k) { return k.find("expert") == std::string::npos; },
          copy_tensor);
  auto nocount = model_file::open(tmp / "nocount.gguf");
  REQUIRE(nocount.ok());
  runner_options o;
  o.max_context = 64;
  o.kv_blocks = 4;
  auto r = runner::load(*nocount, *be, o);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("no expert_count"));
}

// q8_0 weights (the expert matvec and, under gpu with 12-token prefills and the batch below,
// the gathered expert GEMM) against gpu/ref; three sequences (3, 20, 37 tokens, past the
// window of 8) prefilled in one step equal each alone.
TEST_CASE("vk gemma4 MoE: q8_0 experts match ref, batched rows equal each sequence alone, both tunings",
          "[vk][moe][gemma4]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-gemma4moe", gpu::dtype::q8_0);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  const int V = spec.config.n_vocab;
  const auto toks = test_tokens(20, V, 9);
  auto ref = gpu::make_ref_backend();
  const auto want = logits_of(tmp / "m.gguf", *ref, toks);
  for (const std::string tuning : {"cpu", "gpu"}) {
    INFO("tuning " << tuning);
    auto vk = make_vk_tuned(tuning);
    const auto got = logits_of(tmp / "m.gguf", *vk, toks);
    const auto d = compare(got, want);
    CHECK(d.max_abs_diff <= 1e-2f * std::max(1.f, d.max_abs_ref));
    CHECK(greedy_disagreements(got, want, V, 2e-2f) == 0);

    auto r = load_runner(tmp / "m.gguf", *vk, 64, 4);
    std::vector<std::vector<int32_t>> seqs = {test_tokens(3, V, 1), test_tokens(20, V, 2), test_tokens(37, V, 3)};
    std::vector<std::vector<float>> alone;
    for (auto& s : seqs) alone.push_back(sequence_logits(*r, s, s.size()));
    std::vector<kv_sequence> kv(3);
    batch b;
    for (size_t i = 0; i < 3; ++i) {
      REQUIRE(r->kv().reserve(kv[i], static_cast<int>(seqs[i].size())).ok());
      b.block_tables.push_back(kv[i].blocks);
    }
    for (size_t i = 0; i < 3; ++i) {
      const size_t row0 = b.tokens.size();
      b.add_tokens(static_cast<int32_t>(i), seqs[i], 0, false);
      for (size_t k = 0; k < seqs[i].size(); ++k) b.logit_rows.push_back(static_cast<int32_t>(row0 + k));
    }
    auto l = r->forward(b);
    REQUIRE(l.ok());
    size_t at = 0;
    for (size_t i = 0; i < 3; ++i) {
      std::vector<float> mine(l->begin() + static_cast<long>(at), l->begin() + static_cast<long>(at + alone[i].size()));
      at += alone[i].size();
      const auto bd = compare(mine, alone[i]);
      INFO("sequence " << i << ": max diff " << bd.max_abs_diff);
      CHECK(bd.max_abs_diff <= 1e-3f * std::max(1.f, bd.max_abs_ref));
    }
    for (auto& s : kv) r->kv().release(s);
  }
}
