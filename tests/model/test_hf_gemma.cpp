// Gemma 3 / Gemma 4 Hugging Face checkpoints (model/hf_gemma.hpp): the published classes'
// config.json (transformers' defaults, per-layer-type rope, Gemma 4's keys and the shapes we
// refuse) and their directories computing the logits of the GGUF of the same weights.
#include "catch.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "model/model_file.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;
using json = nlohmann::json;

namespace {

// Both layouts of `spec` (f32, 2 shards) give the same logits on the ref backend over 24 tokens,
// three times the sliding window; returns the HF runner's config.
model_config same_logits_as_gguf(const test_model_spec& spec) {
  temp_dir tmp;
  REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
  auto w = write_test_hf(spec, tmp / "hf", 2);
  INFO((w ? "" : w.error().message));
  REQUIRE(w.ok());
  auto be = gpu::make_ref_backend();
  auto g = load_runner(tmp / "m.gguf", *be, 32, 1);
  auto h = load_runner(tmp / "hf", *be, 32, 1);
  const auto toks = test_tokens(24, spec.config.n_vocab, 3);
  const auto a = sequence_logits(*g, toks, 12), b = sequence_logits(*h, toks, 12);
  const auto d = compare(b, a);
  INFO("max diff " << d.max_abs_diff << " of " << d.max_abs_ref);
  CHECK(d.max_abs_ref > 0.1f);
  CHECK(d.max_abs_diff <= 1e-4f * std::max(1.f, d.max_abs_ref));
  return h->config();
}

result<model_config> parse(const json& j) { return config_from_hf_json(j.dump()); }

// google/gemma-4-E2B-it's text_config, shrunk (the keys and their kinds as published).
json gemma4_text() {
  return {{"model_type", "gemma4_text"}, {"hidden_size", 256}, {"num_hidden_layers", 6}, {"intermediate_size", 512},
          {"num_attention_heads", 4}, {"num_key_value_heads", 1}, {"num_global_key_value_heads", nullptr},
          {"head_dim", 64}, {"global_head_dim", 64}, {"vocab_size", 512}, {"vocab_size_per_layer_input", 512},
          {"hidden_size_per_layer_input", 32}, {"sliding_window", 16}, {"num_kv_shared_layers", 2},
          {"attention_k_eq_v", false}, {"use_double_wide_mlp", false}, {"enable_moe_block", false},
          {"final_logit_softcapping", 30.0}, {"max_position_embeddings", 4096},
          {"layer_types", {"sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                           "sliding_attention", "full_attention"}},
          {"rope_parameters", {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                               {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25},
                                                   {"rope_theta", 1000000.0}}}}}};
}

json gemma4_wrapper(json text) {
  return {{"architectures", {"Gemma4ForConditionalGeneration"}}, {"model_type", "gemma4"}, {"text_config", std::move(text)},
          {"vision_config", {{"model_type", "gemma4_vision"}}}, {"tie_word_embeddings", true}};
}

}  // namespace

TEST_CASE("gemma4: Gemma4ForConditionalGeneration and Gemma4ForCausalLM directories compute the GGUF's logits",
          "[model][safetensors][gemma4]") {
  for (const char* cls : {"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"}) {
    DYNAMIC_SECTION(cls) {
      auto spec = tiny_spec("tiny-gemma4", gpu::dtype::f32, 7);
      spec.config.rope_n_dims_swa = spec.config.head_dim;  // transformers' sliding layers rotate the whole head
      spec.hf_class = cls;
      const auto hc = same_logits_as_gguf(spec);
      const auto& c = spec.config;
      CHECK(hc.arch == "gemma4");
      CHECK(hc.swa_layers == c.swa_layers);
      CHECK(hc.sliding_window == c.sliding_window);
      CHECK(hc.n_kv_shared == c.n_kv_shared);
      CHECK(hc.n_embd_per_layer == c.n_embd_per_layer);
      CHECK(hc.rope.n_dims == c.head_dim);
      CHECK(hc.rope_n_dims_swa == c.head_dim);
      CHECK(hc.rope_freq_base_swa == c.rope_freq_base_swa);
      CHECK(hc.rope_freq_factors.size() == static_cast<size_t>(c.head_dim / 2));
      CHECK(hc.final_softcap == c.final_softcap);
      CHECK((hc.v_norm && hc.qk_norm && hc.post_norms && hc.attn_scale == 1.f));
    }
  }
}

TEST_CASE("gemma4: a directory with two head shapes (global 64 x 1 KV head, sliding 32 x 2) computes the GGUF's logits",
          "[model][safetensors][gemma4]") {
  auto spec = tiny_spec("tiny-gemma4-wide", gpu::dtype::f32, 7);
  spec.config.rope_n_dims_swa = spec.config.head_dim_swa;  // transformers' sliding layers rotate the whole head
  spec.hf_class = "Gemma4ForConditionalGeneration";
  const auto hc = same_logits_as_gguf(spec);
  CHECK(hc.head_dim == 64);
  CHECK(hc.head_dim_swa == 32);
  CHECK(hc.n_head_kv_layer == spec.config.n_head_kv_layer);
  CHECK(hc.rope_n_dims_swa == 32);
  CHECK(hc.rope_freq_factors.size() == 32);
}

TEST_CASE("gemma4: a MoE (26B-A4B-shaped) directory computes the GGUF's logits", "[model][safetensors][gemma4]") {
  // tiny-gemma4moe: 8 experts of 256 (2 a token) beside each layer's dense FFN, written as
  // transformers' router.{proj,scale,per_expert_scale} and experts.{gate_up_proj,down_proj} stacks.
  auto spec = tiny_spec("tiny-gemma4moe", gpu::dtype::f32, 7);
  spec.config.rope_n_dims_swa = spec.config.head_dim;  // transformers' sliding layers rotate the whole head
  spec.config.swa_layers = {1, 1, 1, 1, 0};  // one global layer, with its own V (no attention_k_eq_v mix)
  spec.hf_class = "Gemma4ForConditionalGeneration";
  const auto hc = same_logits_as_gguf(spec);
  CHECK(hc.n_expert == 8);
  CHECK(hc.n_expert_used == 2);
  CHECK(hc.n_ff_exp == 256);
  CHECK(hc.n_ff == spec.config.n_ff);
  CHECK(hc.expert_gating == gpu::moe_gating::softmax);
  CHECK(hc.expert_norm);
}

TEST_CASE("config.json: Gemma 4's MoE keys read, malformed ones refused", "[model][config][gemma4]") {
  // google/gemma-4-26B-A4B-it's MoE keys (shrunk: 16 experts of 64, 4 a token).
  json t = gemma4_text();
  t["enable_moe_block"] = true;
  t["num_experts"] = 16;
  t["top_k_experts"] = 4;
  t["moe_intermediate_size"] = 64;
  auto c = parse(gemma4_wrapper(t));
  INFO((c ? "" : c.error().message));
  REQUIRE(c.ok());
  CHECK(c->n_expert == 16);
  CHECK(c->n_expert_used == 4);
  CHECK(c->n_ff_exp == 64);
  CHECK(c->n_ff == 512);  // the dense MLP beside the experts keeps intermediate_size
  CHECK(c->expert_gating == gpu::moe_gating::softmax);
  CHECK(c->expert_norm);
  t["enable_moe_block"] = false;  // the expert keys without the flag: a dense model
  auto d = parse(gemma4_wrapper(t));
  REQUIRE(d.ok());
  CHECK(d->n_expert == 0);
  auto refused = [](json text, errc code, const std::string& what) {
    auto r = parse(gemma4_wrapper(std::move(text)));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == code);
    INFO(r.error().message);
    CHECK(r.error().message.find(what) != std::string::npos);
  };
  t["enable_moe_block"] = true;
  json m = t;
  m["top_k_experts"] = 17;
  refused(m, errc::parse, "top_k_experts");
  m = t;
  m.erase("moe_intermediate_size");
  refused(m, errc::parse, "moe_intermediate_size");
  m = t;
  m["num_experts"] = "sixteen";
  refused(m, errc::parse, "num_experts");
  m = t;
  m["num_experts"] = -4;
  refused(m, errc::parse, "num_experts");
  m = t;
  m["enable_moe_block"] = "yes";
  refused(m, errc::parse, "enable_moe_block");
  m = t;
  m["num_experts"] = 4096;  // beyond the router kernel's limit
  m["top_k_experts"] = 4;
  CHECK_FALSE(parse(gemma4_wrapper(m)).ok());
}

// E2B's use_double_wide_mlp: the KV-shared layers' (4, 5) MLP twice intermediate_size, as the
// GGUF's per-layer feed_forward_length writes it.
TEST_CASE("gemma4: a use_double_wide_mlp directory (KV-shared layers' FFN 1024, others 512) computes the GGUF's logits",
          "[model][safetensors][gemma4]") {
  auto spec = tiny_spec("tiny-gemma4-e2b", gpu::dtype::f32, 7);
  spec.config.rope_n_dims_swa = spec.config.head_dim_swa;  // transformers' sliding layers rotate the whole head
  spec.hf_class = "Gemma4ForConditionalGeneration";
  const auto hc = same_logits_as_gguf(spec);
  CHECK(hc.n_ff == 512);
  CHECK(hc.n_ff_layer == std::vector<int>{512, 512, 512, 512, 1024, 1024});
  CHECK(hc.max_n_ff() == 1024);
}

TEST_CASE("gemma3: the multimodal Gemma3ForConditionalGeneration directory computes the GGUF's logits",
          "[model][safetensors][gemma3]") {
  // As google/gemma-3-4b-it publishes it: tensors under language_model.model., a text_config
  // that leaves out every key at transformers' default (rms_norm_eps, rope_theta, the local
  // rope base, the sliding pattern, the soft-caps here).
  auto spec = tiny_spec("tiny-gemma3", gpu::dtype::f32, 7);
  spec.hf_class = "Gemma3ForConditionalGeneration";
  const auto hc = same_logits_as_gguf(spec);
  CHECK(hc.arch == "gemma3");
  CHECK(hc.swa_pattern == 6);
  CHECK(hc.rope_freq_base_swa == 10000.f);
  CHECK(hc.eos_id == spec.config.eos_id);
}

TEST_CASE("config.json: Gemma 3's multimodal checkpoints read with transformers' defaults", "[model][config][gemma3]") {
  // google/gemma-3-4b-it's config.json (its text part as published: only what differs).
  const json g4b = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"},
                    {"eos_token_id", {1, 106}}, {"boi_token_index", 255999}, {"image_token_index", 262144},
                    {"text_config", {{"hidden_size", 2560}, {"intermediate_size", 10240}, {"model_type", "gemma3_text"},
                                     {"num_hidden_layers", 34}, {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                                     {"sliding_window", 1024}}},
                    {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 1152}}}};
  auto c = parse(g4b);
  INFO((c ? "" : c.error().message));
  REQUIRE(c.ok());
  CHECK(c->arch == "gemma3");
  CHECK(c->n_layer == 34);
  CHECK(c->n_head == 8);
  CHECK(c->n_head_kv == 4);
  CHECK(c->head_dim == 256);
  CHECK(c->n_vocab == 262208);
  CHECK(c->n_ctx == 131072);
  CHECK(c->sliding_window == 1024);
  CHECK(c->is_swa_layer(4));
  CHECK_FALSE(c->is_swa_layer(5));
  CHECK(c->rope.freq_base == 1e6f);
  CHECK(c->rope.freq_scale == Approx(1.f / 8));
  CHECK(c->rope_freq_base_swa == 10000.f);
  CHECK(c->attn_scale == Approx(1.f / 16));  // query_pre_attn_scalar 256
  CHECK(c->final_softcap == 0.f);
  CHECK(c->eos_id == 1);
  CHECK(c->bos_id == 2);

  // transformers 5 writes the rope per layer type.
  json v5 = g4b;
  v5["text_config"].erase("rope_scaling");
  v5["text_config"]["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  auto d = parse(v5);
  INFO((d ? "" : d.error().message));
  REQUIRE(d.ok());
  CHECK(d->rope.freq_base == 1e6f);
  CHECK(d->rope.freq_scale == Approx(1.f / 8));
  CHECK(d->rope_freq_base_swa == 10000.f);
  v5["text_config"]["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn";
  CHECK(parse(v5).error().code == errc::unsupported);
  json biased = g4b;
  biased["text_config"]["attention_bias"] = true;
  CHECK(parse(biased).error().code == errc::unsupported);
}

TEST_CASE("config.json: Gemma 4's keys, and the published shapes the layer does not run refused", "[model][config][gemma4]") {
  auto c = parse(gemma4_wrapper(gemma4_text()));
  INFO((c ? "" : c.error().message));
  REQUIRE(c.ok());
  CHECK(c->arch == "gemma4");
  CHECK(c->head_dim == 64);
  CHECK(c->n_head_kv == 1);
  CHECK(c->swa_layers == std::vector<uint8_t>{1, 1, 1, 0, 1, 0});
  CHECK(c->kv_source_layer(4) == 2);
  CHECK(c->kv_source_layer(5) == 3);
  CHECK(c->rope.freq_base == 1e6f);
  CHECK(c->rope_freq_base_swa == 10000.f);
  CHECK(c->rope.n_dims == 64);
  CHECK(c->rope_n_dims_swa == 64);
  REQUIRE(c->rope_freq_factors.size() == 32);
  CHECK(c->rope_freq_factors[7] == 1.f);  // floor(0.25 * 64 / 2) = 8 pairs rotate
  CHECK(c->rope_freq_factors[8] == 1e30f);
  CHECK(c->final_softcap == 30.f);
  CHECK(c->n_embd_per_layer == 32);
  CHECK(c->sliding_window == 16);
  CHECK(c->attn_scale == 1.f);
  CHECK(c->embd_scale == Approx(16.f));

  // Gemma4ForCausalLM: the text config at the top; transformers' defaults fill what it leaves
  // out (the layer pattern, the rope per layer type, the per-layer embedding width).
  json flat = {{"architectures", {"Gemma4ForCausalLM"}}, {"hidden_size", 256}, {"num_hidden_layers", 12},
               {"intermediate_size", 512}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 64},
               {"global_head_dim", 64}, {"vocab_size", 512}, {"vocab_size_per_layer_input", 512}};
  auto f = parse(flat);
  INFO((f ? "" : f.error().message));
  REQUIRE(f.ok());
  CHECK(f->is_swa_layer(4));
  CHECK_FALSE(f->is_swa_layer(5));
  CHECK_FALSE(f->is_swa_layer(11));
  CHECK(f->sliding_window == 512);
  CHECK(f->n_embd_per_layer == 256);
  CHECK(f->final_softcap == 0.f);  // null: none
  CHECK(f->rope_freq_factors.size() == 32);
  json scaled = gemma4_text();
  scaled["rope_parameters"]["full_attention"]["factor"] = 8.0;
  auto s = parse(gemma4_wrapper(scaled));
  REQUIRE(s.ok());
  CHECK(s->rope.freq_scale == Approx(1.f / 8));

  auto refused = [](json text, errc code, const char* words) {
    auto e = parse(gemma4_wrapper(std::move(text)));
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().code == code);
    CHECK_THAT(e.error().message, Catch::Contains(words));
  };
  // The published checkpoints' shapes: global heads of 512 and sliding ones of 256, and (31B,
  // attention_k_eq_v) other KV head counts on the global layers: per-layer shapes.
  json wide = gemma4_text();
  wide["global_head_dim"] = 512;
  wide["head_dim"] = 256;
  wide["attention_k_eq_v"] = true;
  wide["num_attention_heads"] = 4;
  wide["num_key_value_heads"] = 2;
  wide["num_global_key_value_heads"] = 1;
  auto w = parse(gemma4_wrapper(wide));
  INFO((w ? "" : w.error().message));
  REQUIRE(w.ok());
  CHECK(w->head_dim == 512);
  CHECK(w->head_dim_swa == 256);
  CHECK(w->layer_head_dim(0) == 256);
  CHECK(w->layer_head_dim(3) == 512);
  CHECK(w->n_head_kv == 1);
  CHECK(w->n_head_kv_layer == std::vector<int>{2, 2, 2, 1, 2, 1});
  CHECK(w->rope_n_dims_swa == 256);
  CHECK(w->rope.n_dims == 512);
  CHECK(w->rope_freq_factors.size() == 256);
  json t = gemma4_text();
  t["global_head_dim"] = 576;
  refused(t, errc::unsupported, "wider than 512");
  t = gemma4_text();
  t["attention_k_eq_v"] = true;
  t["num_global_key_value_heads"] = 3;  // does not divide 4 heads
  refused(t, errc::parse, "divide");
  t = gemma4_text();
  t["enable_moe_block"] = true;  // without the expert keys
  refused(t, errc::parse, "num_experts");
  t = gemma4_text();
  t["use_double_wide_mlp"] = true;  // E2B: the KV-shared layers (4, 5) twice as wide
  auto dw = parse(gemma4_wrapper(t));
  REQUIRE(dw.ok());
  CHECK(dw->n_ff_layer == std::vector<int>{512, 512, 512, 512, 1024, 1024});
  t["num_kv_shared_layers"] = 0;  // nothing shared: nothing wider
  auto dw0 = parse(gemma4_wrapper(t));
  REQUIRE(dw0.ok());
  CHECK(dw0->n_ff_layer.empty());
  t = gemma4_text();
  t["num_kv_shared_layers"] = 3;
  refused(t, errc::unsupported, "num_kv_shared_layers");
  t = gemma4_text();
  t["rope_parameters"]["full_attention"]["rope_type"] = "yarn";
  refused(t, errc::unsupported, "rope type");
  t = gemma4_text();
  t["rope_parameters"]["sliding_attention"]["rope_type"] = "proportional";
  refused(t, errc::unsupported, "rope type");
  t = gemma4_text();
  t["partial_rotary_factor"] = 0.5;
  refused(t, errc::unsupported, "partial_rotary_factor");
  t = gemma4_text();
  t["vocab_size_per_layer_input"] = 256;
  refused(t, errc::unsupported, "per-layer embedding vocabulary");
  t = gemma4_text();
  t["use_bidirectional_attention"] = "all";
  refused(t, errc::unsupported, "bidirectional");
  t = gemma4_text();
  t["layer_types"] = {"sliding_attention", "full_attention"};
  refused(t, errc::parse, "layer_types");
  t = gemma4_text();
  t["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};  // not per layer type
  refused(t, errc::parse, "rope_parameters");
  t = gemma4_text();
  t["sliding_window"] = "wide";  // wrong JSON type: an error, not an exception
  refused(t, errc::parse, "sliding_window");
}

TEST_CASE("gemma4: a HF directory's tensors are found under the class's prefix and rope_freqs comes from the config",
          "[model][safetensors][gemma4]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-gemma4", gpu::dtype::bf16, 7);
  spec.config.rope_n_dims_swa = spec.config.head_dim;
  REQUIRE(write_test_hf(spec, tmp / "hf", 1).ok());
  auto f = model_file::open(tmp / "hf");
  REQUIRE(f.ok());
  for (const char* g : {"per_layer_token_embd.weight", "per_layer_model_proj.weight", "per_layer_proj_norm.weight",
                        "blk.0.inp_gate.weight", "blk.0.proj.weight", "blk.0.post_norm.weight",
                        "blk.5.layer_output_scale.weight", "blk.3.attn_v.weight", "rope_freqs.weight"})
    CHECK(f->has_tensor(g));
  CHECK_FALSE(f->has_tensor("blk.4.attn_k.weight"));  // KV-shared layers carry q only
  auto r = f->tensor("rope_freqs.weight");
  REQUIRE(r.ok());
  CHECK(r->ne[0] == 32);
  CHECK(r->type == gpu::dtype::f32);
  auto s = f->tensor("blk.1.layer_output_scale.weight");
  REQUIRE(s.ok());
  CHECK(s->type == gpu::dtype::bf16);
  CHECK(s->n_dims == 1);
  // MoE: the router, the expert stacks as stored ([E, 2Fe, C] is GGUF's {C, 2Fe, E}) and the norms.
  auto moe = tiny_spec("tiny-gemma4moe", gpu::dtype::bf16, 7);
  moe.config.rope_n_dims_swa = moe.config.head_dim;
  moe.config.swa_layers = {1, 1, 1, 1, 0};
  REQUIRE(write_test_hf(moe, tmp / "moe", 2).ok());
  auto fm = model_file::open(tmp / "moe");
  REQUIRE(fm.ok());
  {  // transformers' own parameter names (Gemma4TextRouter, Gemma4TextExperts, the decoder layer's norms)
    std::ifstream in(tmp / "moe" + "/model.safetensors.index.json");
    const json map = json::parse(in).at("weight_map");
    for (const char* n : {"router.proj.weight", "router.scale", "router.per_expert_scale", "experts.gate_up_proj",
                          "experts.down_proj", "pre_feedforward_layernorm_2.weight", "post_feedforward_layernorm_1.weight",
                          "post_feedforward_layernorm_2.weight", "mlp.gate_proj.weight"})
      CHECK(map.contains(std::string("model.language_model.layers.3.") + n));
  }
  for (const char* g : {"blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_inp.scale", "blk.0.ffn_down_exps.scale",
                        "blk.4.ffn_gate_up_exps.weight", "blk.4.ffn_down_exps.weight", "blk.1.pre_ffw_norm_2.weight",
                        "blk.1.post_ffw_norm_1.weight", "blk.1.post_ffw_norm_2.weight", "blk.2.ffn_gate.weight"})
    CHECK(fm->has_tensor(g));
  CHECK_FALSE(fm->has_tensor("blk.0.ffn_gate_exps.weight"));
  auto gu = fm->tensor("blk.3.ffn_gate_up_exps.weight");
  REQUIRE(gu.ok());
  CHECK(gu->ne == std::array<int64_t, 4>{256, 512, 8, 1});
  auto dn = fm->tensor("blk.3.ffn_down_exps.weight");
  REQUIRE(dn.ok());
  CHECK(dn->ne == std::array<int64_t, 4>{256, 256, 8, 1});
  // The generator cannot write what HF cannot hold: partial sliding-layer rope.
  auto partial = tiny_spec("tiny-gemma4", gpu::dtype::f32, 7);
  CHECK_FALSE(write_test_hf(partial, tmp / "partial", 1).ok());
}
