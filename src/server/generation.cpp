// Engine event sink -> rt::channel, and the bookkeeping of which requests are still open.
#include "server/generation.hpp"

#include <atomic>
#include <chrono>
#include <variant>

namespace vks::server {
namespace {

// Runs on the engine thread: a push (short mutex + post to the consumer's loop).
class channel_sink final : public engine::event_sink {
 public:
  channel_sink(std::shared_ptr<rt::channel<tagged_event>> ch, int source,
               std::shared_ptr<std::atomic<std::int64_t>> scheduled)
      : ch_(std::move(ch)), source_(source), scheduled_(std::move(scheduled)) {}
  void on_event(engine::event ev) noexcept override { ch_->push(tagged_event{source_, std::move(ev)}); }
  // The first of the generation's requests to leave the engine queue sets the time.
  void on_scheduled() noexcept override {
    std::int64_t none = 0;
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    scheduled_->compare_exchange_strong(none, now, std::memory_order_relaxed);
  }

 private:
  std::shared_ptr<rt::channel<tagged_event>> ch_;
  int source_;
  std::shared_ptr<std::atomic<std::int64_t>> scheduled_;
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
  auto h = eng_.submit(std::move(req), std::make_shared<channel_sink>(ch_, source, scheduled_));
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
