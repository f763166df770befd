// Model file loading: GGUF writer round trip, safetensors (single, sharded, broken),
// config.json parsing, and broken model files giving clear errors (never a crash).
#include "catch.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "base/mapped_file.hpp"
#include "gpu/backend.hpp"
#include "gpu/quant.hpp"
#include "helpers.hpp"
#include "model/config.hpp"
#include "model/gguf_writer.hpp"
#include "model/kv_cache.hpp"
#include "model/model_file.hpp"
#include "model/safetensors.hpp"
#include "model/weights.hpp"

using namespace vks;
using namespace vks::model;
using namespace vks::model::testing;

namespace {

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}
void write_bytes(const std::string& path, std::span<const std::byte> b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Opens `path` and uploads its weights to a ref backend; returns the error message or "".
std::string load_error(const std::string& path) {
  auto f = model_file::open(path);
  if (!f) return f.error().message;
  auto be = gpu::make_ref_backend();
  auto w = load_weights(*f, *be);
  return w ? "" : w.error().message;
}

std::vector<std::byte> safetensors_bytes(const std::string& header, size_t data_bytes) {
  std::vector<std::byte> b(8 + header.size() + data_bytes, std::byte{0});
  uint64_t n = header.size();
  std::memcpy(b.data(), &n, 8);
  std::memcpy(b.data() + 8, header.data(), header.size());
  return b;
}

}  // namespace

TEST_CASE("gguf_writer output reads back through base/gguf", "[model][gguf]") {
  gguf_writer w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 3);
  w.add_f32("llama.rope.freq_base", 500000.f);
  w.add_bool("flag", true);
  w.add_strings("tokenizer.ggml.tokens", {"a", "b", "c"});
  w.add_i32s("ints", {1, -2, 3});
  std::vector<float> vals = {1.f, 2.f, 3.f, 4.f};
  w.add_tensor_bytes("t0", {4}, 0, std::as_bytes(std::span(vals)));
  w.add_tensor("t1", {32, 2}, gpu::traits(gpu::dtype::q8_0).ggml_id, [](std::span<std::byte> d) {
    std::vector<float> row(32, 0.5f);
    gpu::quantize_row(gpu::dtype::q8_0, row.data(), d.data(), 32);
    gpu::quantize_row(gpu::dtype::q8_0, row.data(), d.data() + 34, 32);
  });
  auto bytes = w.to_bytes();
  REQUIRE(bytes.ok());
  auto f = gguf::file::parse(*bytes);
  REQUIRE(f.ok());
  CHECK(f->get_string("general.architecture") == "llama");
  CHECK(f->get_int("llama.block_count") == 3);
  CHECK(f->get_float("llama.rope.freq_base") == Approx(500000.0));
  CHECK(f->get_bool("flag") == true);
  REQUIRE(f->get_array("tokenizer.ggml.tokens"));
  CHECK(f->get_array("tokenizer.ggml.tokens")->items.size() == 3);
  auto t0 = f->find_tensor("t0");
  REQUIRE(t0);
  CHECK(std::memcmp(t0->data.data(), vals.data(), 16) == 0);
  auto t1 = f->find_tensor("t1");
  REQUIRE(t1);
  CHECK(t1->data.size() == 68);
  CHECK(t1->offset % 32 == 0);
  float back[32];
  gpu::dequantize_row(gpu::dtype::q8_0, t1->data.data() + 34, back, 32);
  CHECK(back[31] == Approx(0.5f).epsilon(0.01));
}

TEST_CASE("config.json parsing", "[model][config]") {
  auto text = read_file(shared_dir() + "/models/tokenizers/smollm2-135m-instruct/config.json");
  REQUIRE(text.ok());
  auto c = config_from_hf_json(*text);
  REQUIRE(c.ok());
  CHECK(c->arch == "llama");
  CHECK(c->n_layer == 30);
  CHECK(c->n_embd == 576);
  CHECK(c->n_head == 9);
  CHECK(c->n_head_kv == 3);
  CHECK(c->head_dim == 64);
  CHECK(c->n_ff == 1536);
  CHECK(c->n_vocab == 49152);
  CHECK(c->rope.freq_base == Approx(100000.f));
  CHECK(c->rope.mode == gpu::rope_mode::neox);
  CHECK(c->tied_embeddings);
  CHECK(c->rms_eps == Approx(1e-5f));

  SECTION("llama3 rope scaling") {
    auto l3 = config_from_hf_json(R"({"architectures":["LlamaForCausalLM"],"hidden_size":2048,"num_hidden_layers":16,
      "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":8192,"vocab_size":128256,
      "rope_theta":500000.0,"rope_scaling":{"rope_type":"llama3","factor":32.0,"low_freq_factor":1.0,
      "high_freq_factor":4.0,"original_max_position_embeddings":8192},"tie_word_embeddings":true})");
    REQUIRE(l3.ok());
    CHECK(l3->rope_llama3.enabled);
    auto ff = llama3_freq_factors(*l3);
    REQUIRE(ff.size() == 32);
    CHECK(ff[0] == 1.f);               // high frequencies untouched
    CHECK(ff[31] == Approx(32.f));     // lowest frequencies scaled by the factor
    for (size_t i = 1; i < ff.size(); ++i) CHECK(ff[i] >= ff[i - 1]);
  }
  SECTION("yarn and linear rope scaling; other types refused") {
    const std::string head = R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":256,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":512,"vocab_size":512,
      "max_position_embeddings":131072,"rope_theta":1000000.0,"rope_scaling":)";
    auto y = config_from_hf_json(head + R"({"type":"yarn","factor":4.0,"original_max_position_embeddings":32768}})");
    REQUIRE(y.ok());
    CHECK(y->rope_scaling.type == "yarn");
    CHECK(y->rope.freq_scale == Approx(0.25f));
    CHECK(y->rope.ext_factor == 1.f);
    CHECK(y->rope.mscale == Approx(1.0 + 0.1 * std::log(4.0)));
    CHECK(y->rope.corr_low < y->rope.corr_high);
    CHECK(y->rope.corr_high <= 63.f);
    auto ya = config_from_hf_json(head + R"({"rope_type":"yarn","factor":4.0,"attention_factor":1.5}})");
    REQUIRE(ya.ok());
    CHECK(ya->rope.mscale == Approx(1.5f));
    auto lin = config_from_hf_json(head + R"({"type":"linear","factor":2.0}})");
    REQUIRE(lin.ok());
    CHECK(lin->rope.freq_scale == Approx(0.5f));
    CHECK(lin->rope.ext_factor == 0.f);
    for (auto bad : {"dynamic", "longrope", "su", "mrope"}) {
      auto e = config_from_hf_json(head + R"({"type":")" + bad + R"(","factor":4.0}})");
      REQUIRE_FALSE(e.ok());
      CHECK(e.error().code == errc::unsupported);
      CHECK_THAT(e.error().message, Catch::Contains(bad));
    }
    auto neg = config_from_hf_json(head + R"({"type":"yarn","factor":-1.0}})");
    REQUIRE_FALSE(neg.ok());
  }
  SECTION("qwen3 with explicit head_dim") {
    auto q3 = config_from_hf_json(R"({"architectures":["Qwen3ForCausalLM"],"hidden_size":1024,"num_hidden_layers":28,
      "num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"intermediate_size":3072,"vocab_size":151936,
      "rope_theta":1000000,"rms_norm_eps":1e-6,"tie_word_embeddings":true})");
    REQUIRE(q3.ok());
    CHECK(q3->head_dim == 128);
    CHECK(q3->qk_norm);
    CHECK_FALSE(q3->qkv_bias);
  }
  SECTION("errors") {
    auto e1 = config_from_hf_json("{not json");
    REQUIRE_FALSE(e1.ok());
    CHECK(e1.error().code == errc::parse);
    auto e2 = config_from_hf_json(R"({"architectures":["GPTJForCausalLM"]})");
    REQUIRE_FALSE(e2.ok());
    CHECK(e2.error().code == errc::unsupported);
    CHECK_THAT(e2.error().message, Catch::Contains("GPTJForCausalLM"));
    auto e3 = config_from_hf_json(R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":6,"num_key_value_heads":4,"intermediate_size":8,"vocab_size":10})");
    REQUIRE_FALSE(e3.ok());
    CHECK_THAT(e3.error().message, Catch::Contains("kv head count"));
    auto e4 = config_from_hf_json(R"({"architectures":["LlamaForCausalLM"],"hidden_size":"big"})");
    REQUIRE_FALSE(e4.ok());
  }
}

TEST_CASE("GGUF config of the demo model and generated models", "[model][config]") {
  auto f = model_file::open(shared_dir() + "/models/stories260K/stories260K.gguf");
  REQUIRE(f.ok());
  REQUIRE(f->has_weights());
  const auto& c = f->config();
  CHECK(c.arch == "llama");
  CHECK(c.n_layer == 5);
  CHECK(c.n_embd == 64);
  CHECK(c.n_head == 8);
  CHECK(c.n_head_kv == 4);
  CHECK(c.head_dim == 8);
  CHECK(c.n_ff == 172);
  CHECK(c.n_vocab == 512);
  CHECK(c.rope.mode == gpu::rope_mode::normal);
  CHECK_FALSE(c.tied_embeddings);

  temp_dir tmp;
  for (auto shape : {"tiny-qwen2", "tiny-qwen3", "tiny-llama3"}) {
    auto spec = tiny_spec(shape, gpu::dtype::f16);
    REQUIRE(write_test_gguf(spec, tmp / "m.gguf").ok());
    auto m = model_file::open(tmp / "m.gguf");
    REQUIRE(m.ok());
    CHECK(m->config().arch == spec.config.arch);
    CHECK(m->config().head_dim == spec.config.head_dim);
    CHECK(m->config().tied_embeddings == spec.config.tied_embeddings);
    CHECK(m->config().rope.mode == (spec.config.arch == "llama" ? gpu::rope_mode::normal : gpu::rope_mode::neox));
    CHECK(m->has_tensor("rope_freqs.weight") == spec.config.rope_llama3.enabled);
  }
}

TEST_CASE("GGUF rope.scaling: yarn and linear read, other types refused at load", "[model][config][rope]") {
  std::vector<std::byte> bytes;
  auto with_keys = [&](auto add) -> result<model_config> {
    gguf_writer w;
    w.add_string("general.architecture", "qwen2");
    for (auto [k, v] : {std::pair{"block_count", 2}, {"embedding_length", 256}, {"attention.head_count", 4},
                        {"attention.head_count_kv", 2}, {"feed_forward_length", 512}, {"context_length", 4096},
                        {"vocab_size", 512}})
      w.add_u32(std::string("qwen2.") + k, static_cast<uint32_t>(v));
    add(w);
    auto b = w.to_bytes();
    VKS_ASSERT(b.ok(), "gguf bytes");
    bytes = std::move(*b);
    auto f = gguf::file::parse(bytes);
    VKS_ASSERT(f.ok(), "gguf parse");
    return config_from_gguf(*f);
  };
  auto y = with_keys([](gguf_writer& w) {
    w.add_string("qwen2.rope.scaling.type", "yarn");
    w.add_f32("qwen2.rope.scaling.factor", 4.f);
    w.add_u32("qwen2.rope.scaling.original_context_length", 1024);
  });
  REQUIRE(y.ok());
  CHECK(y->rope_scaling.type == "yarn");
  CHECK(y->rope_scaling.original_context == 1024);
  CHECK(y->rope.freq_scale == Approx(0.25f));
  CHECK(y->rope.ext_factor == 1.f);
  // A bare factor (llama.cpp's default type is linear), and the old rope.scale_linear key.
  auto bare = with_keys([](gguf_writer& w) { w.add_f32("qwen2.rope.scaling.factor", 2.f); });
  REQUIRE(bare.ok());
  CHECK(bare->rope.freq_scale == Approx(0.5f));
  auto old = with_keys([](gguf_writer& w) { w.add_f32("qwen2.rope.scale_linear", 8.f); });
  REQUIRE(old.ok());
  CHECK(old->rope.freq_scale == Approx(0.125f));
  auto none = with_keys([](gguf_writer& w) {
    w.add_string("qwen2.rope.scaling.type", "none");
    w.add_f32("qwen2.rope.scaling.factor", 2.f);
  });
  REQUIRE(none.ok());
  CHECK(none->rope.freq_scale == 1.f);
  for (auto bad : {"longrope", "dynamic", ""}) {
    auto e = with_keys([&](gguf_writer& w) {
      w.add_string("qwen2.rope.scaling.type", bad);
      w.add_f32("qwen2.rope.scaling.factor", 4.f);
    });
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().code == errc::unsupported);
    CHECK_THAT(e.error().message, Catch::Contains("rope scaling type"));
  }
}

TEST_CASE("vocab-only GGUF opens without weights", "[model][gguf]") {
  auto f = model_file::open(shared_dir() + "/models/vocab/ggml-vocab-llama-spm.gguf");
  REQUIRE(f.ok());
  CHECK_FALSE(f->has_weights());
  REQUIRE(f->gguf());
  CHECK(f->gguf()->get_array("tokenizer.ggml.tokens"));
  auto be = gpu::make_ref_backend();
  auto r = runner::load(*f, *be);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("vocab-only"));
}

TEST_CASE("safetensors reader", "[model][safetensors]") {
  SECTION("valid file") {
    std::string h = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                    R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},"c":{"dtype":"I64","shape":[1],"data_offsets":[32,40]}})";
    auto bytes = safetensors_bytes(h, 40);
    auto f = safetensors_file::parse(bytes);
    REQUIRE(f.ok());
    CHECK(f->tensors().size() == 3);
    CHECK(f->metadata().at("format") == "pt");
    auto a = f->find("a");
    REQUIRE(a);
    CHECK(a->shape == std::vector<uint64_t>{2, 3});
    CHECK(a->type == gpu::dtype::f32);
    CHECK(a->data.size() == 24);
    CHECK(f->find("b")->type == gpu::dtype::bf16);
    CHECK_FALSE(f->find("c")->type.has_value());
  }
  SECTION("broken files") {
    auto expect_error = [](std::vector<std::byte> b, const char* what) {
      auto f = safetensors_file::parse(b);
      REQUIRE_FALSE(f.ok());
      CHECK(f.error().code == errc::parse);
      CHECK_THAT(f.error().message, Catch::Contains(what));
    };
    expect_error({}, "shorter");
    auto big = safetensors_bytes("{}", 0);
    uint64_t huge = 1ull << 40;
    std::memcpy(big.data(), &huge, 8);
    expect_error(big, "exceeds the file");
    expect_error(safetensors_bytes("{\"a\":", 0), "not JSON");
    expect_error(safetensors_bytes("[1,2]", 0), "not a JSON object");
    expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8), "outside the data");
    expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}})", 16), "does not match");
    expect_error(safetensors_bytes(R"({"a":{"dtype":"Q9","shape":[4],"data_offsets":[0,4]}})", 4), "unknown dtype");
    expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "shape");
    expect_error(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8), "outside");
    expect_error(safetensors_bytes(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4), "missing dtype");
  }
}

TEST_CASE("HF directories: single and sharded safetensors", "[model][safetensors]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen2", gpu::dtype::bf16);
  REQUIRE(write_test_hf(spec, tmp / "single", 1).ok());
  REQUIRE(write_test_hf(spec, tmp / "sharded", 3).ok());
  CHECK(std::filesystem::exists(tmp / "sharded/model.safetensors.index.json"));
  CHECK(std::filesystem::exists(tmp / "sharded/model-00003-of-00003.safetensors"));
  auto a = model_file::open(tmp / "single");
  auto b = model_file::open(tmp / "sharded");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->format() == model_format::safetensors);
  CHECK(a->config().arch == "qwen2");
  CHECK(a->config().rope.mode == gpu::rope_mode::neox);
  CHECK(a->config().tied_embeddings);
  for (auto name : {"token_embd.weight", "blk.1.attn_q.bias", "blk.0.ffn_down.weight", "output_norm.weight"}) {
    auto wa = a->tensor(name);
    auto wb = b->tensor(name);
    REQUIRE(wa.ok());
    REQUIRE(wb.ok());
    CHECK(wa->type == gpu::dtype::bf16);
    CHECK(wa->ne == wb->ne);
    REQUIRE(wa->data.size() == wb->data.size());
    CHECK(std::memcmp(wa->data.data(), wb->data.data(), wa->data.size()) == 0);
  }
  auto down = a->tensor("blk.0.ffn_down.weight");
  CHECK(down->ne[0] == spec.config.n_ff);      // HF [C, F] -> ggml {F, C}
  CHECK(down->ne[1] == spec.config.n_embd);
  CHECK(load_error(tmp / "single") == "");
  CHECK(load_error(tmp / "sharded") == "");

  SECTION("a shard missing") {
    std::filesystem::remove(tmp / "sharded/model-00002-of-00003.safetensors");
    auto m = model_file::open(tmp / "sharded");
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error().message, Catch::Contains("model-00002-of-00003.safetensors"));
  }
  SECTION("a tensor missing from the shards") {
    std::ofstream(tmp / "sharded/model.safetensors.index.json")
        << R"({"weight_map":{"model.embed_tokens.weight":"model-00001-of-00003.safetensors"}})";
    auto m = model_file::open(tmp / "sharded");
    REQUIRE(m.ok());
    CHECK_THAT(load_error(tmp / "sharded"), Catch::Contains("missing tensor"));
  }
  SECTION("quantized weights cannot go to safetensors") {
    auto q = tiny_spec("tiny-llama", gpu::dtype::q8_0);
    CHECK_FALSE(write_test_hf(q, tmp / "q").ok());
  }
}

TEST_CASE("broken model files give one clear error", "[model][errors]") {
  temp_dir tmp;
  auto spec = tiny_spec("tiny-llama", gpu::dtype::f32);
  const std::string good = tmp / "good.gguf";
  REQUIRE(write_test_gguf(spec, good).ok());
  REQUIRE(load_error(good) == "");
  auto bytes = file_bytes(good);

  SECTION("truncated") {
    write_bytes(tmp / "t.gguf", std::span(bytes).first(bytes.size() / 2));
    CHECK_THAT(load_error(tmp / "t.gguf"), Catch::Contains("outside the file"));
    CHECK_THAT(load_error(tmp / "t.gguf"), Catch::Contains("(type f32)"));
    write_bytes(tmp / "t2.gguf", std::span(bytes).first(100));
    CHECK_THAT(load_error(tmp / "t2.gguf"), Catch::Contains("truncated"));
  }
  SECTION("wrong magic") {
    auto b = bytes;
    std::memcpy(b.data(), "GGML", 4);
    write_bytes(tmp / "m.gguf", b);
    CHECK_THAT(load_error(tmp / "m.gguf"), Catch::Contains("magic"));
  }
  SECTION("not there") { CHECK_THAT(load_error(tmp / "nope.gguf"), Catch::Contains("no such file")); }
  SECTION("unknown architecture") {
    gguf_writer w;
    w.add_string("general.architecture", "gptj");
    std::vector<float> v(4, 1.f);
    w.add_tensor_bytes("x", {4}, 0, std::as_bytes(std::span(v)));
    REQUIRE(w.write(tmp / "a.gguf").ok());
    auto e = load_error(tmp / "a.gguf");
    CHECK_THAT(e, Catch::Contains("unknown architecture 'gptj'"));
  }
  // Rewrites the good model with one tensor altered (or dropped when type is ~0u).
  auto variant = [&](const std::string& victim, std::vector<uint64_t> dims, uint32_t type) {
    auto f = gguf::file::open(good);
    REQUIRE(f.ok());
    gguf_writer w;
    for (auto& [k, v] : f->metadata()) w.add_value(k, v);
    for (auto& t : f->tensors()) {
      if (t.name != victim) { w.add_tensor_bytes(t.name, t.dims, t.type, t.data); continue; }
      if (type == ~0u) continue;
      w.add_tensor(t.name, dims, type, [](std::span<std::byte> d) { std::memset(d.data(), 0, d.size()); });
    }
    REQUIRE(w.write(tmp / "v.gguf").ok());
    return load_error(tmp / "v.gguf");
  };
  SECTION("missing tensor") { CHECK_THAT(variant("blk.1.ffn_up.weight", {}, ~0u), Catch::Contains("missing tensor 'blk.1.ffn_up.weight'")); }
  SECTION("shape mismatch") {
    CHECK_THAT(variant("blk.0.attn_q.weight", {256, 128}, 0), Catch::Contains("'blk.0.attn_q.weight' has shape {256, 128}, expected {256, 256}"));
  }
  SECTION("unsupported tensor type") {
    CHECK_THAT(variant("blk.0.attn_k.weight", {256, 128}, 35 /* tq2_0 */),
               Catch::Contains("tensor 'blk.0.attn_k.weight' has unsupported type tq2_0"));
    CHECK_THAT(variant("blk.0.attn_k.weight", {256, 128}, 34 /* tq1_0 */), Catch::Contains("unsupported type tq1_0"));
  }
  SECTION("row not a multiple of the block size") {
    // 96 x 128 q4_K is a whole number of blocks in all, but a row of 96 is not one.
    CHECK_THAT(variant("blk.0.attn_k.weight", {96, 128}, 12 /* q4_K */),
               Catch::Contains("tensor 'blk.0.attn_k.weight' (type q4_K): rows of 96 elements are not a multiple of its "
                               "block size 256"));
  }
  SECTION("unknown tensor type id") {
    // The writer refuses unknown types: patch the type field of one tensor info instead.
    auto b = bytes;
    const std::string name = "blk.0.attn_k.weight";
    auto it = std::search(b.begin(), b.end(), reinterpret_cast<const std::byte*>(name.data()),
                          reinterpret_cast<const std::byte*>(name.data()) + name.size());
    REQUIRE(it != b.end());
    const size_t type_at = static_cast<size_t>(it - b.begin()) + name.size() + 4 + 2 * 8;
    const uint32_t bad = 77;
    std::memcpy(b.data() + type_at, &bad, 4);
    write_bytes(tmp / "u.gguf", b);
    CHECK_THAT(load_error(tmp / "u.gguf"), Catch::Contains("tensor 'blk.0.attn_k.weight' has unknown type 77"));
  }
  SECTION("missing hyper-parameter") {
    auto f = gguf::file::open(good);
    gguf_writer w;
    for (auto& [k, v] : f->metadata())
      if (k != "llama.embedding_length") w.add_value(k, v);
    for (auto& t : f->tensors()) w.add_tensor_bytes(t.name, t.dims, t.type, t.data);
    REQUIRE(w.write(tmp / "h.gguf").ok());
    CHECK_THAT(load_error(tmp / "h.gguf"), Catch::Contains("llama.embedding_length"));
  }
  SECTION("HF directory without weights") {
    std::filesystem::create_directories(tmp.path / "hf");
    std::ofstream(tmp / "hf/config.json") << R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,
      "num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":128,"vocab_size":32})";
    CHECK_THAT(load_error(tmp / "hf"), Catch::Contains("model.safetensors"));
  }
}

TEST_CASE("embedding pooling from sentence-transformers configs; none for generation models", "[model][config]") {
  CHECK(pooling_from_sentence_transformers(R"({"word_embedding_dimension":1024,"pooling_mode_lasttoken":true})") == 3);
  CHECK(pooling_from_sentence_transformers(R"({"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":false})") == 2);
  CHECK(pooling_from_sentence_transformers(R"({"pooling_mode_mean_tokens":true})") == 1);
  CHECK(pooling_from_sentence_transformers(R"({"pooling_mode_max_tokens":true})") == -1);
  CHECK(pooling_from_sentence_transformers("{not json") == -1);
  CHECK(pooling_from_sentence_transformers("[1]") == -1);

  auto f = model_file::open(shared_dir() + "/models/stories260K/stories260K.gguf");
  REQUIRE(f.ok());
  CHECK(f->config().pooling_type == -1);  // a generation model

  temp_dir tmp;
  auto spec = tiny_spec("tiny-qwen2", gpu::dtype::bf16);
  REQUIRE(write_test_hf(spec, tmp / "st", 1).ok());
  auto plain = model_file::open(tmp / "st");
  REQUIRE(plain.ok());
  CHECK(plain->config().pooling_type == -1);
  std::filesystem::create_directories(tmp / "st/pool");
  std::ofstream(tmp / "st/modules.json")
      << R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
      << R"({"idx":1,"name":"1","path":"pool","type":"sentence_transformers.models.Pooling"}])";
  std::ofstream(tmp / "st/pool/config.json") << R"({"pooling_mode_lasttoken":true})";
  auto st = model_file::open(tmp / "st");
  REQUIRE(st.ok());
  CHECK(st->config().pooling_type == 3);
}

TEST_CASE("config.json: Qwen3 MoE and Mistral 3 (text_config, rope_parameters)", "[model][config][moe]") {
  const std::string moe = R"({"architectures":["Qwen3MoeForCausalLM"],"hidden_size":2048,"num_hidden_layers":48,
      "num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,"intermediate_size":6144,"vocab_size":151936,
      "rope_theta":1000000,"num_experts":128,"num_experts_per_tok":8,"moe_intermediate_size":768,"norm_topk_prob":true)";
  auto c = config_from_hf_json(moe + "}");
  REQUIRE(c.ok());
  CHECK(c->arch == "qwen3moe");
  CHECK(c->n_expert == 128);
  CHECK(c->n_expert_used == 8);
  CHECK(c->n_ff_exp == 768);
  CHECK(c->expert_norm);
  CHECK(c->qk_norm);
  auto dense_layers = config_from_hf_json(moe + R"(,"mlp_only_layers":[0]})");
  REQUIRE_FALSE(dense_layers.ok());
  CHECK(dense_layers.error().code == errc::unsupported);
  auto sparse_step = config_from_hf_json(moe + R"(,"decoder_sparse_step":2})");
  REQUIRE_FALSE(sparse_step.ok());
  auto no_experts = config_from_hf_json(R"({"architectures":["Qwen3MoeForCausalLM"],"hidden_size":64,
      "num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100})");
  REQUIRE_FALSE(no_experts.ok());
  CHECK(no_experts.error().code == errc::parse);

  // Mistral Small 3.1: the decoder in text_config (transformers 5: rope_parameters).
  const std::string text = R"("text_config":{"model_type":"mistral","hidden_size":5120,"num_hidden_layers":40,
      "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"intermediate_size":32768,"vocab_size":131072,
      "max_position_embeddings":131072,"rope_parameters":{"rope_type":"yarn","rope_theta":1000000000.0,"factor":16.0,
      "original_max_position_embeddings":8192)";
  auto m = config_from_hf_json(R"({"architectures":["Mistral3ForConditionalGeneration"],"model_type":"mistral3",)" + text +
                               R"(}},"vision_config":{}})");
  REQUIRE(m.ok());
  CHECK(m->arch == "mistral3");
  CHECK(m->n_layer == 40);
  CHECK(m->n_embd == 5120);
  CHECK(m->rope.freq_base == 1e9f);
  CHECK(m->rope_scaling.type == "yarn");
  CHECK(m->rope_scaling.factor == 16.f);
  CHECK_FALSE(m->tied_embeddings);
  auto l4 = config_from_hf_json(R"({"architectures":["Mistral3ForConditionalGeneration"],)" + text +
                                R"(,"llama_4_scaling_beta":0.1}}})");
  REQUIRE_FALSE(l4.ok());
  CHECK(l4.error().code == errc::unsupported);
}

// #22 gemma4: llama.cpp's gemma4 keys (sliding layers as a bool array, KV-shared trailing
// layers, per-layer arrays), and the shapes this runner refuses with a clear error.
TEST_CASE("GGUF gemma4 config: sliding-layer list, KV sharing, refused shapes", "[model][config][gemma4]") {
  std::vector<std::byte> bytes;
  auto with_keys = [&](auto add, std::vector<bool> pattern = {true, false, true, false}) -> result<model_config> {
    gguf_writer w;
    w.add_string("general.architecture", "gemma4");
    for (auto [k, v] : {std::pair{"block_count", 4}, {"embedding_length", 256}, {"attention.head_count", 4},
                        {"context_length", 4096}, {"vocab_size", 512}, {"attention.sliding_window", 8}})
      w.add_u32(std::string("gemma4.") + k, static_cast<uint32_t>(v));
    gguf::array pat;
    pat.elem = gguf::value_type::boolean;
    for (bool b : pattern) pat.items.emplace_back(b);
    w.add_value("gemma4.attention.sliding_window_pattern", pat);
    add(w);
    auto b = w.to_bytes();
    VKS_ASSERT(b.ok(), "gguf bytes");
    bytes = std::move(*b);
    auto f = gguf::file::parse(bytes);
    VKS_ASSERT(f.ok(), "gguf parse");
    return config_from_gguf(*f);
  };
  auto base = [](gguf_writer& w) {
    w.add_u32("gemma4.attention.head_count_kv", 2);
    w.add_u32("gemma4.feed_forward_length", 512);
  };
  auto ok_cfg = with_keys([&](gguf_writer& w) {
    w.add_i32s("gemma4.attention.head_count_kv", {2, 2, 2, 2});  // per-layer arrays, all equal
    w.add_i32s("gemma4.feed_forward_length", {512, 512, 512, 512});
    w.add_u32("gemma4.attention.shared_kv_layers", 2);
    w.add_u32("gemma4.rope.dimension_count_swa", 32);
    w.add_u32("gemma4.embedding_length_per_layer_input", 64);
  });
  INFO((ok_cfg ? "" : ok_cfg.error().message));
  REQUIRE(ok_cfg.ok());
  const auto& c = *ok_cfg;
  CHECK(c.n_head_kv == 2);
  CHECK(c.n_ff == 512);
  CHECK(c.is_swa_layer(0));
  CHECK_FALSE(c.is_swa_layer(1));
  CHECK(c.is_swa_layer(2));
  CHECK_FALSE(c.is_swa_layer(3));
  CHECK(c.kv_source_layer(1) == 1);
  CHECK(c.kv_source_layer(2) == 0);  // sliding: first shared layer - 2
  CHECK(c.kv_source_layer(3) == 1);  // global: first shared layer - 1
  CHECK(c.rope_n_dims_swa == 32);
  CHECK(c.rope_freq_base_swa == 10000.f);
  CHECK(c.final_softcap == 30.f);  // llama.cpp's default when the key is absent
  CHECK(c.attn_scale == 1.f);
  CHECK(c.n_embd_per_layer == 64);
  CHECK(c.v_norm);
  CHECK(c.rope.mode == gpu::rope_mode::neox);

  auto refused = [&](auto add, errc code, const char* words, std::vector<bool> pattern = {true, false, true, false}) {
    auto e = with_keys(add, pattern);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().code == code);
    CHECK_THAT(e.error().message, Catch::Contains(words));
  };
  refused([&](gguf_writer& w) {  // V heads of another width than K heads (llama.cpp refuses them too)
    base(w);
    w.add_u32("gemma4.attention.key_length", 128);
    w.add_u32("gemma4.attention.value_length", 64);
  }, errc::unsupported, "value heads");
  refused([&](gguf_writer& w) {
    w.add_i32s("gemma4.attention.head_count_kv", {2, 3, 2, 3});  // 3 does not divide 4 heads
    w.add_u32("gemma4.feed_forward_length", 512);
  }, errc::parse, "head_count_kv");
  refused([&](gguf_writer& w) {
    w.add_i32s("gemma4.attention.head_count_kv", {2, 1, 2});  // not one per layer
    w.add_u32("gemma4.feed_forward_length", 512);
  }, errc::parse, "one count per layer");
  refused([&](gguf_writer& w) {  // beyond the attention kernels' 512
    base(w);
    w.add_u32("gemma4.attention.key_length", 1024);
  }, errc::unsupported, "wider than 512");
  refused([&](gguf_writer& w) {  // sliding rope wider than the sliding heads
    base(w);
    w.add_u32("gemma4.attention.key_length", 128);
    w.add_u32("gemma4.attention.key_length_swa", 64);
    w.add_u32("gemma4.rope.dimension_count", 128);
  }, errc::parse, "dimension_count_swa");
  refused(base, errc::parse, "one bool per layer", {true, false});
  refused([&](gguf_writer& w) {
    base(w);
    w.add_u32("gemma4.attention.shared_kv_layers", 3);
  }, errc::parse, "shared_kv_layers");
}

// #22 gemma4: the published checkpoints' two head shapes (global heads attention.key_length
// wide, sliding ones key_length_swa; KV heads per layer from a head_count_kv array), as
// llama.cpp's hparams read them, and what they make of the KV cache and its budget.
TEST_CASE("GGUF gemma4 config: per-layer head shapes", "[model][config][gemma4]") {
  std::vector<std::byte> bytes;
  gguf_writer w;
  w.add_string("general.architecture", "gemma4");
  for (auto [k, v] : {std::pair{"block_count", 6}, {"embedding_length", 256}, {"attention.head_count", 8},
                      {"context_length", 4096}, {"vocab_size", 512}, {"attention.sliding_window", 8},
                      {"attention.key_length", 128}, {"attention.value_length", 128}, {"attention.key_length_swa", 64},
                      {"attention.value_length_swa", 64}, {"rope.dimension_count", 128}, {"rope.dimension_count_swa", 64},
                      {"feed_forward_length", 512}, {"attention.shared_kv_layers", 2}})
    w.add_u32(std::string("gemma4.") + k, static_cast<uint32_t>(v));
  gguf::array pat;
  pat.elem = gguf::value_type::boolean;
  for (bool b : {true, true, true, false, true, false}) pat.items.emplace_back(b);
  w.add_value("gemma4.attention.sliding_window_pattern", pat);
  w.add_i32s("gemma4.attention.head_count_kv", {4, 4, 4, 1, 4, 1});
  auto b = w.to_bytes();
  REQUIRE(b.ok());
  bytes = std::move(*b);
  auto f = gguf::file::parse(bytes);
  REQUIRE(f.ok());
  auto cfg = config_from_gguf(*f);
  INFO((cfg ? "" : cfg.error().message));
  REQUIRE(cfg.ok());
  const auto& c = *cfg;
  CHECK(c.head_dim == 128);
  CHECK(c.head_dim_swa == 64);
  CHECK(c.n_head_kv == 1);  // the first global layer's
  CHECK(c.layer_head_dim(0) == 64);
  CHECK(c.layer_head_dim(3) == 128);
  CHECK(c.layer_n_head_kv(0) == 4);
  CHECK(c.layer_n_head_kv(3) == 1);
  CHECK(c.layer_kv_width(2) == 256);
  CHECK(c.layer_kv_width(3) == 128);
  CHECK(c.layer_q_width(3) == 8 * 128);
  CHECK(c.max_head_dim() == 128);
  CHECK(c.max_kv_width() == 256);
  CHECK(c.rope.n_dims == 128);
  CHECK(c.rope_n_dims_swa == 64);
  // The KV cache: the shared layers (4, 5) own none; the others one row of their own width
  // per token (f16: 2 bytes per value): sliding 0-2 at 4 x 64, global 3 at 1 x 128.
  for (int l = 0; l < 6; ++l) CHECK(layer_owns_kv(c, l) == (l < 4));
  CHECK(n_kv_layers(c) == 4);
  const auto all = kv_bytes_per_token(c, gpu::dtype::f16, false);
  CHECK(all.main == 2u * (3 * 256 + 128) * 2);
  CHECK(all.window == 0u);
  CHECK(all.widest_row == 256u * 2);
  const auto split = kv_bytes_per_token(c, gpu::dtype::f16, true);
  CHECK(split.main == 2u * 128 * 2);
  CHECK(split.window == 2u * 3 * 256 * 2);
  auto be = gpu::make_ref_backend();
  auto kv = kv_cache::create(*be, c, 4, gpu::dtype::f32, 16, 2);
  REQUIRE(kv.ok());
  for (int l = 0; l < 6; ++l) {
    INFO("layer " << l);
    CHECK(kv->layer(l).k.ne[0] == (l < 4 ? c.layer_kv_width(l) : 0));
    CHECK(kv->layer(l).v.ne[1] == (l < 4 ? (c.is_swa_layer(l) ? 2 : 4) * 16 : 0));
  }
  // q8_0 needs every KV layer's head dimension divisible by 32 (here 64 and 128: fine).
  CHECK(kv_cache::create(*be, c, 4, gpu::dtype::q8_0).ok());
}

// #22 gemma4 E2B/E4B: feed_forward_length per layer whose values differ (the KV-shared
// layers' MLP twice as wide) loads as n_ff_layer; other families' differing arrays, a
// gemma4 array of the wrong length or with a zero width are refused.
TEST_CASE("GGUF gemma4 config: per-layer feed-forward widths", "[model][config][gemma4]") {
  std::vector<std::byte> bytes;
  auto load = [&](const std::string& arch, std::vector<int32_t> ff) -> result<model_config> {
    gguf_writer w;
    w.add_string("general.architecture", arch);
    const std::string a = arch + ".";
    for (auto [k, v] : {std::pair{"block_count", 4}, {"embedding_length", 256}, {"attention.head_count", 4},
                        {"attention.head_count_kv", 2}, {"context_length", 4096}, {"vocab_size", 512},
                        {"attention.sliding_window", 8}, {"attention.shared_kv_layers", 2}})
      w.add_u32(a + k, static_cast<uint32_t>(v));
    gguf::array pat;
    pat.elem = gguf::value_type::boolean;
    for (bool b : {true, false, true, false}) pat.items.emplace_back(b);
    w.add_value(a + "attention.sliding_window_pattern", pat);
    w.add_i32s(a + "feed_forward_length", ff);
    auto b = w.to_bytes();
    VKS_ASSERT(b.ok(), "gguf bytes");
    bytes = std::move(*b);
    auto f = gguf::file::parse(bytes);
    VKS_ASSERT(f.ok(), "gguf parse");
    return config_from_gguf(*f);
  };
  auto cfg = load("gemma4", {512, 512, 1024, 1024});
  INFO((cfg ? "" : cfg.error().message));
  REQUIRE(cfg.ok());
  CHECK(cfg->n_ff == 512);
  CHECK(cfg->layer_n_ff(1) == 512);
  CHECK(cfg->layer_n_ff(2) == 1024);
  CHECK(cfg->layer_n_ff(3) == 1024);
  CHECK(cfg->max_n_ff() == 1024);
  CHECK_THAT(cfg->summary(), Catch::Contains("F=512..1024"));
  auto uniform = load("gemma4", {512, 512, 512, 512});  // all equal: the scalar, no per-layer list
  REQUIRE(uniform.ok());
  CHECK(uniform->n_ff_layer.empty());
  CHECK(uniform->max_n_ff() == 512);
  auto refused = [&](const std::string& arch, std::vector<int32_t> ff, errc code, const char* words) {
    auto e = load(arch, std::move(ff));
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().code == code);
    CHECK_THAT(e.error().message, Catch::Contains(words));
  };
  refused("gemma3", {512, 512, 1024, 1024}, errc::unsupported, "per-layer gemma3.feed_forward_length values differ");
  refused("gemma4", {512, 1024, 1024}, errc::parse, "one width per layer");
  refused("gemma4", {512, 0, 1024, 1024}, errc::parse, "feed_forward_length values");
}

TEST_CASE("config.json: gpt-oss (openai/gpt-oss-20b's keys)", "[model][config][moe][gpt-oss]") {
  // openai/gpt-oss-20b's config.json, layer_types shortened with the layers.
  const std::string head = R"({"architectures":["GptOssForCausalLM"],"model_type":"gpt_oss","attention_bias":true,
      "head_dim":64,"hidden_size":2880,"intermediate_size":2880,"max_position_embeddings":131072,"num_attention_heads":64,
      "num_hidden_layers":4,"num_key_value_heads":8,"num_local_experts":32,"experts_per_token":4,"num_experts_per_tok":4,
      "rms_norm_eps":1e-05,"rope_theta":150000,"sliding_window":128,"swiglu_limit":7.0,"tie_word_embeddings":false,
      "vocab_size":201088,"quantization_config":{"quant_method":"mxfp4"},)";
  const std::string rope = R"("rope_scaling":{"beta_fast":32.0,"beta_slow":1.0,"factor":32.0,
      "original_max_position_embeddings":4096,"rope_type":"yarn","truncate":false})";
  const std::string types = R"("layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"],)";
  auto c = config_from_hf_json(head + types + rope + "}");
  REQUIRE(c.ok());
  CHECK(c->arch == "gpt-oss");
  CHECK(c->n_expert == 32);
  CHECK(c->n_expert_used == 4);
  CHECK(c->n_ff_exp == 2880);
  CHECK(c->expert_gating == gpu::moe_gating::softmax_selected);
  CHECK((c->attn_sinks && c->attn_out_bias && c->expert_bias && c->qkv_bias && c->swiglu_oai));
  CHECK(c->sliding_window == 128);
  CHECK((c->is_swa_layer(0) && !c->is_swa_layer(1) && c->is_swa_layer(2)));
  CHECK(c->swiglu_limit == 7.f);
  CHECK_FALSE(c->tied_embeddings);
  CHECK(c->rope.mode == gpu::rope_mode::neox);
  CHECK(c->rope.freq_scale == Approx(1.0 / 32));
  CHECK(c->rope.mscale == Approx(1.0 + 0.1 * std::log(32.0)));
  // "truncate": false keeps transformers' unrounded correction range (llama.cpp rounds it out).
  const double lo = 64 * std::log(4096 / (32 * 2 * M_PI)) / (2 * std::log(150000.0));
  const double hi = 64 * std::log(4096 / (1 * 2 * M_PI)) / (2 * std::log(150000.0));
  CHECK(c->rope.corr_low == Approx(lo));
  CHECK(c->rope.corr_high == Approx(hi));
  auto t = config_from_hf_json(head + types + R"("rope_scaling":{"beta_fast":32.0,"beta_slow":1.0,"factor":32.0,
      "original_max_position_embeddings":4096,"rope_type":"yarn"}})");
  REQUIRE(t.ok());
  CHECK(t->rope.corr_low == std::floor(lo));
  CHECK(t->rope.corr_high == std::ceil(hi));
  // Refusals: a layer pattern llama.cpp does not run, no window, no experts.
  auto odd = config_from_hf_json(head + R"("layer_types":["full_attention","sliding_attention","full_attention","sliding_attention"],)" + rope + "}");
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.error().code == errc::unsupported);
  std::string no_window = head + rope + "}";
  no_window.replace(no_window.find("\"sliding_window\":128"), 20, "\"sliding_window\":0");
  auto nw = config_from_hf_json(no_window);
  REQUIRE_FALSE(nw.ok());
  CHECK(nw.error().code == errc::parse);
  auto no_experts = config_from_hf_json(R"({"architectures":["GptOssForCausalLM"],"hidden_size":64,"sliding_window":8,
      "num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100})");
  REQUIRE_FALSE(no_experts.ok());
  CHECK(no_experts.error().code == errc::parse);
}

TEST_CASE("gpt-oss HF experts that do not match the config give one clear error", "[model][errors][gpt-oss]") {
  temp_dir tmp;
  for (bool mxfp4 : {false, true}) {
    auto spec = test_model_shape("tiny-gpt-oss");
    REQUIRE(spec.ok());
    spec->config.n_layer = 1;
    if (mxfp4) spec->expert_type = gpu::dtype::mxfp4;
    const std::string dir = tmp / (mxfp4 ? "mx" : "f");
    REQUIRE(write_test_hf(*spec, dir).ok());
    // The config claims experts of 128; the fused stacks hold 256.
    auto text = read_file(dir + "/config.json");
    REQUIRE(text.ok());
    std::string cfg = *text;
    const std::string from = "\"intermediate_size\": 256";
    REQUIRE(cfg.find(from) != std::string::npos);
    cfg.replace(cfg.find(from), from.size(), "\"intermediate_size\": 128");
    std::ofstream(dir + "/config.json") << cfg;
    auto f = model_file::open(dir);
    REQUIRE(f.ok());
    auto be = gpu::make_ref_backend();
    auto w = load_weights(*f, *be);
    REQUIRE_FALSE(w.ok());
    INFO(w.error().message);
    CHECK(w.error().code == errc::parse);
    CHECK(w.error().message.find(mxfp4 ? "gate_up_proj_blocks" : "gate_up_proj") != std::string::npos);
  }
}
