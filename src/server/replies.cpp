// JSON answers, error mapping and request-level checks for the route handlers.
#include "server/replies.hpp"

#include "api/errors.hpp"
#include "api/invocations.hpp"
#include "api/messages_response.hpp"
#include "http/response.hpp"
#include "server/comma_list.hpp"

namespace vks::server {

rt::task<void> reply_json(http::response_writer& w, int status, const api::json& body) {
  (void)co_await w.send(http::response::json(status, api::dump_json(body)));
}

rt::task<void> reply_error(service& svc, http::response_writer& w, const vks::error& e, error_shape shape) {
  const int status = api::http_status(e.code);
  auto r = http::response::json(status, shape == error_shape::anthropic
                                            ? api::dump_json(api::anthropic_error_object(e))
                                            : api::error_body(e));
  if (status == 429) {
    r.headers.add("Retry-After", "1");
    svc.n_rejected_overload.fetch_add(1, std::memory_order_relaxed);
  }
  if (status == 503) r.headers.add("Retry-After", "5");
  (void)co_await w.send(std::move(r));
}

rt::task<void> reply_error(http::response_writer& w, int status, std::string_view message, std::string_view param) {
  (void)co_await w.send(http::response::json(status, api::dump_json(api::error_object(status, message, param))));
}

rt::task<void> reply_unauthorized(service& svc, http::response_writer& w) {
  svc.n_unauthorized.fetch_add(1, std::memory_order_relaxed);
  co_await reply_error(w, 401, "Unauthorized: a valid `Authorization: Bearer <api key>` header is required.");
}

vks::error not_ready_error(const service& svc) {
  switch (svc.state()) {
    case service_state::loading: return make_error(errc::shutting_down, "the model is still loading; retry later");
    case service_state::draining: return make_error(errc::shutting_down, "the server is shutting down");
    case service_state::failed: return make_error(errc::device_lost, "the model failed to load");
    case service_state::ready: break;
  }
  return make_error(errc::device_lost, "the engine failed and cannot serve requests");
}

result<api::json> read_json_body(std::string_view content_type, std::string_view body) {
  VKS_TRY(api::check_json_content_type(content_type));
  return api::parse_json_body(body);
}

result<void> check_model(const service& svc, const std::string& model) {
  if (model.empty() || model == svc.served_name() || svc.options().skip_model_name_validation) return ok();
  return fail(api::model_not_found(model));
}

namespace {

// Compares without an early exit, so the time does not reveal the matching prefix length.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = a.size();
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char cb = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(static_cast<unsigned char>(a[i]) ^ cb);
  }
  return diff == 0;
}

// Index of the key `token` equals, or -1. Every key is compared, so the time does not say
// which one matched.
int match_key(const std::vector<std::string>& keys, std::string_view token) {
  int found = -1;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (constant_time_equal(keys[i], token) && found < 0) found = static_cast<int>(i);
  return found;
}

}  // namespace

int api_key_index(const service& svc, const http::request& req) {
  const auto& keys = svc.api_keys();
  if (keys.empty()) return -1;
  if (const std::string* h = req.header("authorization")) {
    std::string_view v = *h;
    constexpr std::string_view scheme = "Bearer ";
    if (v.size() >= scheme.size() && http::iequals(v.substr(0, scheme.size()), scheme)) {
      v.remove_prefix(scheme.size());
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (int i = match_key(keys, v); i >= 0) return i;
    }
  }
  if (const std::string* k = req.header("x-api-key"))
    if (int i = match_key(keys, *k); i >= 0) return i;
  if (req.upgrade) {
    if (const std::string* p = req.header("sec-websocket-protocol")) {
      constexpr std::string_view prefix = "bearer.";
      int found = -1;
      any_list_entry(*p, [&](std::string_view e) {
        if (e.size() <= prefix.size() || e.substr(0, prefix.size()) != prefix) return false;
        found = match_key(keys, e.substr(prefix.size()));
        return found >= 0;
      });
      return found;
    }
  }
  return -1;
}

bool authorized(const service& svc, const http::request& req) {
  return svc.api_keys().empty() || api_key_index(svc, req) >= 0;
}

std::string cache_salt_prefix(const service& svc, const http::request& req) {
  if (!svc.options().prefix_cache_salt_per_key) return {};
  const int i = api_key_index(svc, req);
  if (i < 0) return {};
  std::string p = "key" + std::to_string(i);
  p += '\0';  // ends the prefix: no client salt can make another key's prefix
  return p;
}

bool origin_allowed(const service& svc, const http::request& req) {
  const std::string* origin = req.header("origin");
  if (!origin) return true;
  const std::string_view o = trim_blanks(*origin);
  return any_list_entry(svc.options().allowed_origins, [&](std::string_view e) {
    if (e == "*") return true;
    while (!e.empty() && e.back() == '/') e.remove_suffix(1);
    return !e.empty() && http::iequals(e, o);
  });
}

rt::task<void> reply_forbidden_origin(http::response_writer& w) {
  co_await reply_error(w, 403, "Forbidden: requests from this browser Origin are not allowed (see --allowed-origins).");
}

rt::task<bool> check_access(service& svc, const http::request& req, http::response_writer& w, bool needs_key,
                            error_shape shape) {
  if (!origin_allowed(svc, req)) {
    if (shape == error_shape::anthropic)
      co_await reply_json(w, 403, api::anthropic_error_object(403, "Forbidden: requests from this browser Origin are not allowed (see --allowed-origins)."));
    else
      co_await reply_forbidden_origin(w);
    co_return false;
  }
  if (needs_key && !authorized(svc, req)) {
    if (shape == error_shape::anthropic) {
      svc.n_unauthorized.fetch_add(1, std::memory_order_relaxed);
      co_await reply_json(w, 401, api::anthropic_error_object(401, "Unauthorized: a valid `x-api-key` header is required."));
    } else {
      co_await reply_unauthorized(svc, w);
    }
    co_return false;
  }
  co_return true;
}

bool served_name_is_public(const service& svc) {
  return svc.options().expose_model_path || svc.served_name() != svc.options().model;
}

std::string client_request_id(const http::request& req) {
  const std::string* h = req.header("x-request-id");
  if (!h || h->empty() || h->size() > 128) return {};
  for (char c : *h)
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\') return {};
  return *h;
}

}  // namespace vks::server
