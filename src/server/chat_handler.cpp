// POST /v1/chat/completions (and /invocations with `messages`): parse and validate, render
// the chat template (prep worker), submit one engine request (n sequences), then either
// accumulate a chat.completion or stream chat.completion.chunk events (seed 000 shapes,
// built by api).
#include <string>

#include "api/chat_request.hpp"
#include "api/chat_response.hpp"
#include "api/errors.hpp"
#include "api/structured.hpp"
#include "base/log.hpp"
#include "server/generation.hpp"
#include "server/handlers.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"
#include "server/sse_stream.hpp"

namespace vks::server {
namespace {

rt::task<void> stream_chat(service& svc, http::response_writer& w, generation& gen, chat_job& job) {
  api::chat_stream_settings ss;
  ss.output = job.out;
  ss.include_usage = job.req.stream.include_usage;
  ss.continuous_usage_stats = job.req.stream.continuous_usage_stats;
  ss.n_prompt_tokens = static_cast<int>(job.prompt.ids.size());
  if (job.req.echo && !job.prompt.echo.empty()) ss.echo = job.prompt.echo;
  api::chat_stream cs(job.meta, std::move(ss));
  sse_stream out(w);
  if (!co_await out.begin()) co_return;
  out.add(cs.start());
  if (!co_await out.flush()) co_return;
  while (!cs.done()) {
    auto ev = co_await gen.next(w.disconnected());
    if (!ev) {
      svc.n_client_disconnects.fetch_add(1, std::memory_order_relaxed);
      co_return;  // ~generation aborts
    }
    out.add(cs.on_event(ev->ev));
    while (!cs.done() && gen.has_pending()) {
      ev = co_await gen.next(w.disconnected());
      if (!ev) break;
      out.add(cs.on_event(ev->ev));
    }
    if (!co_await out.flush()) {
      svc.n_client_disconnects.fetch_add(1, std::memory_order_relaxed);
      co_return;
    }
  }
  out.add(cs.finish());
  (void)co_await out.done();
}

rt::task<void> collect_chat(service& svc, http::response_writer& w, generation& gen, chat_job& job) {
  api::chat_accumulator acc(job.out);
  while (!acc.done()) {
    auto ev = co_await gen.next(w.disconnected());
    if (!ev) {
      svc.n_client_disconnects.fetch_add(1, std::memory_order_relaxed);
      co_return;
    }
    acc.on_event(ev->ev);
  }
  if (acc.error()) {
    co_await reply_error(svc, w, *acc.error());
    co_return;
  }
  api::json body = acc.build(job.meta);
  if (job.req.echo && !job.prompt.echo.empty()) {
    for (auto& c : body["choices"]) {
      auto& content = c["message"]["content"];
      content = job.prompt.echo + (content.is_string() ? content.get<std::string>() : std::string{});
    }
  }
  co_await reply_json(w, 200, body);
}

// What the reply and the engine no longer need once the prompt and constraint exist: the
// message tree (about the body's size, or more), tools, template, schema, rendered text.
void drop_inputs(chat_job& job) {
  job.req.messages = api::json();
  job.req.tools = api::json();
  job.req.chat_template_kwargs = api::json();
  job.req.chat_template.reset();
  job.req.structured.reset();
  job.prompt.text = std::string();
  job.prompt.last_content = std::string();
}

}  // namespace

// Everything before submission; errors are returned, not answered.
result<chat_job> prepare_chat(const service& svc, const api::json& body, const std::string& request_id) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto req = api::parse_chat_request(body, host->parse_limits());
  if (!req) return fail(std::move(req).error());
  VKS_TRY(check_model(svc, req->model));
  auto prompt = build_chat_prompt(*host, *req);
  if (!prompt) return fail(std::move(prompt).error());
  auto constraint = chat_constraint(*host, *req, *prompt);
  if (!constraint) return fail(std::move(constraint).error());
  chat_job job{std::move(*req), std::move(*prompt), {}, {}, std::move(*constraint)};
  job.meta = api::make_meta("chatcmpl-", svc.served_name());
  if (!request_id.empty()) job.meta.id = "chatcmpl-" + request_id;
  job.out = chat_output(*host, job.req, job.prompt);
  tokenize_bad_words(*host, job.req.sampling);
  drop_inputs(job);
  return job;
}

rt::task<void> serve_chat(service& svc, http::response_writer& w, chat_job& job, const std::string& salt_prefix) {
  generation gen(svc.host()->engine(), salt_prefix);
  engine::request er;
  er.id = job.meta.id;
  er.prompt = job.prompt.ids;
  er.params = job.req.sampling;
  er.constraint = job.constraint;
  er.cache_salt = job.req.cache_salt;
  if (auto s = gen.submit(std::move(er)); !s) {
    co_await reply_error(svc, w, s.error());
    co_return;
  }
  w.watch_disconnect();
  if (job.req.stream.stream) co_await stream_chat(svc, w, gen, job);
  else co_await collect_chat(svc, w, gen, job);
}

}  // namespace vks::server
