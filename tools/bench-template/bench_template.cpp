// bench-template: microseconds per chat-template render of a 20-turn conversation with
// tools (system + 19 user/assistant/tool turns incl. tool calls), single thread.
// usage: bench-template [TEMPLATE (.jinja/.json/.gguf/dir)] [ITERATIONS]
//        bench-template --dump-request   (prints the conversation as a chat request; the
//                                         Python Jinja2 peer, tools/bench-template-peer, renders it)
// Default template: $VKS_SHARED/models/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja.
// Prints one JSON object per template (machine-readable).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "text/jinja/chat_template.hpp"
#include "text/jinja/template_source.hpp"

using json = nlohmann::ordered_json;

static json conversation() {
  json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
       "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search_web", "description": "Search the web.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"},
       "max_results": {"type": "integer", "default": 5}}, "required": ["query"]}}}])");
  json msgs = json::array();
  msgs.push_back({{"role", "system"}, {"content", "You are a helpful assistant that can call tools."}});
  for (int turn = 0; msgs.size() < 20; ++turn) {
    std::string city = "City" + std::to_string(turn);
    msgs.push_back({{"role", "user"}, {"content", "What is the weather like in " + city + " today? Please be brief."}});
    if (msgs.size() >= 20) break;
    if (turn % 2 == 0) {
      json call = {{"id", "call" + std::to_string(turn)}, {"type", "function"},
                   {"function", {{"name", "get_weather"}, {"arguments", {{"city", city}, {"unit", "celsius"}}}}}};
      msgs.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array({call})}});
      if (msgs.size() >= 20) break;
      msgs.push_back({{"role", "tool"}, {"tool_call_id", "call" + std::to_string(turn)}, {"name", "get_weather"},
                      {"content", "{\"temperature\": 21, \"condition\": \"sunny\"}"}});
      if (msgs.size() >= 20) break;
    }
    msgs.push_back({{"role", "assistant"}, {"content", "It is 21 degrees and sunny in " + city + "."}});
  }
  return {{"messages", msgs}, {"tools", tools}, {"add_generation_prompt", true},
          {"bos_token", "<s>"}, {"eos_token", "</s>"}};
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--dump-request") {
    std::printf("%s\n", conversation().dump().c_str());
    return 0;
  }
  const char* shared = std::getenv("VKS_SHARED");
  std::string path = argc > 1 ? argv[1]
                              : std::string(shared ? shared : "../shared") + "/models/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja";
  int iters = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2000;
  auto src = vks::text::jinja::load_template_source(path);
  if (!src) {
    std::fprintf(stderr, "bench-template: %s\n", src.error().message.c_str());
    return 1;
  }
  auto tmpl = vks::text::jinja::chat_template::parse(*src);
  if (!tmpl) {
    std::fprintf(stderr, "bench-template: %s\n", tmpl.error().message.c_str());
    return 1;
  }
  auto inputs = vks::text::jinja::inputs_from_request(conversation());
  json ctx = vks::text::jinja::build_context(*inputs);
  auto first = tmpl->render(ctx);
  if (!first) {
    std::fprintf(stderr, "bench-template: %s\n", first.error().message.c_str());
    return 1;
  }
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(iters));
  std::size_t sink = 0;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = tmpl->render(ctx);
    auto t1 = std::chrono::steady_clock::now();
    sink += r ? r->size() : 0;
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  std::printf("{\"template\": \"%s\", \"messages\": %zu, \"prompt_bytes\": %zu, \"renders\": %d, "
              "\"us_per_render_mean\": %.1f, \"us_p50\": %.1f, \"us_p99\": %.1f, \"checksum\": %zu}\n",
              path.substr(path.find_last_of('/') + 1).c_str(), ctx["messages"].size(), first->size(), iters,
              sum / iters, us[us.size() / 2], us[us.size() * 99 / 100], sink);
  return 0;
}
