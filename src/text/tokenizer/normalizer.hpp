// Text normalization before pre-tokenization (Hugging Face `normalizer`): Unicode forms
// via utf8proc, Prepend, Replace (string or regex), Lowercase, Strip (Unicode
// whitespace, as HF), as a sequence. Immutable after
// loading; apply() is const and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vks::text {

class compiled_regex;  // pretokenizer.hpp

class normalizer {
 public:
  enum class op { nfc, nfd, nfkc, nfkd, prepend, replace, lowercase, strip };
  struct step {
    op kind = op::nfc;
    std::string a, b;  // prepend: a; replace: a -> b (literal strings)
    bool left = true, right = true;  // strip
    std::shared_ptr<const compiled_regex> re;  // replace: the pattern is this regex (not a)
  };

  void add(step s) { steps_.push_back(std::move(s)); }
  bool empty() const { return steps_.empty(); }
  // Returns the normalized text (in `buf`, or `in` itself when nothing changes). Invalid
  // UTF-8 is left as is by the Unicode-form steps.
  std::string_view apply(std::string_view in, std::string& buf) const;

 private:
  std::vector<step> steps_;
};

}  // namespace vks::text
