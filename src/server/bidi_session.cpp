// Bidirectional-streaming sessions (see bidi_session.hpp). Two coroutines per connection:
// the dispatcher reads messages (requests are queued, cancels act at once, bad messages get
// an error frame) and the worker runs queued requests one at a time. Decoding each message
// and preparing each request run on the service's prep workers, never on the loop. A request is
// prepared by the same functions as over HTTP and run by the same drive() (drive.hpp) on a
// WebSocket sink, so the frames carry exactly the SSE chunk JSON / JSON lines / response.
#include "server/bidi_session.hpp"

#include <cctype>
#include <deque>
#include <string>
#include <variant>
#include <vector>

#include "api/errors.hpp"
#include "api/invocations.hpp"
#include "api/json_parse.hpp"
#include "rt/scope.hpp"
#include "server/drive.hpp"
#include "server/handlers.hpp"
#include "server/replies.hpp"

namespace vks::server {
namespace {

constexpr std::string_view k_done = "[DONE]";
// Requests waiting behind the one in flight, per connection: one more is answered with an
// error frame (429 RateLimitError) and dropped; the connection stays open.
constexpr std::size_t k_max_queued_requests = 64;

// The request's `id` is the response / chunk id as given (HTTP's X-Request-Id gets a prefix).
void set_response_id(generation_job& job, const std::string& id) {
  if (id.empty()) return;
  if (auto* c = std::get_if<chat_job>(&job)) c->meta.id = id;
  else if (auto* p = std::get_if<completion_job>(&job)) p->meta.id = id;
}

// One text frame; false when it could not be sent (the peer is gone).
rt::task<bool> send_frame(http::ws_connection& c, const std::string& payload) {
  auto r = co_await c.send_text(payload);
  co_return r.ok();
}

std::string error_frame(const vks::error& e, const std::string& id) {
  api::json j = api::error_object(e);
  if (!id.empty()) j["id"] = id;
  return api::dump_json(j);
}

// The WebSocket transport of drive(): each payload is one text frame, a stream ends with a
// frame `[DONE]`, a whole response or error object is one frame (errors carry the `id`).
class ws_sink final : public output_sink {
 public:
  ws_sink(service& svc, http::ws_connection& c, std::stop_token cancel, std::string id)
      : svc_(svc), c_(c), cancel_(std::move(cancel)), id_(std::move(id)) {}
  std::stop_token cancelled() override { return cancel_; }
  std::stop_token gone() override { return c_.closing(); }
  rt::task<bool> begin() override { co_return true; }
  void add(std::string_view payload) override { frames_.emplace_back(payload); }
  rt::task<bool> flush() override {
    std::vector<std::string> frames = std::move(frames_);
    frames_.clear();
    for (const auto& f : frames)
      if (!co_await send(f)) co_return false;
    co_return true;
  }
  rt::task<void> end() override {
    add(k_done);
    (void)co_await flush();
  }
  rt::task<void> reply(const api::json& body) override { (void)co_await send(api::dump_json(body)); }
  rt::task<void> fail(const vks::error& e) override {
    if (api::http_status(e.code) == 429) svc_.n_rejected_overload.fetch_add(1, std::memory_order_relaxed);
    (void)co_await send(error_frame(e, id_));
  }

 private:
  rt::task<bool> send(const std::string& payload) { return send_frame(c_, payload); }

  service& svc_;
  http::ws_connection& c_;
  std::stop_token cancel_;
  std::string id_;
  std::vector<std::string> frames_;
};

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
  // Prepared on a worker as over HTTP. A cancel meanwhile is seen by drive() (the request
  // is submitted and aborted, so its stream ends as any cancelled one); the connection
  // closing drops it.
  auto prep = [&svc = svc_, body = std::move(q.body), id = q.id]() -> result<generation_job> {
    auto job = prepare_generation(svc, body, {});
    if (job) set_response_id(*job, id);
    return job;
  };
  auto job = co_await svc_.prep().run(std::move(prep), c_.closing());
  if (!job) {
    if (job.error().code == errc::cancelled) co_return;
    (void)co_await send(error_frame(job.error(), q.id));
    co_return;
  }
  ws_sink sink(svc_, c_, std::move(cancel), std::move(q.id));
  co_await drive(svc_, *job, sink, salt_prefix_);
}

rt::task<bool> session::send(const std::string& payload) { return send_frame(c_, payload); }

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
