// Model loading for the server: file -> backend -> tokenizer -> template -> runner (KV pool
// sized from the options) -> engine thread; and the warm-up generation.
#include "server/model_host.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>

#include "base/log.hpp"
#include "model/kv_cache.hpp"
#include "model/state_cache.hpp"
#include "text/jinja/template_source.hpp"

namespace vks::server {
namespace {

namespace fs = std::filesystem;

// Bytes of the model's files on disk: an upper bound for the device memory of its weights.
std::uint64_t model_bytes(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::file_size(path, ec);
  std::uint64_t n = 0;
  for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

// The window pool (model/kv_cache.hpp) serve gives a model with sliding-window layers, in
// blocks: enough for max_num_seqs sequences' windows and a step's prefill chunks.
int window_pool_tokens_blocks(const serve_options& o, const model::model_config& c, int ctx) {
  const int full = static_cast<int>(std::min<long long>(static_cast<long long>(o.max_num_seqs) * ((ctx + o.block_size - 1) / o.block_size), 1 << 20));
  return model::window_pool_blocks(c, o.max_num_seqs, o.max_num_batched_tokens, o.block_size, full);
}

// Hybrid models: the recurrent state pool (model/state_cache.hpp) the runner allocates beside
// the KV pool, one slot per running sequence and, with prefix caching, as many checkpoints.
int state_checkpoints(const serve_options& o, const model::model_config& c) {
  return c.is_hybrid() && o.enable_prefix_caching ? o.max_num_seqs : 0;
}
std::uint64_t state_pool_bytes(const serve_options& o, const model::model_config& c) {
  return model::state_cache::slot_bytes(c) *
         static_cast<std::uint64_t>(o.max_num_seqs + state_checkpoints(o, c));
}

// KV pool in tokens: --kv-cache-tokens, else what the memory budget allows, capped at
// max_num_seqs full-length sequences and at what one allocation holds per layer
// (device_info::max_tensor_bytes), and never below one full-length sequence. A hybrid's
// state pool comes out of the budget first.
int kv_pool_tokens(const serve_options& o, const model::model_config& c, const gpu::device_info& dev, int ctx,
                   const std::string& path) {
  if (o.kv_cache_tokens > 0) return std::max(o.kv_cache_tokens, o.block_size);
  const auto kv_type = model::kv_cache_dtype(o.kv_cache_dtype, dev);
  // Bytes of one token's K and V rows in every layer with KV at the cache's type (q8_0: 34
  // per 32; each layer its own row width: model::kv_bytes_per_token). Sliding-window layers
  // keep their KV in the window pool (bounded, sized for max_num_seqs sequences): the main
  // pool's tokens cost only the other layers, after that pool's bytes. A hybrid's recurrent
  // layers and KV-shared layers have no KV (model/kv_cache.hpp).
  const int n_window_blocks = window_pool_tokens_blocks(o, c, ctx);
  const auto tb = model::kv_bytes_per_token(c, kv_type ? *kv_type : gpu::dtype::f32, n_window_blocks > 0);
  const std::uint64_t window_bytes = tb.window * static_cast<std::uint64_t>(n_window_blocks) * static_cast<std::uint64_t>(o.block_size);
  const std::uint64_t per_token = tb.main;
  const std::uint64_t want = static_cast<std::uint64_t>(o.max_num_seqs) * static_cast<std::uint64_t>(ctx);
  std::uint64_t tokens = std::min<std::uint64_t>(want, 1u << 21);
  if (dev.memory_bytes > 0 && per_token > 0) {
    const double budget = static_cast<double>(dev.memory_bytes) * o.gpu_memory_utilization -
                          static_cast<double>(model_bytes(path)) - static_cast<double>(window_bytes) -
                          static_cast<double>(state_pool_bytes(o, c));
    const auto fit = budget > 0 ? static_cast<std::uint64_t>(budget / static_cast<double>(per_token)) : 0;
    tokens = std::min(tokens, fit);
  }
  // A layer's K (or V) cache is one tensor: at most what one allocation holds (gpu/vk binds
  // it in windows when it exceeds one binding).
  const std::uint64_t layer_row = tb.widest_row;
  if (dev.max_tensor_bytes > 0 && layer_row > 0) tokens = std::min(tokens, dev.max_tensor_bytes / layer_row);
  if (tokens < static_cast<std::uint64_t>(ctx)) {
    log::warn("the memory budget allows {} KV tokens; using one full sequence ({})", tokens, ctx);
    tokens = static_cast<std::uint64_t>(ctx);
  }
  return static_cast<int>(tokens);
}

result<std::unique_ptr<gpu::backend>> make_backend(const serve_options& o) {
  if (o.gpu_backend == "ref") return gpu::make_ref_backend();
  gpu::vk_options vo;
  vo.device = o.device;
  vo.profile = o.profile;
  vo.tuning = o.vk_tuning;
  vo.pipeline_cache_dir = o.pipeline_cache_dir;
  return gpu::make_vk_backend(vo);
}

// Blocks the calling thread until the request's terminal event.
class blocking_sink final : public engine::event_sink {
 public:
  void on_event(engine::event ev) noexcept override {
    std::lock_guard lk(mu_);
    if (auto* e = std::get_if<engine::error_event>(&ev)) {
      err_ = e->err;
      done_ = true;
    } else if (std::holds_alternative<engine::finished_event>(ev) || std::holds_alternative<engine::embedding_event>(ev)) {
      done_ = true;
    }
    if (done_) cv_.notify_all();
  }
  result<void> wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return done_; });
    if (err_) return fail(*err_);
    return ok();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::optional<vks::error> err_;
};

}  // namespace

result<std::unique_ptr<model_host>> model_host::load(const serve_options& o, const phase_fn& phase) {
  const auto say = [&](std::string p) {
    if (phase) phase(std::move(p));
  };
  say("reading " + o.model);
  std::unique_ptr<model_host> h(new model_host());
  h->max_seqs_per_request_ = o.max_sequences_per_request;
  h->prompt_tokens_details_ = o.enable_prompt_tokens_details;
  h->embeddings_flag_ = o.embeddings;
  auto file = model::model_file::open(o.model);
  if (!file) return fail(std::move(file).error());
  h->file_.emplace(std::move(*file));
  if (!h->file_->has_weights()) return fail(errc::invalid_argument, o.model + ": vocab-only file (no weights)");
  auto tok = h->file_->gguf() ? text::tokenizer::from_gguf(*h->file_->gguf()) : text::tokenizer::from_hf_dir(o.model);
  if (!tok) return fail(std::move(tok).error());
  h->tok_ = std::move(*tok);
  VKS_TRY(h->load_template(o));

  say("opening the " + o.gpu_backend + " device");
  auto be = make_backend(o);
  if (!be) return fail(std::move(be).error());
  h->backend_ = std::move(*be);
  h->device_name_ = h->backend_->info().name;
  const auto& c = h->file_->config();
  const int ctx = o.max_model_len > 0 ? o.max_model_len : std::min(c.n_ctx, 4096);
  model::runner_options ro;
  ro.max_batch_tokens = o.max_num_batched_tokens;
  ro.max_seqs = o.max_num_seqs;
  ro.max_logit_rows = o.max_num_seqs;
  ro.max_context = ctx;
  auto kv_type = model::kv_cache_dtype(o.kv_cache_dtype, h->backend_->info());
  if (!kv_type) return fail(std::move(kv_type).error());
  ro.kv_type = *kv_type;
  ro.kv_blocks = (kv_pool_tokens(o, c, h->backend_->info(), ctx, o.model) + o.block_size - 1) / o.block_size;
  // Hybrid models: one recurrent state slot per sequence and as many prefix-cache
  // checkpoints (model/state_cache.hpp; kv_pool_tokens took them out of the KV budget).
  if (c.is_hybrid()) ro.state_checkpoints = state_checkpoints(o, c);
  ro.kv_window_blocks = std::min(window_pool_tokens_blocks(o, c, ctx), ro.kv_blocks);
  log::info("model {} ({}) on {}: context {} tokens, KV pool {} blocks of {} ({}), window pool {} blocks", o.model,
            c.summary(), h->device_name_, ctx, ro.kv_blocks, o.block_size, gpu::traits(ro.kv_type).name,
            ro.kv_window_blocks);
  say("weights and KV cache onto " + h->device_name_);
  auto r = model::runner::load(*h->file_, *h->backend_, ro);
  if (!r) return fail(std::move(r).error());
  h->runner_ = std::move(*r);

  engine::engine_options eo;
  eo.sched.max_num_batched_tokens = o.max_num_batched_tokens;
  eo.sched.max_num_seqs = o.max_num_seqs;
  eo.enable_prefix_caching = o.enable_prefix_caching;
  eo.max_queued_seqs = o.max_queued_sequences;
  eo.max_queued_prompt_tokens = o.max_queued_prompt_tokens;
  eo.max_logprobs = o.max_logprobs;
  if (o.sagemaker_session_pinned_tokens > 0)
    eo.max_pinned_blocks = static_cast<int>(std::min<long long>(o.sagemaker_session_pinned_tokens / o.block_size, ro.kv_blocks));
  say("starting the engine");
  auto e = engine::llm_engine::start(*h->runner_, *h->tok_, eo);
  if (!e) return fail(std::move(e).error());
  h->engine_ = std::move(*e);
  return h;
}

model_host::~model_host() { engine_.reset(); }

result<void> model_host::load_template(const serve_options& o) {
  std::string source;
  if (!o.chat_template.empty()) {
    auto s = text::jinja::load_template_source(o.chat_template);
    if (!s) return fail(std::move(s).error());
    source = std::move(*s);
  } else if (!tok_->chat_template().empty()) {
    source = tok_->chat_template();
  } else if (auto s = text::jinja::load_template_source(o.model); s) {
    source = std::move(*s);
  } else {
    log::info("the model has no chat template: using ChatML");
    source = text::jinja::fallback_template();
  }
  const auto tags = api::reasoning_tags_of_template(source);
  if (tags) reasoning_tags_ = *tags;
  const bool thinks = tags || tok_->find("<think>").has_value();
  reasoning_ = o.reasoning == "on" || (o.reasoning == "auto" && thinks);
  tool_format_ = api::tool_call_format_of_template(source);
  strict_tools_ = o.strict_tools;
  if (o.tool_call_parser != "auto") {
    auto forced = api::tool_call_format_from_name(o.tool_call_parser);
    if (!forced) return fail(errc::invalid_argument, "--tool-call-parser: unknown format " + o.tool_call_parser);
    tool_format_ = *forced;
  }
  strict_form_ = api::strict_form_of(tool_format_, source);
  log::info("chat template: tool-call format {}{}", std::string(api::to_string(tool_format_)),
            reasoning_ ? ", reasoning " + reasoning_tags_.start + "..." + reasoning_tags_.end : std::string());
  auto t = text::jinja::chat_template::parse(std::move(source));
  if (!t) return fail(errc::invalid_argument, "chat template: " + t.error().message);
  template_.emplace(std::move(*t));
  trust_request_template_ = o.trust_request_chat_template;
  template_limits_.max_steps = static_cast<std::uint64_t>(o.chat_template_max_steps);
  template_limits_.timeout_ms = o.chat_template_timeout_ms;
  return ok();
}

result<void> model_host::warm_up() {
  engine::request req;
  req.id = "warmup";
  if (tok_->bos() >= 0) req.prompt.push_back(tok_->bos());
  for (auto id : tok_->encode("Hello", false)) req.prompt.push_back(id);
  if (req.prompt.empty()) req.prompt.push_back(0);
  req.params.temperature = 0.0f;
  req.params.max_tokens = 2;
  req.params.ignore_eos = true;
  auto sink = std::make_shared<blocking_sink>();
  auto h = engine_->submit(std::move(req), sink);
  if (!h) return fail(std::move(h).error());
  return sink->wait();
}

result<engine::pooling> model_host::embedding_pooling() const {
  const int p = file_->config().pooling_type;
  if (p < 0) {
    if (embeddings_flag_) return engine::pooling::last;
    return fail(errc::invalid_argument,
                "this model is not an embedding model (its file names no pooling); a generation model serves "
                "/v1/embeddings only when the server runs with --embeddings (last-token pooling)", "model");
  }
  if (p == 0)
    return fail(errc::invalid_argument, "this model's pooling is 'none' (one vector per token), which the OpenAI embeddings API cannot return", "model");
  auto k = engine::pooling_from_gguf(p);
  if (!k) return fail(errc::invalid_argument, "this model's pooling type " + std::to_string(p) + " (e.g. rank) is not served by /v1/embeddings", "model");
  return *k;
}

int model_host::n_embd() const noexcept { return file_->config().n_embd; }

}  // namespace vks::server
