// Parsing and validating an embeddings request body.
#include "api/embedding_request.hpp"

#include "api/fields.hpp"

namespace vks::api {
namespace {

result<void> bad(const std::string& msg, const char* param = "input") {
  return fail(errc::invalid_argument, msg, param);
}

// A JSON array of integers in [0, n_vocab) (any n_vocab <= 0: only >= 0), non-empty.
result<std::vector<std::int32_t>> id_list(const json& a, int n_vocab) {
  std::vector<std::int32_t> out;
  if (a.empty()) return fail(errc::invalid_argument, "input: a token id list must not be empty", "input");
  out.reserve(a.size());
  for (const auto& v : a) {
    auto i = as_integer(v);
    if (!i) return fail(errc::invalid_argument, "input: token ids must be integers", "input");
    if (*i < 0 || (n_vocab > 0 && *i >= n_vocab))
      return fail(errc::invalid_argument, "input: token id " + std::to_string(*i) + " is out of vocabulary range", "input");
    out.push_back(static_cast<std::int32_t>(*i));
  }
  return out;
}

result<void> add_text(const json& v, std::vector<embedding_input>& out) {
  const auto& s = v.get_ref<const std::string&>();
  if (s.empty()) return bad("input: an input string must not be empty");
  out.push_back({s, {}});
  return ok();
}

result<std::vector<embedding_input>> inputs_of(const json& in, int n_vocab, std::size_t max_inputs) {
  std::vector<embedding_input> out;
  if (in.is_string()) {
    VKS_TRY(add_text(in, out));
    return out;
  }
  if (!in.is_array()) return fail(errc::invalid_argument, "input must be a string, a list of strings, a list of token ids or a list of lists of token ids", "input");
  if (in.empty()) return fail(errc::invalid_argument, "input must not be empty", "input");
  if (in.front().is_number()) {  // one list of ids
    auto ids = id_list(in, n_vocab);
    if (!ids) return fail(std::move(ids).error());
    out.push_back({std::nullopt, std::move(*ids)});
    return out;
  }
  if (in.size() > max_inputs)
    return fail(errc::invalid_argument, "input has " + std::to_string(in.size()) + " items; at most " + std::to_string(max_inputs) + " are allowed", "input");
  for (const auto& v : in) {
    if (v.is_string()) {
      VKS_TRY(add_text(v, out));
    } else if (v.is_array()) {
      auto ids = id_list(v, n_vocab);
      if (!ids) return fail(std::move(ids).error());
      out.push_back({std::nullopt, std::move(*ids)});
    } else {
      return fail(errc::invalid_argument, "input: each item must be a string or a list of token ids", "input");
    }
  }
  return out;
}

}  // namespace

result<embedding_request> parse_embedding_request(const json& body, int n_vocab, std::size_t max_inputs) {
  embedding_request r;
  if (!body.is_object()) return fail(errc::invalid_argument, "The request body must be a JSON object.");
  fields f(body);
  f.string("model", r.model);
  std::optional<std::string> enc;
  f.string("encoding_format", enc);
  std::optional<std::int64_t> dims;
  f.integer("dimensions", dims, 1, 1 << 20);
  f.boolean("normalize", r.normalize);
  if (!f.ok()) return fail(f.error());
  if (enc && *enc == "base64") r.encoding = embedding_encoding::base64;
  else if (enc && *enc != "float")
    return fail(errc::invalid_argument, "encoding_format must be 'float' or 'base64', not '" + *enc + "'", "encoding_format");
  if (dims) r.dimensions = static_cast<int>(*dims);
  const json* in = f.get("input");
  if (!in) return fail(errc::invalid_argument, "input is required", "input");
  auto inputs = inputs_of(*in, n_vocab, max_inputs);
  if (!inputs) return fail(std::move(inputs).error());
  r.inputs = std::move(*inputs);
  return r;
}

}  // namespace vks::api
