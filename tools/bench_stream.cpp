// bench-stream: one streamed request, timed by a client that costs the machine almost
// nothing (blocking socket, no JSON parsing). tools/bench-serve --mode single uses it when
// it is built, because on a 2-core machine a node client's per-event work runs on the same
// cores as the model and was a visible part of the "server vs vkserve generate" gap.
// Sends POST PATH with the JSON body given, reads the chunked SSE response, and stamps
// every event whose first choice carries a non-empty "text" or "content" with the time of
// the read that completed it. Prints one JSON line:
//   {"status","ttft_ms","n","first_ms","last_ms","itl_ms":[...]}   (times from the send)
// Usage: bench-stream HOST PORT PATH BODY
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

using clock_type = std::chrono::steady_clock;

namespace {

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// True when the event (one "data: ..." block) carries generated text: the first "text" or
// "content" key of the chunk has a non-empty string value.
bool carries_text(std::string_view ev) {
  for (std::string_view key : {"\"text\":\"", "\"content\":\""}) {
    const size_t at = ev.find(key);
    if (at != std::string_view::npos && at + key.size() < ev.size() && ev[at + key.size()] != '"') return true;
  }
  return false;
}

// Decodes HTTP/1.1 chunked framing incrementally: feed raw bytes, get payload bytes.
class dechunker {
 public:
  // Appends the payload in `in` to `out`; returns false once the terminating chunk is seen.
  bool feed(std::string_view in, std::string& out) {
    for (size_t i = 0; i < in.size();) {
      if (left_ > 0) {
        const size_t n = std::min(left_, in.size() - i);
        out.append(in.substr(i, n));
        left_ -= n;
        i += n;
        if (left_ == 0) skip_crlf_ = 2;
        continue;
      }
      if (skip_crlf_ > 0) {
        --skip_crlf_;
        ++i;
        continue;
      }
      const char c = in[i++];
      if (c == '\n') {
        const size_t size = std::strtoul(line_.c_str(), nullptr, 16);
        line_.clear();
        if (size == 0) return false;
        left_ = size;
      } else if (c != '\r') {
        line_ += c;
      }
    }
    return true;
  }

 private:
  std::string line_;
  size_t left_ = 0;
  int skip_crlf_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: bench-stream HOST PORT PATH BODY\n");
    return 2;
  }
  const std::string host = argv[1], port = argv[2], path = argv[3], body = argv[4];
  addrinfo hints{}, *ai = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &ai) != 0 || !ai) {
    std::fprintf(stderr, "bench-stream: cannot resolve %s:%s\n", host.c_str(), port.c_str());
    return 1;
  }
  const int fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    std::perror("bench-stream: connect");
    return 1;
  }
  freeaddrinfo(ai);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  const auto t0 = clock_type::now();
  for (size_t off = 0; off < req.size();) {
    const ssize_t n = send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      std::perror("bench-stream: send");
      return 1;
    }
    off += static_cast<size_t>(n);
  }
  std::string head, payload;
  bool in_body = false, more = true;
  int status = 0;
  dechunker chunks;
  std::vector<double> stamps;
  char buf[65536];
  while (more) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      std::perror("bench-stream: recv");
      return 1;
    }
    if (n == 0) break;
    const double now = ms_since(t0);
    std::string_view data(buf, static_cast<size_t>(n));
    if (!in_body) {
      head.append(data);
      const size_t end = head.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      status = std::atoi(head.c_str() + head.find(' ') + 1);
      data = std::string_view(head).substr(end + 4);
      in_body = true;
      if (head.find("chunked") == std::string::npos) {  // an error reply with Content-Length
        std::printf("{\"status\":%d,\"n\":0}\n", status);
        return 1;
      }
    }
    more = chunks.feed(data, payload);
    size_t at;
    while ((at = payload.find("\n\n")) != std::string::npos) {
      if (carries_text(std::string_view(payload).substr(0, at))) stamps.push_back(now);
      payload.erase(0, at + 2);
    }
  }
  close(fd);
  std::string itl;
  for (size_t i = 1; i < stamps.size(); ++i) itl += (i > 1 ? "," : "") + std::to_string(stamps[i] - stamps[i - 1]);
  std::printf("{\"status\":%d,\"ttft_ms\":%.3f,\"n\":%zu,\"first_ms\":%.3f,\"last_ms\":%.3f,\"itl_ms\":[%s]}\n", status,
              stamps.empty() ? 0.0 : stamps[0], stamps.size(), stamps.empty() ? 0.0 : stamps.front(),
              stamps.empty() ? 0.0 : stamps.back(), itl.c_str());
  return status == 200 && !stamps.empty() ? 0 : 1;
}
