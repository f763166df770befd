#!/usr/bin/env python3
"""`vkserve --log-format json serve` (and VKSERVE_LOG_FORMAT=json): every stderr line is
one JSON object with ts/level/msg/thread; a generation that fails (a lost device, through
the test hook) logs a line whose request_id is the response's id (from X-Request-Id).
Usage: json_logs_test.py build/vkserve   (exit 77 without a Vulkan device)
"""
import http.client
import json
import re
import signal
import time

from opslib import check, start_server, wait_ready

srv = start_server(["--on-device-lost", "exit"], {"VKSERVE_LOG_FORMAT": "json", "VKSERVE_TEST_FAULTS": "1"},
                   activated=True)
wait_ready(srv)
srv.proc.send_signal(signal.SIGUSR1)
time.sleep(0.3)
c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
c.request("POST", "/v1/completions", body=json.dumps({"model": "stories260K", "prompt": "Once", "max_tokens": 4}),
          headers={"Content-Type": "application/json", "X-Request-Id": "ops-json-1"})
r = c.getresponse()
body = r.read().decode()
check(r.status == 503, srv, f"request at the lost device: {r.status} {body}")
check(srv.proc.wait(timeout=60) == 75, srv, "exit status after the device loss")
lines = [l for l in srv.log().split("\n") if l]
records = []
for l in lines:
    try:
        rec = json.loads(l)
    except ValueError:
        check(False, srv, f"not a JSON line: {l!r}")
    check(isinstance(rec, dict) and {"ts", "level", "msg", "thread"} <= rec.keys(), srv, f"fields: {l}")
    check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["ts"]), srv, f"ts: {rec['ts']}")
    records.append(rec)
check(any(r["msg"].startswith("listening on http://") for r in records), srv, "no listening line")
failed = [r for r in records if r.get("request_id", "").endswith("ops-json-1")]
check(failed and failed[0]["level"] == "warning" and "503" in failed[0]["msg"], srv,
      f"no warning line with the request's id: {records}")
print(f"ok: {len(records)} JSON log lines; the failed request logged with request_id {failed[0]['request_id']}")
