// --metrics-prefix: the engine's Prometheus families copied under another prefix.
#include "server/metrics_names.hpp"

namespace vks::server {
namespace {

constexpr std::string_view k_own = "vkserve:";

// Appends `line` with its metric name (after "# HELP ", "# TYPE " or at the start) renamed
// from vkserve:<rest> to <prefix>:<rest>; lines of other names are skipped.
void renamed(std::string& out, std::string_view line, std::string_view prefix, std::string_view rest_from,
             std::string_view rest_to) {
  std::size_t at = 0;
  if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) at = 7;
  else if (line.starts_with("#")) return;
  if (line.substr(at, k_own.size()) != k_own) return;
  std::string_view rest = line.substr(at + k_own.size());
  if (!rest_from.empty()) {
    if (!rest.starts_with(rest_from)) return;
    const char next = rest.size() > rest_from.size() ? rest[rest_from.size()] : ' ';
    if (next != ' ' && next != '{') return;  // the family itself, not a longer name
    out.append(line.substr(0, at)).append(prefix).append(":").append(rest_to).append(rest.substr(rest_from.size()));
  } else {
    out.append(line.substr(0, at)).append(prefix).append(":").append(rest);
  }
  out += '\n';
}

void each_line(std::string_view text, auto&& fn) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

}  // namespace

std::string cache_config_info(int block_size, int n_blocks) {
  return "# HELP vkserve:cache_config_info KV cache configuration (labels; value 1).\n"
         "# TYPE vkserve:cache_config_info gauge\n"
         "vkserve:cache_config_info{block_size=\"" + std::to_string(block_size) + "\",num_gpu_blocks=\"" +
         std::to_string(n_blocks) + "\"} 1\n";
}

std::string republish_metrics(std::string_view text, std::string_view prefix) {
  std::string out;
  if (prefix.empty()) return out;
  out.reserve(text.size() + 256);
  each_line(text, [&](std::string_view line) { renamed(out, line, prefix, {}, {}); });
  if (prefix == "vllm")  // the name vLLM used before kv_cache_usage_perc (older pickers read it)
    each_line(text, [&](std::string_view line) {
      renamed(out, line, prefix, "kv_cache_usage_perc", "gpu_cache_usage_perc");
    });
  return out;
}

}  // namespace vks::server
