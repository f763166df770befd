// runner: loading (weights, KV pool, scratch) and the forward step: validate the batch,
// split it into chunks that fit the scratch buffers, and for each chunk upload the inputs,
// record embedding -> layers -> row gather -> final norm -> lm head -> argmax / top-k of the
// rows that want them -> read-backs, and submit once.
#include "model/runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/gemma4.hpp"

namespace vks::model {
namespace {

// The first elements of a contiguous scratch tensor, reshaped (tensor::view keeps the
// element count; inputs use a prefix of buffers sized for the largest step).
gpu::tensor prefix(const gpu::tensor& t, std::array<int64_t, 4> ne) {
  gpu::tensor r = t;
  r.ne = ne;
  VKS_ASSERT(r.n_elements() <= t.n_elements(), "prefix larger than its buffer");
  return r;
}

}  // namespace

void batch::add_tokens(int32_t s, std::span<const int32_t> ids, int32_t pos0, bool want_last_logits) {
  for (size_t i = 0; i < ids.size(); ++i) {
    tokens.push_back(ids[i]);
    pos.push_back(pos0 + static_cast<int32_t>(i));
    seq.push_back(s);
  }
  if (want_last_logits && !ids.empty()) logit_rows.push_back(static_cast<int32_t>(tokens.size() - 1));
}

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  return best;
}

result<std::unique_ptr<runner>> runner::load(const model_file& file, gpu::backend& be, const runner_options& opt) {
  if (!file.has_weights()) return fail(errc::invalid_argument, file.path() + ": vocab-only file has no weights to run");
  if (opt.max_batch_tokens <= 0 || opt.max_seqs <= 0 || opt.max_logit_rows <= 0 || opt.max_context < 0 || opt.kv_blocks < 0)
    return fail(errc::invalid_argument, "runner options must be positive");
  std::unique_ptr<runner> r(new runner(be, file.config()));
  r->arch_ = find_architecture(r->config_.arch);
  if (!r->arch_) return fail(errc::unsupported, "unknown architecture '" + r->config_.arch + "'");
  r->max_context_ = opt.max_context ? opt.max_context : std::min(r->config_.n_ctx, 4096);
  auto w = load_weights(file, be, r->max_context_);
  if (!w) return fail(std::move(w).error());
  r->weights_ = std::move(*w);
  const int B = 16;
  r->max_blocks_per_seq_ = (r->max_context_ + B - 1) / B;
  int n_blocks = opt.kv_blocks ? opt.kv_blocks : r->max_blocks_per_seq_ + 1;
  if (opt.kv_window_blocks < 0) return fail(errc::invalid_argument, "runner options must be positive");
  auto kv = kv_cache::create(be, r->config_, n_blocks, opt.kv_type, B, opt.kv_window_blocks);
  if (!kv) return fail(std::move(kv).error());
  r->kv_ = std::move(*kv);
  auto st = state_cache::create(be, r->config_, opt.state_slots > 0 ? opt.state_slots : opt.max_seqs,
                                opt.state_checkpoints);
  if (!st) return fail(std::move(st).error());
  r->states_ = std::move(*st);
  VKS_TRY(r->alloc_scratch(opt));
  r->overlap_ = be.can_park() && (opt.overlap_record > 0 || (opt.overlap_record < 0 && be.info().kind != "cpu"));
  return r;
}

result<void> runner::alloc_scratch(const runner_options& opt) {
  const auto& c = config_;
  max_tokens_ = opt.max_batch_tokens;
  max_rows_ = std::min(opt.max_logit_rows, max_tokens_);
  max_seqs_ = opt.max_seqs;
  const int64_t T = max_tokens_, M = max_rows_, C = c.n_embd;
  const int64_t QD = c.max_q_width(), KD = c.max_kv_width();  // the widest layer's (gemma4's differ per layer)
  struct spec { gpu::tensor* dst; gpu::dtype type; int64_t ne0, ne1; const char* name; };
  std::vector<spec> specs = {
      {&x_, gpu::dtype::f32, C, T, "x"},         {&h_, gpu::dtype::f32, C, T, "h"},
      {&q_, gpu::dtype::f32, QD, T, "q"},        {&k_, gpu::dtype::f32, KD, T, "k"},
      {&v_, gpu::dtype::f32, KD, T, "v"},        {&att_, gpu::dtype::f32, QD, T, "att"},
      {&o_, gpu::dtype::f32, C, T, "o"},         {&gate_, gpu::dtype::f32, c.max_n_ff(), T, "gate"},
      {&up_, gpu::dtype::f32, c.max_n_ff(), T, "up"},  {&xr_, gpu::dtype::f32, C, M, "xr"},
      {&xn_, gpu::dtype::f32, C, M, "xn"},       {&logits_, gpu::dtype::f32, c.n_vocab, M, "logits"},
      {&tokens_, gpu::dtype::i32, T, 1, "tokens"}, {&pos_, gpu::dtype::i32, T, 1, "pos"},
      {&seq_, gpu::dtype::i32, T, 1, "seq"},     {&slots_, gpu::dtype::i32, T, 1, "slots"},
      {&rows_, gpu::dtype::i32, M, 1, "rows"},
      {&block_table_, gpu::dtype::i32, int64_t{max_blocks_per_seq_} * max_seqs_, 1, "block_table"},
  };
  specs.push_back({&argmax_, gpu::dtype::i32, M, 1, "argmax"});
  specs.push_back({&cand_v_, gpu::dtype::f32, k_max_candidates, M, "cand_logits"});
  specs.push_back({&cand_i_, gpu::dtype::i32, k_max_candidates, M, "cand_ids"});
  if (kv_.n_window_blocks() > 0) {
    specs.push_back({&wslots_, gpu::dtype::i32, T, 1, "wslots"});
    specs.push_back({&wblock_table_, gpu::dtype::i32, int64_t{max_blocks_per_seq_} * max_seqs_, 1, "wblock_table"});
  }
  if (c.is_moe()) {  // step_views' MoE fields (k rows per token for the experts)
    const int64_t E = c.n_expert, K = c.n_expert_used, Fe = c.n_ff_exp;
    specs.push_back({&moe_logits_, gpu::dtype::f32, E, T, "moe_logits"});
    specs.push_back({&moe_ids_, gpu::dtype::i32, K, T, "moe_ids"});
    specs.push_back({&moe_weights_, gpu::dtype::f32, K, T, "moe_weights"});
    specs.push_back({&moe_act_, gpu::dtype::f32, Fe, K * T, "moe_act"});
    specs.push_back({&moe_act2_, gpu::dtype::f32, c.swiglu_oai ? 2 * Fe : Fe, K * T, "moe_act2"});  // gpt-oss: [gate; up]
    specs.push_back({&moe_out_, gpu::dtype::f32, C, K * T, "moe_out"});
    if (c.n_ff_shexp > 0) {  // the shared expert's gate, activation and up scratch
      specs.push_back({&shexp_g_, gpu::dtype::f32, 1, T, "shexp_g"});
      specs.push_back({&shexp_act_, gpu::dtype::f32, c.n_ff_shexp, T, "shexp_act"});
      specs.push_back({&shexp_up_, gpu::dtype::f32, c.n_ff_shexp, T, "shexp_up"});
    }
  }
  if (c.is_hybrid()) {  // step_views' hybrid fields
    const int64_t Cc = c.ssm_conv_channels(), VD = int64_t{c.ssm_v_heads} * c.ssm_state;
    specs.push_back({&attn_gate_, gpu::dtype::f32, QD, T, "attn_gate"});
    specs.push_back({&ssm_x_, gpu::dtype::f32, Cc, T, "ssm_x"});
    specs.push_back({&ssm_c_, gpu::dtype::f32, Cc, T, "ssm_c"});
    specs.push_back({&ssm_z_, gpu::dtype::f32, VD, T, "ssm_z"});
    specs.push_back({&ssm_o_, gpu::dtype::f32, VD, T, "ssm_o"});
    specs.push_back({&ssm_beta_, gpu::dtype::f32, c.ssm_v_heads, T, "ssm_beta"});
    specs.push_back({&ssm_alpha_, gpu::dtype::f32, c.ssm_v_heads, T, "ssm_alpha"});
    specs.push_back({&seq_info_, gpu::dtype::i32, gpu::k_seq_info_fields, max_seqs_, "seq_info"});
  }
  if (c.n_embd_per_layer > 0) {  // gemma4 (model/gemma4.hpp): {P, L*T} inputs, scratch, row ids
    const int64_t P = c.n_embd_per_layer, LT = int64_t{c.n_layer} * T;
    specs.push_back({&ple_, gpu::dtype::f32, P, LT, "ple"});
    specs.push_back({&ple_tmp_, gpu::dtype::f32, P, LT, "ple_tmp"});
    specs.push_back({&ple_gate_, gpu::dtype::f32, P, T, "ple_gate"});
    specs.push_back({&ple_idx_, gpu::dtype::i32, LT, 1, "ple_idx"});
  }
  if (c.qk_norm) {
    specs.push_back({&qn_, gpu::dtype::f32, QD, T, "qn"});
    specs.push_back({&kn_, gpu::dtype::f32, KD, T, "kn"});
  }
  for (auto& s : specs) {
    auto t = be_.alloc(s.type, {s.ne0, s.ne1, 1, 1}, s.name);
    if (!t) return fail(std::move(t).error());
    *s.dst = *t;
  }
  return ok();
}

result<void> runner::validate(const batch& b) const {
  auto bad = [](const std::string& why) { return fail(errc::invalid_argument, "forward: " + why); };
  const size_t T = b.tokens.size();
  if (b.pos.size() != T || b.seq.size() != T) return bad("tokens, pos and seq must have the same length");
  if (b.block_tables.size() > static_cast<size_t>(max_seqs_))
    return bad(std::to_string(b.block_tables.size()) + " sequences exceed max_seqs " + std::to_string(max_seqs_));
  const int B = kv_.block_size();
  for (auto& bt : b.block_tables) {
    if (bt.size() > static_cast<size_t>(max_blocks_per_seq_)) return bad("block table longer than max_context allows");
    for (auto blk : bt)
      if (blk < 0 || blk >= kv_.n_blocks()) return bad("block id " + std::to_string(blk) + " out of range");
  }
  for (size_t t = 0; t < T; ++t) {
    if (b.tokens[t] < 0 || b.tokens[t] >= config_.n_vocab) return bad("token id " + std::to_string(b.tokens[t]) + " out of range");
    if (b.seq[t] < 0 || static_cast<size_t>(b.seq[t]) >= b.block_tables.size()) return bad("sequence index out of range");
    if (b.pos[t] < 0 || b.pos[t] >= max_context_) return bad("position " + std::to_string(b.pos[t]) + " out of range");
    if (static_cast<size_t>(b.pos[t] / B) >= b.block_tables[static_cast<size_t>(b.seq[t])].size())
      return bad("position " + std::to_string(b.pos[t]) + " has no KV block in its sequence's table");
  }
  VKS_TRY(validate_window(b));
  for (auto r : b.logit_rows)
    if (r < 0 || static_cast<size_t>(r) >= T) return bad("logit row " + std::to_string(r) + " out of range");
  if (!b.needs.empty() && b.needs.size() != b.logit_rows.size()) return bad("needs and logit_rows differ in length");
  for (const auto& n : b.needs)
    if (n.kind == logit_kind::top_k && (n.k < 1 || n.k > k_max_candidates))
      return bad("top_k candidates must be in 1.." + std::to_string(k_max_candidates));
  return config_.is_hybrid() ? validate_recurrent(b) : ok();
}

result<void> runner::validate_recurrent(const batch& b) const {
  auto bad = [](const std::string& why) { return fail(errc::invalid_argument, "forward: " + why); };
  const size_t S = b.block_tables.size();
  if (!b.state_slots.empty() && b.state_slots.size() != S) return bad("state_slots must have one slot per sequence");
  for (const auto* v : {&b.state_src, &b.checkpoint_pos, &b.checkpoint_slot})
    if (!v->empty() && v->size() != S) return bad("state_src and checkpoints must have one entry per sequence");
  if (b.checkpoint_pos.size() != b.checkpoint_slot.size()) return bad("checkpoint_pos and checkpoint_slot differ in length");
  const int32_t n_cols = states_.n_slots() + states_.n_checkpoints();
  for (size_t s = 0; s < b.state_src.size(); ++s)
    if (b.state_src[s] >= n_cols || (b.state_src[s] >= 0 && b.state_src[s] < states_.n_slots()))
      return bad("state_src must be a checkpoint column");
  for (size_t s = 0; s < b.checkpoint_pos.size(); ++s)
    if (b.checkpoint_pos[s] > 0 && (b.checkpoint_slot[s] < states_.n_slots() || b.checkpoint_slot[s] >= n_cols))
      return bad("checkpoint_slot must be a checkpoint column");
  std::vector<int32_t> first(S, -1), last(S, -1), next(S, -1), slot_seq(static_cast<size_t>(states_.n_slots()), -1);
  for (size_t s = 0; s < S; ++s) {
    const int32_t slot = state_slot(b, s);
    if (slot < 0 || slot >= states_.n_slots()) return bad("state slot " + std::to_string(slot) + " out of range");
    if (slot_seq[static_cast<size_t>(slot)] >= 0) return bad("two sequences share state slot " + std::to_string(slot));
    slot_seq[static_cast<size_t>(slot)] = static_cast<int32_t>(s);
  }
  for (size_t t = 0; t < b.tokens.size(); ++t) {
    const auto s = static_cast<size_t>(b.seq[t]);
    if (first[s] < 0) {
      const int32_t src = b.state_src.empty() || b.state_src[s] < 0 ? state_slot(b, s) : b.state_src[s];
      const int32_t slot = src, p = b.pos[t];
      if (p != 0 && p != states_.pos(slot))
        return bad("sequence " + std::to_string(s) + " resumes at position " + std::to_string(p) +
                   " but its recurrent state holds " + std::to_string(states_.pos(slot)) + " tokens");
      first[s] = static_cast<int32_t>(t);
    } else if (last[s] != static_cast<int32_t>(t) - 1 || b.pos[t] != next[s]) {
      return bad("a recurrent model needs each sequence's tokens contiguous, in position order");
    }
    last[s] = static_cast<int32_t>(t);
    next[s] = b.pos[t] + 1;
  }
  return ok();
}

// The window tables: one per sequence, as long as its block table, every block a token's
// window reaches (keys pos - window + 1 .. pos) present and in the window pool's range.
result<void> runner::validate_window(const batch& b) const {
  auto bad = [](const std::string& why) { return fail(errc::invalid_argument, "forward: " + why); };
  if (kv_.n_window_blocks() == 0) {
    if (!b.window_tables.empty()) return bad("window tables given without a window pool");
    return ok();
  }
  if (b.window_tables.size() != b.block_tables.size()) return bad("one window table per sequence is required");
  const int B = kv_.block_size(), W = kv_.window();
  for (size_t i = 0; i < b.window_tables.size(); ++i) {
    if (b.window_tables[i].size() > static_cast<size_t>(max_blocks_per_seq_)) return bad("window table longer than max_context allows");
    for (auto blk : b.window_tables[i])
      if (blk >= kv_.n_window_blocks()) return bad("window block id " + std::to_string(blk) + " out of range");
  }
  for (size_t t = 0; t < b.tokens.size(); ++t) {
    const auto& wt = b.window_tables[static_cast<size_t>(b.seq[t])];
    const int p = b.pos[t];
    if (static_cast<size_t>(p / B) >= wt.size()) return bad("position " + std::to_string(p) + " has no window block");
    for (int j = std::max(0, p - W + 1) / B; j <= p / B; ++j)
      if (wt[static_cast<size_t>(j)] < 0) return bad("position " + std::to_string(p) + "'s window reaches a released block");
  }
  return ok();
}

std::vector<int32_t> runner::seq_info_of(const batch& b, int64_t first, int64_t T) const {
  std::vector<int32_t> info;
  for (int64_t t = first; t < first + T; ++t) {
    const auto ti = static_cast<size_t>(t);
    if (t > first && b.seq[ti] == b.seq[ti - 1]) {
      ++info[info.size() - gpu::k_seq_info_fields + 1];  // the run continues: one more token
      continue;
    }
    const auto s = static_cast<size_t>(b.seq[ti]);
    const int32_t slot = state_slot(b, s);
    // The batch's first token of the sequence restores from its checkpoint, if it has one.
    const bool restore = !b.state_src.empty() && b.state_src[s] >= 0 && (t == 0 || b.seq[ti - 1] != b.seq[ti]);
    info.insert(info.end(), {static_cast<int32_t>(t - first), 1, slot, b.pos[ti] == 0 ? 1 : 0,
                             restore ? b.state_src[s] : slot, -1, 0, 0});
  }
  for (size_t e = 0; e < info.size(); e += gpu::k_seq_info_fields) {  // checkpoints inside the chunk
    const int64_t t0 = first + info[e];
    const auto s = static_cast<size_t>(b.seq[static_cast<size_t>(t0)]);
    if (b.checkpoint_pos.empty() || b.checkpoint_pos[s] <= 0) continue;
    const int32_t k = b.checkpoint_pos[s] - 1 - b.pos[static_cast<size_t>(t0)];  // the token at position cp - 1
    if (k < 0 || k >= info[e + 1]) continue;
    info[e + 5] = info[e] + k;
    info[e + 6] = b.checkpoint_slot[s];
  }
  return info;
}

result<std::vector<float>> runner::forward(const batch& b) {
  batch all = b;
  all.needs.clear();
  auto out = forward_step(all);
  if (!out) return fail(std::move(out).error());
  return std::move(out->logits);
}

result<step_output> runner::forward_step(const batch& b) {
  VKS_TRY(validate(b));
  const int64_t T = static_cast<int64_t>(b.tokens.size());
  const size_t M = b.logit_rows.size();
  // rows_at[t]: output indices that want token t's logits.
  std::vector<std::vector<size_t>> rows_at(static_cast<size_t>(T));
  for (size_t i = 0; i < M; ++i) rows_at[static_cast<size_t>(b.logit_rows[i])].push_back(i);
  struct chunk {
    int64_t first, count;
    std::vector<std::pair<size_t, int32_t>> rows;  // (output index, token index in the chunk)
  };
  std::vector<chunk> chunks;
  int64_t first = 0;
  std::vector<std::pair<size_t, int32_t>> rows;
  for (int64_t t = 0; t <= T; ++t) {
    const size_t want = t < T ? rows_at[static_cast<size_t>(t)].size() : 0;
    const bool full = t - first == max_tokens_ || rows.size() + want > static_cast<size_t>(max_rows_);
    if (t == T || full) {
      if (t > first) chunks.push_back({first, t - first, std::move(rows)});
      first = t;
      rows.clear();
    }
    if (t < T)
      for (auto i : rows_at[static_cast<size_t>(t)]) rows.emplace_back(i, static_cast<int32_t>(t - first));
  }
  step_output out;
  // Row width: the vocabulary, or C for forward_hidden (whose rows are all whole).
  out.n_vocab = hidden_out_ ? config_.n_embd : config_.n_vocab;
  // A split step returns every row whole (fetch_row needs the rows on the device), and so
  // does a vocabulary longer than the device top_k's bound.
  const bool whole = hidden_out_ || b.needs.empty() || chunks.size() > 1 || config_.n_vocab > gpu::k_top_k_max_row;
  out.needs = whole ? std::vector<logit_need>(M) : b.needs;
  out.slot.resize(M);
  size_t n_kind[3] = {0, 0, 0};
  for (size_t i = 0; i < M; ++i) {
    const auto& n = out.needs[i];
    out.slot[i] = static_cast<int32_t>(n_kind[static_cast<size_t>(n.kind)]++);
    if (n.kind == logit_kind::top_k) out.cand_k = std::max(out.cand_k, n.k);
  }
  out.logits.resize(n_kind[0] * static_cast<size_t>(out.n_vocab));
  out.tokens.resize(n_kind[1]);
  out.cand_logits.resize(n_kind[2] * static_cast<size_t>(out.cand_k));
  out.cand_ids.resize(out.cand_logits.size());
  last_rows_.clear();
  for (const auto& c : chunks) {
    auto r = run_chunk(b, c.first, c.count, c.rows, out);
    if (config_.is_hybrid()) {  // each slot now holds the state after its last token (unknown after a failure)
      for (auto t = static_cast<size_t>(c.first); t < static_cast<size_t>(c.first + c.count); ++t) {
        const auto s = static_cast<size_t>(b.seq[t]);
        states_.set_pos(state_slot(b, s), r ? b.pos[t] + 1 : -1);
        if (!b.checkpoint_pos.empty() && b.checkpoint_pos[s] == b.pos[t] + 1)
          states_.set_pos(b.checkpoint_slot[s], r ? b.pos[t] + 1 : -1);
      }
    }
    if (!r) return fail(std::move(r).error());
  }
  if (chunks.size() == 1) {
    last_rows_.assign(M, -1);
    for (size_t j = 0; j < chunks[0].rows.size(); ++j) last_rows_[chunks[0].rows[j].first] = static_cast<int32_t>(j);
  }
  return out;
}

result<void> runner::fetch_row(size_t i, std::span<float> out) {
  if (i >= last_rows_.size() || last_rows_[i] < 0)
    return fail(errc::internal, "fetch_row: row " + std::to_string(i) + " is not on the device");
  if (out.size() != static_cast<size_t>(config_.n_vocab)) return fail(errc::invalid_argument, "fetch_row: wrong row size");
  return be_.download(logits_.rows(last_rows_[i], 1), std::as_writable_bytes(out));
}

result<std::vector<float>> runner::forward_hidden(const batch& b) {
  batch all = b;
  all.needs.clear();
  hidden_out_ = true;
  auto out = forward_step(all);
  hidden_out_ = false;
  if (!out) return fail(std::move(out).error());
  return std::move(out->logits);
}

// The embedding lookup and every layer of a chunk (inputs uploaded; s / ws: its views for
// the main and the window pool).
void runner::record_layers(step_views& s, step_views& ws, const gpu::tensor& tok) {
  const auto& c = config_;
  be_.get_rows(s.x, weights_.tok_embd, tok);
  if (c.embd_scale != 0.f) be_.scale(s.x, s.x, c.embd_scale);
  if (c.n_embd_per_layer > 0) {  // run_chunk uploaded the rows' indices and set s.ple, s.ple_gate
    const int64_t LT = int64_t{c.n_layer} * tok.ne[0];
    record_per_layer_inputs(be_, c, weights_, s, prefix(ple_idx_, {LT, 1, 1, 1}), ple_tmp_.rows(0, LT));
  }
  for (int l = 0; l < c.n_layer; ++l) {
    s.h_ready = l > 0;  // the layer before left rms_norm(x) * attn_norm in s.h
    s.layer = l;
    s.next_attn_norm = l + 1 < c.n_layer ? &weights_.layers[static_cast<size_t>(l + 1)].attn_norm : nullptr;
    if (c.is_hybrid()) s.state = states_.layer(l);
    if (kv_.in_window_pool(l)) {
      ws.h_ready = s.h_ready;
      ws.layer = l;
      ws.next_attn_norm = s.next_attn_norm;
      arch_->record_layer(be_, c, weights_.layers[static_cast<size_t>(l)], kv_.layer(c.kv_source_layer(l)), ws);
    } else {
      arch_->record_layer(be_, c, weights_.layers[static_cast<size_t>(l)], kv_.layer(c.kv_source_layer(l)), s);
    }
  }
}

result<void> runner::run_chunk(const batch& b, int64_t first, int64_t T,
                               const std::vector<std::pair<size_t, int32_t>>& rows, step_output& out, bool park) {
  const auto& c = config_;
  const int B = kv_.block_size();
  const int64_t S = static_cast<int64_t>(b.block_tables.size());
  int64_t maxb = 1;
  for (auto& bt : b.block_tables) maxb = std::max<int64_t>(maxb, static_cast<int64_t>(bt.size()));
  std::vector<int32_t> table(static_cast<size_t>(maxb * S), 0);
  for (int64_t s = 0; s < S; ++s)
    std::copy(b.block_tables[s].begin(), b.block_tables[s].end(), table.begin() + s * maxb);
  std::vector<int32_t> slots(static_cast<size_t>(T)), local_rows;
  for (int64_t t = 0; t < T; ++t) {
    const size_t g = static_cast<size_t>(first + t);
    const int32_t p = b.pos[g];
    slots[static_cast<size_t>(t)] = b.block_tables[static_cast<size_t>(b.seq[g])][static_cast<size_t>(p / B)] * B + p % B;
  }
  // The window pool's tables (released entries as block 0: never read) and slots.
  const bool windowed = kv_.n_window_blocks() > 0;
  int64_t wmaxb = 1;
  std::vector<int32_t> wtable, wslots;
  if (windowed) {
    for (auto& bt : b.window_tables) wmaxb = std::max<int64_t>(wmaxb, static_cast<int64_t>(bt.size()));
    wtable.assign(static_cast<size_t>(wmaxb * S), 0);
    for (int64_t q = 0; q < S; ++q)
      for (size_t j = 0; j < b.window_tables[static_cast<size_t>(q)].size(); ++j)
        wtable[static_cast<size_t>(q * wmaxb) + j] = std::max(0, b.window_tables[static_cast<size_t>(q)][j]);
    for (int64_t t = 0; t < T; ++t) {
      const size_t g = static_cast<size_t>(first + t);
      const int32_t p = b.pos[g];
      wslots.push_back(b.window_tables[static_cast<size_t>(b.seq[g])][static_cast<size_t>(p / B)] * B + p % B);
    }
  }
  for (auto& r : rows) local_rows.push_back(r.second);
  const int64_t M = static_cast<int64_t>(local_rows.size());
  auto i32 = [](std::span<const int32_t> v) { return std::as_bytes(v); };

  step_views s;
  s.n_tokens = T;
  s.x = x_.rows(0, T); s.h = h_.rows(0, T);
  s.q = q_.rows(0, T); s.k = k_.rows(0, T); s.v = v_.rows(0, T);
  if (c.qk_norm) { s.qn = qn_.rows(0, T); s.kn = kn_.rows(0, T); }
  s.att = att_.rows(0, T); s.o = o_.rows(0, T);
  s.gate = gate_.rows(0, T); s.up = up_.rows(0, T);
  if (c.is_moe()) {
    const int64_t K = c.n_expert_used;
    s.moe_logits = moe_logits_.rows(0, T);
    s.moe_ids = moe_ids_.rows(0, T); s.moe_weights = moe_weights_.rows(0, T);
    s.moe_act = moe_act_.rows(0, K * T); s.moe_act2 = moe_act2_.rows(0, K * T);
    s.moe_out = moe_out_.rows(0, K * T);
    if (c.n_ff_shexp > 0) {
      s.shexp_g = shexp_g_.rows(0, T);
      s.shexp_act = shexp_act_.rows(0, T); s.shexp_up = shexp_up_.rows(0, T);
    }
  }
  s.pos = prefix(pos_, {T, 1, 1, 1}); s.seq = prefix(seq_, {T, 1, 1, 1}); s.slots = prefix(slots_, {T, 1, 1, 1});
  s.block_table = prefix(block_table_, {maxb, S, 1, 1});
  s.rope_freqs = weights_.rope_freqs;
  std::vector<int32_t> info;
  if (c.is_hybrid()) {
    info = seq_info_of(b, first, T);
    const int64_t n = static_cast<int64_t>(info.size()) / gpu::k_seq_info_fields;
    s.seq_info = prefix(seq_info_, {gpu::k_seq_info_fields, n, 1, 1});
    s.attn_gate = attn_gate_.rows(0, T);
    s.ssm_x = ssm_x_.rows(0, T); s.ssm_c = ssm_c_.rows(0, T);
    s.ssm_z = ssm_z_.rows(0, T); s.ssm_o = ssm_o_.rows(0, T);
    s.ssm_beta = ssm_beta_.rows(0, T); s.ssm_alpha = ssm_alpha_.rows(0, T);
  }
  s.attn = {c.n_head, c.n_head_kv, c.head_dim, B, static_cast<int>(maxb),
            c.attn_scale != 0.f ? c.attn_scale : 1.f / std::sqrt(static_cast<float>(c.head_dim))};
  const auto tok = prefix(tokens_, {T, 1, 1, 1});

  // A resumed parked step (runner_overlap.cpp) repeats the uploads and read-backs only.
  const bool resumed = begin_chunk(step_key(b, first, T, maxb, wmaxb, rows, out), park);
  VKS_TRY(be_.upload(tok, i32(std::span(b.tokens).subspan(static_cast<size_t>(first), static_cast<size_t>(T)))));
  VKS_TRY(be_.upload(s.pos, i32(std::span(b.pos).subspan(static_cast<size_t>(first), static_cast<size_t>(T)))));
  std::vector<int32_t> seq(b.seq.begin() + first, b.seq.begin() + first + T);
  VKS_TRY(be_.upload(s.seq, i32(seq)));
  VKS_TRY(be_.upload(s.slots, i32(slots)));
  VKS_TRY(be_.upload(s.block_table, i32(table)));
  step_views ws = s;  // the window layers' views: their pool's slots and tables
  if (windowed) {
    ws.slots = prefix(wslots_, {T, 1, 1, 1});
    ws.block_table = prefix(wblock_table_, {wmaxb, S, 1, 1});
    ws.attn.max_blocks_per_seq = static_cast<int>(wmaxb);
    VKS_TRY(be_.upload(ws.slots, i32(wslots)));
    VKS_TRY(be_.upload(ws.block_table, i32(wtable)));
  }
  if (c.is_hybrid()) VKS_TRY(be_.upload(s.seq_info, i32(info)));
  if (c.n_embd_per_layer > 0) {  // gemma4's per-layer embedding rows: an input like the tokens
    const int64_t LT = int64_t{c.n_layer} * T;
    s.ple = ple_.rows(0, LT);
    s.ple_gate = ple_gate_.rows(0, T);
    ws.ple = s.ple;
    ws.ple_gate = s.ple_gate;
    const auto idx = per_layer_input_rows(c, std::span(b.tokens).subspan(static_cast<size_t>(first), static_cast<size_t>(T)));
    VKS_TRY(be_.upload(prefix(ple_idx_, {LT, 1, 1, 1}), i32(idx)));
  }
  if (!resumed) record_layers(s, ws, tok);
  std::vector<int32_t> ids_host;
  std::vector<float> cand_v_host;
  std::vector<int32_t> cand_i_host;
  if (M > 0) {
    const auto rows_t = prefix(rows_, {M, 1, 1, 1});
    VKS_TRY(be_.upload(rows_t, i32(local_rows)));
    if (!resumed) {
      be_.get_rows(xr_.rows(0, M), s.x, rows_t);
      be_.rms_norm(xn_.rows(0, M), xr_.rows(0, M), weights_.output_norm, c.rms_eps);
    }
    if (hidden_out_) {  // forward_hidden: the lm head's input rows, read back whole
      for (size_t j = 0; j < rows.size(); ++j)
        be_.download_after(xn_.rows(static_cast<int64_t>(j), 1), std::as_writable_bytes(out.row(rows[j].first)));
    } else {
      const auto logits = logits_.rows(0, M);
      if (!resumed) be_.matmul(logits, weights_.output, xn_.rows(0, M));
      if (!resumed && c.final_softcap > 0.f) be_.scale(logits, logits, 1.f, c.final_softcap);
      record_readback(rows, out, ids_host, cand_v_host, cand_i_host, !resumed);
    }
  }
  if (park) {
    be_.end_parked_step();
    return ok();
  }
  VKS_TRY(submit_chunk(b, first, T, rows, out));
  // Scatter the selections (read back for every row of the chunk) to the rows that asked.
  const auto K = static_cast<size_t>(out.cand_k);
  for (size_t j = 0; j < rows.size(); ++j) {
    const size_t i = rows[j].first, slot = static_cast<size_t>(out.slot[i]);
    if (out.needs[i].kind == logit_kind::argmax) out.tokens[slot] = ids_host[j];
    if (out.needs[i].kind == logit_kind::top_k) {
      std::copy_n(cand_v_host.begin() + static_cast<std::ptrdiff_t>(j * K), K, out.cand_logits.begin() + static_cast<std::ptrdiff_t>(slot * K));
      std::copy_n(cand_i_host.begin() + static_cast<std::ptrdiff_t>(j * K), K, out.cand_ids.begin() + static_cast<std::ptrdiff_t>(slot * K));
    }
  }
  return ok();
}

// After the lm head (logits_ rows 0..M-1 of this chunk): the device-side selections the rows
// need and the read-backs of everything the host gets, recorded into the current step.
void runner::record_readback(const std::vector<std::pair<size_t, int32_t>>& rows, step_output& out,
                             std::vector<int32_t>& ids_host, std::vector<float>& cand_v_host,
                             std::vector<int32_t>& cand_i_host, bool ops) {
  const auto M = static_cast<int64_t>(rows.size());
  const auto logits = logits_.rows(0, M);
  bool any_argmax = false, any_top_k = false;
  for (size_t j = 0; j < rows.size(); ++j) {
    const size_t i = rows[j].first;
    switch (out.needs[i].kind) {
      case logit_kind::full:
        be_.download_after(logits_.rows(static_cast<int64_t>(j), 1), std::as_writable_bytes(out.row(i)));
        break;
      case logit_kind::argmax: any_argmax = true; break;
      case logit_kind::top_k: any_top_k = true; break;
    }
  }
  if (any_argmax) {
    const auto am = prefix(argmax_, {M, 1, 1, 1});
    if (ops) be_.argmax(am, logits);
    ids_host.resize(static_cast<size_t>(M));
    be_.download_after(am, std::as_writable_bytes(std::span(ids_host)));
  }
  if (any_top_k) {
    const int k = out.cand_k;
    const auto cv = prefix(cand_v_, {k, M, 1, 1}), ci = prefix(cand_i_, {k, M, 1, 1});
    if (ops) be_.top_k(cv, ci, logits, k);
    cand_v_host.resize(static_cast<size_t>(M * k));
    cand_i_host.resize(static_cast<size_t>(M * k));
    be_.download_after(cv, std::as_writable_bytes(std::span(cand_v_host)));
    be_.download_after(ci, std::as_writable_bytes(std::span(cand_i_host)));
  }
}

}  // namespace vks::model
