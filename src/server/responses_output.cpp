// The responses (OpenAI Responses API) job output: a chat job's events through
// api::responses_stream or api::responses_accumulator; a finished response (completed or
// incomplete) is put in the response store with its conversation when the request asked
// for it. Loop thread only.
#include <optional>

#include "api/responses_request.hpp"
#include "api/responses_response.hpp"
#include "server/job_output.hpp"

namespace vks::server {
namespace {

class responses_job_output final : public job_output {
 public:
  explicit responses_job_output(const chat_job& job) : meta_(job.meta), ctx_(job.responses) {
    api::responses_output_settings s;
    s.text = job.out.text_settings();
    s.n_prompt_tokens = static_cast<int>(job.prompt.ids.size());
    s.echo = ctx_->echo;
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
  std::vector<std::string> finish() override {
    store(stream_->final_response());
    return {};
  }
  bool done() const override { return stream_ ? stream_->done() : acc_->done(); }
  std::optional<vks::error> error() const override { return acc_ ? acc_->error() : std::nullopt; }
  api::json build() const override {
    api::json r = acc_->build(meta_);
    store(r);
    return r;
  }

 private:
  void store(const api::json& response) const {
    if (!ctx_->store || response["status"] == "in_progress") return;
    api::json conversation = ctx_->conversation;
    for (auto& m : api::output_to_messages(response["output"])) conversation.push_back(std::move(m));
    ctx_->store->put(meta_.id, {response, std::move(conversation)});
  }

  api::response_meta meta_;
  std::shared_ptr<const responses_context> ctx_;
  std::optional<api::responses_stream> stream_;
  std::optional<api::responses_accumulator> acc_;
};

}  // namespace

std::unique_ptr<job_output> make_responses_output(const chat_job& job) {
  return std::make_unique<responses_job_output>(job);
}

}  // namespace vks::server
