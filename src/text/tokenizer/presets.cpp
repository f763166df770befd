// The table of llama.cpp `tokenizer.ggml.pre` names: for each, the split regexes applied one
// after another (each piece of one step is split by the next), and the loader flags llama.cpp
// sets with it (ignore_merges, add_bos default, raw-UTF-8 BPE with '▁' for spaces). The
// regexes are each family's published pre-tokenizer (tokenizer.json) in PCRE2 syntax; where
// llama.cpp rewrote one for std::regex, the original is used (PCRE2 has the Unicode classes).
#include "text/tokenizer/presets.hpp"

namespace vks::text::presets {

namespace {

// GPT-2 / HF ByteLevel(use_regex).
constexpr const char* k_gpt2 =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
constexpr const char* k_gpt2_nows = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr const char* k_llama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_jais2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re";
constexpr const char* k_minicpm5 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_qwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_qwen35 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_ufakzeka = R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_gpt4o =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_tekken =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_youtu_main =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_youtu_cjk = R"re([가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+)re";
// llama.cpp's own definition (no tokenizer.json original): the GPT-4o lookahead form with \p{M}.
constexpr const char* k_granite_emb =
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Kimi K2 (tiktoken pattern; PCRE2 10.42 has no class intersection, so [X&&[^\p{Han}]] is
// written (?:(?!\p{Han})[X])).
constexpr const char* k_kimi_k2 =
    R"re(\p{Han}+|[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])*(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])+(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_bailingmoe =
    R"re('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr const char* k_seed_coder =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_exaone_moe =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr const char* k_bloom = R"re( ?[^(\s|.,!?…。，、।۔،)]+)re";
constexpr const char* k_falcon_punct = R"re([\p{P}\$\+<=>\^~\|`]+)re";
constexpr const char* k_default_punct = R"re([\p{P}\$\+<=>\^~\|]+)re";
constexpr const char* k_deepseek_main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* k_spark_main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)re";
constexpr const char* k_cjk_kana = R"re([一-龥぀-ゟ゠-ヿ]+)re";
constexpr const char* k_cjk_hangul = R"re([一-龥ࠀ-一가-퟿]+)re";
constexpr const char* k_afmoe_cjk = R"re([一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+)re";
// AFMoE digits: a run of digits splits into its first (length mod 3) digits, then threes.
constexpr const char* k_afmoe_digits = R"re(\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})))re";
constexpr const char* k_deepseek_llm_letters = R"re(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)re";
constexpr const char* k_deepseek_llm_punct = R"re(\s?[!-/:-~！-／：-～‘-‟　-。]+)re";
constexpr const char* k_lines = R"re([^\n]+|[\n]+)re";
constexpr const char* k_digit = R"re(\p{N})re";
constexpr const char* k_digits = R"re(\p{N}+)re";
constexpr const char* k_digits3 = R"re(\p{N}{1,3})re";

constexpr bool IM = true;  // ignore_merges
constexpr bool BOS = true; // add_bos default

const row k_rows[] = {
    {{"default"}, {k_default_punct, k_gpt2_nows, k_digits, "[0-9][0-9][0-9]"}},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
     {k_llama3}, IM, BOS},
    {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {k_llama3}},
    {{"jais-2"}, {k_jais2}},
    {{"minicpm5"}, {k_digits3, k_minicpm5}, IM},
    {{"deepseek-llm"},
     {"[\r\n]", k_deepseek_llm_letters, k_deepseek_llm_punct, R"re(\s+$)re", k_cjk_hangul, k_digits}},
    {{"deepseek-coder"}, {"[\r\n]", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", k_cjk_hangul, k_digit}},
    {{"deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"}, {k_digits3, k_cjk_kana, k_deepseek_main}},
    {{"spark2_5"}, {k_digits3, k_cjk_kana, k_spark_main, k_digit}},
    {{"youtu"}, {k_youtu_cjk, k_youtu_main}, IM},
    {{"falcon"}, {k_falcon_punct, k_gpt2_nows, "[0-9][0-9][0-9]"}},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"}, {k_digit, k_gpt2}},
    {{"gpt-2", "gpt2", "mpt", "olmo", "jais", "trillion", "granite-docling", "phi-2", "jina-es", "jina-de",
      "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jina-v1-en", "jina-v2-code",
      "roberta-bpe", "exaone4"},
     {k_gpt2}},
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "megrez", "solar-open", "grok-2"},
     {k_qwen2}},
    {{"qwen35"}, {k_qwen35}},
    {{"ufakzeka"}, {k_ufakzeka}},
    {{"poro-chat", "bloom", "gpt3-finnish"}, {k_bloom}},
    {{"viking"}, {k_bloom, k_digit}},
    {{"tekken"}, {k_tekken}, IM, BOS},
    {{"chameleon"},
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", R"re(([\t\n]|    |  ))re", k_digit,
      R"re([\p{P}!-/:-@\[-`{-~])re", k_gpt2_nows},
     false, BOS},
    {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {k_gpt4o}},
    {{"granite-embed-multi-97m"}, {k_granite_emb}, IM},
    {{"tiny_aya", "cohere2moe"}, {R"re(\d{1,3}(?=(?:\d{3})*\b))re", k_gpt4o}},
    {{"kimi-k2"}, {k_kimi_k2}},
    {{"superbpe"}, {k_digits, R"re((?=(\d{3})+(?!\d)))re"}},
    {{"bailingmoe", "bailingmoe2", "llada-moe"}, {k_bailingmoe}},
    {{"seed-coder"}, {k_seed_coder}},
    {{"afmoe"}, {k_afmoe_digits, k_afmoe_cjk, k_deepseek_main}},
    {{"laguna"}, {k_lines, k_qwen2}},
    {{"exaone-moe"}, {k_exaone_moe}},
    {{"gemma4", "granite-embed-multi-311m"}, {k_lines}, false, BOS, false, true, true},
    {{"sarvam-moe"}, {k_lines}, false, false, false, true},
    {{"whitespace"}, {R"re(\S+)re"}, false, false, false},
};

}  // namespace

const row* find(std::string_view name) {
  for (const auto& r : k_rows)
    for (const char* n : r.names)
      if (n && name == n) return &r;
  return nullptr;
}

std::vector<std::string_view> names() {
  std::vector<std::string_view> out;
  for (const auto& r : k_rows)
    for (const char* n : r.names)
      if (n) out.emplace_back(n);
  return out;
}

}  // namespace vks::text::presets
