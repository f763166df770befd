// Hybrid recurrent models (qwen35, qwen35moe, qwen3next: gated DeltaNet + gated attention) on the reference backend
// and on vk: the recurrent state carried across steps (token by token equals one prefill),
// batched sequences in their own state slots equal each alone, a slot restarted at position 0
// forgets its previous sequence, and a step that does not continue a slot's state is refused.
#include "catch.hpp"

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "model/config.hpp"
#include "model/gguf_writer.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

std::string write_tiny_qwen35(const temp_dir& tmp) {
  const std::string path = tmp / "q35.gguf";
  REQUIRE(write_test_gguf(tiny_spec("tiny-qwen35", gpu::dtype::f32, 5), path).ok());
  return path;
}

// Sequences a and b (lengths differ) batched in one step each way (prefill, then two decode
// steps of both) equal each run alone, with their state slots swapped from the natural order.
void check_batched(runner& r, float tol) {
  const int V = r.config().n_vocab;
  const auto a = test_tokens(11, V, 3), b = test_tokens(6, V, 4);
  const auto alone_a = sequence_logits(r, a, 9), alone_b = sequence_logits(r, b, 4);
  kv_sequence sa, sb;
  REQUIRE(r.kv().reserve(sa, 11).ok());
  REQUIRE(r.kv().reserve(sb, 6).ok());
  std::vector<float> got_a, got_b;
  const size_t pre_a = 9, pre_b = 4;
  for (size_t step = 0; step < 3; ++step) {
    batch bt;
    bt.block_tables = {sa.blocks, sb.blocks};
    bt.state_slots = {3, 1};
    const size_t a0 = step == 0 ? 0 : pre_a + step - 1, an = step == 0 ? pre_a : 1;
    const size_t b0 = step == 0 ? 0 : pre_b + step - 1, bn = step == 0 ? pre_b : 1;
    bt.add_tokens(0, std::span(a).subspan(a0, an), static_cast<int32_t>(a0), false);
    for (size_t i = 0; i < an; ++i) bt.logit_rows.push_back(static_cast<int32_t>(i));
    bt.add_tokens(1, std::span(b).subspan(b0, bn), static_cast<int32_t>(b0), false);
    for (size_t i = 0; i < bn; ++i) bt.logit_rows.push_back(static_cast<int32_t>(an + i));
    auto l = r.forward(bt);
    REQUIRE(l.ok());
    got_a.insert(got_a.end(), l->begin(), l->begin() + static_cast<std::ptrdiff_t>(an * V));
    got_b.insert(got_b.end(), l->begin() + static_cast<std::ptrdiff_t>(an * V), l->end());
  }
  r.kv().release(sa);
  r.kv().release(sb);
  const std::vector<float> want_a(alone_a.begin(), alone_a.begin() + static_cast<std::ptrdiff_t>(got_a.size()));
  const std::vector<float> want_b(alone_b.begin(), alone_b.begin() + static_cast<std::ptrdiff_t>(got_b.size()));
  CHECK(compare(got_a, want_a).max_abs_diff <= tol);
  CHECK(compare(got_b, want_b).max_abs_diff <= tol);
}

void check_state_carried(runner& r, float tol) {
  const auto toks = test_tokens(20, r.config().n_vocab, 2);
  const auto whole = sequence_logits(r, toks, toks.size());  // one prefill
  const auto steps = sequence_logits(r, toks, 1);            // token by token: the state carries it
  const auto d = compare(steps, whole);
  INFO("max |diff| " << d.max_abs_diff << " of max |logit| " << d.max_abs_ref);
  CHECK(d.max_abs_diff <= tol);
  // slot 0 now holds the last sequence's state; a new sequence at position 0 starts over
  const auto other = test_tokens(7, r.config().n_vocab, 9);
  const auto first = sequence_logits(r, other, 7), again = sequence_logits(r, other, 3);
  CHECK(compare(again, first).max_abs_diff <= tol);
}

}  // namespace

TEST_CASE("qwen35: the recurrent state carries across steps and slots (ref backend)", "[model][hybrid]") {
  temp_dir tmp;
  const auto path = write_tiny_qwen35(tmp);
  auto be = gpu::make_ref_backend();
  auto r = load_runner(path, *be, 64, 4);
  CHECK(r->config().is_hybrid());
  CHECK(r->states().n_slots() == 64);  // runner_options::max_seqs
  check_state_carried(*r, 1e-4f);
  check_batched(*r, 1e-4f);
}

namespace {

// A checkpoint taken mid-prefill (after 16 of 20 tokens) and restored into another slot
// continues exactly as the original sequence did.
void check_checkpoint(runner& r, float tol) {
  const int V = r.config().n_vocab;
  const int32_t ck = r.states().n_slots();  // the first checkpoint column
  const auto toks = test_tokens(20, V, 6);
  kv_sequence s;
  REQUIRE(r.kv().reserve(s, 20).ok());
  batch a;
  a.block_tables = {s.blocks};
  a.checkpoint_pos = {16};
  a.checkpoint_slot = {ck};
  a.add_tokens(0, toks, 0, false);
  for (int i = 16; i < 20; ++i) a.logit_rows.push_back(i);
  auto la = r.forward(a);
  REQUIRE(la.ok());
  CHECK(r.states().pos(ck) == 16);
  batch b;  // the same KV blocks (as a prefix-cache hit shares them), another slot
  b.block_tables = {s.blocks};
  b.state_slots = {2};
  b.state_src = {ck};
  b.add_tokens(0, std::span(toks).subspan(16), 16, false);
  for (int i = 0; i < 4; ++i) b.logit_rows.push_back(i);
  auto lb = r.forward(b);
  REQUIRE(lb.ok());
  CHECK(compare(*lb, *la).max_abs_diff <= tol);
  CHECK(r.states().pos(2) == 20);
  r.kv().release(s);
}

}  // namespace

TEST_CASE("qwen35: a state checkpoint restored into another slot continues the sequence", "[model][hybrid]") {
  temp_dir tmp;
  const auto path = write_tiny_qwen35(tmp);
  auto be = gpu::make_ref_backend();
  auto f = model_file::open(path);
  REQUIRE(f.ok());
  runner_options o;
  o.max_context = 64;
  o.kv_blocks = 8;
  o.max_seqs = 4;
  o.state_checkpoints = 2;
  auto r = runner::load(*f, *be, o);
  REQUIRE(r.ok());
  CHECK((*r)->states().n_checkpoints() == 2);
  check_checkpoint(**r, 1e-4f);
}

TEST_CASE("qwen35: a state checkpoint restored into another slot continues the sequence (vk)", "[model][hybrid][vk]") {
  temp_dir tmp;
  const auto path = write_tiny_qwen35(tmp);
  auto f = model_file::open(path);
  REQUIRE(f.ok());
  runner_options o;
  o.max_context = 64;
  o.kv_blocks = 8;
  o.max_seqs = 4;
  o.state_checkpoints = 2;
  for (auto tuning : {"cpu", "gpu"}) {
    gpu::vk_options vo;
    vo.tuning = tuning;
    auto be = gpu::make_vk_backend(vo);
    REQUIRE(be.ok());
    INFO("tuning " << tuning);
    auto r = runner::load(*f, **be, o);
    REQUIRE(r.ok());
    check_checkpoint(**r, 2e-3f);
  }
}

TEST_CASE("qwen35: a step that does not continue a state slot is refused", "[model][hybrid]") {
  temp_dir tmp;
  const auto path = write_tiny_qwen35(tmp);
  auto be = gpu::make_ref_backend();
  auto r = load_runner(path, *be, 64, 2);
  kv_sequence s;
  REQUIRE(r->kv().reserve(s, 16).ok());
  const auto toks = test_tokens(8, r->config().n_vocab, 1);
  batch b;
  b.block_tables = {s.blocks};
  b.add_tokens(0, std::span(toks).first(4), 0, true);
  REQUIRE(r->forward(b).ok());
  CHECK(r->states().pos(0) == 4);
  batch skip;  // resumes at 6: positions 4 and 5 never went through the state
  skip.block_tables = {s.blocks};
  skip.add_tokens(0, std::span(toks).subspan(6, 1), 6, true);
  auto e = r->forward(skip);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code == errc::invalid_argument);
  batch split;  // one sequence's tokens must be contiguous in the batch
  split.block_tables = {s.blocks, s.blocks};
  split.state_slots = {0, 1};
  split.add_tokens(0, std::span(toks).subspan(4, 1), 4, false);
  split.add_tokens(1, std::span(toks).first(1), 0, false);
  split.add_tokens(0, std::span(toks).subspan(5, 1), 5, true);
  CHECK_FALSE(r->forward(split).ok());
  batch shared;  // two sequences cannot share a slot
  shared.block_tables = {s.blocks, s.blocks};
  shared.state_slots = {1, 1};
  shared.add_tokens(0, std::span(toks).first(1), 0, false);
  shared.add_tokens(1, std::span(toks).first(1), 0, true);
  CHECK_FALSE(r->forward(shared).ok());
  r->kv().release(s);
}

TEST_CASE("qwen35: the recurrent state carries across steps and slots (vk)", "[model][hybrid][vk]") {
  temp_dir tmp;
  const auto path = write_tiny_qwen35(tmp);
  for (auto tuning : {"cpu", "gpu"}) {
    gpu::vk_options o;
    o.tuning = tuning;
    auto be = gpu::make_vk_backend(o);
    REQUIRE(be.ok());
    INFO("tuning " << tuning);
    auto r = load_runner(path, **be, 64, 4);
    check_state_carried(*r, 2e-3f);
    check_batched(*r, 2e-3f);
  }
}

TEST_CASE("state_cache: slots and checkpoints (found once written, evicted LRU, kept ones spared)", "[model][hybrid]") {
  auto be = gpu::make_ref_backend();
  auto spec = test_model_shape("tiny-qwen35");
  REQUIRE(spec.ok());
  auto sc = state_cache::create(*be, spec->config, 2, 2);
  REQUIRE(sc.ok());
  CHECK(sc->n_slots() == 2);
  CHECK(sc->n_checkpoints() == 2);
  auto s0 = sc->alloc(), s1 = sc->alloc();
  REQUIRE((s0 && s1));
  CHECK_FALSE(sc->alloc().has_value());
  CHECK(sc->pos(*s0) == 0);
  sc->free(*s0);
  CHECK(sc->n_free() == 1);
  auto a = sc->claim_checkpoint(10, {});
  REQUIRE(a);
  CHECK(*a >= 2);
  CHECK_FALSE(sc->find_checkpoint(10).has_value());  // not written yet
  sc->set_pos(*a, 16);
  CHECK(sc->find_checkpoint(10) == a);
  auto b = sc->claim_checkpoint(20, {});
  REQUIRE(b);
  CHECK(*b != *a);
  sc->set_pos(*b, 32);
  CHECK(sc->find_checkpoint(10) == a);   // 10 is now the most recently used
  auto c = sc->claim_checkpoint(30, {});  // evicts 20
  CHECK(c == b);
  CHECK_FALSE(sc->has_checkpoint(20));
  CHECK(sc->has_checkpoint(10));
  CHECK_FALSE(sc->claim_checkpoint(40, {*a, *b}).has_value());  // every column in use this step
  CHECK(sc->has_checkpoint(10));
}

// qwen35moe and qwen3next (#23): the hybrid stack with routed experts and the sigmoid-gated
// shared expert; qwen3next's file layout reordered at load. Batched sequences pick different
// experts per row and keep their own state slots; each must equal its run alone.
TEST_CASE("qwen35moe, qwen3next: the state carries and batched rows equal each alone (ref backend)",
          "[model][hybrid][moe]") {
  temp_dir tmp;
  auto be = gpu::make_ref_backend();
  for (const char* shape : {"tiny-qwen35moe", "tiny-qwen3next"}) {
    INFO(shape);
    const std::string path = tmp / (std::string(shape) + ".gguf");
    REQUIRE(write_test_gguf(tiny_spec(shape, gpu::dtype::f32, 5), path).ok());
    auto r = load_runner(path, *be, 64, 4);
    CHECK(r->config().is_hybrid());
    CHECK(r->config().n_ff_shexp == 256);
    check_state_carried(*r, 1e-4f);
    check_batched(*r, 1e-4f);
  }
}

// On vk one of the two (their layer code is the same; test_llamacpp runs both on vk).
TEST_CASE("qwen3next: the state carries and batched rows equal each alone (vk)", "[model][hybrid][moe][vk]") {
  temp_dir tmp;
  for (const char* shape : {"tiny-qwen3next"}) {
    const std::string path = tmp / (std::string(shape) + ".gguf");
    REQUIRE(write_test_gguf(tiny_spec(shape, gpu::dtype::f32, 5), path).ok());
    for (auto tuning : {"cpu", "gpu"}) {
      gpu::vk_options o;
      o.tuning = tuning;
      auto be = gpu::make_vk_backend(o);
      REQUIRE(be.ok());
      INFO(shape << " tuning " << tuning);
      auto r = load_runner(path, **be, 64, 4);
      check_state_carried(*r, 2e-3f);
      check_batched(*r, 2e-3f);
    }
  }
}

// Older qwen3next files fuse q/k/v/z into ssm_in {C, per key head [q S, k S, v r S, z r S]}
// (llama.cpp still reads them): the same weights in that layout give the same logits.
TEST_CASE("qwen3next: an older file's fused ssm_in loads as attn_qkv + attn_gate do", "[model][hybrid][moe]") {
  temp_dir tmp;
  const std::string path = tmp / "next.gguf", legacy = tmp / "legacy.gguf";
  const auto spec = tiny_spec("tiny-qwen3next", gpu::dtype::f32, 5);
  REQUIRE(write_test_gguf(spec, path).ok());
  auto f = gguf::file::open(path);
  REQUIRE(f.ok());
  const auto& c = spec.config;
  const uint64_t rb = uint64_t(c.n_embd) * 4, S = uint64_t(c.ssm_state), Hk = uint64_t(c.ssm_k_heads);
  const uint64_t r = uint64_t(c.ssm_v_heads) / Hk;
  gguf_writer w;
  for (const auto& [k, v] : f->metadata()) w.add_value(k, v);
  std::vector<std::vector<std::byte>> keep;
  int n_fused = 0;
  for (const auto& t : f->tensors()) {
    if (t.name.ends_with("attn_gate.weight")) continue;
    if (!t.name.ends_with("attn_qkv.weight")) {
      w.add_tensor_bytes(t.name, t.dims, t.type, t.data);
      continue;
    }
    const std::string p = t.name.substr(0, t.name.size() - std::string("attn_qkv.weight").size());
    const auto* z = f->find_tensor(p + "attn_gate.weight");
    REQUIRE(z);
    auto& b = keep.emplace_back();
    auto rows = [&](std::span<const std::byte> src, uint64_t first, uint64_t n) {
      b.insert(b.end(), src.begin() + std::ptrdiff_t(first * rb), src.begin() + std::ptrdiff_t((first + n) * rb));
    };
    for (uint64_t g = 0; g < Hk; ++g) {
      rows(t.data, g * S, S);                    // q of key head g
      rows(t.data, Hk * S + g * S, S);           // k
      rows(t.data, 2 * Hk * S + g * r * S, r * S);  // its r value heads
      rows(z->data, g * r * S, r * S);           // and their z rows
    }
    w.add_tensor_bytes(p + "ssm_in.weight", {uint64_t(c.n_embd), b.size() / rb}, t.type, b);
    ++n_fused;
  }
  CHECK(n_fused == 3);
  REQUIRE(w.write(legacy).ok());
  auto be = gpu::make_ref_backend();
  const auto toks = test_tokens(12, c.n_vocab, 3);
  auto a = load_runner(path, *be, 64, 4);
  const auto want = sequence_logits(*a, toks, 5);
  auto l = load_runner(legacy, *be, 64, 4);
  const auto got = sequence_logits(*l, toks, 5);
  CHECK(compare(got, want).max_abs_diff == 0.f);
}

TEST_CASE("kv_cache: a hybrid's recurrent layers get no KV, its attention layers the whole pool", "[model][hybrid]") {
  auto be = gpu::make_ref_backend();
  auto spec = test_model_shape("tiny-qwen35");
  REQUIRE(spec.ok());
  const model_config& c = spec->config;
  REQUIRE(c.is_hybrid());
  auto kv = kv_cache::create(*be, c, 4, gpu::dtype::f32, 16);
  REQUIRE(kv.ok());
  int with_kv = 0;
  for (int l = 0; l < c.n_layer; ++l) {
    INFO("layer " << l);
    const layer_cache& lc = kv->layer(l);
    if (c.is_recurrent_layer(l)) {
      CHECK(lc.k.n_elements() == 0);
      CHECK(lc.v.n_elements() == 0);
    } else {
      ++with_kv;
      CHECK(lc.k.ne[0] == int64_t{c.n_head_kv} * c.head_dim);
      CHECK(lc.k.ne[1] == 4 * 16);
    }
  }
  CHECK(with_kv == n_kv_layers(c));
  CHECK(n_kv_layers(c) == c.n_layer / c.full_attn_interval);
  CHECK(state_cache::slot_bytes(c) > 0);
}

TEST_CASE("qwen35, qwen35moe, qwen3next: a HF directory computes the logits of the GGUF of the same weights", "[model][hybrid][safetensors]") {
  // The HF layouts (model/hf_hybrid.cpp): zero-centred norms, A_log, the conv kernel's
  // {Cc, 1, K}, Qwen3.5's grouped value heads (tiled in its GGUF), Qwen3-Next's in_proj_qkvz /
  // in_proj_ba, the shared expert's names, Qwen3.5 MoE's multimodal wrapper (text_config,
  // model.language_model.*).
  temp_dir tmp;
  for (const char* shape : {"tiny-qwen35", "tiny-qwen35moe", "tiny-qwen3next"}) {
    DYNAMIC_SECTION(shape) {
      auto spec = tiny_spec(shape, gpu::dtype::f32, 7);
      REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
      REQUIRE(write_test_hf(spec, tmp / "hf", 2).ok());
      auto be = gpu::make_ref_backend();
      auto g = load_runner(tmp / "m.gguf", *be, 32, 1);
      auto h = load_runner(tmp / "hf", *be, 32, 1);
      const auto& hc = h->config();
      CHECK(hc.arch == spec.config.arch);
      CHECK(hc.full_attn_interval == spec.config.full_attn_interval);
      CHECK(hc.ssm_k_heads == spec.config.ssm_k_heads);
      CHECK(hc.ssm_v_heads == spec.config.ssm_v_heads);
      CHECK(hc.rope.n_dims == spec.config.rope.n_dims);
      CHECK(hc.n_expert == spec.config.n_expert);
      CHECK(hc.n_ff_shexp == spec.config.n_ff_shexp);
      const auto toks = test_tokens(24, spec.config.n_vocab, 4);
      const auto a = sequence_logits(*g, toks, 12), b = sequence_logits(*h, toks, 12);
      const auto d = compare(b, a);
      INFO("max diff " << d.max_abs_diff << " of " << d.max_abs_ref);
      CHECK(d.max_abs_diff <= 1e-4f * std::max(1.f, d.max_abs_ref));
    }
  }
}

TEST_CASE("qwen3.5-family config.json: the hybrid keys are read and inconsistent ones refused", "[model][hybrid][safetensors]") {
  auto base = [] {
    return nlohmann::json{{"architectures", {"Qwen3NextForCausalLM"}}, {"hidden_size", 256}, {"num_hidden_layers", 4},
                          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 64}, {"vocab_size", 512},
                          {"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 128},
                          {"shared_expert_intermediate_size", 128}, {"linear_conv_kernel_dim", 4},
                          {"linear_key_head_dim", 64}, {"linear_value_head_dim", 64}, {"linear_num_key_heads", 2},
                          {"linear_num_value_heads", 4}, {"full_attention_interval", 4}};
  };
  auto c = config_from_hf_json(base().dump());
  REQUIRE(c.ok());
  CHECK(c->arch == "qwen3next");
  CHECK(c->rope.n_dims == 16);  // partial_rotary_factor defaults to 0.25
  CHECK(c->n_ff == 128);        // no intermediate_size: every layer is MoE
  CHECK(c->expert_norm);
  CHECK(c->is_recurrent_layer(2));
  CHECK_FALSE(c->is_recurrent_layer(3));
  auto refused = [](nlohmann::json j) { return !config_from_hf_json(j.dump()).ok(); };
  auto j = base();
  j["layer_types"] = {"linear_attention", "full_attention", "linear_attention", "full_attention"};
  CHECK(refused(j));
  j = base();
  j["linear_value_head_dim"] = 128;
  CHECK(refused(j));
  j = base();
  j.erase("shared_expert_intermediate_size");
  CHECK(refused(j));
  j = base();
  j["linear_num_value_heads"] = 3;  // not a multiple of the key heads
  CHECK(refused(j));
  j = base();
  j["attn_output_gate"] = "yes";  // wrong JSON type: an error, not an exception
  CHECK(refused(j));
  j = base();
  j["architectures"] = {"Qwen3_5ForConditionalGeneration"};
  j = nlohmann::json{{"architectures", j["architectures"]}, {"text_config", j}};
  j["text_config"].erase("num_experts");
  j["text_config"]["intermediate_size"] = 512;
  j["text_config"]["rope_parameters"] = {{"rope_theta", 1e7}, {"partial_rotary_factor", 0.5}};
  auto d = config_from_hf_json(j.dump());
  REQUIRE(d.ok());
  CHECK(d->arch == "qwen35");
  CHECK(d->rope.n_dims == 32);
  CHECK(d->rope.freq_base == 1e7f);
  CHECK(d->n_expert == 0);
}
