#!/usr/bin/env python3
"""The systemd protocols of `vkserve serve`, against a fake service manager.

Socket activation: the server answers on the socket passed as fd 3 (LISTEN_FDS), without
--port. Notifications on $NOTIFY_SOCKET: STATUS= with load phases, READY=1 once /ping
says 200, then STATUS= with running/waiting counts; WATCHDOG=1 every half $WATCHDOG_USEC
while healthy; none while the engine is stalled (a GPU submit hung by the test hook,
VKSERVE_TEST_FAULTS=1 + SIGUSR2), and again once it moves; STOPPING=1 on SIGTERM, exit 0.
Usage: systemd_notify_test.py build/vkserve   (exit 77 without a Vulkan device)
"""
import signal
import threading
import time

from opslib import FakeManager, check, fail, start_server, wait_ready

WATCHDOG_S = 1.0  # pings expected every 0.5 s
HANG_MS = 3000

mgr = FakeManager()
srv = start_server(["--max-num-seqs", "4"], {
    "NOTIFY_SOCKET": mgr.path, "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6)),
    "VKSERVE_TEST_FAULTS": "1", "VKSERVE_TEST_HANG_MS": str(HANG_MS)})
wait_ready(srv)
check(mgr.wait_for("READY=1", timeout=10), srv, "no READY=1")
t_ready = mgr.lines("READY=1")[0][0]
statuses = [m for _, m in mgr.lines("STATUS=")]
check(any(m.startswith("STATUS=loading: ") for m in statuses), srv, f"no load-phase STATUS: {statuses}")
check(any("weights" in m for m in statuses), srv, f"no weights phase in STATUS: {statuses}")
check(mgr.wait_for("STATUS=0 running, 0 waiting", timeout=3), srv, f"no idle running/waiting STATUS: {statuses}")
check(len(mgr.lines("READY=1")) == 1, srv, "READY=1 sent twice")
print("ok: socket activation, READY=1 once warm, STATUS load phases and counts")

# Healthy and idle: pings at half the interval.
time.sleep(3.0)
pings = [t for t, _ in mgr.lines("WATCHDOG=1") if t > t_ready]
gaps = [b - a for a, b in zip(pings, pings[1:])]
check(len(pings) >= 4, srv, f"{len(pings)} watchdog pings in 3 s")
check(max(gaps) < 0.9 * WATCHDOG_S, srv, f"watchdog gap {max(gaps):.2f} s while healthy")
check(min(gaps) > 0.3 * WATCHDOG_S, srv, f"watchdog pings too close ({min(gaps):.2f} s)")
print(f"ok: {len(pings)} pings, gaps {min(gaps):.2f}-{max(gaps):.2f} s")

# A long request runs (STATUS counts it); then one of its steps hangs: the pings stop while
# it is stuck and resume once it moves; the request still completes.
result = {}


def generate():
    result["r"] = srv.request("POST", "/v1/completions", {
        "model": "stories260K", "prompt": "Once", "max_tokens": 600, "ignore_eos": True})


t_req = time.monotonic()
th = threading.Thread(target=generate)
th.start()
end = time.monotonic() + 20
while time.monotonic() < end and "STATUS=1 running, 0 waiting" not in [m for t, m in mgr.lines("STATUS=") if t > t_req]:
    time.sleep(0.02)
check(time.monotonic() < end, srv, f"no STATUS counting the running request: {mgr.lines('STATUS=')}")
check(th.is_alive(), srv, "the request ended before the hang was armed (make it longer)")
t0 = time.monotonic()
srv.proc.send_signal(signal.SIGUSR2)
th.join()
t1 = time.monotonic()
check(result["r"][0] == 200, srv, f"hung request: {result['r']}")
check(t1 - t0 >= HANG_MS / 1000 - 0.2, srv, f"the hang hook did not hang ({t1 - t0:.2f} s)")
time.sleep(1.5)
pings = [t for t, _ in mgr.lines("WATCHDOG=1")]
during = [t for t in pings if t0 + 1.0 < t < t0 + HANG_MS / 1000 - 0.2]
check(not during, srv, f"{len(during)} watchdog pings while the engine was stalled")
after = [t for t in pings if t > t1]
check(len(after) >= 2, srv, "watchdog pings did not resume after the stall")
gap = max(b - a for a, b in zip(pings, pings[1:]) if b > t0)
check(gap > 1.5, srv, f"largest gap around the stall only {gap:.2f} s")
check(mgr.lines("STATUS=0 running, 0 waiting")[-1][0] > t1 - 0.5, srv, "STATUS not back to idle")
print(f"ok: no pings during the stalled step (gap {gap:.2f} s), pings resumed, STATUS counted it")

srv.proc.send_signal(signal.SIGTERM)
try:
    code = srv.proc.wait(timeout=60)
except Exception:
    fail(srv, "no exit after SIGTERM")
check(code == 0, srv, f"exit status {code} after SIGTERM")
check(mgr.wait_for("STOPPING=1", timeout=2), srv, "no STOPPING=1 on SIGTERM")
mgr.close()
print("ok: STOPPING=1 on SIGTERM, exit 0")
