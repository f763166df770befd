// Content blocks from a choice's text (content_blocks.hpp).
#include "api/content_blocks.hpp"

#include <algorithm>

#include "api/json_parse.hpp"
#include "api/response_common.hpp"

namespace vks::api {
namespace {

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// Length of the UTF-8 character starting at s[0] (1 for a stray byte).
std::size_t char_len(std::string_view s) {
  const auto c = static_cast<unsigned char>(s[0]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  return std::min(n, s.size());
}

}  // namespace

json tool_input_object(std::string_view arguments) {
  json a = parse_json_or_discarded(arguments);
  return a.is_object() ? a : json::object();
}

void content_blocks::close(std::vector<op>& out) {
  if (!open_) return;
  out.push_back({op::what::stop, n_blocks_ - 1, *open_, {}, {}, {}});
  open_.reset();
}

void content_blocks::add(kind k, std::string_view text, std::vector<op>& out) {
  if (text.empty()) return;
  if (k == kind::text && open_ != kind::text) {
    if (blank(text)) {  // wait: a text block starts at non-blank text
      blank_ += text;
      return;
    }
    std::string joined = std::move(blank_) + std::string(text);
    blank_.clear();
    close(out);
    open_ = kind::text;
    out.push_back({op::what::start, n_blocks_++, kind::text, {}, {}, {}});
    out.push_back({op::what::delta, n_blocks_ - 1, kind::text, std::move(joined), {}, {}});
    return;
  }
  blank_.clear();
  if (open_ != k) {
    close(out);
    open_ = k;
    out.push_back({op::what::start, n_blocks_++, k, {}, {}, {}});
  }
  out.push_back({op::what::delta, n_blocks_ - 1, k, std::string(text), {}, {}});
}

void content_blocks::add_call(const tool_call& c, std::vector<op>& out) {
  blank_.clear();
  close(out);
  any_tool_use_ = true;
  const int index = n_blocks_++;
  out.push_back({op::what::start, index, kind::tool_use, {}, random_uuid_hex().substr(0, 24), c.name});
  out.push_back({op::what::delta, index, kind::tool_use, dump_json(tool_input_object(c.arguments)), {}, {}});
  out.push_back({op::what::stop, index, kind::tool_use, {}, {}, {}});
}

void content_blocks::apply(choice_text::delta d, std::vector<op>& out) {
  add(kind::thinking, d.reasoning, out);
  add(kind::text, d.content, out);
  for (const auto& c : d.calls) add_call(c, out);
}

void content_blocks::push(std::string_view piece, std::vector<op>& out) {
  if (!tools_) return apply(text_.push(piece), out);
  choice_text before = text_;  // to replay a piece that mixes text and calls
  auto d = text_.push(piece);
  if (d.calls.empty() || d.content.empty() || piece.size() <= 1) return apply(std::move(d), out);
  text_ = std::move(before);
  while (!piece.empty()) {
    const std::size_t n = char_len(piece);
    apply(text_.push(piece.substr(0, n)), out);
    piece.remove_prefix(n);
  }
}

void content_blocks::finish(std::vector<op>& out) {
  apply(text_.flush(), out);
  blank_.clear();
  close(out);
}

}  // namespace vks::api
