// Response serialization and reason phrases (see response.hpp).
#include "http/response.hpp"

#include <charconv>
#include <ctime>

namespace vks::http {

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 424: return "Failed Dependency";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

response response::json(int status, std::string body) {
  response r{status, {}, std::move(body)};
  r.headers.add("Content-Type", "application/json");
  return r;
}

response response::text(int status, std::string body) {
  response r{status, {}, std::move(body)};
  r.headers.add("Content-Type", "text/plain; charset=utf-8");
  return r;
}

std::string_view http_date() {
  thread_local std::time_t cached_at = 0;
  thread_local char buf[40] = {};
  std::time_t now = std::time(nullptr);
  if (now != cached_at) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_at = now;
  }
  return buf;
}

namespace {
void append_uint(std::string& out, std::size_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

bool has_body_framing(int status) { return status >= 200 && status != 204 && status != 304; }
}  // namespace

void serialize_head(int status, const header_list& headers, const framing& f, std::string& out) {
  out += f.version_minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ";
  append_uint(out, static_cast<std::size_t>(status));
  out += ' ';
  out += reason_phrase(status);
  out += "\r\nServer: vkserve\r\nDate: ";
  out += http_date();
  out += "\r\n";
  for (const auto& h : headers) {
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
  if (!f.keep_alive)
    out += "Connection: close\r\n";
  else if (f.version_minor == 0)
    out += "Connection: keep-alive\r\n";
}

void serialize(const response& r, const framing& f, std::string& out) {
  serialize_head(r.status, r.headers, f, out);
  if (has_body_framing(r.status)) {
    out += "Content-Length: ";
    append_uint(out, r.body.size());
    out += "\r\n";
  }
  out += "\r\n";
  if (!f.head && has_body_framing(r.status)) out += r.body;
}

}  // namespace vks::http
