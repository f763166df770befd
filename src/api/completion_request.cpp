// Completions and LMI request parsing (completion_request.hpp).
#include "api/completion_request.hpp"

#include <limits>

namespace vks::api {

namespace {

constexpr std::int64_t k_i32_max = std::numeric_limits<std::int32_t>::max();

bool read_token_list(const json& v, std::vector<std::int32_t>& out, int n_vocab) {
  for (const auto& e : v) {
    auto i = e.is_boolean() ? std::nullopt : as_integer(e);
    if (!i || *i < 0 || *i > k_i32_max || (n_vocab > 0 && *i >= n_vocab)) return false;
    out.push_back(static_cast<std::int32_t>(*i));
  }
  return !out.empty();
}

void read_prompts(fields& f, completion_request& r, const parse_limits& lim) {
  const json* v = f.get("prompt");
  if (!v) return f.fail("prompt", "prompt is required.");
  const std::string bad_ids = "prompt token ids must be integers in [0, n_vocab) and lists must not be empty.";
  if (v->is_string()) {
    if (v->get_ref<const std::string&>().empty()) return f.fail("prompt", "prompt must not be empty.");
    r.prompts.push_back({false, v->get<std::string>(), {}});
    return;
  }
  if (!v->is_array() || v->empty())
    return f.fail("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids.");
  const json& first = (*v)[0];
  // Refused before the prompts are copied (n >= 1 multiplies; checked again with n).
  if (!first.is_number() && v->size() > static_cast<std::size_t>(lim.max_seqs_per_request))
    return f.fail("prompt", "prompt lists " + std::to_string(v->size()) + " prompts; the limit is " +
                                std::to_string(lim.max_seqs_per_request) +
                                " sequences (prompts x n) per request (--max-sequences-per-request).");
  if (first.is_number()) {
    prompt_input p{true, {}, {}};
    if (!read_token_list(*v, p.tokens, lim.n_vocab)) return f.fail("prompt", bad_ids);
    r.prompts.push_back(std::move(p));
    return;
  }
  for (const auto& e : *v) {
    if (e.is_string()) {
      if (e.get_ref<const std::string&>().empty()) return f.fail("prompt", "prompt must not contain empty strings.");
      r.prompts.push_back({false, e.get<std::string>(), {}});
    } else if (e.is_array()) {
      prompt_input p{true, {}, {}};
      if (!read_token_list(e, p.tokens, lim.n_vocab)) return f.fail("prompt", bad_ids);
      r.prompts.push_back(std::move(p));
    } else {
      return f.fail("prompt", "prompt list items must be strings or lists of token ids.");
    }
  }
}

}  // namespace

result<completion_request> parse_completion_request(const json& body, const parse_limits& lim) {
  if (!body.is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  completion_request r;
  fields f(body);
  f.string("model", r.model);
  read_prompts(f, r, lim);
  read_sampling(f, r.sampling, lim);
  check_sequence_count(f, r.prompts.size(), r.sampling.n, lim, "n");
  read_cache_salt(f, r.cache_salt);
  r.sampling.max_tokens = 16;
  f.integer("max_tokens", r.sampling.max_tokens, 0, k_i32_max);
  f.boolean("echo", r.echo);
  if (f.ok() && r.sampling.max_tokens == 0 && !r.echo)
    f.fail("max_tokens", "max_tokens must be at least 1 (0 is only allowed with echo), got 0.");
  read_stream(f, r.stream);
  std::optional<std::int64_t> lp;
  f.integer("logprobs", lp, 0, lim.max_logprobs);
  if (lp) {
    r.logprobs = static_cast<int>(*lp);
    r.sampling.logprobs = r.logprobs.value();
  }
  if (f.ok() && r.sampling.prompt_logprobs >= 0 && r.stream.stream)
    f.fail("prompt_logprobs", "prompt_logprobs is not supported with stream=true.");
  if (r.echo && r.logprobs && r.sampling.prompt_logprobs < 0) {
    r.sampling.prompt_logprobs = *r.logprobs;
    r.echo_scores_prompt = true;
  }
  if (f.ok() && f.has("suffix")) f.fail("suffix", "suffix is not currently supported.");
  std::optional<std::int64_t> best_of;
  f.integer("best_of", best_of, 0, 20);
  if (f.ok() && best_of && *best_of > 1 && *best_of != r.sampling.n)
    f.fail("best_of", "best_of is not supported (it must equal n).");
  f.boolean("add_special_tokens", r.add_special_tokens);
  read_structured_output(f, r.structured);
  f.string("request_id", r.request_id);
  read_truncate_prompt_tokens(f, "truncate_prompt_tokens", r.truncate_prompt_tokens, lim);
  f.boolean("return_token_ids", r.return_token_ids);
  if (f.ok()) check_sampling(f, r.sampling);
  if (!f.ok()) return fail(f.error());
  return r;
}

result<lmi_request> parse_lmi_request(const json& body, const parse_limits& lim) {
  if (!body.is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  lmi_request r;
  completion_request& c = r.completion;
  fields f(body);
  const json* in = f.get("inputs");
  if (!in || !in->is_string() || in->get_ref<const std::string&>().empty())
    return fail(errc::invalid_argument, "inputs must be a non-empty string.", "inputs");
  c.prompts.push_back({false, in->get<std::string>(), {}});
  read_stream(f, c.stream);
  f.string("model", c.model);
  if (!f.ok()) return fail(f.error());
  c.sampling.max_tokens = 30;
  c.sampling.logprobs = 0;
  c.logprobs = 0;
  const json* params = f.get("parameters");
  if (!params) return r;
  if (!params->is_object()) return fail(errc::invalid_argument, "parameters must be an object.", "parameters");
  fields p(*params, "parameters.");
  read_sampling(p, c.sampling, lim);
  p.integer("max_new_tokens", c.sampling.max_tokens, 1, k_i32_max);
  p.integer("max_tokens", c.sampling.max_tokens, 1, k_i32_max);
  std::optional<bool> do_sample;
  p.boolean("do_sample", do_sample);
  if (do_sample && !*do_sample) c.sampling.temperature = 0.0f;
  p.string_list("stop_sequences", c.sampling.stop, lim.max_stop);
  p.boolean("ignore_eos_token", c.sampling.ignore_eos);
  p.boolean("details", r.details);
  bool decoder_input_details = false;
  p.boolean("decoder_input_details", decoder_input_details);
  r.prefill = r.details && decoder_input_details && !c.stream.stream;
  if (r.prefill && c.sampling.prompt_logprobs < 0) c.sampling.prompt_logprobs = 0;
  p.boolean("return_full_text", r.return_full_text);
  c.echo = r.return_full_text;
  read_truncate_prompt_tokens(p, "truncate", c.truncate_prompt_tokens, lim);
  read_truncate_prompt_tokens(p, "truncate_prompt_tokens", c.truncate_prompt_tokens, lim);
  read_structured_output(p, c.structured);
  read_cache_salt(p, c.cache_salt);
  std::optional<std::int64_t> beams;
  p.integer("num_beams", beams, 1, 1);
  if (p.ok() && c.sampling.n != 1) p.fail("n", "parameters.n must be 1 for the inputs schema.");
  if (p.ok()) check_sampling(p, c.sampling);
  if (!p.ok()) return fail(p.error());
  return r;
}

}  // namespace vks::api
