// The engine thread: intake -> schedule -> forward -> mask/sample -> sequence_output -> events.
#include "engine/llm_engine.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <new>
#include <random>
#include <unordered_map>

#include "base/log.hpp"
#include "engine/bad_words.hpp"
#include "engine/constraint.hpp"
#include "engine/pooling.hpp"
#include "engine/sampler.hpp"
#include "engine/sequence_output.hpp"
#include "model/runner.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace vks::engine {

using clock_type = std::chrono::steady_clock;

static double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct llm_engine::seq_ctx {
  int index = 0;
  seq_id id = 0;
  sampler samp;
  sequence_output out;                // text, stop rules, finish, the generated-token count
  std::optional<constraint> grammar;  // structured output
  std::optional<pooler> pool;         // embedding requests: the hidden rows pooled so far
  bool finished = false;              // ended: the scheduler no longer has it
  bool queued = true;                 // counted by admission control (leave_queue)
  int high_water = 0;                 // positions computed so far (recomputed_tokens above it)
  clock_type::time_point last_token{};

  seq_ctx(int i, seq_id sid, const request& rq, std::span<const token_id> eos, std::uint64_t seed,
          const text::tokenizer& tok, const constraint_vocab* cv, int width)
      : index(i), id(sid), samp(rq.params, rq.prompt, eos, seed), out(tok, rq.params, eos, i, rq.prompt) {
    if (rq.constraint) grammar.emplace(*rq.constraint, *cv);
    if (rq.is_embedding()) pool.emplace(rq.embed, width);
  }
};

struct llm_engine::request_ctx {
  request_handle handle{};
  request req;
  std::shared_ptr<event_sink> sink;
  clock_type::time_point submitted = clock_type::now();
  bool scheduled_once = false;   // a sequence ran (queue time and cached tokens recorded)
  bool first_token_seen = false;
  int n_finished = 0;
  bool done = false;             // terminal event sent
  bool any_aborted = false;
  int n_cached = 0;
  std::vector<std::unique_ptr<seq_ctx>> seqs;
  // prompt_logprobs >= 0: filled position by position as sequence 0's prefill runs (entry p
  // scores prompt token p from the logits of position p-1); sent once it is complete.
  std::vector<std::optional<position_logprobs>> prompt_lps;
  bool prompt_lps_sent = false;
  bool wants_prompt_lps() const { return req.params.prompt_logprobs >= 0 && !prompt_lps_sent; }
};

// Hybrids fork n > 1 siblings from one computed prompt and may resume preempted sequences
// from a saved state (#23); dense models share prompts through the prefix cache only.
static scheduler_config hybrid_sched(scheduler_config c, model::runner& runner, const engine_options& opt) {
  if (!runner.config().is_hybrid() || runner.kv().n_window_blocks() > 0) return c;
  c.fork_siblings = true;
  c.resume_preempted = opt.max_saved_state_bytes > 0;
  return c;
}

llm_engine::llm_engine(model::runner& runner, const text::tokenizer& tok, const engine_options& opt)
    : runner_(runner), tok_(tok), opt_(opt),
      // A recurrent state cannot be rebuilt from cached KV blocks: hybrids use the prefix
      // cache only with state checkpoints, and only up to a block that has one (below).
      blocks_(runner.kv().n_blocks(), runner.kv().block_size(),
              opt.enable_prefix_caching && (!runner.config().is_hybrid() || runner.states().n_checkpoints() > 0)),
      window_blocks_(runner.kv().n_window_blocks() > 0
                         ? std::make_unique<block_manager>(runner.kv().n_window_blocks(), runner.kv().block_size(),
                                                           opt.enable_prefix_caching)
                         : nullptr),
      pins_(blocks_, opt.max_pinned_blocks >= 0 ? opt.max_pinned_blocks : runner.kv().n_blocks() / 2),
      sched_(hybrid_sched(opt.sched, runner, opt), blocks_) {
  const int pool_tokens = runner.kv().n_blocks() * runner.kv().block_size();
  limits_.n_ctx = std::min(runner.max_context(), pool_tokens);
  limits_.n_vocab = runner.config().n_vocab;
  limits_.max_n = opt.max_n;
  limits_.max_logprobs = opt.max_logprobs;
  limits_.eos_ids = tok.eog_ids();
  if (limits_.eos_ids.empty() && runner.config().eos_id >= 0) limits_.eos_ids.push_back(runner.config().eos_id);
  metrics_.kv_blocks_total = blocks_.n_blocks();
  if (window_blocks_) sched_.set_window_pool(window_blocks_.get(), runner.kv().window());
  if (runner.config().is_hybrid())
    blocks_.set_prefix_filter([this](std::uint64_t h) { return runner_.states().has_checkpoint(h); });
}

result<std::unique_ptr<llm_engine>> llm_engine::start(model::runner& runner, const text::tokenizer& tok,
                                                      const engine_options& opt) {
  if (opt.sched.max_num_batched_tokens <= 0 || opt.sched.max_num_seqs <= 0)
    return fail(errc::invalid_argument, "max-num-batched-tokens and max-num-seqs must be positive");
  if (runner.config().is_hybrid() && runner.states().n_slots() < opt.sched.max_num_seqs)
    return fail(errc::invalid_argument, "the model runner has " + std::to_string(runner.states().n_slots()) +
                                            " recurrent state slots, fewer than max-num-seqs " +
                                            std::to_string(opt.sched.max_num_seqs));
  std::unique_ptr<llm_engine> e(new llm_engine(runner, tok, opt));
  e->thread_ = std::thread([p = e.get()] { p->thread_main(); });
  return e;
}

llm_engine::~llm_engine() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// ---- any thread ---------------------------------------------------------------------------

result<request_handle> llm_engine::submit(request req, std::shared_ptr<event_sink> sink) {
  if (!healthy_) return fail(errc::device_lost, "the engine failed and cannot serve requests");
  if (draining_) return fail(errc::shutting_down, "the server is shutting down");
  if (req.prompt.empty()) return fail(errc::invalid_argument, "the prompt is empty", "prompt");
  for (token_id t : req.prompt)
    if (t < 0 || t >= limits_.n_vocab)
      return fail(errc::invalid_argument, "token id " + std::to_string(t) + " is out of vocabulary range", "prompt");
  for (token_id t : req.params.allowed_token_ids)
    if (t < 0 || t >= limits_.n_vocab)
      return fail(errc::invalid_argument, "allowed_token_ids contains out-of-vocab token id " + std::to_string(t),
                  "allowed_token_ids");
  if (!req.params.bad_words.empty()) req.params.bad_words_ids = bad_words_token_ids(tok_, req.params.bad_words);
  if (req.params.n < 1 || req.params.n > limits_.max_n)
    return fail(errc::invalid_argument, "n must be between 1 and " + std::to_string(limits_.max_n), "n");
  if (req.is_embedding()) {  // prefilled only: the prompt must fit, nothing is generated
    req.params.n = 1;
    req.params.max_tokens = 0;
    req.params.prompt_logprobs = -1;
    if (static_cast<int>(req.prompt.size()) > limits_.n_ctx)
      return fail(errc::context_overflow, "This model's maximum context length is " + std::to_string(limits_.n_ctx) +
                                              " tokens. However, the input has " + std::to_string(req.prompt.size()) + " tokens.",
                  "input");
  } else {
    auto max_tokens = resolve_max_tokens(static_cast<int>(req.prompt.size()), req.params.max_tokens, limits_.n_ctx);
    if (!max_tokens) return fail(std::move(max_tokens).error());
    req.params.max_tokens = *max_tokens;
  }

  auto r = std::make_unique<request_ctx>();
  r->req = std::move(req);
  r->sink = std::move(sink);
  const int n_seqs = r->req.params.n;
  const auto n_prompt = static_cast<std::int64_t>(r->req.prompt.size()) * n_seqs;
  request_handle handle{};
  {
    std::lock_guard lk(mu_);
    if (stopping_) return fail(errc::shutting_down, "the server is shutting down");
    if (n_queued_seqs_ > 0 && n_queued_seqs_ + n_seqs > opt_.max_queued_seqs)
      return fail(errc::overloaded, "too many queued sequences (" + std::to_string(n_queued_seqs_) + " waiting, limit " +
                                        std::to_string(opt_.max_queued_seqs) + "); retry later");
    if (n_queued_seqs_ > 0 && queued_prompt_tokens_ + n_prompt > opt_.max_queued_prompt_tokens)
      return fail(errc::overloaded, "too many queued prompt tokens; retry later");
    n_queued_seqs_ += n_seqs;
    queued_prompt_tokens_ += n_prompt;
    ++n_active_;
    handle = static_cast<request_handle>(next_handle_++);
    r->handle = handle;
    incoming_.push_back(std::move(r));
  }
  ++n_submitted_;
  cv_.notify_one();
  return handle;
}

void llm_engine::abort(request_handle h) noexcept {
  {
    std::lock_guard lk(mu_);
    aborts_.push_back(h);
  }
  cv_.notify_one();
}

void llm_engine::release_session(std::uint64_t key) noexcept {
  if (key == 0) return;
  try {
    std::lock_guard lk(mu_);
    session_releases_.push_back(key);
  } catch (...) {
    return;  // out of memory: the pins stay until the engine stops
  }
  cv_.notify_one();
}

engine_stats llm_engine::stats() const {
  engine_stats s;
  s.n_waiting = n_waiting_.load();
  s.n_running = n_running_.load();
  s.n_submitted = n_submitted_.load();
  s.n_finished = n_finished_.load();
  s.n_aborted = n_aborted_.load();
  s.n_failed = n_failed_.load();
  return s;
}

void llm_engine::drain() noexcept { draining_ = true; }

int llm_engine::n_active() const {
  std::lock_guard lk(mu_);
  return n_active_;
}

// ---- engine thread ------------------------------------------------------------------------

void llm_engine::admit(request_ctx& rc) {
  request_ctx* r = &rc;
  std::uint64_t seed = r->req.params.seed ? *r->req.params.seed : std::random_device{}();
  seq_options so;
  // Requests without a group get one of their own (top bit set: apart from the server's).
  so.group = r->req.group != 0 ? r->req.group : (std::uint64_t{1} << 63) | static_cast<std::uint64_t>(r->handle);
  so.cache_root = blocks_.salt_root(r->req.cache_salt);
  if (r->req.constraint && !vocab_) vocab_ = std::make_unique<constraint_vocab>(tok_, limits_.eos_ids);
  for (int i = 0; i < r->req.params.n; ++i) {
    seq_id id = next_seq_++;
    r->seqs.push_back(std::make_unique<seq_ctx>(i, id, r->req, limits_.eos_ids, seed + static_cast<std::uint64_t>(i), tok_,
                                                vocab_.get(), runner_.config().n_embd));
    // Prompt logprobs, and embeddings pooled over more than the last row, need every row.
    so.compute_all = i == 0 && (r->req.params.prompt_logprobs >= 0 || r->req.embed == pooling::mean ||
                                r->req.embed == pooling::cls);
    so.forkable = i > 0 && !r->req.is_embedding();
    sched_.add(id, r->req.prompt, so);
    if (i == 0) so.gate = id;  // siblings wait for sequence 0's prefill
  }
  if (r->req.params.prompt_logprobs >= 0) r->prompt_lps.resize(r->req.prompt.size());
}

// Admission accounting, written once: a sequence counts against the queue bounds from
// submit until it is first scheduled or ends, whichever comes first.
void llm_engine::leave_queue(const request_ctx& r, seq_ctx& s) {
  if (!s.queued) return;
  s.queued = false;
  std::lock_guard lk(mu_);
  --n_queued_seqs_;
  queued_prompt_tokens_ -= static_cast<std::int64_t>(r.req.prompt.size());
}

void llm_engine::intake() {
  std::vector<std::unique_ptr<request_ctx>> fresh;
  std::vector<request_handle> aborts;
  std::vector<std::uint64_t> releases;
  {
    std::lock_guard lk(mu_);
    fresh.swap(incoming_);
    aborts.swap(aborts_);
    releases.swap(session_releases_);
  }
  for (std::uint64_t key : releases) pins_.release(key);
  n_pinned_blocks_.store(pins_.n_pinned(), std::memory_order_relaxed);
  for (auto& r : fresh) {
    requests_.push_back(std::move(r));
    request_ctx& x = *requests_.back();
    serve_guarded(x, [&] { admit(x); });  // e.g. bad_alloc building its sequences: it fails alone
  }
  for (request_handle h : aborts) {
    for (auto& r : requests_)
      if (r->handle == h && !r->done) abort_request(*r);
  }
}

// The scheduler forgets s and admission releases it; once per sequence, whichever way it ends.
void llm_engine::end_seq(request_ctx& r, seq_ctx& s) {
  leave_queue(r, s);
  if (s.finished) return;
  s.finished = true;
  sched_.finish(s.id);
  drop_state_slot(s.id);
  drop_saved(s.id);
}

// Hybrids, before the step: each planned sequence's state slot, and for one that resumes
// from the prefix cache (a fresh slot, first position past 0) the checkpoint at the end of
// its last cached block, which the prefix filter guaranteed at admission.
result<void> llm_engine::plan_restores(const step_plan& plan, hybrid_plan& hp) {
  auto& states = runner_.states();
  const int B = runner_.kv().block_size();
  for (const auto& e : plan.seqs) {
    auto slot = state_slot_of(e.id);
    if (!slot) return fail(std::move(slot).error());
    if (e.resumed) VKS_TRY(load_saved(e.id, *slot, *sched_.find(e.id)));
    if (e.first_pos == 0 || states.pos(*slot) == e.first_pos) continue;
    const sequence_state* st = sched_.find(e.id);
    const auto blk = static_cast<size_t>(e.first_pos / B) - 1;
    std::optional<std::int32_t> ck;
    if (e.first_pos % B == 0 && blk < st->hashes.size()) ck = states.find_checkpoint(st->hashes[blk]);
    if (!ck || states.pos(*ck) != e.first_pos)
      return fail(errc::internal, "no recurrent state checkpoint where the cached prefix ends");
    hp.restore[e.id] = *ck;
    hp.keep.push_back(*ck);
  }
  return {};
}

// A planned hybrid sequence's state fields in its batch: its slot, its restore, and a
// checkpoint at the last block boundary this step reaches (keyed by that block's chain hash)
// unless one exists there already.
void llm_engine::add_state_fields(const scheduled_seq& e, const sequence_state& st, hybrid_plan& hp,
                                  model::batch& tb) {
  auto& states = runner_.states();
  const int B = runner_.kv().block_size();
  tb.state_slots.push_back(state_slots_.at(e.id));
  auto r = hp.restore.find(e.id);
  tb.state_src.push_back(r == hp.restore.end() ? -1 : r->second);
  int32_t cp = -1, col = 0;
  const int p = (e.first_pos + e.n_tokens) / B * B;
  if (states.n_checkpoints() > 0 && p > e.first_pos && p > 0) {
    std::uint64_t h = st.cache_root;
    for (int i = 0; i < p / B; ++i)
      h = static_cast<size_t>(i) < st.hashes.size()
              ? st.hashes[static_cast<size_t>(i)]
              : block_manager::block_hash(h, std::span(st.tokens).subspan(static_cast<size_t>(i * B), static_cast<size_t>(B)));
    if (!states.has_checkpoint(h) && hp.claimed.insert(h).second) {
      if (auto c = states.claim_checkpoint(h, hp.keep)) {
        cp = p;
        col = *c;
        hp.keep.push_back(*c);
      }
    }
  }
  tb.checkpoint_pos.push_back(cp);
  tb.checkpoint_slot.push_back(col);
}

result<std::int32_t> llm_engine::state_slot_of(seq_id id) {
  if (auto it = state_slots_.find(id); it != state_slots_.end()) return it->second;
  auto slot = runner_.states().alloc();
  if (!slot) return fail(errc::out_of_memory, "no free recurrent state slot");
  state_slots_.emplace(id, *slot);
  return *slot;
}

void llm_engine::drop_state_slot(seq_id id) {
  if (auto it = state_slots_.find(id); it != state_slots_.end()) {
    runner_.states().free(it->second);
    state_slots_.erase(it);
  }
}

// r sent its terminal event: counted once, as finished, aborted or failed.
void llm_engine::end_request(request_ctx& r, std::atomic<std::uint64_t>& outcome) {
  r.done = true;
  ++outcome;
  std::lock_guard lk(mu_);
  --n_active_;
}

// A session's sequence 0 that ran to its end leaves its chain pinned for the session.
void llm_engine::pin_session(const request_ctx& r, const seq_ctx& s) {
  if (r.req.session == 0 || s.index != 0 || s.finished) return;
  const sequence_state* st = sched_.find(s.id);
  if (st == nullptr) return;
  pins_.pin(r.req.session, st->hashes);
  n_pinned_blocks_.store(pins_.n_pinned(), std::memory_order_relaxed);
}

void llm_engine::finish_request_seq(request_ctx& r, seq_ctx& s, finished_event ev) {
  if (s.finished) return;
  if (ev.reason == finish_reason::stop || ev.reason == finish_reason::length) pin_session(r, s);
  end_seq(r, s);
  ev.seq_usage.n_cached_tokens = r.n_cached;  // the scheduler's, known once the request ran
  if (ev.reason == finish_reason::abort) r.any_aborted = true;
  r.sink->on_event(std::move(ev));
  if (++r.n_finished < static_cast<int>(r.seqs.size())) return;
  metrics_.e2e.observe(seconds_between(r.submitted, clock_type::now()));
  end_request(r, r.any_aborted ? n_aborted_ : n_finished_);
}

void llm_engine::abort_request(request_ctx& r) {
  for (auto& s : r.seqs)
    if (!s->finished) finish_request_seq(r, *s, s->out.abort());
}

void llm_engine::fail_request(request_ctx& r, const vks::error& e) {
  if (r.done) return;
  for (auto& s : r.seqs) end_seq(r, *s);
  r.sink->on_event(error_event{e});
  end_request(r, n_failed_);
}

void llm_engine::fail_all(const vks::error& e) {
  for (auto& r : requests_) fail_request(*r, e);
}

template <class F>
bool llm_engine::serve_guarded(request_ctx& r, F&& work) {
  if (r.done) return false;
  vks::error fault;
  try {
    work();
    return !r.done;
  } catch (const std::bad_alloc&) {
    fault = make_error(errc::out_of_memory, "out of memory while serving this request");
  } catch (const std::exception& x) {
    fault = make_error(errc::internal, std::string("internal error while serving this request: ") + x.what());
  } catch (...) {
    fault = make_error(errc::internal, "internal error while serving this request");
  }
  vks::log::warn("request {} failed alone: {}", r.req.id, fault.message);
  fail_request(r, fault);
  return false;
}

bool llm_engine::grammar_ok(request_ctx& r, const seq_ctx& s) {
  if (!s.grammar || !s.grammar->failed()) return true;
  fail_request(r, make_error(errc::invalid_argument, s.grammar->error(), "structured_outputs"));
  return false;
}

// A sampled token of s: the constraint and the sampler's penalties advance over it, its
// sequence_output makes the events, and they go to the request's sink.
void llm_engine::deliver_token(request_ctx& r, seq_ctx& s, token_id t, std::optional<position_logprobs> lp) {
  if (s.grammar) s.grammar->advance(t, s.out.at_text_start());  // reads the decoder before the token
  s.samp.accept(t);
  auto step = s.out.on_token(t, std::move(lp));
  observe_token(r, s);
  r.sink->on_event(std::move(step.token));
  if (step.finish) finish_request_seq(r, s, std::move(*step.finish));
}

void llm_engine::observe_token(request_ctx& r, seq_ctx& s) {
  const auto now = clock_type::now();
  ++metrics_.generation_tokens;
  if (!r.first_token_seen) {
    r.first_token_seen = true;
    metrics_.ttft.observe(seconds_between(r.submitted, now));
  } else if (s.out.n_generated() > 1) {
    metrics_.itl.observe(seconds_between(s.last_token, now));
  }
  s.last_token = now;
}

result<void> llm_engine::run_step(const step_plan& plan) {
  std::unordered_map<seq_id, std::pair<request_ctx*, seq_ctx*>> owner;
  for (auto& r : requests_)
    if (!r->done)
      for (auto& s : r->seqs)
        if (!s->finished) owner[s->id] = {r.get(), s.get()};

  model::batch b;
  // Logit rows in batch order (logit_row): a sampling row (position < 0) or a
  // prompt-logprobs row scoring prompt token `position` + 1 of request r.
  std::vector<logit_row> rows;
  model::batch eb;                   // embedding sequences: hidden rows, not logits
  std::vector<logit_row> hidden_rows;
  std::vector<seq_id> pooled;        // embedding sequences whose prompt completes this step
  const auto now = clock_type::now();
  const bool hybrid = runner_.config().is_hybrid();
  if (hybrid) VKS_TRY(save_preempted(plan));
  for (seq_id id : plan.preempted) drop_state_slot(id);  // restored or recomputed when it resumes
  hybrid_plan hp;
  if (hybrid) VKS_TRY(plan_restores(plan, hp));
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const auto& e = plan.seqs[i];
    const sequence_state* st = sched_.find(e.id);
    VKS_ASSERT(st != nullptr, "planned sequence is unknown");
    auto [r, s] = owner.at(e.id);
    model::batch& tb = s->pool ? eb : b;  // embedding sequences run in their own batch
    if (hybrid) add_state_fields(e, *st, hp, tb);
    const auto first_row = static_cast<int32_t>(tb.tokens.size());
    tb.add_tokens(static_cast<int32_t>(tb.block_tables.size()),
                  std::span(st->tokens).subspan(static_cast<size_t>(e.first_pos), static_cast<size_t>(e.n_tokens)),
                  e.first_pos, false);
    tb.block_tables.emplace_back(st->blocks);
    if (window_blocks_) tb.window_tables.emplace_back(st->wblocks);
    if (s->pool) {
      // The rows its pooling reads; the last chunk (e.sample) completes it. A chunk from
      // position 0 starts over (after a preemption the prompt is recomputed).
      if (e.first_pos == 0) s->pool->reset();
      for (int p = e.first_pos; p < e.first_pos + e.n_tokens; ++p)
        if (s->pool->wants(p, st->n_prompt)) {
          eb.logit_rows.push_back(first_row + (p - e.first_pos));
          hidden_rows.push_back({e.id, p});
        }
      if (e.sample) pooled.push_back(e.id);
    } else if (s->index == 0 && r->wants_prompt_lps()) {
      // Positions of this chunk whose next token is a prompt token (rows stay ascending).
      const int end = std::min(e.first_pos + e.n_tokens, st->n_prompt - 1);
      for (int p = e.first_pos; p < end; ++p) {
        b.logit_rows.push_back(first_row + (p - e.first_pos));
        rows.push_back({e.id, p});
      }
    }
    if (e.sample && !s->pool) {
      b.logit_rows.push_back(first_row + e.n_tokens - 1);
      rows.push_back({e.id, -1});
      b.needs.resize(b.logit_rows.size() - 1);  // prompt-logprobs rows before it: full
      b.needs.push_back(need_of(*r, *s));
      // Siblings forked from this prompt sample their first token from the same row.
      for (const auto& f : plan.forks) {
        if (f.parent != e.id) continue;
        auto [fr, fs] = owner.at(f.id);
        b.logit_rows.push_back(first_row + e.n_tokens - 1);
        rows.push_back({f.id, -1});
        b.needs.push_back(need_of(*fr, *fs));
        leave_queue(*fr, *fs);
        fs->high_water = f.n_prompt;
      }
    }
    count_computed(e, *st, *s);
    leave_queue(*r, *s);
    if (!r->scheduled_once) {
      r->scheduled_once = true;
      r->n_cached = st->n_cached;
      r->sink->on_scheduled();
      metrics_.queue_time.observe(seconds_between(r->submitted, now));
      metrics_.prompt_tokens += r->req.prompt.size();
    }
  }
  if (!eb.tokens.empty()) VKS_TRY(run_embeddings(eb, hidden_rows, pooled, owner));
  b.needs.resize(b.logit_rows.size());
  auto out = b.tokens.empty() ? result<model::step_output>(model::step_output{}) : runner_.forward_step(b);
  if (!out) return fail(std::move(out).error());
  if (hybrid) VKS_TRY(copy_forks(plan));

  const auto n_vocab = static_cast<size_t>(limits_.n_vocab);
  // Per row, what one request's fault may end: that request (serve_guarded), not the step.
  struct sample {
    seq_id id;
    token_id token;
    std::optional<position_logprobs> lp;
  };
  std::vector<sample> samples;
  samples.reserve(rows.size());
  std::vector<float> fetched;  // a candidate row's whole logits, when the candidates did not suffice
  result<void> device = ok();
  for (size_t k = 0; k < rows.size() && device; ++k) {
    auto [r, s] = owner.at(rows[k].id);
    const auto kind = out->needs[k].kind;
    serve_guarded(*r, [&, r = r, s = s] {
      if (kind != model::logit_kind::full) {
        if (opt_.fault_hook) opt_.fault_hook(r->req);
        std::optional<token_id> t;
        if (kind == model::logit_kind::argmax) t = out->token(k);
        else t = s->samp.sample_candidates(out->cand_values(k), out->cand_indices(k), n_vocab);
        if (t) {
          samples.push_back({rows[k].id, *t, std::nullopt});
          return;
        }
        fetched.resize(n_vocab);
        device = runner_.fetch_row(k, fetched);
        if (!device) return;
        token_id u = s->samp.sample(fetched, s->out.n_generated(), nullptr);
        samples.push_back({rows[k].id, u, std::nullopt});
        return;
      }
      std::span<float> row = out->row(k);
      if (rows[k].position >= 0) {
        const auto next = static_cast<size_t>(rows[k].position) + 1;
        r->prompt_lps[next] = compute_logprobs(row, r->req.prompt[next], r->req.params.prompt_logprobs);
        return;
      }
      if (opt_.fault_hook) opt_.fault_hook(r->req);
      position_logprobs lp;
      const bool want_lp = r->req.params.logprobs >= 0;
      if (!grammar_ok(*r, *s)) return;
      if (s->grammar) s->grammar->mask(row, s->out.at_text_start());
      if (!grammar_ok(*r, *s)) return;
      token_id t = s->samp.sample(row, s->out.n_generated(), want_lp ? &lp : nullptr);
      samples.push_back({rows[k].id, t, want_lp ? std::optional<position_logprobs>(std::move(lp)) : std::nullopt});
    });
  }
  if (!device) return fail(std::move(device).error());
  std::vector<std::pair<seq_id, token_id>> sampled;
  sampled.reserve(samples.size());
  for (const auto& x : samples) sampled.emplace_back(x.id, x.token);
  sched_.update(plan, sampled);
  metrics_.preemptions += plan.preempted.size();
  for (auto& x : samples) {
    auto [r, s] = owner.at(x.id);
    if (s->finished) continue;
    serve_guarded(*r, [&, r = r, s = s] {
      // Sequence 0 samples at the end of the prompt: every prompt position is scored now.
      if (s->index == 0 && r->wants_prompt_lps()) send_prompt_logprobs(*r);
      deliver_token(*r, *s, x.token, std::move(x.lp));
      (void)grammar_ok(*r, *s);
    });
  }
  return {};
}

// The positions a planned chunk computes: prompt positions (prompt_tokens_computed) and any
// below the sequence's high-water mark (recomputed_tokens: after a preemption without a copy).
void llm_engine::count_computed(const scheduled_seq& e, const sequence_state& st, seq_ctx& s) {
  const int end = e.first_pos + e.n_tokens;
  metrics_.prompt_tokens_computed += static_cast<std::uint64_t>(std::max(0, std::min(end, st.n_prompt) - e.first_pos));
  metrics_.recomputed_tokens += static_cast<std::uint64_t>(std::max(0, std::min(end, s.high_water) - e.first_pos));
  s.high_water = std::max(s.high_water, end);
}

// What the sampling row of s needs from the device this step: the argmax id or top-k
// candidates where the sampler can use them exactly, else the whole row (logprobs, a
// grammar mask, penalties or biases, a draw over the whole vocabulary).
model::logit_need llm_engine::need_of(const request_ctx& r, const seq_ctx& s) const {
  const auto& p = r.req.params;
  if (!opt_.device_sampling || p.logprobs >= 0 || s.grammar || !s.samp.plain(s.out.n_generated())) return {};
  if (s.samp.greedy()) return {model::logit_kind::argmax, 0};
  // top_k must cut strictly inside the candidates (sampler::sample_candidates).
  if (p.top_k > 0 && p.top_k < model::k_max_candidates)
    return {model::logit_kind::top_k, std::min(model::k_max_candidates, std::max(32, 2 * p.top_k))};
  if (p.min_p > 0.0f && p.top_p < 1.0f) return {model::logit_kind::top_k, model::k_max_candidates};
  return {};
}

// Runs the embedding sequences' batch, pools the rows it returns and sends the vector of
// each sequence whose prompt is complete (its one terminal event; the scheduler forgets it
// before update, so nothing is ever sampled for it).
result<void> llm_engine::run_embeddings(const model::batch& eb, const std::vector<logit_row>& rows,
                                        const std::vector<seq_id>& done,
                                        const std::unordered_map<seq_id, std::pair<request_ctx*, seq_ctx*>>& owner) {
  auto hidden = runner_.forward_hidden(eb);
  if (!hidden) return fail(std::move(hidden).error());
  const auto C = static_cast<size_t>(runner_.config().n_embd);
  for (size_t k = 0; k < rows.size(); ++k) {
    auto [r, s] = owner.at(rows[k].id);
    serve_guarded(*r, [&, s = s] { s->pool->add(rows[k].position, std::span(hidden->data() + k * C, C)); });
  }
  for (seq_id id : done) {
    auto [r, s] = owner.at(id);
    serve_guarded(*r, [&, r = r, s = s] {
      embedding_event ev{s->pool->result(), static_cast<int>(r->req.prompt.size())};
      end_seq(*r, *s);
      r->sink->on_event(std::move(ev));
      metrics_.e2e.observe(seconds_between(r->submitted, clock_type::now()));
      end_request(*r, n_finished_);
    });
  }
  return {};
}

void llm_engine::send_prompt_logprobs(request_ctx& r) {
  prompt_logprobs_event ev;
  ev.first_token = {r.req.prompt[0], 0.0f, 0, tok_.token_text(r.req.prompt[0])};
  ev.positions = std::move(r.prompt_lps);
  for (auto& p : ev.positions)
    if (p) fill_logprob_texts(tok_, *p);
  r.prompt_lps_sent = true;
  r.sink->on_event(std::move(ev));
}

llm_engine::progress_info llm_engine::progress() const noexcept {
  progress_info p;
  p.n_steps = n_steps_.load(std::memory_order_relaxed);
  if (const std::int64_t began = step_began_ns_.load(); began != 0)
    p.busy_for = std::max(clock_type::duration(0), clock_type::now().time_since_epoch() - clock_type::duration(began));
  return p;
}

void llm_engine::unblock_head() {
  // Pinned sessions hold blocks the head may need: free the least recently used one and
  // let the next round try again.
  if (pins_.release_oldest()) {
    n_pinned_blocks_.store(pins_.n_pinned(), std::memory_order_relaxed);
    vks::log::info("KV cache full: dropped the pins of the least recently used session");
    return;
  }
  // Otherwise it never fits (submit bounds the context by the pool): fail it rather than hang.
  seq_id head = sched_.next_waiting();
  for (auto& r : requests_)
    for (auto& s : r->seqs)
      if (s->id == head && !r->done)
        fail_request(*r, make_error(errc::out_of_memory, "the KV cache cannot hold this request"));
}

void llm_engine::thread_main() {
  for (;;) {
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] {
        return stopping_ || !incoming_.empty() || !aborts_.empty() || !session_releases_.empty() ||
               sched_.n_running() + sched_.n_waiting() > 0;
      });
      if (stopping_) break;
    }
    intake();
    if (sched_.n_running() + sched_.n_waiting() > 0) {
      step_plan plan = sched_.schedule();
      if (plan.empty()) {
        if (sched_.n_running() == 0) unblock_head();
      } else {
        result<void> res = fail(errc::internal, "unset");
        step_began_ns_ = std::max<std::int64_t>(1, clock_type::now().time_since_epoch().count());
        try {
          res = run_step(plan);
        } catch (const std::exception& x) {
          // Outside any one request's work (building the batch): the step's requests
          // cannot be told apart, so all fail; the device reported nothing, so the
          // engine stays healthy.
          vks::log::error("engine step threw: {}", x.what());
          fail_all(make_error(errc::internal, std::string("internal error in the engine step: ") + x.what()));
          res = {};
        }
        if (!res) {
          vks::log::error("engine step failed: {}", res.error().message);
          healthy_ = false;
          fail_all(res.error());
        }
        step_began_ns_ = 0;
        n_steps_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    std::erase_if(requests_, [](const auto& r) { return r->done; });
    n_waiting_ = sched_.n_waiting();
    n_running_ = sched_.n_running();
    metrics_.kv_blocks_used = blocks_.n_used();
    if (window_blocks_)
      peak_window_blocks_.store(std::max(peak_window_blocks_.load(std::memory_order_relaxed), window_blocks_->n_used()),
                                std::memory_order_relaxed);
    metrics_.prefix_queries = blocks_.stats().n_queries;
    metrics_.prefix_hits = blocks_.stats().n_hits;
  }
  for (auto& r : requests_)
    if (!r->done) abort_request(*r);
  requests_.clear();
}

}  // namespace vks::engine
