// /v1/embeddings request parsing (every input form, errors naming the parameter) and the
// response: truncation + renormalisation, base64 of little-endian f32, order, usage.
#include "catch.hpp"

#include <cmath>
#include <cstring>

#include "api/embedding_request.hpp"
#include "api/embedding_response.hpp"

using namespace vks;
using api::json;

namespace {

result<api::embedding_request> parse(const char* text, int n_vocab = 100) {
  return api::parse_embedding_request(json::parse(text), n_vocab);
}

std::vector<float> decode_b64_f32(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<unsigned char> bytes;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    int v[4];
    for (int k = 0; k < 4; ++k) v[k] = val(s[i + static_cast<size_t>(k)]);
    const unsigned w = (unsigned(v[0]) << 18) | (unsigned(v[1]) << 12) | (unsigned(v[2] < 0 ? 0 : v[2]) << 6) | unsigned(v[3] < 0 ? 0 : v[3]);
    bytes.push_back(static_cast<unsigned char>(w >> 16));
    if (v[2] >= 0) bytes.push_back(static_cast<unsigned char>(w >> 8));
    if (v[3] >= 0) bytes.push_back(static_cast<unsigned char>(w));
  }
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= uint32_t{bytes[i * 4 + static_cast<size_t>(b)]} << (8 * b);  // little-endian
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

}  // namespace

TEST_CASE("embeddings request: every input form", "[api][embeddings]") {
  auto a = parse(R"({"model":"m","input":"hello"})");
  REQUIRE(a.ok());
  REQUIRE(a->inputs.size() == 1);
  CHECK(*a->inputs[0].text == "hello");
  CHECK(a->encoding == api::embedding_encoding::float_array);
  CHECK(a->normalize);
  auto b = parse(R"({"input":["a","b","c"],"encoding_format":"base64","dimensions":8})");
  REQUIRE(b.ok());
  REQUIRE(b->inputs.size() == 3);
  CHECK(*b->inputs[2].text == "c");
  CHECK(b->encoding == api::embedding_encoding::base64);
  CHECK(*b->dimensions == 8);
  auto c = parse(R"({"input":[1,2,3]})");
  REQUIRE(c.ok());
  REQUIRE(c->inputs.size() == 1);
  CHECK_FALSE(c->inputs[0].text);
  CHECK(c->inputs[0].ids == std::vector<int32_t>{1, 2, 3});
  auto d = parse(R"({"input":[[1,2],[3],"mixed"],"encoding_format":"float","normalize":false})");
  REQUIRE(d.ok());
  REQUIRE(d->inputs.size() == 3);
  CHECK(d->inputs[1].ids == std::vector<int32_t>{3});
  CHECK(*d->inputs[2].text == "mixed");
  CHECK_FALSE(d->normalize);
}

TEST_CASE("embeddings request: errors are 400s naming the parameter", "[api][embeddings][hostile]") {
  struct bad_case {
    const char* body;
    const char* param;
  };
  const bad_case cases[] = {
      {R"({"model":"m"})", "input"},
      {R"({"input":""})", "input"},
      {R"({"input":[]})", "input"},
      {R"({"input":[[]]})", "input"},
      {R"({"input":[1,-2]})", "input"},
      {R"({"input":[1,100]})", "input"},        // n_vocab 100
      {R"({"input":[1,2.5]})", "input"},
      {R"({"input":[["a"]]})", "input"},
      {R"({"input":[{"x":1}]})", "input"},
      {R"({"input":42})", "input"},
      {R"({"input":"a","encoding_format":"int8"})", "encoding_format"},
      {R"({"input":"a","dimensions":0})", "dimensions"},
      {R"({"input":"a","dimensions":"8"})", "dimensions"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto r = parse(c.body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::invalid_argument);
    CHECK(r.error().param == c.param);
  }
  json many = {{"input", json::array()}};
  for (int i = 0; i < 5; ++i) many["input"].push_back("x");
  auto r = api::parse_embedding_request(many, 100, 4);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().param == "input");
}

TEST_CASE("embeddings response: truncation renormalises, base64 is little-endian f32", "[api][embeddings]") {
  auto v = api::finish_embedding({3, 4, 12}, std::nullopt, true);
  CHECK(v[2] == Approx(12.0f / 13.0f));
  auto t = api::finish_embedding({3, 4, 12}, 2, true);
  REQUIRE(t.size() == 2);
  CHECK(t[0] == Approx(0.6f));
  auto raw = api::finish_embedding({3, 4, 12}, 2, false);
  CHECK(raw == std::vector<float>{3, 4});
  CHECK(api::finish_embedding({1, 2}, 5, true).size() == 2);
  // 1.0f = 00 00 80 3f (little-endian) -> "AACAPw=="
  CHECK(api::base64_f32(std::vector<float>{1.0f}) == "AACAPw==");
  const std::vector<float> x = {0.25f, -1.5f, 3.0e-8f, 7.0f, -0.0f};
  for (size_t n = 0; n <= x.size(); ++n) {
    std::vector<float> part(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK(decode_b64_f32(api::base64_f32(part)) == part);
  }
}

TEST_CASE("embeddings response: data in input order, usage, errors end it", "[api][embeddings]") {
  api::embedding_output_settings s;
  s.model = "m";
  s.n_inputs = 2;
  s.encoding = api::embedding_encoding::base64;
  api::embedding_accumulator acc(s);
  acc.on_event(1, engine::embedding_event{{0, 2}, 3});
  CHECK_FALSE(acc.done());
  acc.on_event(0, engine::embedding_event{{5, 0}, 4});
  REQUIRE(acc.done());
  CHECK_FALSE(acc.error());
  json body = acc.build();
  CHECK(body["object"] == "list");
  CHECK(body["model"] == "m");
  CHECK(body["usage"]["prompt_tokens"] == 7);
  CHECK(body["usage"]["total_tokens"] == 7);
  REQUIRE(body["data"].size() == 2);
  CHECK(body["data"][0]["index"] == 0);
  CHECK(body["data"][0]["object"] == "embedding");
  CHECK(decode_b64_f32(body["data"][0]["embedding"].get<std::string>()) == std::vector<float>{1, 0});
  CHECK(decode_b64_f32(body["data"][1]["embedding"].get<std::string>()) == std::vector<float>{0, 1});

  api::embedding_accumulator bad(s);
  bad.on_event(0, engine::error_event{make_error(errc::context_overflow, "too long")});
  REQUIRE(bad.done());
  REQUIRE(bad.error());
  CHECK(bad.error()->code == errc::context_overflow);
}
