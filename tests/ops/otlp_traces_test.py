#!/usr/bin/env python3
"""OpenTelemetry traces (--otlp-traces-endpoint): a tiny OTLP/HTTP collector in this test
receives the batches; a request with a W3C traceparent gets a SERVER span in that trace
(parent = the caller's span) with the model, token counts, request id and status, and
child spans prepare, queue, prefill, decode inside it, in order. With the collector gone, requests
still answer at once and the spans are dropped and counted in /metrics.
Usage: otlp_traces_test.py build/vkserve   (exit 77 without a Vulkan device)
"""
import http.client
import http.server
import json
import re
import threading
import time

from opslib import check, start_server, wait_ready

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


class Collector:
    def __init__(self):
        self.batches, self.paths = [], []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                outer.paths.append((self.path, self.headers.get("Content-Type")))
                outer.batches.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def spans(self):
        out = []
        for b in self.batches:
            for rs in b["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    out.extend(ss["spans"])
        return out

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def attrs(span):
    return {a["key"]: list(a["value"].values())[0] for a in span.get("attributes", [])}


def complete(srv, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", "/v1/completions", body=json.dumps(
        {"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 12, "ignore_eos": True}), headers=h)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return r.status, body


def main():
    col = Collector()
    srv = start_server(["--otlp-traces-endpoint", f"http://127.0.0.1:{col.port}"], {})
    wait_ready(srv)
    status, body = complete(srv, {"traceparent": f"00-{TRACE}-{PARENT}-01"})
    check(status == 200, srv, f"completion: {status} {body}")
    rid = json.loads(body)["id"]
    status, _ = complete(srv)
    check(status == 200, srv, "second completion")
    end = time.monotonic() + 20
    while time.monotonic() < end and len([s for s in col.spans() if s["kind"] == 2]) < 2:
        time.sleep(0.1)
    spans = col.spans()
    check(col.paths and col.paths[0] == ("/v1/traces", "application/json"), srv, f"POST target: {col.paths[:1]}")
    res = col.batches[0]["resourceSpans"][0]["resource"]
    check(attrs(res).get("service.name") == "vkserve", srv, f"resource: {res}")
    top = [s for s in spans if s["kind"] == 2 and s["traceId"] == TRACE]
    check(len(top) == 1, srv, f"no single SERVER span in the caller's trace: {spans}")
    top = top[0]
    check(top.get("parentSpanId") == PARENT, srv, f"parent: {top}")
    check(re.fullmatch(r"[0-9a-f]{16}", top["spanId"]) is not None, srv, f"span id: {top['spanId']}")
    check(top["name"] == "text_completion stories260K", srv, f"name: {top['name']}")
    a = attrs(top)
    check(a.get("gen_ai.request.model") == "stories260K", srv, f"model attr: {a}")
    check(int(a.get("gen_ai.usage.input_tokens", 0)) > 0, srv, f"input tokens: {a}")
    check(int(a.get("gen_ai.usage.output_tokens", 0)) == 12, srv, f"output tokens: {a}")
    check(a.get("vkserve.request_id") == rid, srv, f"request id: {a} vs {rid}")
    check(int(a.get("http.response.status_code", 0)) == 200 and top["status"]["code"] == 1, srv, f"status: {top}")
    t0, t1 = int(top["startTimeUnixNano"]), int(top["endTimeUnixNano"])
    check(0 < t0 < t1 and abs(t0 / 1e9 - time.time()) < 120, srv, f"times: {t0} {t1}")
    kids = sorted([s for s in spans if s.get("parentSpanId") == top["spanId"]], key=lambda s: int(s["startTimeUnixNano"]))
    check([k["name"] for k in kids] == ["prepare", "queue", "prefill", "decode"], srv,
          f"phases: {[k['name'] for k in kids]}")
    prev = t0
    for k in kids:
        ks, ke = int(k["startTimeUnixNano"]), int(k["endTimeUnixNano"])
        check(k["traceId"] == TRACE and prev <= ks <= ke <= t1, srv, f"phase {k['name']} outside its span: {k}")
        prev = ke
    other = [s for s in spans if s["kind"] == 2 and s["traceId"] != TRACE]
    check(len(other) == 1 and "parentSpanId" not in other[0], srv, f"the request without traceparent: {other}")

    # The collector goes away: requests are not held up, the spans are dropped and counted.
    col.close()
    t = time.monotonic()
    for _ in range(3):
        status, _ = complete(srv)
        check(status == 200, srv, "completion with the collector down")
    check(time.monotonic() - t < 30, srv, "requests slowed down by the missing collector")
    end = time.monotonic() + 20
    dropped = 0
    while time.monotonic() < end and dropped < 3:
        _, text = srv.request("GET", "/metrics")
        m = re.search(r"^vkserve:otlp_spans_dropped_total (\d+)", text, re.M)
        dropped = int(m.group(1)) if m else 0
        time.sleep(0.2)
    check(dropped >= 3, srv, f"dropped spans counted: {dropped}")
    srv.kill()
    print("ok: spans with traceparent, attributes and phases; collector down -> dropped, not stalled")


if __name__ == "__main__":
    main()
