// chat_template: the boundary of the Jinja engine. Engine-internal template_error and
// library exceptions are converted to vks::error values here and never escape.
#include "text/jinja/chat_template.hpp"

#include <cstdlib>
#include <ctime>

#include "text/jinja/interpreter.hpp"
#include "text/jinja/lexer.hpp"
#include "text/jinja/parser.hpp"

namespace vks::text::jinja {

struct compiled_template {
  std::string original;
  std::string source;  // normalised (what offsets refer to)
  body tree;
};

namespace {

std::int64_t parse_fixed_now(const char* s) {
  if (!s || !*s) return -1;
  std::string v(s);
  if (v.find('-') == std::string::npos) {
    try {
      return std::stoll(v);
    } catch (...) {
      return -1;
    }
  }
  std::tm tm{};
  int n = std::sscanf(v.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec);
  if (n < 3) return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<std::int64_t>(timegm(&tm));
}

std::string where(const template_error& e) {
  if (e.line <= 0) return "";
  return " at line " + std::to_string(e.line) + ", column " + std::to_string(e.col);
}

}  // namespace

result<chat_template> chat_template::parse(std::string source) {
  try {
    auto c = std::make_shared<compiled_template>();
    c->source = normalise_source(source);
    c->original = std::move(source);
    std::vector<token> toks = lex(c->source);
    c->tree = parse_template(c->source, toks);
    chat_template t;
    t.impl_ = std::move(c);
    t.fixed_now_ = parse_fixed_now(std::getenv("VKS_FIXED_NOW"));
    return t;
  } catch (const template_error& e) {
    return fail(errc::parse, "chat template parse error" + where(e) + ": " + e.message);
  } catch (const std::exception& e) {
    return fail(errc::parse, std::string("chat template parse error: ") + e.what());
  }
}

void chat_template::set_fixed_now(std::int64_t epoch_seconds) { fixed_now_ = epoch_seconds; }

const std::string& chat_template::source() const {
  VKS_ASSERT(impl_, "chat_template used before parse()");
  return impl_->original;
}

result<std::string> chat_template::render(const nlohmann::ordered_json& context, const render_limits& lim,
                                          render_stats* stats) const {
  VKS_ASSERT(impl_, "chat_template used before parse()");
  if (!context.is_object()) return fail(errc::invalid_argument, "chat template context must be a JSON object");
  render_limits limits = lim;
  limits.fixed_now = fixed_now_;
  try {
    // Declared first: destroyed last, after every value of the render (it breaks namespace
    // cycles); the scope makes it the budget that value construction charges.
    render_budget budget(limits);
    budget_scope installed(budget);
    interpreter in(impl_->source, budget);
    scope globals;
    add_globals(in, globals);
    scope vars{&globals, {}};
    vars.vars.reserve(context.size());
    budget.set_charging(false);  // the request's own data is bounded by the request limits
    for (auto it = context.begin(); it != context.end(); ++it) vars.set(it.key(), value::from_json(it.value()));
    budget.set_charging(true);
    std::string out = in.render(impl_->tree, vars);
    if (stats) *stats = {budget.steps(), budget.bytes()};
    return out;
  } catch (const template_error& e) {
    if (e.raised) return fail(errc::invalid_argument, e.message);
    if (e.budget) return fail(errc::invalid_argument, e.message + where(e));
    return fail(errc::invalid_argument, "chat template error" + where(e) + ": " + e.message);
  } catch (const std::bad_alloc&) {
    return fail(errc::out_of_memory, "chat template rendering ran out of memory");
  } catch (const std::exception& e) {
    return fail(errc::invalid_argument, std::string("chat template error: ") + e.what());
  }
}

nlohmann::ordered_json build_context(const chat_inputs& in) {
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = in.messages;
  ctx["tools"] = in.tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = in.add_generation_prompt;
  ctx["bos_token"] = in.bos_token;
  ctx["eos_token"] = in.eos_token;
  if (in.kwargs.is_object())
    for (auto it = in.kwargs.begin(); it != in.kwargs.end(); ++it) ctx[it.key()] = it.value();
  return ctx;
}

result<chat_inputs> inputs_from_request(const nlohmann::ordered_json& request) {
  if (!request.is_object()) return fail(errc::invalid_argument, "request must be a JSON object");
  chat_inputs in;
  for (auto it = request.begin(); it != request.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    if (k == "messages") {
      if (!v.is_array()) return fail(errc::invalid_argument, "'messages' must be an array", "messages");
      in.messages = v;
    } else if (k == "tools") {
      if (!v.is_array() && !v.is_null()) return fail(errc::invalid_argument, "'tools' must be an array or null", "tools");
      in.tools = v;
    } else if (k == "add_generation_prompt") {
      if (!v.is_boolean()) return fail(errc::invalid_argument, "'add_generation_prompt' must be a boolean", k);
      in.add_generation_prompt = v.get<bool>();
    } else if (k == "chat_template_kwargs") {
      if (!v.is_object()) return fail(errc::invalid_argument, "'chat_template_kwargs' must be an object", k);
      for (auto kv = v.begin(); kv != v.end(); ++kv) in.kwargs[kv.key()] = kv.value();
    } else if (k == "bos_token" || k == "eos_token") {
      if (!v.is_string()) return fail(errc::invalid_argument, "'" + k + "' must be a string", k);
      (k == "bos_token" ? in.bos_token : in.eos_token) = v.get<std::string>();
    } else {
      in.kwargs[k] = v;
    }
  }
  return in;
}

}  // namespace vks::text::jinja
