// `vkserve serve`: the HTTP server. Order of events:
//   options resolved (SageMaker rule) -> signals blocked -> socket bound (or taken from
//   systemd: LISTEN_FDS) and I/O threads serving (/ping answers 503 meanwhile) ->
//   supervisor started (watchdog, STATUS=) -> model loaded, engine started, warm-up run ->
//   published to the handlers (/ping 200, READY=1) -> wait for SIGINT/SIGTERM or an
//   engine failure -> STOPPING=1, engine drain (new work: 503), HTTP drain (stop
//   accepting, in-flight requests get --drain-timeout to finish, then are aborted) ->
//   preparation workers joined -> supervisor and engine stopped -> exit 0.
// A model that fails to load or warm up ends the process with exit status 1. An engine
// failure (device lost) ends it with status 75 (--on-device-lost exit) or re-executes the
// binary on the same listening socket (recover: a new device, the model reloaded).
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <memory>
#include <thread>
#include <unistd.h>

#include "base/log.hpp"
#include "http/server.hpp"
#include "rt/io_threads.hpp"
#include "rt/net.hpp"
#include "server/bidi.hpp"
#include "server/commands.hpp"
#include "server/lifecycle.hpp"
#include "server/model_host.hpp"
#include "server/ops_options.hpp"
#include "server/otlp.hpp"
#include "server/recovery_budget.hpp"
#include "server/routes.hpp"
#include "server/sd_notify.hpp"
#include "server/serve_options.hpp"
#include "server/socket_activation.hpp"
#include "server/supervisor.hpp"
#include "server/service.hpp"

namespace vks::server {
namespace {

using namespace std::chrono_literals;

rt::loop_options loop_options_for(const serve_options& o) {
  rt::loop_options lo;
  if (o.rt_backend == "io_uring") lo.force = rt::backend::io_uring;
  else if (o.rt_backend == "epoll") lo.force = rt::backend::epoll;
  lo.idle_poll = std::chrono::microseconds(o.io_idle_poll_us);
  return lo;
}

// `budget` (the connection cap and buffered-bytes budget) must outlive the servers.
http::server_options http_options_for(const serve_options& o, http::server_budget& budget) {
  http::server_options h;
  h.budget = &budget;
  h.drain_timeout = std::chrono::milliseconds(static_cast<long long>(o.drain_timeout_s * 1000.0));
  h.limits.max_body_bytes = 16 * 1024 * 1024;  // > SageMaker's 6 MB InvokeEndpoint limit
  h.send_timeout = 120s;                        // a reader this stalled is gone
  return h;
}

// Loads and warms the model while the HTTP server already answers; nullptr on failure or
// when a stop signal arrived meanwhile (then the error is not logged as a failure).
std::unique_ptr<model_host> load_and_warm(service& svc, signal_watch& sig, supervisor& sup) {
  const auto t0 = std::chrono::steady_clock::now();
  auto host = model_host::load(svc.options(), [&](std::string p) { sup.set_phase(std::move(p)); });
  if (!host) {
    log::error("serve: cannot load the model: {}", host.error().message);
    return nullptr;
  }
  if (sig.stop_requested()) return nullptr;
  if (svc.options().warmup) {
    sup.set_phase("warm-up generation");
    if (auto w = (*host)->warm_up(); !w) {
      log::error("serve: warm-up generation failed: {}", w.error().message);
      return nullptr;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("model '{}' ready in {:.1f} s (reasoning split: {})", svc.served_name(), secs,
            (*host)->reasoning() ? "on" : "off");
  return std::move(*host);
}

// Graceful stop: the engine refuses new work, the HTTP servers drain, then the engine goes.
// `reloading`: a recover re-exec follows (systemd is not told we stop).
void shut_down(service& svc, rt::io_threads& io, std::unique_ptr<model_host>& host,
               std::unique_ptr<supervisor>& sup, bool reloading) {
  if (!reloading) notify_systemd("STOPPING=1");
  svc.set_state(service_state::draining);
  if (host) host->engine().drain();
  io.stop();
  if (auto j = io.join(); !j) log::error("serve: {}", j.error().message);
  svc.prep().shutdown();  // joins the preparation workers: a late one may still read the model
  sup.reset();   // it reads the host
  host.reset();  // aborts anything left and joins the engine thread
}

// The main port: the socket systemd passed (LISTEN_FDS), else a new one.
result<int> main_listener(const serve_options& o) {
  auto act = take_activated_socket();
  if (!act) return fail(std::move(act).error());
  if (*act) {
    log::info("serve: using the listening socket passed by the service manager (LISTEN_FDS)");
    return **act;
  }
  auto lfd = rt::listen_tcp(o.host, static_cast<std::uint16_t>(o.port), false, 1024);
  if (!lfd) return fail(errc::io, "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + lfd.error().message);
  return *lfd;
}

constexpr int k_exit_device_lost = 75;  // EX_TEMPFAIL: a supervisor should restart us

// The recover budget (recovery_budget.hpp): true and the count passed on to the re-exec,
// or false (logged) when --max-device-recoveries within --device-recovery-window are spent.
bool recovery_allowed(const ops_options& o) {
  const char* prev = std::getenv(k_recoveries_env);
  const auto d = decide_recovery(prev ? prev : "", static_cast<std::int64_t>(std::time(nullptr)),
                                 static_cast<std::int64_t>(o.device_recovery_window_s), o.max_device_recoveries);
  if (!d.allowed) {
    log::error("serve: the device was lost again after {} recoveries within {:.0f} s (--max-device-recoveries): "
               "exiting with status {} for the supervisor", d.n_recent, o.device_recovery_window_s, k_exit_device_lost);
    notify_systemd("STATUS=device lost repeatedly; exiting");
    return false;
  }
  ::setenv(k_recoveries_env, d.env.c_str(), 1);
  log::warn("serve: recovery {} of at most {} within {:.0f} s", d.n_recent, o.max_device_recoveries,
            o.device_recovery_window_s);
  return true;
}

int run_serve(serve_options o, bidi_options bo, const ops_options& ops) {
  if (auto r = resolve_serve_options(o); !r) {
    log::error("serve: {}", r.error().message);
    return 2;
  }
  resolve_bidi_port(bo, o.sagemaker);
  // Shared by every connection of both ports and all I/O threads.
  http::server_budget budget(static_cast<std::size_t>(o.max_connections),
                             static_cast<std::size_t>(o.max_buffered_request_bytes));
  bo.ws.budget = &budget;
  signal_watch sig;  // before any thread starts: they inherit the blocked mask
  service svc(o);
  svc.started_unix = static_cast<std::int64_t>(std::time(nullptr));
  svc.http_budget = &budget;
  http::router routes = make_router(svc);
  add_bidi_routes(routes, svc, bo);
  const http::server_options hopts = http_options_for(o, budget);
  std::unique_ptr<trace_exporter> tracer;
  if (!ops.otlp_traces_endpoint.empty()) {
    auto t = trace_exporter::start(ops.otlp_traces_endpoint);
    if (!t) {
      log::error("serve: {}", t.error().message);
      return 2;
    }
    tracer = std::move(*t);
    set_active_trace_exporter(tracer.get());
    log::info("serve: exporting traces to http://{}:{}{}", tracer->endpoint().host, tracer->endpoint().port,
              tracer->endpoint().path);
  }
  auto lfd = main_listener(o);
  if (!lfd) {
    log::error("serve: {}", lfd.error().message);
    return 1;
  }
  const int listen_fd = *lfd;
  const auto port = rt::bound_port(listen_fd);
  // The dedicated WebSocket port is auxiliary: when it cannot be bound, serve without it.
  std::unique_ptr<bidi_port> bidi;
  std::optional<std::pair<int, int>> safe_range;
  if (const char* r = std::getenv("SAGEMAKER_SAFE_PORT_RANGE"); r && *r) {
    safe_range = parse_port_range(r);
    if (!safe_range) log::warn("serve: ignoring SAGEMAKER_SAFE_PORT_RANGE='{}' (expected LOW-HIGH)", r);
  }
  if (auto b = bidi_port::open(svc, bo, o.host, safe_range); b) bidi = std::move(*b);
  else log::warn("serve: {}; the dedicated bidi port is off", b.error().message);
  rt::io_threads io;
  auto started = io.start(
      o.io_threads,
      [&](rt::loop& lp, int) { return serve_main_and_bidi(lp, listen_fd, routes, hopts, bidi.get()); },
      loop_options_for(o));
  if (!started) {
    log::error("serve: cannot start the I/O threads: {}", started.error().message);
    ::close(listen_fd);
    return 1;
  }
  log::info("listening on http://{}:{} ({} I/O thread(s), {}){}", o.host, port ? *port : 0, o.io_threads,
            rt::to_string(io.at(0).kind()), o.sagemaker ? " [SageMaker mode]" : "");
  if (bidi) log::info("bidi streaming on port {}", bidi->port());
  const bool recover = o.on_device_lost == "recover";
  auto sup = std::make_unique<supervisor>(svc, process_notifier(), sig, supervisor_options{recover});
  std::unique_ptr<model_host> host = load_and_warm(svc, sig, *sup);
  int status = 0;
  if (host) {
    svc.publish(host.get());
    notify_systemd("READY=1");
    sup->refresh_status();
    log::info("serving '{}' (model {})", svc.served_name(), o.model);
    while (!sig.wait_for(1s)) {
    }
    if (sup->engine_failed()) status = k_exit_device_lost;
    else log::info("signal {}: draining (up to {:.0f} s)", sig.signal_number(), o.drain_timeout_s);
  } else {
    svc.set_state(service_state::failed);
    status = sig.stop_requested() ? 0 : 1;
  }
  bool reload = status == k_exit_device_lost && recover && sig.signal_number() == 0;
  if (reload) reload = recovery_allowed(ops);
  shut_down(svc, io, host, sup, reload);
  set_active_trace_exporter(nullptr);
  tracer.reset();  // exports what is queued (bounded by its timeout)
  if (reload) {
    log::warn("serve: re-executing to recreate the device and reload the model");
    if (bidi) bidi.reset();  // frees its port for the new process
    auto r = reexec_with_socket(listen_fd);  // returns only on failure
    log::error("serve: cannot re-execute: {}", r.error().message);
  }
  log::info("serve: stopped");
  return status;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (SageMaker entry point)");
  auto o = std::make_shared<serve_options>();
  auto bo = std::make_shared<bidi_options>();
  auto ops = std::make_shared<ops_options>();
  add_serve_options(*cmd, *o);
  add_bidi_options(*cmd, *bo);
  add_ops_options(*cmd, *ops);
  cmd->callback([o, bo, ops, &exit_code] { exit_code = run_serve(*o, *bo, *ops); });
}

}  // namespace vks::server
