// Engine event sink -> rt::channel, and the bookkeeping of which requests are still open.
#include "server/generation.hpp"

#include <atomic>
#include <variant>

namespace vks::server {
namespace {

// Runs on the engine thread: a push (short mutex + post to the consumer's loop).
class channel_sink final : public engine::event_sink {
 public:
  channel_sink(std::shared_ptr<rt::channel<tagged_event>> ch, int source) : ch_(std::move(ch)), source_(source) {}
  void on_event(engine::event ev) noexcept override { ch_->push(tagged_event{source_, std::move(ev)}); }

 private:
  std::shared_ptr<rt::channel<tagged_event>> ch_;
  int source_;
};

// Engine groups of client requests, process-wide (the engine's own groups have the top bit).
std::atomic<std::uint64_t> next_group{1};

}  // namespace

generation::generation(engine::engine& eng, std::string salt_prefix, std::uint64_t session)
    : eng_(eng), ch_(std::make_shared<rt::channel<tagged_event>>()),
      group_(next_group.fetch_add(1, std::memory_order_relaxed)), salt_prefix_(std::move(salt_prefix)),
      session_(session) {}

result<void> generation::submit(engine::request req) {
  const int source = static_cast<int>(sources_.size());
  if (req.group == 0) req.group = group_;
  if (!salt_prefix_.empty()) req.cache_salt.insert(0, salt_prefix_);
  if (session_ != 0) req.session = session_;
  const int n = req.params.n;
  auto h = eng_.submit(std::move(req), std::make_shared<channel_sink>(ch_, source));
  if (!h) return fail(std::move(h).error());
  sources_.push_back(source_state{*h, n, 0, true});
  ++n_open_;
  return ok();
}

rt::task<std::optional<tagged_event>> generation::next(std::stop_token stop) {
  auto ev = co_await ch_->pop(stop);
  if (ev) track(*ev);
  co_return ev;
}

void generation::track(const tagged_event& ev) {
  if (ev.source < 0 || ev.source >= static_cast<int>(sources_.size())) return;
  auto& s = sources_[static_cast<std::size_t>(ev.source)];
  if (!s.open) return;
  if (std::holds_alternative<engine::error_event>(ev.ev) || std::holds_alternative<engine::embedding_event>(ev.ev) ||
      (std::holds_alternative<engine::finished_event>(ev.ev) && ++s.n_finished == s.n)) {
    s.open = false;
    --n_open_;
  }
}

void generation::abort_all() noexcept {
  for (auto& s : sources_) {
    if (!s.open) continue;
    eng_.abort(s.handle);
    s.open = false;
    --n_open_;
  }
}

}  // namespace vks::server
