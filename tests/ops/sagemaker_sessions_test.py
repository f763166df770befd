#!/usr/bin/env python3
"""SageMaker stateful sessions through /invocations (contracts.md 3.3):
{"requestType":"NEW_SESSION"} -> 200 + X-Amzn-SageMaker-New-Session-Id "<id>; Expires=...";
requests with X-Amzn-SageMaker-Session-Id run in the session, whose conversation stays
pinned in the prefix cache (the follow-up's cached_tokens cover it after traffic that evicts
an unpinned conversation); CLOSE -> 200 + X-Amzn-SageMaker-Closed-Session-Id; unknown,
closed or expired ids -> 400; CLOSE of an unknown id -> 424; the session cap -> 424;
sessions off -> 400. Usage: sagemaker_sessions_test.py build/vkserve (77 without Vulkan)
"""
import http.client
import json
import re
import time

from opslib import check, start_server, wait_ready

SID = "X-Amzn-SageMaker-Session-Id"
NEW_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*; Expires=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
PROMPT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
          "One day, she saw a big red ball under a tree.")


def post(srv, body, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", "/invocations", body=json.dumps(body), headers=h)
    r = c.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode(errors="replace"))
    c.close()
    return out


def complete(srv, prompt, max_tokens, sid=None):
    status, hdrs, body = post(srv, {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                                    "ignore_eos": True}, {SID: sid} if sid else None)
    check(status == 200, srv, f"completion in session {sid}: {status} {body}")
    j = json.loads(body)
    return j["choices"][0]["text"], j["usage"]["prompt_tokens_details"]["cached_tokens"], hdrs


def traffic(srv):
    """Unrelated requests that cycle through every unpinned KV block (40-block pool)."""
    for p in ["The cat sat on the mat", "A big dog ran fast", "Tom had a red ball", "The sun was hot"]:
        complete(srv, p, 200)


def new_session(srv):
    status, hdrs, body = post(srv, {"requestType": "NEW_SESSION"})
    check(status == 200, srv, f"NEW_SESSION: {status} {body}")
    v = hdrs.get("x-amzn-sagemaker-new-session-id", "")
    check(NEW_RE.match(v) is not None, srv, f"New-Session-Id header: {v!r}")
    sid = v.split(";")[0]
    check(body == f"Session {sid} created", srv, f"NEW_SESSION body: {body}")
    return sid


def metric(srv, name):
    status, text = srv.request("GET", "/metrics")
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def pins_drop_to_zero(srv):
    """The engine thread releases pins asynchronously: wait a little for it."""
    for _ in range(50):
        if metric(srv, "vkserve:kv_blocks_pinned") == 0:
            return True
        time.sleep(0.1)
    return False


def main():
    srv = start_server(["--sagemaker-sessions", "--sagemaker-max-sessions", "4",
                        "--kv-cache-tokens", "640", "--max-model-len", "256", "--enable-prompt-tokens-details"], {})
    wait_ready(srv)
    sid = new_session(srv)
    reply, cached, _ = complete(srv, PROMPT, 40, sid)
    check(cached == 0, srv, f"first turn cached {cached}")
    check((metric(srv, "vkserve:kv_blocks_pinned") or 0) >= 3, srv, "no blocks pinned after the first turn")
    traffic(srv)
    _, cached, _ = complete(srv, PROMPT + reply + " Then", 8, sid)
    check(cached >= 48, srv, f"the session's follow-up found {cached} cached tokens after other traffic")
    # The same conversation outside a session: evicted by the same traffic.
    other = "Lily and Tom went to the park to play with a ball and a kite. They ran and ran until the sun set."
    reply2, _, _ = complete(srv, other, 40)
    traffic(srv)
    _, cached, _ = complete(srv, other + reply2 + " Then", 8)
    check(cached == 0, srv, f"an unpinned conversation kept {cached} cached tokens through the traffic")

    # Errors: unknown id, CLOSE, then the closed id; CLOSE again; bad requestType.
    status, _, body = post(srv, {"prompt": "Once", "max_tokens": 2}, {SID: "no-such-session"})
    check(status == 400 and "session not found" in body, srv, f"unknown session: {status} {body}")
    status, hdrs, body = post(srv, {"requestType": "CLOSE"}, {SID: sid})
    check(status == 200 and hdrs.get("x-amzn-sagemaker-closed-session-id") == sid, srv, f"CLOSE: {status} {hdrs} {body}")
    check(body == f"Session {sid} closed", srv, f"CLOSE body: {body}")
    check(pins_drop_to_zero(srv), srv, "pins left after CLOSE")
    status, _, body = post(srv, {"prompt": "Once", "max_tokens": 2}, {SID: sid})
    check(status == 400, srv, f"closed session: {status} {body}")
    status, _, body = post(srv, {"requestType": "CLOSE"}, {SID: sid})
    check(status == 424, srv, f"CLOSE of a closed session: {status} {body}")
    status, _, body = post(srv, {"requestType": "OPEN"})
    check(status == 400, srv, f"requestType OPEN: {status} {body}")

    # NEW_SESSION in the header of a generation request: it runs in a new session.
    _, _, hdrs = complete(srv, "Once", 4, "NEW_SESSION")
    v = hdrs.get("x-amzn-sagemaker-new-session-id", "")
    check(NEW_RE.match(v) is not None, srv, f"New-Session-Id on a generation: {v!r}")
    sid2 = v.split(";")[0]
    complete(srv, "Once", 4, sid2)
    # The cap: 4 sessions open at most.
    for _ in range(3):
        new_session(srv)
    status, _, body = post(srv, {"requestType": "NEW_SESSION"})
    check(status == 424 and "too many open sessions" in body, srv, f"beyond the cap: {status} {body}")
    srv.kill()

    # Expiry (2 s from creation, SAGEMAKER_SESSIONS_EXPIRATION): the id is refused, and
    # /ping's sweep closes expired sessions and unpins their blocks without other traffic.
    short = start_server(["--enable-prompt-tokens-details"], {"SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true", "SAGEMAKER_SESSIONS_EXPIRATION": "2"})
    wait_ready(short)
    s1 = new_session(short)
    complete(short, PROMPT, 20, s1)
    s2 = new_session(short)
    check(metric(short, "vkserve:sagemaker_sessions") == 2, short, "two sessions open")
    check((metric(short, "vkserve:kv_blocks_pinned") or 0) > 0, short, "no pins in the short-lived session")
    time.sleep(2.5)
    short.request("GET", "/ping")
    check(metric(short, "vkserve:sagemaker_sessions") == 0, short, "expired sessions still open after /ping")
    check(pins_drop_to_zero(short), short, "expired sessions still pin blocks")
    status, _, body = post(short, {"prompt": "Once", "max_tokens": 2}, {SID: s2})
    check(status == 400 and "session not found" in body, short, f"expired session: {status} {body}")
    short.kill()

    # Sessions off: session operations and the header are 400.
    off = start_server([], {})
    wait_ready(off)
    status, _, body = post(off, {"requestType": "NEW_SESSION"})
    check(status == 400 and "not enabled" in body, off, f"NEW_SESSION with sessions off: {status} {body}")
    status, _, body = post(off, {"prompt": "Once", "max_tokens": 2}, {SID: "abc"})
    check(status == 400, off, f"session header with sessions off: {status} {body}")
    off.kill()
    print("ok: sessions created, pinned through traffic, closed, expired, capped; off -> 400")


if __name__ == "__main__":
    main()
