#!/usr/bin/env python3
"""Device loss (VK_ERROR_DEVICE_LOST, injected by the test hook: VKSERVE_TEST_FAULTS=1 +
SIGUSR1 fails the next GPU submit and keeps that backend lost).

exit mode (the default under systemd: $NOTIFY_SOCKET set): a stream in flight ends with
an error, a request at the lost device gets 503, /health turns 503 "unhealthy", the
watchdog pings stop, and the process exits with status 75.
recover mode: the request gets 503; the process (same pid) re-executes on the same
listening socket, says READY=1 again, and serves requests. With --max-device-recoveries 1
a second loss exits 75 instead of re-executing again.
Usage: device_lost_test.py build/vkserve   (exit 77 without a Vulkan device)
"""
import http.client
import json
import signal
import time

from opslib import FakeManager, check, fail, start_server, wait_ready

COMPLETION = {"model": "stories260K", "prompt": "Once", "max_tokens": 4}


def stream_then_lose(srv):
    """Starts a long stream, injects the loss after its first token; returns the body."""
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    c.request("POST", "/v1/completions", body=json.dumps(
        {"model": "stories260K", "prompt": "Once", "max_tokens": 400, "ignore_eos": True, "stream": True}),
        headers={"Content-Type": "application/json"})
    r = c.getresponse()
    check(r.status == 200, srv, f"stream status {r.status}")
    first = r.read1(65536)
    srv.proc.send_signal(signal.SIGUSR1)
    body = first + r.read()
    c.close()
    return body.decode(errors="replace")


def exit_mode():
    mgr = FakeManager()
    srv = start_server([], {"NOTIFY_SOCKET": mgr.path, "WATCHDOG_USEC": "1000000", "VKSERVE_TEST_FAULTS": "1"})
    wait_ready(srv)
    body = stream_then_lose(srv)
    check('"code":503' in body and "ServiceUnavailableError" in body, srv, f"the stream in flight did not fail with 503: {body[-400:]}")
    check("device" in body.lower(), srv, f"stream error does not name the device: {body[-400:]}")
    check('"finish_reason":"length"' not in body, srv, "the stream ran to its end")
    t_lost = time.monotonic()
    try:
        code = srv.proc.wait(timeout=60)
    except Exception:
        fail(srv, "no exit after the device loss")
    check(code == 75, srv, f"exit status {code}, want 75")
    late = [t for t, _ in mgr.lines("WATCHDOG=1") if t > t_lost + 0.1]
    check(not late, srv, f"{len(late)} watchdog pings after the device was lost")
    check(any("exiting" in m for _, m in mgr.lines("STATUS=")), srv, "no STATUS about the failure")
    check("device" in srv.log().lower(), srv, "the log does not mention the device loss")
    mgr.close()
    print("ok: exit mode: stream failed, exit 75, watchdog stopped")


def recover_mode():
    mgr = FakeManager()
    srv = start_server(["--on-device-lost", "recover"], {"NOTIFY_SOCKET": mgr.path, "VKSERVE_TEST_FAULTS": "1"})
    wait_ready(srv)
    check(mgr.wait_for("READY=1", timeout=10), srv, "no READY=1")
    srv.proc.send_signal(signal.SIGUSR1)
    time.sleep(0.3)
    status, body = srv.request("POST", "/v1/completions", COMPLETION)
    check(status == 503, srv, f"request at the lost device: {status} {body}")
    check("device" in body.lower() or "engine" in body.lower(), srv, f"503 body: {body}")
    # The process re-executes (same pid) and becomes ready again on the same socket.
    check(mgr.wait_for("READY=1", count=2, timeout=120), srv, "no second READY=1 after recovery")
    check(srv.proc.poll() is None, srv, "the process exited instead of recovering")
    wait_ready(srv)
    status, body = srv.request("POST", "/v1/completions", COMPLETION)
    check(status == 200, srv, f"request after recovery: {status} {body}")
    check(any("recovering" in m for _, m in mgr.lines("STATUS=")), srv, "no STATUS about recovering")
    srv.proc.send_signal(signal.SIGTERM)
    check(srv.proc.wait(timeout=60) == 0, srv, "exit status after SIGTERM")
    mgr.close()
    print("ok: recover mode: 503, re-exec on the same socket, READY=1 again, serving")


def bounded_recover_mode():
    """--max-device-recoveries 1: the first loss re-executes, the second exits 75."""
    mgr = FakeManager()
    srv = start_server(["--on-device-lost", "recover", "--max-device-recoveries", "1", "--device-recovery-window", "600"],
                       {"NOTIFY_SOCKET": mgr.path, "VKSERVE_TEST_FAULTS": "1"})
    wait_ready(srv)
    check(mgr.wait_for("READY=1", timeout=10), srv, "no READY=1")
    srv.proc.send_signal(signal.SIGUSR1)
    time.sleep(0.3)
    srv.request("POST", "/v1/completions", COMPLETION)
    check(mgr.wait_for("READY=1", count=2, timeout=120), srv, "no READY=1 after the first recovery")
    wait_ready(srv)
    srv.proc.send_signal(signal.SIGUSR1)
    time.sleep(0.3)
    status, body = srv.request("POST", "/v1/completions", COMPLETION)
    check(status == 503, srv, f"request at the second lost device: {status} {body}")
    try:
        code = srv.proc.wait(timeout=60)
    except Exception:
        fail(srv, "no exit after the recovery budget was spent")
    check(code == 75, srv, f"exit status {code}, want 75")
    check(len(mgr.lines("READY=1")) == 2, srv, "a third READY=1: it recovered beyond the budget")
    check("--max-device-recoveries" in srv.log(), srv, "the log does not say why it exited")
    mgr.close()
    print("ok: bounded recover: one re-exec, then exit 75")


exit_mode()
recover_mode()
bounded_recover_mode()
