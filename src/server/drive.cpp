// The engine requests of each job kind, and the submit / event / output loop.
#include "server/drive.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "api/errors.hpp"
#include "base/log.hpp"
#include "server/generation.hpp"
#include "server/job_output.hpp"

namespace vks::server {
namespace {

engine::request chat_request(chat_job& job) {
  engine::request er;
  er.id = job.meta.id;
  er.prompt = std::move(job.prompt.ids);
  er.params = job.req.sampling;
  er.constraint = job.constraint;
  er.cache_salt = job.req.cache_salt;
  return er;
}

// One per prompt; none for an echo-only request (max_tokens 0: its answer is preset).
std::vector<engine::request> completion_requests(completion_job& job) {
  std::vector<engine::request> out;
  if (job.req.sampling.max_tokens == 0) return out;
  for (std::size_t i = 0; i < job.prompts.size(); ++i) {
    engine::request er;
    er.id = job.meta.id + "-" + std::to_string(i);
    er.prompt = std::move(job.prompts[i].ids);
    er.params = job.req.sampling;
    er.constraint = job.constraint;
    er.cache_salt = job.req.cache_salt;
    out.push_back(std::move(er));
  }
  return out;
}

// One per input: prefilled and pooled (engine::request::embed), never sampled.
std::vector<engine::request> embedding_requests(embedding_job& job) {
  std::vector<engine::request> out;
  for (std::size_t i = 0; i < job.prompts.size(); ++i) {
    engine::request er;
    er.id = job.id + "-" + std::to_string(i);
    er.prompt = std::move(job.prompts[i]);
    er.embed = job.pooling;
    out.push_back(std::move(er));
  }
  return out;
}

std::vector<engine::request> engine_requests(generation_job& job) {
  std::vector<engine::request> out;
  if (auto* c = std::get_if<chat_job>(&job)) out.push_back(chat_request(*c));
  else if (auto* p = std::get_if<completion_job>(&job)) out = completion_requests(*p);
  else if (auto* m = std::get_if<embedding_job>(&job)) out = embedding_requests(*m);
  else out.push_back(std::move(std::get<lmi_job>(job).er));
  return out;
}

// The id a job's log lines carry (the response id: chatcmpl-..., cmpl-..., the embeddings
// answer's, or LMI's).
std::string job_id(const generation_job& job) {
  if (auto* c = std::get_if<chat_job>(&job)) return c->meta.id;
  if (auto* p = std::get_if<completion_job>(&job)) return p->meta.id;
  if (auto* m = std::get_if<embedding_job>(&job)) return m->id;
  return std::get<lmi_job>(job).er.id;
}

// One line per failed request, with its id (base/log_format.hpp: "req=<id> "): server-side
// failures (5xx: a lost device, an internal error) at warn, the client's (4xx) at debug.
void log_failure(const std::string& id, const vks::error& e) {
  const int status = api::http_status(e.code);
  if (status >= 500) log::warn("req={} failed with {}: {}", id, status, e.message);
  else log::debug("req={} failed with {}: {}", id, status, e.message);
}

// The OTel operation a job is (its span's name starts with it).
const char* operation_name(const generation_job& job) {
  if (std::holds_alternative<chat_job>(job)) return "chat";
  if (std::holds_alternative<completion_job>(job)) return "text_completion";
  if (std::holds_alternative<embedding_job>(job)) return "embeddings";
  return "lmi";
}

// Records one request's span for the trace exporter: arrival, engine submit, first engine
// scheduling, first token and token counts (from the events), then the end; finish()
// queues it (never blocks).
class span_recorder {
 public:
  span_recorder(trace_exporter& ex, const trace_info* ti, std::string name, std::string id, std::string model)
      : ex_(ex) {
    s_.start_ns = ti && ti->start_ns != 0 ? ti->start_ns : unix_now_ns();
    if (ti && ti->parent) {
      s_.trace = ti->parent->trace;
      s_.parent = ti->parent->parent;
    } else {
      s_.trace = new_trace_id();
    }
    s_.id = new_span_id();
    s_.name = std::move(name);
    s_.request_id = std::move(id);
    s_.model = std::move(model);
  }
  void submitted() { submit_ns_ = unix_now_ns(); }
  void observe(const tagged_event& ev) {
    if (std::holds_alternative<engine::token_event>(ev.ev)) {
      if (first_token_ns_ == 0) first_token_ns_ = unix_now_ns();
    } else if (auto* f = std::get_if<engine::finished_event>(&ev.ev)) {
      s_.completion_tokens += f->seq_usage.n_completion_tokens;
      if (f->seq == 0) {
        s_.prompt_tokens += f->seq_usage.n_prompt_tokens;
        s_.cached_tokens += f->seq_usage.n_cached_tokens;
      }
    } else if (auto* m = std::get_if<engine::embedding_event>(&ev.ev)) {
      s_.prompt_tokens += m->n_prompt_tokens;
    }
  }
  // `scheduled_ns`: generation::first_scheduled_ns (0: never left the engine queue).
  void finish(int status, std::string error, std::int64_t scheduled_ns) {
    s_.end_ns = unix_now_ns();
    s_.http_status = status;
    s_.error = std::move(error);
    if (submit_ns_ != 0) {
      // prepare: arrival -> engine submit (prep-pool wait, template, tokens); queue: in the
      // engine's queue until first scheduled; prefill: to the first token; decode: the rest.
      const std::int64_t queued = std::clamp(scheduled_ns != 0 ? scheduled_ns : s_.end_ns, submit_ns_, s_.end_ns);
      const std::int64_t prefilled = first_token_ns_ != 0 ? std::clamp(first_token_ns_, queued, s_.end_ns) : s_.end_ns;
      s_.phases.push_back({"prepare", std::min(s_.start_ns, submit_ns_), submit_ns_});
      s_.phases.push_back({"queue", submit_ns_, queued});
      s_.phases.push_back({"prefill", queued, prefilled});
      if (first_token_ns_ != 0) s_.phases.push_back({"decode", prefilled, s_.end_ns});
    }
    ex_.submit(std::move(s_));
  }

 private:
  trace_exporter& ex_;
  request_span s_;
  std::int64_t submit_ns_ = 0, first_token_ns_ = 0;
};

// Feeds events until the output is done; each batch of queued events is one flush.
// false: the peer is gone (counted; the caller returns and the generation aborts).
rt::task<bool> relay(service& svc, generation& gen, job_output& out, output_sink& sink, span_recorder* rec) {
  bool cancelled = false, lost = false;
  while (!lost && !out.done()) {
    std::stop_token stop = cancelled ? sink.gone() : sink.cancelled();  // named: GCC 12 and ?: in co_await
    auto ev = co_await gen.next(stop);
    if (!ev && !sink.gone().stop_requested()) {
      gen.abort_all();  // cancelled: the abort's terminal events end the answer
      cancelled = true;
      continue;
    }
    while (ev) {
      if (rec) rec->observe(*ev);
      for (auto& p : out.on_event(*ev)) sink.add(p);
      if (out.done() || !gen.has_pending()) break;
      ev = co_await gen.next(sink.gone());
    }
    if (!ev) {  // the peer left
      lost = true;
      break;
    }
    const bool flushed = co_await sink.flush();  // named: GCC 12 and co_await in conditions
    lost = !flushed;
  }
  if (lost) svc.n_client_disconnects.fetch_add(1, std::memory_order_relaxed);
  co_return !lost;
}

}  // namespace

rt::task<void> drive(service& svc, generation_job& job, output_sink& sink, const std::string& salt_prefix,
                     std::uint64_t session, const trace_info* trace) {
  std::unique_ptr<job_output> out = make_output(job);  // before the prompts move out
  const std::string id = job_id(job);
  std::optional<span_recorder> rec;
  if (trace_exporter* ex = active_trace_exporter())
    rec.emplace(*ex, trace, std::string(operation_name(job)) + " " + svc.served_name(), id, svc.served_name());
  generation gen(svc.host()->engine(), salt_prefix, session);
  for (auto& er : engine_requests(job)) {
    if (auto s = gen.submit(std::move(er)); !s) {
      log_failure(id, s.error());
      if (rec) rec->finish(api::http_status(s.error().code), s.error().message, 0);
      gen.abort_all();
      co_await sink.fail(s.error());
      co_return;
    }
  }
  if (rec) rec->submitted();
  if (out->streaming()) {
    const bool begun = co_await sink.begin();  // named: GCC 12 and co_await in conditions
    if (!begun) co_return;
    for (auto& p : out->start()) sink.add(p);
    const bool flushed = co_await sink.flush();
    if (!flushed) co_return;
  }
  const bool relayed = co_await relay(svc, gen, *out, sink, rec ? &*rec : nullptr);
  if (!relayed) {
    log::debug("req={} client went away", id);
    if (rec) rec->finish(499, "the client went away", gen.first_scheduled_ns());
    co_return;
  }
  if (auto e = out->error()) log_failure(id, *e);
  else log::debug("req={} done", id);
  if (rec) {
    if (auto e = out->error()) rec->finish(api::http_status(e->code), e->message, gen.first_scheduled_ns());
    else rec->finish(200, {}, gen.first_scheduled_ns());
  }
  gen.abort_all();  // after an error in one prompt, the others stop too
  if (out->streaming()) {
    for (auto& p : out->finish()) sink.add(p);
    co_await sink.end();
  } else if (auto e = out->error()) {
    co_await sink.fail(*e);
  } else {
    co_await sink.reply(out->build());
  }
}

}  // namespace vks::server
