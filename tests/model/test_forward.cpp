// Forward pass on the reference backend: the stories260K golden output, batched vs
// single-sequence equality, chunking, GGUF vs HF layouts (RoPE permutation), weight types.
#include "catch.hpp"

#include <cmath>

#include "base/mapped_file.hpp"
#include "helpers.hpp"
#include "model/model_file.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

const char* k_tiny_shapes[] = {"tiny-llama", "tiny-llama3", "tiny-qwen2", "tiny-qwen3", "tiny-llama-yarn",
                               "tiny-phi3",  "tiny-smollm3", "tiny-mistral3", "tiny-gemma2", "tiny-gemma3",
                               "tiny-qwen3moe"};

// Greedy generation of n tokens after BOS, decoded with the model's tokenizer.
std::string greedy_text(runner& r, const text::tokenizer& tok, int n) {
  kv_sequence seq;
  VKS_ASSERT(r.kv().reserve(seq, n + 1).ok(), "reserve");
  std::vector<int32_t> ids = {tok.bos()};
  text::incremental_decoder dec(tok);
  std::string out;
  for (int i = 0; i < n; ++i) {
    batch b;
    b.block_tables.push_back(seq.blocks);
    b.add_tokens(0, std::span(ids).last(1), static_cast<int32_t>(ids.size() - 1), true);
    auto l = r.forward(b);
    VKS_ASSERT(l.ok(), "forward");
    ids.push_back(argmax(*l));
    out += dec.push(ids.back());
  }
  return out + dec.flush();
}

}  // namespace

TEST_CASE("stories260K greedy output equals llama2.c's (ref backend)", "[model][forward][golden]") {
  const std::string dir = shared_dir() + "/models/stories260K/";
  auto expected = read_file(dir + "expected_greedy_t0_llama2c.txt");
  REQUIRE(expected.ok());
  std::string want = expected->substr(expected->find('\n') + 1);
  while (!want.empty() && want.back() == '\n') want.pop_back();
  auto f = model_file::open(dir + "stories260K.gguf");
  REQUIRE(f.ok());
  auto tok = text::tokenizer::from_gguf(*f->gguf());
  REQUIRE(tok.ok());
  auto be = gpu::make_ref_backend();
  auto r = load_runner(dir + "stories260K.gguf", *be, 272, 1);
  std::string got = greedy_text(*r, **tok, 256);
  CHECK(got.substr(0, want.size()) == want);
}

TEST_CASE("batched sequences equal each sequence alone", "[model][forward][batch]") {
  temp_dir tmp;
  for (auto shape : k_tiny_shapes) {
    DYNAMIC_SECTION(shape) {
      auto spec = tiny_spec(shape, gpu::dtype::f32);
      REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
      auto be = gpu::make_ref_backend();
      auto r = load_runner(tmp / "m.gguf", *be, 64, 4);
      const int V = spec.config.n_vocab;
      // Three sequences: lengths 5, 19, 33; each runs as prefill of all but 2, then 2 decodes.
      std::vector<std::vector<int32_t>> seqs = {test_tokens(5, V, 1), test_tokens(19, V, 2), test_tokens(33, V, 3)};
      std::vector<std::vector<float>> alone;
      for (auto& s : seqs) alone.push_back(sequence_logits(*r, s, s.size() - 2));
      // Together: step 0 = all prefills in one batch, then decode steps batched.
      std::vector<kv_sequence> kv(3);
      std::vector<std::vector<float>> together(3);
      for (size_t i = 0; i < 3; ++i) REQUIRE(r->kv().reserve(kv[i], static_cast<int>(seqs[i].size())).ok());
      for (size_t step = 0; step < 3; ++step) {
        batch b;
        for (size_t i = 0; i < 3; ++i) b.block_tables.push_back(kv[i].blocks);
        for (size_t i = 0; i < 3; ++i) {
          const size_t n_pre = seqs[i].size() - 2;
          const size_t first = step == 0 ? 0 : n_pre + step - 1, n = step == 0 ? n_pre : 1;
          const size_t row0 = b.tokens.size();
          b.add_tokens(static_cast<int32_t>(i), std::span(seqs[i]).subspan(first, n), static_cast<int32_t>(first), false);
          for (size_t k = 0; k < n; ++k) b.logit_rows.push_back(static_cast<int32_t>(row0 + k));
        }
        auto l = r->forward(b);
        REQUIRE(l.ok());
        size_t at = 0;
        for (size_t i = 0; i < 3; ++i) {
          const size_t n = (step == 0 ? seqs[i].size() - 2 : 1) * static_cast<size_t>(V);
          together[i].insert(together[i].end(), l->begin() + static_cast<long>(at), l->begin() + static_cast<long>(at + n));
          at += n;
        }
      }
      for (size_t i = 0; i < 3; ++i) {
        auto d = compare(together[i], alone[i]);
        INFO("sequence " << i << " max diff " << d.max_abs_diff);
        CHECK(d.max_abs_diff <= 1e-5f * std::max(1.f, d.max_abs_ref));
      }
      for (auto& s : kv) r->kv().release(s);
      CHECK(r->kv().n_free() == r->kv().n_blocks());
    }
  }
}

TEST_CASE("chunked steps equal one big step", "[model][forward][batch]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen3", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto be = gpu::make_ref_backend();
  auto big = load_runner(tmp / "m.gguf", *be, 64, 1);
  auto small = load_runner(tmp / "m.gguf", *be, 64, 1, /*max_batch=*/8, /*max_rows=*/3);
  auto toks = test_tokens(40, spec.config.n_vocab, 9);
  auto a = sequence_logits(*big, toks, 40);
  auto b = sequence_logits(*small, toks, 40);
  auto d = compare(b, a);
  CHECK(d.max_abs_diff <= 1e-5f * std::max(1.f, d.max_abs_ref));
}

TEST_CASE("logit rows come back in the order asked, repeats included", "[model][forward][batch]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto be = gpu::make_ref_backend();
  auto r = load_runner(tmp / "m.gguf", *be, 64, 1);
  const auto toks = test_tokens(6, spec.config.n_vocab, 4);
  const size_t V = static_cast<size_t>(spec.config.n_vocab);
  auto run = [&](std::vector<int32_t> rows) {
    kv_sequence seq;
    REQUIRE(r->kv().reserve(seq, 6).ok());
    batch b;
    b.block_tables.push_back(seq.blocks);
    b.add_tokens(0, toks, 0, false);
    b.logit_rows = std::move(rows);
    auto l = r->forward(b);
    r->kv().release(seq);
    REQUIRE(l.ok());
    return *l;
  };
  const auto in_order = run({0, 1, 2, 3, 4, 5});  // downloaded in place
  const auto mixed = run({5, 0, 3, 3});           // through the copy
  REQUIRE(mixed.size() == 4 * V);
  const size_t want[] = {5, 0, 3, 3};
  for (size_t i = 0; i < 4; ++i)
    for (size_t v = 0; v < V; ++v) REQUIRE(mixed[i * V + v] == in_order[want[i] * V + v]);
}

TEST_CASE("GGUF and HF layouts of the same weights compute the same logits", "[model][forward][rope]") {
  temp_dir tmp;
  for (auto shape : k_tiny_shapes) {
    auto spec = tiny_spec(shape, gpu::dtype::f32);
    if (spec.config.arch != "llama" && spec.config.arch != "qwen2" && spec.config.arch != "qwen3" &&
        spec.config.arch != "smollm3" && spec.config.arch != "phi3" && spec.config.arch != "gemma2" &&
        spec.config.arch != "gemma3" && spec.config.arch != "qwen3moe" && spec.config.arch != "mistral3")
      continue;
    DYNAMIC_SECTION(shape) {
      REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
      REQUIRE(write_test_hf(spec, tmp / "hf", 2).ok());
      auto be = gpu::make_ref_backend();
      auto g = load_runner(tmp / "m.gguf", *be, 48, 1);
      auto h = load_runner(tmp / "hf", *be, 48, 1);
      CHECK((g->config().rope.mode != h->config().rope.mode || g->config().rope.mode == gpu::rope_mode::neox));
      CHECK(h->config().no_rope_layer_step == spec.config.no_rope_layer_step);
      CHECK(h->config().n_expert == spec.config.n_expert);  // qwen3moe: per-expert HF tensors stacked
      CHECK(h->config().n_ff_exp == spec.config.n_ff_exp);
      auto toks = test_tokens(48, spec.config.n_vocab, 4);
      auto a = sequence_logits(*g, toks, 24);
      auto b = sequence_logits(*h, toks, 24);
      auto d = compare(b, a);
      INFO("max diff " << d.max_abs_diff << " of " << d.max_abs_ref);
      CHECK(d.max_abs_diff <= 1e-4f * std::max(1.f, d.max_abs_ref));
    }
  }
}

// gpt-oss as GptOssForCausalLM publishes it: fused gate_up_proj with gate and up rows interleaved,
// float experts transposed ([E, K, rows]) or MXFP4 _blocks / _scales (openai/gpt-oss-20b: experts
// MXFP4, the rest bf16), router, sinks, biases; each equals the GGUF of the same weights.
TEST_CASE("gpt-oss's HF layout (float and MXFP4 experts) computes the GGUF's logits", "[model][forward][gpt-oss]") {
  temp_dir tmp;
  struct variant { gpu::dtype type; bool mxfp4; };
  // (f32 only: a bf16 directory would round the router and biases, which the GGUF keeps f32.)
  for (auto [type, mxfp4] : {variant{gpu::dtype::f32, false}, variant{gpu::dtype::f32, true}}) {
    auto spec = tiny_spec("tiny-gpt-oss", type);
    if (mxfp4) spec.expert_type = gpu::dtype::mxfp4;
    INFO(gpu::traits(type).name << (mxfp4 ? " with mxfp4 experts" : ""));
    const std::string hf = tmp / ("hf-" + std::string(gpu::traits(type).name) + (mxfp4 ? "-mxfp4" : ""));
    REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
    REQUIRE(write_test_hf(spec, hf, mxfp4 ? 1 : 2).ok());
    auto be = gpu::make_ref_backend();
    auto g = load_runner(tmp / "m.gguf", *be, 48, 1);
    auto h = load_runner(hf, *be, 48, 1);
    const auto& hc = h->config();
    CHECK(hc.arch == "gpt-oss");
    CHECK(hc.n_expert == spec.config.n_expert);
    CHECK(hc.n_expert_used == spec.config.n_expert_used);
    CHECK(hc.n_ff_exp == spec.config.n_ff_exp);
    CHECK(hc.expert_gating == gpu::moe_gating::softmax_selected);
    CHECK((hc.attn_sinks && hc.attn_out_bias && hc.expert_bias && hc.qkv_bias && hc.swiglu_oai));
    CHECK(hc.sliding_window == 8);
    CHECK(hc.is_swa_layer(0));
    CHECK(!hc.is_swa_layer(1));
    CHECK(hc.rope.corr_low == g->config().rope.corr_low);
    CHECK(hc.rope.mscale == Approx(g->config().rope.mscale));
    auto toks = test_tokens(48, spec.config.n_vocab, 5);
    auto a = sequence_logits(*g, toks, 24);
    auto b = sequence_logits(*h, toks, 24);
    auto d = compare(b, a);
    INFO("max diff " << d.max_abs_diff << " of " << d.max_abs_ref);
    CHECK(d.max_abs_diff <= 1e-4f * std::max(1.f, d.max_abs_ref));
  }
}

TEST_CASE("a yarn GGUF computes other logits than the same file without its yarn keys", "[model][forward][rope]") {
  temp_dir tmp;
  auto yarn = tiny_spec("tiny-llama-yarn", gpu::dtype::f32);
  auto plain = yarn;
  plain.config.rope_scaling = {};
  plain.config.rope = {gpu::rope_mode::normal, yarn.config.rope.n_dims, yarn.config.rope.freq_base, 1.f};
  REQUIRE(write_test_gguf(yarn, tmp / "yarn.gguf").ok());
  REQUIRE(write_test_gguf(plain, tmp / "plain.gguf").ok());
  auto be = gpu::make_ref_backend();
  auto y = load_runner(tmp / "yarn.gguf", *be, 48, 1);
  auto p = load_runner(tmp / "plain.gguf", *be, 48, 1);
  CHECK(y->config().rope_scaling.type == "yarn");
  CHECK(y->config().rope.ext_factor == 1.f);
  CHECK(y->config().rope.corr_low == 0.f);
  CHECK(y->config().rope.corr_high == 9.f);
  CHECK(y->config().rope.mscale == Approx(1.0 + 0.1 * std::log(4.0)));
  CHECK(p->config().rope.freq_scale == 1.f);
  auto toks = test_tokens(40, yarn.config.n_vocab, 6);
  auto a = sequence_logits(*y, toks, 20);
  auto b = sequence_logits(*p, toks, 20);
  auto d = compare(a, b);
  INFO("max diff " << d.max_abs_diff << " of " << d.max_abs_ref);
  CHECK(d.max_abs_diff > 0.05f * d.max_abs_ref);
}

TEST_CASE("gemma's sliding window and soft-caps change the logits", "[model][forward][gemma]") {
  temp_dir tmp;
  for (auto shape : {"tiny-gemma2", "tiny-gemma3"}) {
    auto spec = tiny_spec(shape, gpu::dtype::f32);
    auto variants = std::vector<test_model_spec>{spec, spec, spec};
    variants[1].config.sliding_window = 0;  // every layer global (gemma3: and its final cap)
    variants[2].config.attn_softcap = variants[2].config.final_softcap = 0.f;
    auto be = gpu::make_ref_backend();
    auto toks = test_tokens(40, spec.config.n_vocab, 8);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < variants.size(); ++i) {
      const std::string path = tmp / ("v" + std::to_string(i) + ".gguf");
      REQUIRE(write_test_gguf(variants[i], path).ok());
      auto r = load_runner(path, *be, 48, 1);
      out.push_back(sequence_logits(*r, toks, 20));
    }
    auto window = compare(out[1], out[0]);
    INFO(shape << ": without the window, max diff " << window.max_abs_diff);
    CHECK(window.max_abs_diff > 0.05f * window.max_abs_ref);
    if (spec.config.arch == "gemma2") {
      auto caps = compare(out[2], out[0]);
      INFO("without soft-caps, max diff " << caps.max_abs_diff);
      CHECK(caps.max_abs_diff > 0.05f * caps.max_abs_ref);
    }
  }
}

TEST_CASE("every weight type runs and stays close to f32", "[model][forward][types]") {
  temp_dir tmp;
  using gpu::dtype;
  // RMS error of the logits relative to the f32 model's RMS (quantisation noise through
  // 2 layers of a random model).
  const std::pair<dtype, float> types[] = {{dtype::f16, 0.002f}, {dtype::bf16, 0.015f}, {dtype::q8_0, 0.04f},
                                           {dtype::q6_K, 0.12f}, {dtype::q4_K, 0.45f}, {dtype::q4_0, 0.45f}};  // uncorrelated: ~1.4
  for (auto shape : {"tiny-llama", "tiny-qwen2"}) {
    auto f32 = tiny_spec(shape, dtype::f32);
    REQUIRE(write_test_gguf(f32, tmp / "f32.gguf").ok());
    auto be = gpu::make_ref_backend();
    auto toks = test_tokens(20, f32.config.n_vocab, 5);
    auto ref = sequence_logits(*load_runner(tmp / "f32.gguf", *be, 32, 1), toks, 10);
    for (auto [t, tol] : types) {
      auto spec = tiny_spec(shape, t);
      REQUIRE(write_test_gguf(spec, tmp / "q.gguf").ok());
      auto l = sequence_logits(*load_runner(tmp / "q.gguf", *be, 32, 1), toks, 10);
      bool finite = std::all_of(l.begin(), l.end(), [](float x) { return std::isfinite(x); });
      double se = 0, ss = 0;
      for (size_t i = 0; i < l.size(); ++i) {
        se += (l[i] - ref[i]) * static_cast<double>(l[i] - ref[i]);
        ss += ref[i] * static_cast<double>(ref[i]);
      }
      const double rel = std::sqrt(se / ss);
      INFO(shape << " " << gpu::traits(t).name << ": relative RMS error " << rel);
      CHECK(finite);
      CHECK(rel <= tol);
    }
  }
}

TEST_CASE("q8_0 KV cache: logits stay close to the f32 cache's; head dims not divisible by 32 are refused",
          "[model][forward][kvq8]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto be = gpu::make_ref_backend();
  auto toks = test_tokens(20, spec.config.n_vocab, 5);
  auto ref = sequence_logits(*load_runner(tmp / "m.gguf", *be, 32, 1), toks, 10);
  auto q8 = sequence_logits(*load_runner(tmp / "m.gguf", *be, 32, 1, 256, 64, gpu::dtype::q8_0), toks, 10);
  double se = 0, ss = 0;
  for (size_t i = 0; i < q8.size(); ++i) {
    se += (q8[i] - ref[i]) * static_cast<double>(q8[i] - ref[i]);
    ss += ref[i] * static_cast<double>(ref[i]);
  }
  INFO("relative RMS error " << std::sqrt(se / ss));
  CHECK(std::sqrt(se / ss) < 0.02);
  CHECK(se > 0);  // the cache really is quantized

  model_config c = spec.config;
  c.head_dim = 48;
  auto kv = kv_cache::create(*be, c, 4, gpu::dtype::q8_0);
  REQUIRE_FALSE(kv.ok());
  CHECK(kv.error().message.find("divisible by 32") != std::string::npos);
  CHECK(kv_cache_dtype("q8_0", be->info()).value() == gpu::dtype::q8_0);
  CHECK_FALSE(kv_cache_dtype("q4_0", be->info()).ok());
}

TEST_CASE("inconsistent batches are rejected", "[model][forward][errors]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto be = gpu::make_ref_backend();
  auto r = load_runner(tmp / "m.gguf", *be, 32, 1);
  kv_sequence s;
  REQUIRE(r->kv().reserve(s, 16).ok());
  auto run = [&](batch b) {
    auto l = r->forward(b);
    return l.ok() ? std::string() : l.error().message;
  };
  batch ok_b;
  ok_b.block_tables.push_back(s.blocks);
  ok_b.add_tokens(0, std::vector<int32_t>{1, 2, 3}, 0, true);
  CHECK(run(ok_b).empty());
  auto b = ok_b;
  b.tokens[1] = spec.config.n_vocab;
  CHECK_THAT(run(b), Catch::Contains("token id"));
  b = ok_b;
  b.pos[2] = 16;  // no block for position 16 in a 1-block table
  CHECK_THAT(run(b), Catch::Contains("no KV block"));
  b = ok_b;
  b.seq[0] = 1;
  CHECK_THAT(run(b), Catch::Contains("sequence index"));
  b = ok_b;
  b.logit_rows = {3};
  CHECK_THAT(run(b), Catch::Contains("logit row"));
  b = ok_b;
  b.pos.pop_back();
  CHECK_THAT(run(b), Catch::Contains("same length"));
  kv_sequence big;
  CHECK(r->kv().reserve(big, 10000).error().code == errc::out_of_memory);
  CHECK(big.blocks.empty());
}

TEST_CASE("forward_hidden rows are the lm head's input: times the output weights they give the logits", "[model][forward][embed]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto file = model_file::open(tmp / "m.gguf");
  REQUIRE(file.ok());
  auto be = gpu::make_ref_backend();
  auto r = load_runner(tmp / "m.gguf", *be, 64, 1, /*max_batch=*/8, /*max_rows=*/3);  // chunks and row splits
  const auto toks = test_tokens(10, spec.config.n_vocab, 5);
  const size_t V = static_cast<size_t>(spec.config.n_vocab), C = static_cast<size_t>(spec.config.n_embd);
  auto run = [&](bool hidden) {
    kv_sequence seq;
    REQUIRE(r->kv().reserve(seq, 10).ok());
    batch b;
    b.block_tables.push_back(seq.blocks);
    b.add_tokens(0, toks, 0, false);
    b.logit_rows = {9, 0, 4, 5, 1};
    auto l = hidden ? r->forward_hidden(b) : r->forward(b);
    r->kv().release(seq);
    REQUIRE(l.ok());
    return *l;
  };
  const auto h = run(true);
  const auto logits = run(false);
  REQUIRE(h.size() == 5 * C);
  auto w = file->tensor(file->has_tensor("output.weight") ? "output.weight" : "token_embd.weight");
  REQUIRE(w.ok());
  REQUIRE(w->type == gpu::dtype::f32);
  const auto* W = reinterpret_cast<const float*>(w->data.data());
  float worst = 0, scale = 1;
  for (size_t i = 0; i < 5; ++i)
    for (size_t v = 0; v < V; ++v) {
      double dot = 0;
      for (size_t c = 0; c < C; ++c) dot += double{h[i * C + c]} * W[v * C + c];
      worst = std::max(worst, std::abs(static_cast<float>(dot) - logits[i * V + v]));
      scale = std::max(scale, std::abs(logits[i * V + v]));
    }
  CHECK(worst <= 1e-4f * scale);
}

TEST_CASE("qwen3moe: experts read from GGUF, bad expert counts refused, the router matters", "[model][forward][moe]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen3moe", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto f = model_file::open(tmp / "m.gguf");
  REQUIRE(f.ok());
  const auto& c = f->config();
  CHECK(c.n_expert == 8);
  CHECK(c.n_expert_used == 2);
  CHECK(c.n_ff_exp == 256);
  CHECK(c.expert_norm);
  CHECK(c.qk_norm);
  for (int used : {0, 9, 17}) {  // 0: missing (no key written); above E; above the kernels' 16
    auto bad = spec;
    bad.config.n_expert_used = used;
    bad.config.n_expert = used == 17 ? 32 : 8;
    REQUIRE(write_test_gguf(bad, tmp / "bad.gguf").ok());
    auto g = model_file::open(tmp / "bad.gguf");
    INFO("experts used " << used << ": " << (g ? "loaded" : g.error().message));
    CHECK_FALSE(g.ok());
  }
  // One expert per token instead of two gives other logits: the routing is live.
  auto be = gpu::make_ref_backend();
  const auto toks = test_tokens(12, spec.config.n_vocab, 5);
  auto two = sequence_logits(*load_runner(tmp / "m.gguf", *be, 64, 1), toks, 6);
  auto one_spec = spec;
  one_spec.config.n_expert_used = 1;
  REQUIRE(write_test_gguf(one_spec, tmp / "one.gguf").ok());
  auto one = sequence_logits(*load_runner(tmp / "one.gguf", *be, 64, 1), toks, 6);
  CHECK(compare(one, two).max_abs_diff > 1e-2f);
}

TEST_CASE("gpt-oss: config and biases read from GGUF, no window refused, the sinks matter", "[model][forward][moe]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-gpt-oss", gpu::dtype::f32);
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto f = model_file::open(tmp / "m.gguf");
  REQUIRE(f.ok());
  const auto& c = f->config();
  CHECK(c.n_expert == 8);
  CHECK(c.n_expert_used == 4);
  CHECK(c.expert_gating == gpu::moe_gating::softmax_selected);
  CHECK_FALSE(c.expert_norm);
  CHECK((c.qkv_bias && c.attn_sinks && c.attn_out_bias && c.expert_bias && c.swiglu_oai));
  CHECK(c.sliding_window == 8);
  CHECK((c.is_swa_layer(0) && !c.is_swa_layer(1) && c.is_swa_layer(2)));
  CHECK(c.rope_scaling.type == "yarn");
  auto no_window = spec;
  no_window.config.sliding_window = 0;  // the key is not written: llama.cpp requires it
  REQUIRE(write_test_gguf(no_window, tmp / "bad.gguf").ok());
  auto g = model_file::open(tmp / "bad.gguf");
  CHECK_FALSE(g.ok());
  // Without sinks (a file whose sinks are -inf-like) the logits move: the sinks are live.
  auto be = gpu::make_ref_backend();
  const auto toks = test_tokens(12, spec.config.n_vocab, 5);
  auto with = sequence_logits(*load_runner(tmp / "m.gguf", *be, 64, 1), toks, 6);
  auto r = load_runner(tmp / "m.gguf", *be, 64, 1);
  std::vector<float> low(static_cast<size_t>(c.n_head), -1e4f);
  for (const auto& lw : r->weights().layers) REQUIRE(be->upload(lw.attn_sinks, std::as_bytes(std::span(low))).ok());
  auto without = sequence_logits(*r, toks, 6);
  CHECK(compare(with, without).max_abs_diff > 1e-2f);
}
