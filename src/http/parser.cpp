// llhttp callbacks feeding a request (see parser.hpp). The parser pauses itself in
// on_message_complete (so pipelined bytes stay unconsumed); a head completed within one
// feed() call is reported as head_ready unless the whole message completed too.
// Every outcome depends only on byte positions, never on how the stream was split into
// feed() calls (the fuzz target checks this): the header-section limit is a budget of raw
// bytes that llhttp is never handed more of, and header fields are checked when llhttp
// reports them complete, not from span callbacks (which fire at chunk boundaries).
#include "http/parser.hpp"

#include <llhttp.h>

#include "base/assert.hpp"

namespace vks::http {

namespace {
// RFC 9110 token characters (header names).
bool is_tchar(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}
}  // namespace

struct request_parser::impl {
  llhttp_t parser;
  llhttp_settings_t settings;

  static request_parser& self(llhttp_t* p) { return *static_cast<request_parser*>(p->data); }

  static int on_message_begin(llhttp_t* p) {
    auto& s = self(p);
    s.in_message_ = true;
    return 0;
  }
  static int on_method(llhttp_t* p, const char* at, std::size_t n) {
    auto& s = self(p);
    s.req_.method_name.append(at, n);
    return 0;
  }
  static int on_url(llhttp_t* p, const char* at, std::size_t n) {
    auto& s = self(p);
    s.req_.target.append(at, n);
    return 0;
  }
  // Called when llhttp reports a header value complete (at its CRLF).
  static int flush_header(request_parser& s) {
    if (s.req_.headers.size() >= s.limits_.max_headers)
      return s.fail(431, "more than " + std::to_string(s.limits_.max_headers) + " header fields");
    if (s.field_.empty()) return s.fail(400, "empty header name");
    for (char& c : s.field_) {
      if (!is_tchar(c)) return s.fail(400, "invalid character in header name");
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    s.req_.headers.add(std::move(s.field_), std::move(s.value_));
    s.field_.clear();
    s.value_.clear();
    return 0;
  }
  static int on_header_field(llhttp_t* p, const char* at, std::size_t n) {
    self(p).field_.append(at, n);
    return 0;
  }
  static int on_header_value(llhttp_t* p, const char* at, std::size_t n) {
    self(p).value_.append(at, n);
    return 0;
  }
  static int on_header_value_complete(llhttp_t* p) { return flush_header(self(p)); }
  static int on_headers_complete(llhttp_t* p) {
    auto& s = self(p);
    auto& r = s.req_;
    if (p->http_major != 1) return s.fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
    r.version_minor = p->http_minor;
    r.method = method_from_string(r.method_name);
    r.keep_alive = llhttp_should_keep_alive(p) != 0;
    r.upgrade = p->upgrade != 0;
    if (const auto* e = r.headers.find("expect")) {
      if (!iequals(*e, "100-continue")) return s.fail(417, "unsupported Expect value");
      r.expect_continue = r.version_minor >= 1;
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > s.limits_.max_body_bytes)
      return s.fail(413, "request body exceeds " + std::to_string(s.limits_.max_body_bytes) + " bytes");
    s.head_done_ = true;
    return 0;
  }
  static int on_body(llhttp_t* p, const char* at, std::size_t n) {
    auto& s = self(p);
    if (s.req_.body.size() + n > s.limits_.max_body_bytes)
      return s.fail(413, "request body exceeds " + std::to_string(s.limits_.max_body_bytes) + " bytes");
    s.req_.body.append(at, n);
    return 0;
  }
  static int on_message_complete(llhttp_t* p) {
    auto& s = self(p);
    s.message_done_ = true;
    return HPE_PAUSED;
  }
};

request_parser::request_parser(parse_limits limits) : impl_(std::make_unique<impl>()), limits_(limits) {
  llhttp_settings_init(&impl_->settings);
  auto& st = impl_->settings;
  st.on_message_begin = &impl::on_message_begin;
  st.on_method = &impl::on_method;
  st.on_url = &impl::on_url;
  st.on_header_field = &impl::on_header_field;
  st.on_header_value = &impl::on_header_value;
  st.on_header_value_complete = &impl::on_header_value_complete;
  st.on_headers_complete = &impl::on_headers_complete;
  st.on_body = &impl::on_body;
  st.on_message_complete = &impl::on_message_complete;
  llhttp_init(&impl_->parser, HTTP_REQUEST, &impl_->settings);
  impl_->parser.data = this;
}

request_parser::~request_parser() = default;

int request_parser::fail(int status, std::string message) {
  if (error_status_ == 0) {
    error_status_ = status;
    error_message_ = std::move(message);
  }
  return -1;
}

parse_step request_parser::feed(std::string_view in) {
  if (error_status_ != 0) return {parse_state::error, 0};
  if (message_done_) return {parse_state::complete, 0};  // take() first
  auto* p = &impl_->parser;
  const bool was_head_done = head_done_;
  std::size_t used = 0;
  for (;;) {
    // While the head is incomplete, hand llhttp at most the rest of the header budget.
    std::string_view chunk = in.substr(used);
    bool capped = false;
    if (!head_done_) {
      const std::size_t room = limits_.max_header_bytes - n_header_bytes_;
      if (chunk.size() > room) {
        chunk = chunk.substr(0, room);
        capped = true;
      }
    }
    const bool head_done_before = head_done_;
    llhttp_errno_t rc = llhttp_execute(p, chunk.data(), chunk.size());
    std::size_t n = chunk.size();
    const bool paused = rc == HPE_PAUSED || rc == HPE_PAUSED_UPGRADE;
    if (paused) {
      n = static_cast<std::size_t>(llhttp_get_error_pos(p) - chunk.data());
      llhttp_resume(p);
      if (rc == HPE_PAUSED_UPGRADE) llhttp_resume_after_upgrade(p);
    } else if (rc != HPE_OK) {
      if (error_status_ == 0) fail(400, std::string("malformed request: ") + llhttp_get_error_reason(p));
      return {parse_state::error, used + static_cast<std::size_t>(llhttp_get_error_pos(p) - chunk.data())};
    }
    if (!head_done_before && !head_done_) n_header_bytes_ += n;  // every byte so far is head
    used += n;
    if (paused || message_done_ || !capped) break;
    if (!head_done_) {  // the budget is spent, more bytes follow, and the head goes on
      fail(431, "request header section exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
      return {parse_state::error, used};
    }
    // The head completed inside the capped chunk: go on with the rest (body, next request).
  }
  if (message_done_) return {parse_state::complete, used};
  if (head_done_ && !was_head_done) return {parse_state::head_ready, used};
  return {parse_state::need_more, used};
}

request request_parser::take() {
  VKS_ASSERT(message_done_, "take() before the request is complete");
  request r = std::move(req_);
  req_ = request{};
  req_.target = std::move(spare_.target);
  req_.headers = std::move(spare_.headers);
  req_.body = std::move(spare_.body);
  field_.clear();
  value_.clear();
  n_header_bytes_ = 0;
  in_message_ = head_done_ = message_done_ = false;
  return r;
}

void request_parser::recycle(request&& done) noexcept {
  constexpr std::size_t k_keep_bytes = 4096, k_keep_headers = 32;
  done.target.clear();
  done.body.clear();
  if (done.body.capacity() > k_keep_bytes) done.body = std::string();
  if (done.headers.size() > k_keep_headers) done.headers = header_list{};
  done.headers.clear();
  spare_.target = std::move(done.target);
  spare_.headers = std::move(done.headers);
  spare_.body = std::move(done.body);
}

}  // namespace vks::http
