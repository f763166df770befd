// /invocations with the LMI/TGI schema ({"inputs", "parameters", "stream"}): one prompt,
// n = 1; {"generated_text"} JSON or, when streaming, application/jsonlines with one
// {"token": ...} object per line (DJL's default formatter; contracts.md 3.6).
#include <string>

#include "api/completion_request.hpp"
#include "api/lmi_response.hpp"
#include "http/headers.hpp"
#include "server/generation.hpp"
#include "server/handlers.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"

namespace vks::server {
namespace {

rt::task<void> stream_lmi(service& svc, http::response_writer& w, generation& gen, api::lmi_output_settings s) {
  api::lmi_stream ls(std::move(s));
  http::header_list h;
  h.add("Content-Type", "application/jsonlines");
  h.add("Cache-Control", "no-cache");
  if (!(co_await w.begin(200, std::move(h))).ok()) co_return;
  std::string buf;
  while (!ls.done()) {
    auto ev = co_await gen.next(w.disconnected());
    if (!ev) {
      svc.n_client_disconnects.fetch_add(1, std::memory_order_relaxed);
      co_return;
    }
    for (auto& line : ls.on_event(ev->ev)) buf += line + "\n";
    while (!ls.done() && gen.has_pending()) {
      ev = co_await gen.next(w.disconnected());
      if (!ev) break;
      for (auto& line : ls.on_event(ev->ev)) buf += line + "\n";
    }
    if (!buf.empty() && !(co_await w.write(buf)).ok()) {
      svc.n_client_disconnects.fetch_add(1, std::memory_order_relaxed);
      co_return;
    }
    buf.clear();
  }
  (void)co_await w.end();
}

rt::task<void> collect_lmi(service& svc, http::response_writer& w, generation& gen, api::lmi_output_settings s) {
  api::lmi_accumulator acc(std::move(s));
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
  co_await reply_json(w, 200, acc.build());
}

}  // namespace

result<lmi_job> prepare_lmi(const service& svc, const api::json& body) {
  model_host* host = svc.host();
  if (!host) return fail(not_ready_error(svc));
  auto req = api::parse_lmi_request(body, host->parse_limits());
  if (!req) return fail(std::move(req).error());
  VKS_TRY(check_model(svc, req->completion.model));
  lmi_job job;
  auto er = build_lmi_request(*host, *req, job.out);
  if (!er) return fail(std::move(er).error());
  job.er = std::move(*er);
  job.stream = req->completion.stream.stream;
  return job;
}

rt::task<void> serve_lmi(service& svc, http::response_writer& w, lmi_job& job, const std::string& salt_prefix) {
  generation gen(svc.host()->engine(), salt_prefix);
  if (auto r = gen.submit(std::move(job.er)); !r) {
    co_await reply_error(svc, w, r.error());
    co_return;
  }
  w.watch_disconnect();
  if (job.stream) co_await stream_lmi(svc, w, gen, std::move(job.out));
  else co_await collect_lmi(svc, w, gen, std::move(job.out));
}

}  // namespace vks::server
