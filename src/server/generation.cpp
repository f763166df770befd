// Engine event sink -> rt::channel, and the bookkeeping of which requests are still open.
#include "server/generation.hpp"

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

}  // namespace

result<void> generation::submit(engine::request req) {
  const int source = static_cast<int>(sources_.size());
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
  if (std::holds_alternative<engine::error_event>(ev.ev) ||
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
