// Regex pre-tokenizer: PCRE2 (8-bit, UTF, UCP, JIT) split steps with Hugging Face's
// split behaviors, the text transforms, and building a llama.cpp preset (presets.hpp).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/tokenizer/pretokenizer.hpp"

#include "text/tokenizer/presets.hpp"

#include <pcre2.h>

#include <algorithm>
#include <algorithm>
#include <mutex>
#include <utility>

namespace vks::text {

class compiled_regex {
 public:
  pcre2_code* code = nullptr;
  ~compiled_regex() { if (code) pcre2_code_free(code); }
};

namespace {

constexpr const char* k_gpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

result<std::shared_ptr<const compiled_regex>> compile(std::string_view pattern, bool literal) {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  // PCRE2_LITERAL refuses PCRE2_UCP (a literal has no classes for it to change).
  uint32_t flags = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  auto re = std::make_shared<compiled_regex>();
  re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &err,
                           &err_off, nullptr);
  if (!re->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return fail(errc::parse, "pre-tokenizer regex at offset " + std::to_string(err_off) + ": " +
                                 reinterpret_cast<const char*>(msg) + " in /" + std::string(pattern) + "/");
  }
  pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
  return std::shared_ptr<const compiled_regex>(std::move(re));
}

// Per-thread match data (ovector of one pair suffices: we only need the whole match).
pcre2_match_data* thread_match_data() {
  struct holder {
    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    ~holder() { pcre2_match_data_free(md); }
  };
  thread_local holder h;
  return h.md;
}

}  // namespace

namespace {
struct seg {
  uint32_t b, e;
  bool match;
};
void find_segments(const compiled_regex& re, std::string_view text, word_span w, std::vector<seg>& segs);
}  // namespace

result<std::shared_ptr<const compiled_regex>> compile_regex(std::string_view pattern) { return compile(pattern, false); }

std::string regex_replace_all(const compiled_regex& re, std::string_view text, std::string_view with) {
  std::vector<seg> segs;
  find_segments(re, text, word_span{0, static_cast<uint32_t>(text.size())}, segs);
  std::string out;
  out.reserve(text.size());
  for (const auto& g : segs) {
    if (g.match) out.append(with);
    else out.append(text.substr(g.b, g.e - g.b));
  }
  return out;
}

pretokenizer::pretokenizer() = default;
pretokenizer::~pretokenizer() = default;
pretokenizer::pretokenizer(pretokenizer&&) noexcept = default;
pretokenizer& pretokenizer::operator=(pretokenizer&&) noexcept = default;

bool pretokenizer::known_preset(std::string_view name) { return presets::find(name) != nullptr; }

result<pretokenizer> pretokenizer::preset(std::string_view name, preset_flags& flags) {
  const presets::row* row = presets::find(name);
  if (!row) return fail(errc::unsupported, "unknown pre-tokenizer '" + std::string(name) + "'");
  // Compiled once per process: vocabularies of one family share the immutable code.
  static std::mutex mu;
  static std::vector<std::pair<const char*, std::shared_ptr<const compiled_regex>>> cache;
  pretokenizer p;
  for (const char* re : row->regexes) {
    if (!re) break;
    std::shared_ptr<const compiled_regex> code;
    {
      std::lock_guard lock(mu);
      for (const auto& [k, v] : cache)
        if (k == re) code = v;
      if (!code) {
        auto c = compile(re, false);
        if (!c) return fail(std::move(c).error());
        code = *c;
        cache.emplace_back(re, code);
      }
    }
    p.steps_.push_back(step{std::move(code), split_behavior::isolated, false});
  }
  if (row->escape_spaces) p.metaspace = "\xE2\x96\x81";
  flags = preset_flags{row->ignore_merges, row->add_bos, row->byte_encode, row->gemma4, row->gemma4};
  return p;
}

result<void> pretokenizer::add_split(std::string_view pattern, split_behavior b, bool invert, bool literal) {
  auto re = compile(pattern, literal);
  if (!re) return fail(std::move(re).error());
  steps_.push_back(step{std::move(*re), b, invert});
  return ok();
}

result<void> pretokenizer::add_gpt2_split() { return add_split(k_gpt2, split_behavior::isolated, false); }

bool pretokenizer::empty() const { return steps_.empty() && !prefix_space && metaspace.empty(); }

std::string_view pretokenizer::split(std::string_view text, std::string& buf, std::vector<word_span>& words,
                                     bool first_fragment) const {
  std::string_view t = text;
  if (prefix_space && (t.empty() || t[0] != ' ')) {
    buf.assign(1, ' ');
    buf.append(t);
    t = buf;
  }
  if (!metaspace.empty()) {
    std::string out;
    out.reserve(t.size() + metaspace.size());
    if (metaspace_prepend && (first_fragment || !metaspace_first_only) && (t.empty() || t[0] != ' '))
      out += metaspace;
    for (char c : t) {
      if (c == ' ') out += metaspace; else out += c;
    }
    buf = std::move(out);
    t = buf;
  }
  std::vector<word_span> cur{word_span{0, static_cast<uint32_t>(t.size())}}, next;
  if (t.empty()) cur.clear();
  if (metaspace_split && !metaspace.empty()) {
    next.clear();
    uint32_t start = 0;
    for (size_t pos = t.find(metaspace, 1); pos != std::string_view::npos; pos = t.find(metaspace, pos + 1)) {
      next.push_back({start, static_cast<uint32_t>(pos)});
      start = static_cast<uint32_t>(pos);
    }
    if (start < t.size()) next.push_back({start, static_cast<uint32_t>(t.size())});
    cur.swap(next);
  }
  for (const auto& s : steps_) {
    next.clear();
    apply_step(s, t, cur, next);
    cur.swap(next);
  }
  words.insert(words.end(), cur.begin(), cur.end());
  return t;
}

namespace {

// Matches and gaps of one piece, in order; a zero-width match is an empty match segment.
void find_segments(const compiled_regex& re, std::string_view text, word_span w, std::vector<seg>& segs) {
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + w.begin);
  const uint32_t len = w.end - w.begin;
  uint32_t pos = 0;     // end of the last segment
  uint32_t search = 0;  // where the next match may start
  while (search <= len) {
    int rc = pcre2_match(re.code, subject, len, search, 0, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // the interpreter keeps its frames on the heap
      rc = pcre2_match(re.code, subject, len, search, PCRE2_NO_JIT, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    auto mb = static_cast<uint32_t>(ov[0]), me = static_cast<uint32_t>(ov[1]);
    if (mb < pos || me < mb) break;  // \K tricks: not used by any pre-tokenizer; stop safely
    if (mb > pos) segs.push_back({w.begin + pos, w.begin + mb, false});
    segs.push_back({w.begin + mb, w.begin + me, true});
    pos = me;
    if (me > mb) {
      search = me;
      continue;
    }
    if (mb >= len) break;  // empty match: move on by one character
    const auto lead = static_cast<unsigned char>(subject[mb]);
    const uint32_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    search = std::min(len, mb + n);
    if (search == mb) break;
  }
  if (pos < len) segs.push_back({w.begin + pos, w.end, false});
}

void push_nonempty(std::vector<word_span>& out, uint32_t b, uint32_t e) {
  if (e > b) out.push_back({b, e});
}

}  // namespace

// Splits each input span by the step's regex into match/gap segments and combines them
// according to the behavior (Hugging Face semantics); empty pieces are dropped.
void pretokenizer::apply_step(const step& s, std::string_view text, const std::vector<word_span>& in,
                              std::vector<word_span>& out) const {
  thread_local std::vector<seg> segs;
  std::vector<word_span> tmp;
  for (const word_span w : in) {
    segs.clear();
    find_segments(*s.re, text, w, segs);
    if (s.invert)
      for (auto& g : segs) g.match = !g.match;
    tmp.clear();
    switch (s.behavior) {
      case split_behavior::isolated:
        for (const auto& g : segs) tmp.push_back({g.b, g.e});
        break;
      case split_behavior::removed:
        for (const auto& g : segs)
          if (!g.match) tmp.push_back({g.b, g.e});
        break;
      case split_behavior::merged_with_previous: {
        bool prev_gap = false;
        for (const auto& g : segs) {
          if (g.match && prev_gap) tmp.back().end = g.e;
          else tmp.push_back({g.b, g.e});
          prev_gap = !g.match;
        }
        break;
      }
      case split_behavior::merged_with_next: {
        bool prev_match = false;
        for (const auto& g : segs) {
          if (!g.match && prev_match) tmp.back().end = g.e;
          else tmp.push_back({g.b, g.e});
          prev_match = g.match;
        }
        break;
      }
      case split_behavior::contiguous: {
        bool prev_match = false;
        for (const auto& g : segs) {
          if (g.match && prev_match) tmp.back().end = g.e;
          else tmp.push_back({g.b, g.e});
          prev_match = g.match;
        }
        break;
      }
    }
    for (const auto& x : tmp) push_nonempty(out, x.begin, x.end);
  }
}

}  // namespace vks::text
