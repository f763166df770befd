// Structural tags to a grammar (structural_tag.hpp): the triggers' automaton over code
// points, its free-text states as rules, then one dispatch rule per state that completes
// a trigger.
#include "text/grammar/structural_tag.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "base/utf8.hpp"

namespace vks::text::grammar {

namespace {

// The code points of s; nullopt when s is not valid UTF-8.
std::optional<std::vector<char32_t>> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8::decode(s.substr(i), cp);
    if (n == 0) return std::nullopt;
    out.push_back(cp);
    i += n;
  }
  return out;
}

// Aho-Corasick automaton of the triggers. State 0 is the empty prefix; a state whose
// `ends` is non-empty has just completed those triggers (its own and, through the
// failure links, its suffixes').
class trigger_automaton {
 public:
  struct state {
    std::map<char32_t, std::uint32_t> edges;  // trie edges
    std::uint32_t fail = 0;
    std::vector<std::size_t> ends;            // indices into the triggers
  };

  explicit trigger_automaton(const std::vector<std::vector<char32_t>>& triggers) {
    states_.emplace_back();
    for (std::size_t i = 0; i < triggers.size(); ++i) {
      std::uint32_t q = 0;
      for (char32_t c : triggers[i]) {
        auto it = states_[q].edges.find(c);
        if (it == states_[q].edges.end()) {
          states_.emplace_back();
          it = states_[q].edges.emplace(c, static_cast<std::uint32_t>(states_.size() - 1)).first;
        }
        q = it->second;
        alphabet_.push_back(c);
      }
      states_[q].ends.push_back(i);
    }
    std::sort(alphabet_.begin(), alphabet_.end());
    alphabet_.erase(std::unique(alphabet_.begin(), alphabet_.end()), alphabet_.end());
    link();
  }

  // The state after reading c in state q (q must not have completed a trigger).
  std::uint32_t step(std::uint32_t q, char32_t c) const {
    for (;;) {
      if (auto it = states_[q].edges.find(c); it != states_[q].edges.end()) return it->second;
      if (q == 0) return 0;
      q = states_[q].fail;
    }
  }

  const std::vector<state>& states() const { return states_; }
  const std::vector<char32_t>& alphabet() const { return alphabet_; }  // sorted, distinct

 private:
  // Failure links breadth first; a state inherits the completed triggers of its link.
  void link() {
    std::vector<std::uint32_t> queue;
    for (const auto& [c, t] : states_[0].edges) queue.push_back(t);
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const std::uint32_t q = queue[head];
      for (const auto& [c, t] : states_[q].edges) {
        states_[t].fail = q == 0 ? 0 : step(states_[q].fail, c);  // shallower: linked already
        const auto& inherited = states_[states_[t].fail].ends;
        states_[t].ends.insert(states_[t].ends.end(), inherited.begin(), inherited.end());
        queue.push_back(t);
      }
    }
  }

  std::vector<state> states_;
  std::vector<char32_t> alphabet_;
};

class tag_compiler {
 public:
  tag_compiler(const structural_tag& tag, const json_grammar_options& opt) : tag_(tag), opt_(opt) {}

  result<grammar> run() {
    std::vector<std::vector<char32_t>> triggers;
    for (const auto& t : tag_.triggers) triggers.push_back(*code_points(t));  // validate() checked them
    const trigger_automaton ac(triggers);
    if (ac.states().size() * std::max<std::size_t>(ac.alphabet().size(), 1) > k_max_trigger_table)
      return fail(errc::invalid_argument, "structural tag is too large: its trigger automaton has over " +
                                              std::to_string(k_max_trigger_table) + " transitions",
                  "triggers");
    auto dispatch = structures_by_trigger();
    if (!dispatch) return fail(std::move(dispatch).error());
    const auto& states = ac.states();
    // One free-text rule per state that has not completed a trigger; one dispatch rule
    // per state that has and leads somewhere.
    std::vector<std::optional<std::uint32_t>> text(states.size()), entry(states.size());
    for (std::size_t q = 0; q < states.size(); ++q) {
      if (states[q].ends.empty()) {
        text[q] = b_.fresh("text");
        continue;
      }
      std::vector<sequence> alts;
      for (std::size_t t : states[q].ends)
        for (const auto& a : (*dispatch)[t]) alts.push_back(a);
      if (!alts.empty()) entry[q] = b_.fresh("structure");
      for (auto& a : alts) {
        a.push_back(element::ref(*text[0]));
        b_.add_alt(*entry[q], std::move(a));
      }
    }
    for (std::size_t q = 0; q < states.size(); ++q)
      if (text[q]) free_text(ac, static_cast<std::uint32_t>(q), text, entry);
    // The prefix's state (validate() checked that it completes no trigger).
    std::uint32_t start = 0;
    const auto prefix = code_points(tag_.prefix);  // named: a range-for over *temporary would dangle
    for (char32_t c : *prefix) start = ac.step(start, c);
    const std::uint32_t root = b_.rule_id("root");
    b_.add_alt(root, {element::ref(*text[start])});
    return std::move(b_).finish(root);
  }

 private:
  // Per trigger: the sequences that finish each structure it starts (the rest of begin,
  // the document, end), without the free text that follows.
  result<std::vector<std::vector<sequence>>> structures_by_trigger() {
    std::vector<std::vector<sequence>> out(tag_.triggers.size());
    for (std::size_t i = 0; i < tag_.structures.size(); ++i) {
      const auto& s = tag_.structures[i];
      std::size_t t = 0;
      while (!s.begin.starts_with(tag_.triggers[t])) ++t;  // validate() found one
      auto doc = s.body ? s.body(b_, opt_) : add_json_schema(b_, s.schema, opt_);
      const std::string name = "structures[" + std::to_string(i) + "].schema";
      if (!doc) return fail(errc::invalid_argument, name + ": " + doc.error().message, name);
      sequence seq;
      builder::append_literal(seq, std::string_view(s.begin).substr(tag_.triggers[t].size()));
      seq.push_back(*doc);
      builder::append_literal(seq, s.end);
      out[t].push_back(std::move(seq));
    }
    return out;
  }

  // text_q ::= "" | c text_step(q,c) | c structure_step(q,c) | other text_0, with the
  // code points of the triggers grouped by the state they lead to.
  void free_text(const trigger_automaton& ac, std::uint32_t q, const std::vector<std::optional<std::uint32_t>>& text,
                 const std::vector<std::optional<std::uint32_t>>& entry) {
    const std::uint32_t rule = *text[q];
    b_.add_alt(rule, {});
    std::map<std::uint32_t, std::vector<char_range>> by_target;  // rule -> code points
    for (char32_t c : ac.alphabet()) {
      const std::uint32_t t = ac.step(q, c);
      const auto& target = text[t] ? text[t] : entry[t];
      if (target) by_target[*target].push_back({c, c});  // none: a trigger with no structure
    }
    for (auto& [target, ranges] : by_target)
      b_.add_alt(rule, {element::chars(std::move(ranges)), element::ref(target)});
    std::vector<char_range> known;
    for (char32_t c : ac.alphabet()) known.push_back({c, c});
    b_.add_alt(rule, {element::chars(std::move(known), true), element::ref(*text[0])});
  }

  const structural_tag& tag_;
  json_grammar_options opt_;
  builder b_;
};

}  // namespace

result<void> validate(const structural_tag& tag) {
  // Sizes first: what follows is quadratic in them.
  std::size_t n_chars = 0;
  for (const auto& t : tag.triggers) n_chars += t.size();  // bytes >= code points
  if (n_chars > 4 * k_max_trigger_chars)
    return fail(errc::invalid_argument,
                "structural tag is too large: triggers over " + std::to_string(k_max_trigger_chars) + " characters",
                "triggers");
  n_chars = 0;
  for (const auto& t : tag.triggers) n_chars += code_points(t).value_or(std::vector<char32_t>{}).size();
  if (n_chars > k_max_trigger_chars)
    return fail(errc::invalid_argument,
                "structural tag is too large: triggers over " + std::to_string(k_max_trigger_chars) + " characters",
                "triggers");
  if (tag.structures.size() > k_max_structures)
    return fail(errc::invalid_argument,
                "structural tag is too large: over " + std::to_string(k_max_structures) + " structures",
                "structures");
  for (std::size_t i = 0; i < tag.triggers.size(); ++i) {
    const std::string name = "triggers[" + std::to_string(i) + "]";
    if (tag.triggers[i].empty()) return fail(errc::invalid_argument, name + " must not be empty", name);
    if (!code_points(tag.triggers[i])) return fail(errc::invalid_argument, name + " is not valid UTF-8", name);
    for (std::size_t j = 0; j < tag.triggers.size(); ++j)
      if (j != i && tag.triggers[j].starts_with(tag.triggers[i]))
        return fail(errc::invalid_argument,
                    name + " `" + tag.triggers[i] + "` is a prefix of triggers[" + std::to_string(j) + "] `" +
                        tag.triggers[j] + "`",
                    name);
  }
  for (std::size_t i = 0; i < tag.structures.size(); ++i) {
    const auto& s = tag.structures[i];
    const std::string name = "structures[" + std::to_string(i) + "]";
    for (const auto& [text, field] : {std::pair{&s.begin, ".begin"}, std::pair{&s.end, ".end"}})
      if (!code_points(*text))
        return fail(errc::invalid_argument, name + field + " is not valid UTF-8", name + field);
    const bool started = std::any_of(tag.triggers.begin(), tag.triggers.end(),
                                     [&](const std::string& t) { return s.begin.starts_with(t); });
    if (!started)
      return fail(errc::invalid_argument, name + ".begin `" + s.begin + "` does not start with any of the triggers",
                  name + ".begin");
  }
  if (tag.prefix.size() > 4 * k_max_trigger_chars || !code_points(tag.prefix))
    return fail(errc::invalid_argument, "prefix is not valid UTF-8 or is too long", "prefix");
  for (const auto& t : tag.triggers)
    if (tag.prefix.find(t) != std::string::npos)
      return fail(errc::invalid_argument, "prefix contains the trigger `" + t + "`", "prefix");
  return ok();
}

result<grammar> compile_structural_tag(const structural_tag& tag, const json_grammar_options& opt) {
  VKS_TRY(validate(tag));
  return tag_compiler(tag, opt).run();
}

}  // namespace vks::text::grammar
