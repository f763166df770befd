// Reasoning splitter: expected splits, and streaming == non-streaming for every cut of
// the text into pushes (tags split across tokens included).
#include "catch.hpp"

#include <string>
#include <vector>

#include "api/reasoning.hpp"

using namespace vks::api;

namespace {

struct split {
  std::string reasoning, content;
  bool operator==(const split&) const = default;
};

split whole(const std::string& text, bool starts, const reasoning_tags& tags = {}) {
  reasoning_splitter s(starts, tags);
  auto a = s.push(text);
  auto b = s.flush();
  return {a.reasoning + b.reasoning, a.content + b.content};
}

// Pushes text cut at the given positions (ascending, inside the text).
split streamed(const std::string& text, bool starts, const std::vector<std::size_t>& cuts,
               const reasoning_tags& tags = {}) {
  reasoning_splitter s(starts, tags);
  split out;
  std::size_t start = 0;
  auto push = [&](std::size_t end) {
    auto d = s.push(std::string_view(text).substr(start, end - start));
    if (!out.content.empty()) REQUIRE(d.reasoning.empty());  // no reasoning after content
    out.reasoning += d.reasoning;
    out.content += d.content;
    start = end;
  };
  for (std::size_t c : cuts) push(c);
  push(text.size());
  auto d = s.flush();
  out.reasoning += d.reasoning;
  out.content += d.content;
  return out;
}

std::vector<std::size_t> cuts_of_mask(std::size_t n, unsigned mask) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < n; ++i)
    if (mask & (1u << (i - 1))) cuts.push_back(i);
  return cuts;
}

}  // namespace

TEST_CASE("reasoning splits at the tags") {
  CHECK(whole("<think>abc</think>def", false) == split{"abc", "def"});
  CHECK(whole("abc</think>def", true) == split{"abc", "def"});
  CHECK(whole("abc", false) == split{"", "abc"});
  CHECK(whole("abc", true) == split{"abc", ""});
  CHECK(whole("<thi", false) == split{"", "<thi"});
  CHECK(whole("<think>ab</thi", false) == split{"ab</thi", ""});
  CHECK(whole("x<think>y</think>z", false) == split{"", "x<think>y</think>z"});
  CHECK(whole("<think></think>", false) == split{"", ""});
  CHECK(whole("<think>\nOkay.\n</think>\n\nThe <think> answer", false) == split{"\nOkay.\n", "\n\nThe <think> answer"});
}

TEST_CASE("streaming and non-streaming agree for every token cut (short tags)") {
  const reasoning_tags tags{"<t>", "</t>"};
  const char* texts[] = {"<t>ab</t>cd", "a</t>b</t>", "<<t>x</t>", "<t>a</tx</t>y", "</</t>z", "plain", "<t></t>"};
  for (const char* t : texts) {
    const std::string text = t;
    for (bool starts : {false, true}) {
      const split want = whole(text, starts, tags);
      for (unsigned mask = 0; mask < (1u << (text.size() - 1)); ++mask) {
        INFO(text << " starts " << starts << " mask " << mask);
        REQUIRE(streamed(text, starts, cuts_of_mask(text.size(), mask), tags) == want);
      }
    }
  }
}

TEST_CASE("streaming and non-streaming agree for every cut into up to 4 tokens (<think>)") {
  const char* texts[] = {"<think>ab</think>cd", "a</think>b</think>", "<th<think>x</think>", "<think>a</thinkx</think>y",
                         "</th</think>z", "<think>\nOk</think>\n\nThe"};
  for (const char* t : texts) {
    const std::string text = t;
    const std::size_t n = text.size();
    for (bool starts : {false, true}) {
      const split want = whole(text, starts);
      for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = a; b < n; ++b)
          for (std::size_t c = b; c < n; ++c) {
            std::vector<std::size_t> cuts;
            for (std::size_t x : {a, b, c})
              if (x > 0 && (cuts.empty() || cuts.back() != x)) cuts.push_back(x);
            INFO(text << " starts " << starts << " cuts " << a << "," << b << "," << c);
            REQUIRE(streamed(text, starts, cuts) == want);
          }
    }
  }
}

TEST_CASE("prompt_opens_reasoning looks at the last tags of the prompt") {
  CHECK(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  CHECK(!prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  CHECK(!prompt_opens_reasoning("no tags"));
  CHECK(prompt_opens_reasoning("<think>a</think> ... <think>"));
}
