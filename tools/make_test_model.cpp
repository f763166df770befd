// make-test-model: writes a seeded-random model (GGUF, or a Hugging Face safetensors
// directory) with the real shapes of a published model or a tiny variant, in any weight
// type vkserve runs. The generator itself is model/test_model.hpp (tests use it directly).
//   make-test-model --shape smollm2-135m --type q8_0 -o smollm2-q8_0.gguf
//   make-test-model --shape tiny-qwen2 --type bf16 --format hf --shards 2 -o dir/
//   make-test-model --shape smollm2-135m --preset Q4_K_M -o smollm2-q4_k_m.gguf
//   make-test-model --shape tiny-gemma4 --chat-template gemma4.jinja -o g4.gguf  (the GGUF carries it)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "gpu/dtype.hpp"
#include "testing/presets.hpp"
#include "testing/test_model.hpp"

namespace {

std::optional<vks::gpu::dtype> parse_type(const std::string& s) {
  using vks::gpu::dtype;
  for (auto t : vks::gpu::k_all_dtypes)
    if (t != dtype::i32 && vks::gpu::traits(t).name == s) return t;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write a seeded-random test model (GGUF or HF safetensors directory)"};
  std::string shape, type = "f32", format = "gguf", out, vocab, preset, expert_type;
  uint64_t seed = 1;
  int shards = 1, layers = 0;
  bool list = false;
  app.add_flag("--list", list, "print the known shapes and exit");
  app.add_option("--shape", shape, "model shape (see --list)");
  app.add_option("--type", type,
                 "weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs mxfp4 "
                 "iq3_xxs iq3_s iq2_xxs iq2_xs iq2_s iq1_s iq1_m")
      ->capture_default_str();
  app.add_option("--preset", preset, "llama.cpp type mix instead of --type: Q4_K_M Q4_K_S Q5_K_M Q3_K_M Q2_K IQ4_XS MXFP4 "
                 "IQ3_XXS IQ2_XXS IQ2_XS IQ2_M IQ1_S IQ1_M UD-Q2_K_XL (tools/testing/presets.hpp)");
  app.add_option("--expert-type", expert_type,
                 "MoE expert stacks in this type (over --type / --preset): mxfp4 writes gpt-oss's HF checkpoint "
                 "layout (_blocks / _scales) with --format hf");
  app.add_option("--format", format, "gguf | hf")->capture_default_str();
  app.add_option("--shards", shards, "safetensors shards (hf format)")->capture_default_str();
  app.add_option("--seed", seed, "random seed")->capture_default_str();
  app.add_option("--layers", layers, "override the layer count (0 = the shape's)");
  app.add_option("--vocab", vocab, "copy tokenizer.ggml.* from this GGUF (default: synthetic vocab)");
  std::string chat_template;
  app.add_option("--chat-template", chat_template, "write this Jinja file's text as tokenizer.chat_template (gguf)");
  std::string hf_class;
  app.add_option("--hf-class", hf_class,
                 "HF class to write where a family has several: Gemma3ForConditionalGeneration, Gemma4ForCausalLM (hf)");
  app.add_option("-o,--output", out, "output file (gguf) or directory (hf)");
  CLI11_PARSE(app, argc, argv);
  if (list) {
    for (auto& n : vks::model::test_model_shape_names()) {
      auto s = vks::model::test_model_shape(n);
      std::printf("%-14s %s\n", n.c_str(), s->config.summary().c_str());
    }
    return 0;
  }
  if (shape.empty() || out.empty()) {
    std::fprintf(stderr, "make-test-model: --shape and -o are required (--list shows shapes)\n");
    return 2;
  }
  auto spec = vks::model::test_model_shape(shape);
  if (!spec) {
    std::fprintf(stderr, "make-test-model: %s\n", spec.error().message.c_str());
    return 2;
  }
  auto t = parse_type(type);
  if (!t) {
    std::fprintf(stderr, "make-test-model: unknown weight type '%s'\n", type.c_str());
    return 2;
  }
  if (!preset.empty() && !vks::model::is_test_preset(preset)) {
    std::fprintf(stderr, "make-test-model: unknown preset '%s'\n", preset.c_str());
    return 2;
  }
  spec->weight_type = *t;
  spec->preset = preset;
  if (!expert_type.empty()) {
    auto et = parse_type(expert_type);
    if (!et) {
      std::fprintf(stderr, "make-test-model: unknown expert type '%s'\n", expert_type.c_str());
      return 2;
    }
    spec->expert_type = *et;
  }
  spec->seed = seed;
  spec->vocab_gguf = vocab;
  spec->hf_class = hf_class;
  if (!chat_template.empty()) {
    std::ifstream f(chat_template, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    if (!f || text.str().empty()) {
      std::fprintf(stderr, "make-test-model: cannot read chat template '%s'\n", chat_template.c_str());
      return 2;
    }
    spec->chat_template = text.str();
  }
  if (layers > 0) spec->config.n_layer = layers;
  auto r = format == "hf" ? vks::model::write_test_hf(*spec, out, shards)
         : format == "gguf" ? vks::model::write_test_gguf(*spec, out)
                            : vks::result<void>(vks::fail(vks::errc::invalid_argument, "--format must be gguf or hf"));
  if (!r) {
    std::fprintf(stderr, "make-test-model: %s\n", r.error().message.c_str());
    return 1;
  }
  std::fprintf(stderr, "make-test-model: wrote %s (%s, %s)\n", out.c_str(), spec->config.summary().c_str(),
               preset.empty() ? type.c_str() : preset.c_str());
  return 0;
}
