// The messages (Anthropic) job output: a chat job's events through api::messages_stream or
// api::messages_accumulator (api/messages_response.hpp). Loop thread only.
#include <optional>

#include "api/messages_response.hpp"
#include "server/job_output.hpp"

namespace vks::server {
namespace {

class messages_job_output final : public job_output {
 public:
  explicit messages_job_output(const chat_job& job) : meta_(job.meta) {
    api::messages_output_settings s;
    s.text = job.out.text_settings();
    s.n_prompt_tokens = static_cast<int>(job.prompt.ids.size());
    if (job.req.stream.stream) stream_.emplace(job.meta, std::move(s));
    else acc_.emplace(std::move(s));
  }
  bool streaming() const override { return stream_.has_value(); }
  std::vector<std::string> start() override { return stream_ ? stream_->start() : std::vector<std::string>{}; }
  std::vector<std::string> on_event(const tagged_event& ev) override {
    if (stream_) return stream_->on_event(ev.ev);
    acc_->on_event(ev.ev);
    return {};
  }
  bool done() const override { return stream_ ? stream_->done() : acc_->done(); }
  std::optional<vks::error> error() const override { return acc_ ? acc_->error() : std::nullopt; }
  api::json build() const override { return acc_->build(meta_); }

 private:
  api::response_meta meta_;
  std::optional<api::messages_stream> stream_;
  std::optional<api::messages_accumulator> acc_;
};

}  // namespace

std::unique_ptr<job_output> make_messages_output(const chat_job& job) {
  return std::make_unique<messages_job_output>(job);
}

}  // namespace vks::server
