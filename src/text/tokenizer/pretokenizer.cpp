// Regex pre-tokenizer: PCRE2 (8-bit, UTF, UCP, JIT) split steps and the table of
// llama.cpp `tokenizer.ggml.pre` presets. The preset regexes are the published ones of
// each model family's tokenizer (they are data, written once here).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/tokenizer/pretokenizer.hpp"

#include <pcre2.h>

#include <algorithm>
#include <array>
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
constexpr const char* k_llama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_qwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_gpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_tekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_bloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
constexpr const char* k_falcon_punct = R"([\p{P}\$\+<=>\^~\|`]+)";
constexpr const char* k_gpt2_nows = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* k_digit = R"(\p{N})";
constexpr const char* k_digits3 = R"([0-9][0-9][0-9])";
constexpr const char* k_deepseek_v3_cjk = R"([一-龥぀-ゟ゠-ヿ]+)";
constexpr const char* k_deepseek_v3_main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_deepseek_coder_cjk = R"([一-龥ࠀ-一가-퟿]+)";

struct preset_row {
  std::array<const char*, 8> names;  // nullptr-terminated aliases
  std::array<const char*, 4> regexes;
  bool ignore_merges;
};

// One row per regex family; names are llama.cpp's `tokenizer.ggml.pre` values.
const preset_row k_presets[] = {
    {{"gpt-2", "mpt", "olmo", "jais", "trillion", "gpt2", nullptr}, {k_gpt2}, false},
    {{"llama3", "llama-v3", "llama-bpe", "dbrx", "smaug-bpe", "falcon3", "pixtral", nullptr}, {k_llama3}, true},
    {{"chatglm-bpe", "midm-2.0", nullptr}, {k_llama3}, false},
    {{"qwen2", "stablelm2", "hunyuan", "megrez", "qwen35", nullptr}, {k_qwen2}, false},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", nullptr},
     {k_digit, k_gpt2}, false},
    {{"falcon", nullptr}, {k_falcon_punct, k_gpt2_nows, k_digits3}, false},
    {{"default", nullptr}, {k_falcon_punct, k_gpt2_nows, R"(\p{N}+)", k_digits3}, false},
    {{"poro-chat", "bloom", "gpt3-finnish", nullptr}, {k_bloom}, false},
    {{"viking", nullptr}, {k_bloom, k_digit}, false},
    {{"tekken", nullptr}, {k_tekken}, false},
    {{"gpt-4o", "llama4", nullptr}, {k_gpt4o}, false},
    {{"deepseek-coder", nullptr}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", k_deepseek_coder_cjk}, false},
    {{"deepseek-v3", nullptr}, {R"(\p{N}{1,3})", k_deepseek_v3_cjk, k_deepseek_v3_main}, false},
};

const preset_row* find_preset(std::string_view name) {
  for (const auto& row : k_presets)
    for (const char* n : row.names)
      if (n && name == n) return &row;
  return nullptr;
}

result<std::shared_ptr<const compiled_regex>> compile(std::string_view pattern, bool literal) {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  uint32_t flags = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : 0u);
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

pretokenizer::pretokenizer() = default;
pretokenizer::~pretokenizer() = default;
pretokenizer::pretokenizer(pretokenizer&&) noexcept = default;
pretokenizer& pretokenizer::operator=(pretokenizer&&) noexcept = default;

bool pretokenizer::known_preset(std::string_view name) { return find_preset(name) != nullptr; }

result<pretokenizer> pretokenizer::preset(std::string_view name, bool& ignore_merges) {
  const preset_row* row = find_preset(name);
  if (!row) return fail(errc::unsupported, "unknown pre-tokenizer '" + std::string(name) + "'");
  pretokenizer p;
  for (const char* re : row->regexes)
    if (re) VKS_TRY(p.add_split(re, split_behavior::isolated, false));
  ignore_merges = row->ignore_merges;
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

std::string_view pretokenizer::split(std::string_view text, std::string& buf,
                                     std::vector<word_span>& words) const {
  std::string_view t = text;
  if (prefix_space && (t.empty() || t[0] != ' ')) {
    buf.assign(1, ' ');
    buf.append(t);
    t = buf;
  }
  if (!metaspace.empty()) {
    std::string out;
    out.reserve(t.size() + metaspace.size());
    if (metaspace_prepend && (t.empty() || t[0] != ' ')) out += metaspace;
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

// Splits each input span by the step's regex into match/gap segments and combines them
// according to the behavior (Hugging Face semantics).
void pretokenizer::apply_step(const step& s, std::string_view text, const std::vector<word_span>& in,
                              std::vector<word_span>& out) const {
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  struct seg { uint32_t b, e; bool match; };
  std::vector<seg> segs;
  for (const word_span w : in) {
    segs.clear();
    uint32_t pos = w.begin;
    while (pos < w.end) {
      int rc = pcre2_match(s.re->code, subject, w.end, pos, 0, md, nullptr);
      if (rc < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      auto mb = static_cast<uint32_t>(ov[0]), me = static_cast<uint32_t>(ov[1]);
      if (me == mb) {  // empty match: step over one byte (never loops forever)
        if (mb >= w.end) break;
        pos = mb + 1;
        continue;
      }
      if (mb > pos) segs.push_back({pos, mb, false});
      segs.push_back({mb, me, true});
      pos = me;
    }
    if (pos < w.end) segs.push_back({pos, w.end, false});
    if (s.invert)
      for (auto& g : segs) g.match = !g.match;
    switch (s.behavior) {
      case split_behavior::isolated:
        for (const auto& g : segs) out.push_back({g.b, g.e});
        break;
      case split_behavior::removed:
        for (const auto& g : segs)
          if (!g.match) out.push_back({g.b, g.e});
        break;
      case split_behavior::merged_with_previous: {
        bool prev_gap = false;
        for (const auto& g : segs) {
          if (g.match && prev_gap) out.back().end = g.e;
          else out.push_back({g.b, g.e});
          prev_gap = !g.match;
        }
        break;
      }
      case split_behavior::merged_with_next: {
        bool prev_match = false;
        for (const auto& g : segs) {
          if (!g.match && prev_match) out.back().end = g.e;
          else out.push_back({g.b, g.e});
          prev_match = g.match;
        }
        break;
      }
      case split_behavior::contiguous: {
        bool prev_match = false;
        for (const auto& g : segs) {
          if (g.match && prev_match) out.back().end = g.e;
          else out.push_back({g.b, g.e});
          prev_match = g.match;
        }
        break;
      }
    }
  }
}

}  // namespace vks::text
