// `vkserve generate`: one-shot text generation from the command line. Loads a model (a
// .gguf file or a Hugging Face directory; default /opt/ml/model or the bundled demo model),
// tokenizes the prompt (BOS as the vocabulary says), runs the prompt as one prefill step
// and then one decode step per token on the chosen backend, and streams the text to stdout.
// Timing (prompt and decode tok/s) goes to stderr. Temperature 0 is greedy. With --stats,
// one JSON line of per-step counters (medians over the decode steps) follows on stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "gpu/backend.hpp"
#include "model/model_file.hpp"
#include "model/runner.hpp"
#include "server/commands.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::server {
namespace {

struct generate_args {
  std::string model, prompt, backend = "vk", device, kv_cache_dtype = "auto", pipeline_cache_dir;
  int n_predict = 128;
  float temperature = 0.8f;
  uint64_t seed = 0;
  bool profile = false;
  bool stats = false;
  std::string vk_tuning;
  std::string overlap_record = "auto";  // runner_options::overlap_record: auto | on | off
};

// The backend's counters of each decode step, and what an ideal step must read.
struct decode_stats {
  std::vector<gpu::step_stats> steps;
  std::vector<uint64_t> kv_bytes;  // KV cache bytes a step must read (every layer, K and V)
};

uint64_t median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += static_cast<char>(ch);
    else if (ch < 0x20) o += "?";
    else o += static_cast<char>(ch);
  }
  return o + "\"";
}

// One JSON line on stderr: the counters named in docs/serving.md ("Step counters").
void print_stats(const decode_stats& d, model::runner& r) {
  auto med = [&](uint64_t gpu::step_stats::*f) {
    std::vector<uint64_t> v;
    for (const auto& s : d.steps) v.push_back(s.*f);
    return median(std::move(v));
  };
  uint64_t overlapped = 0;  // decode steps recorded while the step before ran (runner_overlap.cpp)
  for (const auto& s : d.steps) overlapped += s.overlapped;
  const auto& w = r.weights();
  const bool tied = w.output.buf == w.tok_embd.buf && w.output.offset == w.tok_embd.offset;
  // Every weight once, except an untied embedding table, of which a step reads one row per token.
  const uint64_t weight_bytes =
      w.n_bytes - (tied ? 0 : w.tok_embd.nbytes() - gpu::row_bytes(w.tok_embd.type, static_cast<uint64_t>(w.tok_embd.ne[0])));
  std::fprintf(stderr,
               "{\"decode_steps\":%zu,\"dispatches_per_step\":%llu,\"barriers_per_step\":%llu,\"submits_per_step\":%llu,"
               "\"fence_waits_per_step\":%llu,\"bytes_uploaded_per_step\":%llu,\"bytes_downloaded_per_step\":%llu,"
               "\"bytes_moved_per_step\":%llu,\"weight_bytes\":%llu,\"kv_bytes_read_per_step\":%llu,\"n_layers\":%d,"
               "\"record_us_per_step\":%llu,\"wait_us_per_step\":%llu,\"overlapped_records\":%llu,"
               "\"record_hidden_us_per_step\":%llu,\"device\":%s}\n",
               d.steps.size(), static_cast<unsigned long long>(med(&gpu::step_stats::dispatches)),
               static_cast<unsigned long long>(med(&gpu::step_stats::barriers)),
               static_cast<unsigned long long>(med(&gpu::step_stats::submits)),
               static_cast<unsigned long long>(med(&gpu::step_stats::fence_waits)),
               static_cast<unsigned long long>(med(&gpu::step_stats::bytes_uploaded)),
               static_cast<unsigned long long>(med(&gpu::step_stats::bytes_downloaded)),
               static_cast<unsigned long long>(med(&gpu::step_stats::bytes_moved)),
               static_cast<unsigned long long>(weight_bytes), static_cast<unsigned long long>(median(d.kv_bytes)),
               r.config().n_layer, static_cast<unsigned long long>(med(&gpu::step_stats::record_ns) / 1000),
               static_cast<unsigned long long>(med(&gpu::step_stats::wait_ns) / 1000),
               static_cast<unsigned long long>(overlapped),
               static_cast<unsigned long long>(med(&gpu::step_stats::record_hidden_ns) / 1000),
               json_string(r.backend().info().name).c_str());
}

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

int32_t sample(std::span<const float> logits, float temperature, std::mt19937_64& rng) {
  if (temperature <= 0.f) return model::argmax(logits);
  const float mx = logits[static_cast<size_t>(model::argmax(logits))];
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp((static_cast<double>(logits[i]) - mx) / temperature);
  std::discrete_distribution<int32_t> d(p.begin(), p.end());
  return d(rng);
}

result<std::unique_ptr<gpu::backend>> make_backend(const generate_args& a) {
  if (a.backend == "ref") return gpu::make_ref_backend();
  if (a.backend != "vk") return fail(errc::invalid_argument, "--backend must be vk or ref");
  gpu::vk_options o;
  o.device = a.device;
  o.profile = a.profile;
  o.tuning = a.vk_tuning;
  o.pipeline_cache_dir = a.pipeline_cache_dir;
  return gpu::make_vk_backend(o);
}

// The prompt's token ids. Without a tokenizer (an HF directory lacking tokenizer files)
// only an empty prompt works: BOS from config.json.
result<std::vector<int32_t>> prompt_ids(const text::tokenizer* tok, const model::model_config& c, const std::string& prompt) {
  if (tok) {
    auto ids = tok->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
    if (ids.empty() && tok->bos() >= 0) ids.push_back(tok->bos());
    if (ids.empty()) return fail(errc::invalid_argument, "the prompt is empty and the vocabulary has no BOS token");
    return ids;
  }
  if (!prompt.empty()) return fail(errc::unsupported, "the model has no tokenizer: only an empty prompt is possible");
  if (c.bos_id < 0 || c.bos_id >= c.n_vocab) return fail(errc::invalid_argument, "the model has neither a tokenizer nor a BOS id");
  return std::vector<int32_t>{c.bos_id};
}

// Prefill, then decode until n tokens or end of generation; text to stdout as it comes.
result<void> run_generation(model::runner& r, const text::tokenizer* tok, std::vector<int32_t> ids, const generate_args& a) {
  const int n_prompt = static_cast<int>(ids.size());
  model::kv_sequence seq;
  VKS_TRY(r.kv().reserve(seq, n_prompt + a.n_predict));
  std::optional<text::incremental_decoder> dec;
  if (tok) dec.emplace(*tok, /*skip_special=*/true);
  auto emit = [&](int32_t id) {
    std::string s = dec ? dec->push(id) : "<" + std::to_string(id) + ">";
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  for (auto id : ids) emit(id);
  std::mt19937_64 rng(a.seed);
  double t_prompt = 0, t_decode = 0;
  int n_decoded = 0;
  int32_t pos = 0;
  decode_stats stats;
  const auto& c = r.config();
  uint64_t kv_token = 0;  // K and V bytes per cached token that a step's attention reads (each layer its source's rows)
  for (int l = 0; l < c.n_layer; ++l)
    if (!c.is_recurrent_layer(l))
      kv_token += 2 * gpu::row_bytes(r.kv().type(), static_cast<uint64_t>(c.layer_kv_width(c.kv_source_layer(l))));
  std::vector<int32_t> step = ids;
  for (int i = 0; i < a.n_predict; ++i) {
    model::batch b;
    b.block_tables.push_back(seq.blocks);
    b.add_tokens(0, step, pos, true);
    // Greedy: the device's argmax (a few bytes read back); else the whole row.
    if (a.temperature <= 0.f) b.needs.push_back({model::logit_kind::argmax, 0});
    auto t0 = clock_type::now();
    auto out = r.forward_step(b);
    if (!out) return fail(std::move(out).error());
    (i == 0 ? t_prompt : t_decode) += seconds_since(t0);
    if (i > 0) {
      ++n_decoded;
      stats.steps.push_back(r.backend().last_step_stats());
      stats.kv_bytes.push_back(kv_token * static_cast<uint64_t>(pos + 1));
    }
    pos += static_cast<int32_t>(step.size());
    const int32_t next = out->needs[0].kind == model::logit_kind::argmax ? out->token(0) : sample(out->row(0), a.temperature, rng);
    if (tok && tok->is_eog(next)) break;
    emit(next);
    step.assign(1, next);
  }
  if (dec) {
    auto tail = dec->flush();
    std::fwrite(tail.data(), 1, tail.size(), stdout);
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "prompt: %d tokens in %.1f ms (%.2f tok/s); decode: %d tokens in %.1f ms (%.2f tok/s)\n", n_prompt,
               t_prompt * 1e3, t_prompt > 0 ? n_prompt / t_prompt : 0.0, n_decoded, t_decode * 1e3,
               t_decode > 0 ? n_decoded / t_decode : 0.0);
  if (a.stats) print_stats(stats, r);
  return ok();
}

result<void> generate(generate_args a) {
  if (a.model.empty()) {
    auto p = model::default_model_path();
    if (!p) return fail(std::move(p).error());
    a.model = *p;
  }
  if (a.n_predict < 0) return fail(errc::invalid_argument, "-n must be >= 0");
  auto file = model::model_file::open(a.model);
  if (!file) return fail(std::move(file).error());
  if (!file->has_weights()) return fail(errc::invalid_argument, a.model + ": vocab-only file (no weights): cannot generate");
  std::unique_ptr<text::tokenizer> tok;
  auto t = file->gguf() ? text::tokenizer::from_gguf(*file->gguf()) : text::tokenizer::from_hf_dir(a.model);
  if (t) tok = std::move(*t);
  else if (file->gguf()) return fail(std::move(t).error());
  else log::warn("no tokenizer ({}): output shows token ids", t.error().message);
  const auto& c = file->config();
  auto ids = prompt_ids(tok.get(), c, a.prompt);
  if (!ids) return fail(std::move(ids).error());
  const int n_prompt = static_cast<int>(ids->size());
  if (n_prompt >= c.n_ctx) return fail(errc::context_overflow, "the prompt has " + std::to_string(n_prompt) +
                                                                    " tokens; the model's context is " + std::to_string(c.n_ctx));
  a.n_predict = std::min(a.n_predict, c.n_ctx - n_prompt);
  auto be = make_backend(a);
  if (!be) return fail(std::move(be).error());
  log::info("model {} ({}), backend {}", a.model, c.summary(), (*be)->info().name);
  model::runner_options ro;
  auto kv_type = model::kv_cache_dtype(a.kv_cache_dtype, (*be)->info());
  if (!kv_type) return fail(std::move(kv_type).error());
  ro.kv_type = *kv_type;
  ro.max_context = n_prompt + a.n_predict;
  ro.kv_blocks = (ro.max_context + 15) / 16;
  ro.max_seqs = 1;
  ro.max_logit_rows = 1;
  ro.overlap_record = a.overlap_record == "on" ? 1 : a.overlap_record == "off" ? 0 : -1;
  auto r = model::runner::load(*file, **be, ro);
  if (!r) return fail(std::move(r).error());
  return run_generation(**r, tok.get(), std::move(*ids), a);
}

}  // namespace

void add_vk_tuning_option(CLI::App& cmd, std::string& tuning) {
  cmd.add_option("--vk-tuning", tuning,
                 "diagnostic: force the Vulkan kernel family (cpu, cpu:ssbo, cpu:loads, gpu, gpu:N lanes per row, gpu:N:smem, "
                 "nvidia, amd-rdna, amd-gcn, intel, apple) "
                 "instead of choosing by device kind")
      ->check([](const std::string& v) {
        auto r = gpu::check_vk_tuning(v);
        return r ? std::string() : r.error().message;
      });
}

void add_generate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("generate", "generate text from a prompt (one-shot, no server)");
  auto a = std::make_shared<generate_args>();
  cmd->add_option("--model,-m", a->model, "a .gguf file or a Hugging Face model directory "
                                          "(default: /opt/ml/model, else models/stories260K.gguf)");
  cmd->add_option("--prompt,-p", a->prompt, "prompt text");
  cmd->add_option("-n,--n-predict", a->n_predict, "tokens to generate")->capture_default_str();
  cmd->add_option("--temperature,-t", a->temperature, "sampling temperature; 0 = greedy")->capture_default_str();
  cmd->add_option("--seed,-s", a->seed, "sampling seed")->capture_default_str();
  cmd->add_option("--backend", a->backend, "vk | ref")->capture_default_str();
  cmd->add_option("--device", a->device, "Vulkan device: index or name substring (default: best)");
  cmd->add_flag("--profile", a->profile, "GPU timestamps per kernel and counters per step shape, logged (info) at exit");
  cmd->add_flag("--stats", a->stats,
                "at exit, one JSON line on stderr: dispatches, barriers, submits, fence waits and bytes per decode "
                "step (medians), weight and KV bytes an ideal step reads, layers, device");
  add_vk_tuning_option(*cmd, a->vk_tuning);
  cmd->add_option("--overlap-record", a->overlap_record,
                  "record decode step N+1 while step N runs: auto (on unless the device is a CPU) | on | off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--pipeline-cache-dir", a->pipeline_cache_dir,
                  "where compiled GPU pipelines persist (default $XDG_CACHE_HOME/vkserve, else ~/.cache/vkserve; 'off')");
  cmd->add_option("--kv-cache-dtype", a->kv_cache_dtype, "KV cache type: auto (f16 on GPUs, f32 on CPU devices) | f32 | f16 | q8_0")
      ->capture_default_str();
  cmd->callback([a, &exit_code] {
    auto r = generate(*a);
    if (!r) {
      std::fprintf(stderr, "vkserve generate: %s\n", r.error().message.c_str());
      exit_code = 1;
    }
  });
}

}  // namespace vks::server
