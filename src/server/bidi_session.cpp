// Bidirectional-streaming sessions (see bidi_session.hpp). Two coroutines per connection:
// the dispatcher reads messages (requests are queued, cancels act at once, bad messages get
// an error frame) and the worker runs queued requests one at a time. Decoding each message
// and preparing each request run on the service's prep workers, never on the loop. A request is turned
// into a `job` (chat, completion or LMI) that maps engine events to frame payloads with
// the same api builders as the SSE routes, so the frames carry exactly the SSE chunk JSON.
#include "server/bidi_session.hpp"

#include <cctype>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/chat_request.hpp"
#include "api/chat_response.hpp"
#include "api/completion_request.hpp"
#include "api/completion_response.hpp"
#include "api/errors.hpp"
#include "api/invocations.hpp"
#include "api/json_parse.hpp"
#include "api/lmi_response.hpp"
#include "api/structured.hpp"
#include "base/log.hpp"
#include "rt/scope.hpp"
#include "server/generation.hpp"
#include "server/prompt.hpp"
#include "server/replies.hpp"

namespace vks::server {
namespace {

constexpr std::string_view k_done = "[DONE]";
// Requests waiting behind the one in flight, per connection: one more is answered with an
// error frame (429 RateLimitError) and dropped; the connection stays open.
constexpr std::size_t k_max_queued_requests = 64;

// One request's output: engine events in, frame payloads out.
class job {
 public:
  virtual ~job() = default;
  virtual bool streaming() const = 0;
  virtual std::vector<std::string> start() { return {}; }
  virtual std::vector<std::string> on_event(const tagged_event& ev) = 0;  // streaming: frames
  virtual std::vector<std::string> finish() { return {}; }
  virtual bool done() const = 0;
  virtual std::string build() const = 0;  // non-streaming: the response or error object
};

struct prepared {
  std::unique_ptr<job> j;
  std::vector<engine::request> requests;
};

class chat_job final : public job {
 public:
  chat_job(api::response_meta meta, api::chat_stream_settings ss, bool stream, std::optional<std::string> echo)
      : meta_(meta), echo_(std::move(echo)) {
    if (stream) cs_.emplace(std::move(meta), std::move(ss));
    else acc_.emplace(ss.output);
  }
  bool streaming() const override { return cs_.has_value(); }
  std::vector<std::string> start() override { return cs_ ? cs_->start() : std::vector<std::string>{}; }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    if (cs_) return cs_->on_event(ev.ev);
    acc_->on_event(ev.ev);
    return {};
  }
  std::vector<std::string> finish() override { return cs_ ? cs_->finish() : std::vector<std::string>{}; }
  bool done() const override { return cs_ ? cs_->done() : acc_->done(); }
  std::string build() const override {
    if (acc_->error()) return api::error_body(*acc_->error());
    api::json body = acc_->build(meta_);
    if (echo_ && !echo_->empty()) {
      for (auto& c : body["choices"]) {
        auto& content = c["message"]["content"];
        content = *echo_ + (content.is_string() ? content.get<std::string>() : std::string{});
      }
    }
    return api::dump_json(body);
  }

 private:
  api::response_meta meta_;
  std::optional<std::string> echo_;
  std::optional<api::chat_stream> cs_;
  std::optional<api::chat_accumulator> acc_;
};

class completion_job final : public job {
 public:
  completion_job(api::response_meta meta, api::completion_stream_settings ss, bool stream) : meta_(meta) {
    if (stream) cs_.emplace(std::move(meta), std::move(ss));
    else acc_.emplace(ss.output);
  }
  bool streaming() const override { return cs_.has_value(); }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    if (cs_) return cs_->on_event(ev.source, ev.ev);
    acc_->on_event(ev.source, ev.ev);
    return {};
  }
  std::vector<std::string> finish() override { return cs_ ? cs_->finish() : std::vector<std::string>{}; }
  bool done() const override { return cs_ ? cs_->done() : acc_->done(); }
  std::string build() const override {
    if (acc_->error()) return api::error_body(*acc_->error());
    return api::dump_json(acc_->build(meta_));
  }

 private:
  api::response_meta meta_;
  std::optional<api::completion_stream> cs_;
  std::optional<api::completion_accumulator> acc_;
};

class lmi_job final : public job {
 public:
  lmi_job(api::lmi_output_settings s, bool stream) {
    if (stream) ls_.emplace(std::move(s));
    else acc_.emplace(std::move(s));
  }
  bool streaming() const override { return ls_.has_value(); }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    if (ls_) return ls_->on_event(ev.ev);
    acc_->on_event(ev.ev);
    return {};
  }
  bool done() const override { return ls_ ? ls_->done() : acc_->done(); }
  std::string build() const override {
    if (acc_->error()) return api::error_body(*acc_->error());
    return api::dump_json(acc_->build());
  }

 private:
  std::optional<api::lmi_stream> ls_;
  std::optional<api::lmi_accumulator> acc_;
};

result<prepared> prepare_chat(service& svc, model_host& host, const api::json& body, const std::string& id) {
  auto req = api::parse_chat_request(body, host.parse_limits());
  if (!req) return fail(std::move(req).error());
  VKS_TRY(check_model(svc, req->model));
  auto prompt = build_chat_prompt(host, *req);
  if (!prompt) return fail(std::move(prompt).error());
  auto constraint = chat_constraint(host, *req, *prompt);
  if (!constraint) return fail(std::move(constraint).error());
  api::response_meta meta = api::make_meta("chatcmpl-", svc.served_name());
  if (!id.empty()) meta.id = id;
  api::chat_stream_settings ss;
  ss.output = chat_output(host, *req, *prompt);
  ss.include_usage = req->stream.include_usage;
  ss.continuous_usage_stats = req->stream.continuous_usage_stats;
  ss.n_prompt_tokens = static_cast<int>(prompt->ids.size());
  std::optional<std::string> echo;
  if (req->echo && !prompt->echo.empty()) echo = prompt->echo;
  ss.echo = echo;
  prepared p;
  engine::request er;
  er.id = meta.id;
  er.prompt = std::move(prompt->ids);
  er.params = req->sampling;
  tokenize_bad_words(host, er.params);
  er.constraint = std::move(*constraint);
  er.cache_salt = req->cache_salt;
  p.requests.push_back(std::move(er));
  p.j = std::make_unique<chat_job>(std::move(meta), std::move(ss), req->stream.stream, std::move(echo));
  return p;
}

result<prepared> prepare_completion(service& svc, model_host& host, const api::json& body, const std::string& id) {
  auto req = api::parse_completion_request(body, host.parse_limits());
  if (!req) return fail(std::move(req).error());
  VKS_TRY(check_model(svc, req->model));
  auto constraint = api::request_constraint(req->structured, false);
  if (!constraint) return fail(std::move(constraint).error());
  api::response_meta meta = api::make_meta("cmpl-", svc.served_name());
  if (!id.empty()) meta.id = id;
  api::completion_stream_settings ss;
  auto& o = ss.output;
  o.n_prompts = static_cast<int>(req->prompts.size());
  o.n = req->sampling.n;
  o.echo = req->echo;
  o.logprobs = req->logprobs;
  o.options.prompt_tokens_details = host.prompt_tokens_details();
  o.return_token_ids = req->return_token_ids;
  ss.include_usage = req->stream.include_usage;
  ss.continuous_usage_stats = req->stream.continuous_usage_stats;
  prepared p;
  tokenize_bad_words(host, req->sampling);  // once for every prompt
  for (std::size_t i = 0; i < req->prompts.size(); ++i) {
    auto prompt = build_completion_prompt(host, req->prompts[i], req->add_special_tokens, req->truncate_prompt_tokens);
    if (!prompt) return fail(std::move(prompt).error());
    o.prompt_texts.push_back(prompt->text);
    if (o.return_token_ids) o.prompt_token_ids.push_back(prompt->ids);
    ss.n_prompt_tokens.push_back(static_cast<int>(prompt->ids.size()));
    engine::request er;
    er.id = meta.id + "-" + std::to_string(i);
    er.prompt = std::move(prompt->ids);
    er.params = req->sampling;
    er.constraint = *constraint;
    er.cache_salt = req->cache_salt;
    p.requests.push_back(std::move(er));
  }
  p.j = std::make_unique<completion_job>(std::move(meta), std::move(ss), req->stream.stream);
  return p;
}

result<prepared> prepare_lmi(service& svc, model_host& host, const api::json& body) {
  auto req = api::parse_lmi_request(body, host.parse_limits());
  if (!req) return fail(std::move(req).error());
  auto& c = req->completion;
  VKS_TRY(check_model(svc, c.model));
  api::lmi_output_settings s;
  auto er = build_lmi_request(host, *req, s);
  if (!er) return fail(std::move(er).error());
  prepared p;
  p.requests.push_back(std::move(*er));
  p.j = std::make_unique<lmi_job>(std::move(s), c.stream.stream);
  return p;
}

result<prepared> prepare(service& svc, model_host& host, const api::json& body, const std::string& id) {
  auto kind = api::classify_invocation(body);
  if (!kind) return fail(std::move(kind).error());
  switch (*kind) {
    case api::invocation_kind::chat: return prepare_chat(svc, host, body, id);
    case api::invocation_kind::completion: return prepare_completion(svc, host, body, id);
    case api::invocation_kind::lmi: return prepare_lmi(svc, host, body);
  }
  return fail(errc::internal, "unknown invocation kind");
}

std::string error_frame(const vks::error& e, const std::string& id) {
  api::json j = api::error_object(e);
  if (!id.empty()) j["id"] = id;
  return api::dump_json(j);
}

// The request's `id` (string, or number as text), removed from the body; "" if absent.
std::string take_id(api::json& body) {
  auto it = body.find("id");
  if (it == body.end()) return {};
  std::string id = it->is_string() ? it->get<std::string>() : it->is_number() ? it->dump() : std::string{};
  body.erase(it);
  return id;
}

// What the dispatcher does with one message: queue a request, cancel, or reply with a frame.
struct message_action {
  enum class kind { reply, cancel, request };
  kind k = kind::reply;
  api::json body;     // request: the body with the connection's defaults merged in
  std::string id;     // the message's `id` ("" if none)
  std::string frame;  // reply: an error frame
};

struct forward_stop {
  std::stop_source* src;
  void operator()() const noexcept { src->request_stop(); }
};

class session {
 public:
  session(service& svc, api::json defaults, std::string salt_prefix, http::ws_connection& c)
      : svc_(svc), defaults_(std::move(defaults)), salt_prefix_(std::move(salt_prefix)), c_(c) {}
  rt::task<void> run();

 private:
  struct queued {
    api::json body;
    std::string id;
  };
  rt::task<void> on_message(http::ws_message m);
  rt::task<void> worker();
  rt::task<void> handle(queued q, std::stop_token cancel);
  rt::task<void> drive(prepared p, const std::string& id, std::stop_token cancel);
  rt::task<bool> send(const std::string& payload);

  service& svc_;
  api::json defaults_;
  std::string salt_prefix_;  // cache_salt_prefix of the upgrade request
  http::ws_connection& c_;
  rt::scope work_;
  std::deque<queued> queue_;
  bool busy_ = false;
  std::stop_source* current_ = nullptr;  // cancel source of the request in flight
  std::string current_id_;
};

rt::task<void> session::run() {
  while (auto m = co_await c_.receive()) co_await on_message(std::move(*m));
  if (c_.closing().stop_requested()) queue_.clear();  // the peer is gone: drop what waits
  co_await work_.join();
}

// On a prep worker: one message decoded and classified (the tree of a cancel, or of a bad
// message, is freed there too).
message_action classify_message(const std::string& data, const api::json& defaults) {
  message_action a;
  auto body = api::parse_json_body(data);  // binary frames carry UTF-8 JSON too
  if (!body) {
    a.frame = error_frame(body.error(), {});
    return a;
  }
  if (!body->is_object()) {
    a.frame = error_frame(make_error(errc::invalid_argument, "each message must be a JSON object"), {});
    return a;
  }
  a.id = take_id(*body);
  if (auto t = body->find("type"); t != body->end() && t->is_string()) {
    if (*t == "cancel") {
      a.k = message_action::kind::cancel;
      return a;
    }
    a.frame = error_frame(
        make_error(errc::invalid_argument, "unknown message type '" + t->get<std::string>() + "'", "type"), a.id);
    return a;
  }
  for (const auto& [k, v] : defaults.items())
    if (!body->contains(k)) (*body)[k] = v;
  a.k = message_action::kind::request;
  a.body = std::move(*body);
  return a;
}

rt::task<void> session::on_message(http::ws_message m) {
  // A named function object: GCC 12 mishandles non-trivial temporaries in co_await.
  auto decode = [data = std::move(m.data), defaults = defaults_]() -> result<message_action> {
    return classify_message(data, defaults);
  };
  auto a = co_await svc_.prep().run(std::move(decode), c_.closing());
  if (!a) {
    if (a.error().code != errc::cancelled) (void)co_await send(error_frame(a.error(), {}));
    co_return;
  }
  switch (a->k) {
    case message_action::kind::reply:
      (void)co_await send(a->frame);
      co_return;
    case message_action::kind::cancel:
      if (current_ && (a->id.empty() || a->id == current_id_)) current_->request_stop();
      co_return;
    case message_action::kind::request:
      break;
  }
  if (queue_.size() >= k_max_queued_requests) {
    (void)co_await send(error_frame(
        make_error(errc::overloaded, "too many requests queued on this connection (" +
                                         std::to_string(k_max_queued_requests) + "); wait for replies before sending more"),
        a->id));
    co_return;
  }
  queue_.push_back(queued{std::move(a->body), std::move(a->id)});
  if (!busy_) {
    busy_ = true;
    work_.spawn(worker());
  }
}

rt::task<void> session::worker() {
  while (!queue_.empty() && !c_.closing().stop_requested()) {
    queued q = std::move(queue_.front());
    queue_.pop_front();
    std::stop_source cancel;
    std::stop_callback<forward_stop> on_close(c_.closing(), forward_stop{&cancel});
    current_ = &cancel;
    current_id_ = q.id;
    co_await handle(std::move(q), cancel.get_token());
    current_ = nullptr;
  }
  busy_ = false;
}

rt::task<void> session::handle(queued q, std::stop_token cancel) {
  svc_.n_http_requests.fetch_add(1, std::memory_order_relaxed);
  model_host* host = svc_.host();
  if (!host) {
    (void)co_await send(error_frame(not_ready_error(svc_), q.id));
    co_return;
  }
  // Prepared on a worker. A cancel meanwhile is seen by drive() (the request is submitted
  // and aborted, so its stream ends as any cancelled one); the connection closing drops it.
  auto prep = [&svc = svc_, host, body = std::move(q.body), id = q.id]() -> result<prepared> {
    return prepare(svc, *host, body, id);
  };
  auto p = co_await svc_.prep().run(std::move(prep), c_.closing());
  if (!p) {
    if (p.error().code == errc::cancelled) co_return;
    (void)co_await send(error_frame(p.error(), q.id));
    co_return;
  }
  co_await drive(std::move(*p), q.id, std::move(cancel));
}

// Submits and relays one request. `cancel` (a cancel message or the connection closing)
// aborts it; after a cancel the abort's terminal events still complete the stream.
rt::task<void> session::drive(prepared p, const std::string& id, std::stop_token cancel) {
  model_host* host = svc_.host();
  generation gen(host->engine(), salt_prefix_);
  for (auto& r : p.requests) {
    if (auto s = gen.submit(std::move(r)); !s) {
      gen.abort_all();
      if (s.error().code == errc::overloaded) svc_.n_rejected_overload.fetch_add(1, std::memory_order_relaxed);
      (void)co_await send(error_frame(s.error(), id));
      co_return;
    }
  }
  job& j = *p.j;
  if (j.streaming())
    for (const auto& f : j.start())
      if (!co_await send(f)) co_return;
  bool cancelled = false;
  while (!j.done()) {
    std::stop_token stop = cancelled ? c_.closing() : cancel;  // named: GCC 12 and ?: in co_await
    auto ev = co_await gen.next(stop);
    if (!ev) {
      if (c_.closing().stop_requested()) {
        svc_.n_client_disconnects.fetch_add(1, std::memory_order_relaxed);
        co_return;  // ~generation aborts
      }
      gen.abort_all();
      cancelled = true;
      continue;
    }
    for (const auto& f : j.on_event(*ev))
      if (!co_await send(f)) co_return;
  }
  gen.abort_all();  // after an error in one prompt, the others stop too
  if (!j.streaming()) {
    (void)co_await send(j.build());
    co_return;
  }
  for (const auto& f : j.finish())
    if (!co_await send(f)) co_return;
  (void)co_await send(std::string(k_done));
}

rt::task<bool> session::send(const std::string& payload) {
  auto r = co_await c_.send_text(payload);
  co_return r.ok();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

result<std::string> percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] != '%') {
      out += s[i];
    } else {
      if (i + 2 >= s.size()) return fail(errc::invalid_argument, "truncated %-escape");
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return fail(errc::invalid_argument, "bad %-escape");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

api::json typed_value(const std::string& v) {
  if (v == "true") return true;
  if (v == "false") return false;
  if (!v.empty() && v.size() < 32) {
    api::json j = api::parse_json_or_discarded(v);
    if (!j.is_discarded() && j.is_number()) return j;
  }
  return v;
}

}  // namespace

result<api::json> parse_session_query(std::string_view query) {
  api::json out = api::json::object();
  if (query.empty()) return out;
  if (query.size() > 2048) return fail(errc::invalid_argument, "query string over 2048 bytes");
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (eq == 0 || eq == std::string_view::npos) return fail(errc::invalid_argument, "query parameters must be k=v");
    std::string_view key = pair.substr(0, eq);
    for (char ch : key)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-')
        return fail(errc::invalid_argument, "bad query parameter name '" + std::string(key) + "'");
    auto value = percent_decode(pair.substr(eq + 1));
    if (!value) return fail(std::move(value).error());
    out[std::string(key)] = typed_value(*value);
  }
  return out;
}

rt::task<void> run_bidi_session(service& svc, api::json defaults, http::ws_connection& c, std::string salt_prefix) {
  session s(svc, std::move(defaults), std::move(salt_prefix), c);
  co_await s.run();
}

}  // namespace vks::server
