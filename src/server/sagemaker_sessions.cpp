// The open SageMaker sessions (see sagemaker_sessions.hpp).
#include "server/sagemaker_sessions.hpp"

#include <ctime>

#include "api/response_common.hpp"

namespace vks::server {
namespace {

// "8-4-4-4-12" hex: the UUID form the AWS container standards hand out.
std::string new_session_id() {
  const std::string h = api::random_uuid_hex();  // 32 hex digits
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
}

std::string utc_stamp(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

bool session_registry::valid_id(std::string_view id) {
  if (id.empty() || id.size() > 256) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (!alnum(id.front()) || !alnum(id.back())) return false;
  for (char c : id)
    if (!alnum(c) && c != '-') return false;
  return true;
}

result<session_registry::created> session_registry::create(clock::time_point now) {
  std::lock_guard lk(mu_);
  sweep_locked(now);
  if (open_.size() >= limits_.max_sessions)
    return fail(errc::overloaded, "too many open sessions (" + std::to_string(open_.size()) +
                                       "); close one or wait for one to expire");
  created c;
  do c.id = new_session_id();
  while (open_.count(c.id) != 0);
  c.key = next_key_++;
  open_.emplace(c.id, entry{c.key, now + limits_.ttl});
  c.header = c.id + "; Expires=" + utc_stamp(std::chrono::system_clock::now() + limits_.ttl);
  return c;
}

result<std::uint64_t> session_registry::find(std::string_view id, clock::time_point now) {
  std::lock_guard lk(mu_);
  sweep_locked(now);
  auto it = open_.find(std::string(id));
  if (it == open_.end()) return fail(errc::invalid_argument, "session not found: " + std::string(id));
  return it->second.key;
}

result<void> session_registry::close(std::string_view id, clock::time_point now) {
  std::lock_guard lk(mu_);
  sweep_locked(now);
  auto it = open_.find(std::string(id));
  if (it == open_.end()) return fail(errc::invalid_argument, "session not found: " + std::string(id));
  erase_locked(it);
  return ok();
}

std::size_t session_registry::sweep(clock::time_point now) {
  std::lock_guard lk(mu_);
  return sweep_locked(now);
}

std::size_t session_registry::size() const {
  std::lock_guard lk(mu_);
  return open_.size();
}

std::size_t session_registry::sweep_locked(clock::time_point now) {
  std::size_t n = 0;
  for (auto it = open_.begin(); it != open_.end();) {
    auto next = std::next(it);
    if (it->second.expires <= now) {
      erase_locked(it);
      ++n;
    }
    it = next;
  }
  return n;
}

void session_registry::erase_locked(std::unordered_map<std::string, entry>::iterator it) {
  const std::uint64_t key = it->second.key;
  open_.erase(it);
  if (release_) release_(key);
}

}  // namespace vks::server
