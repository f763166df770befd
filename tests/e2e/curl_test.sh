#!/usr/bin/env bash
# e2e with curl against the real binary on 127.0.0.1 (the foundation's HTTP surface):
# /health, /version, /v1/models, /ping; 404 and 405 (+Allow) as OpenAI error JSON; 400 on
# malformed JSON; 413 on a body over 16 MiB; keep-alive reuse across requests; an SSE
# stream ending in `data: [DONE]`; and SIGTERM during a stream: the in-flight request
# finishes (drain), new connections are refused, the process exits 0; --kv-cache-dtype f16
# serves and a bad value is refused at start.
# Usage: curl_test.sh BUILD/vkserve   (exits 77 when curl or a Vulkan device is missing)
set -uo pipefail
BIN=${1:?usage: curl_test.sh path/to/vkserve}
command -v curl >/dev/null || { echo "SKIP: curl missing"; exit 77; }
WORK=$(mktemp -d)
LOG=$WORK/server.log
PID=
fail() { echo "FAIL: $*"; echo "--- server log"; cat "$LOG"; exit 1; }
cleanup() { [[ -n $PID ]] && kill -KILL "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# Starts `vkserve serve ARGS` on a free port, logging to $LOG; sets PID, and PORT once
# /ping answers (returns early if the server exits).
start_server() {
  "$BIN" serve --port 0 --bidi-port -1 "$@" >"$LOG" 2>&1 &
  PID=$!
  PORT=
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' "$LOG" | head -1)
    [[ -n $PORT ]] && curl -sf "http://127.0.0.1:$PORT/ping" >/dev/null && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
}

start_server --served-model-name stories260K
if ! kill -0 "$PID" 2>/dev/null; then
  grep -qi "vulkan" "$LOG" && { echo "SKIP: the server cannot start here (no Vulkan device?)"; cat "$LOG"; exit 77; }
  fail "server exited before serving"
fi
B=http://127.0.0.1:$PORT
n_pass=0
ok() { n_pass=$((n_pass + 1)); }
# status_is EXPECTED CURL_ARGS...: runs curl, keeps the body in $WORK/body, headers in $WORK/head
status_is() {
  local want=$1; shift
  local got
  got=$(curl -s -o "$WORK/body" -D "$WORK/head" -w '%{http_code}' "$@")
  [[ $got == "$want" ]] || fail "curl $* -> $got, want $want; body: $(head -c 400 "$WORK/body")"
  ok
}
error_json_is() {  # code type
  python3 - "$WORK/body" "$1" "$2" <<'PY' || fail "error body: $(cat "$WORK/body")"
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert e["code"] == int(sys.argv[2]) and e["type"] == sys.argv[3], e
assert isinstance(e["message"], str) and e["message"] and "param" in e, e
PY
  ok
}

status_is 200 "$B/health"
grep -q '"status"' "$WORK/body" || fail "health body: $(cat "$WORK/body")"
status_is 200 "$B/version"
grep -q '"version"' "$WORK/body" || fail "version body"
status_is 200 "$B/v1/models"
grep -q '"id":"stories260K"' "$WORK/body" || fail "models body: $(cat "$WORK/body")"
status_is 200 "$B/ping"
status_is 200 -X POST "$B/ping"
status_is 404 "$B/no/such/route"
error_json_is 404 NotFoundError
status_is 405 -X DELETE "$B/health"
grep -qi '^allow: .*GET' "$WORK/head" || fail "405 without Allow: $(cat "$WORK/head")"
error_json_is 405 MethodNotAllowedError
status_is 400 -H 'Content-Type: application/json' -d '{"model": "stories260K", "messages": [' "$B/v1/chat/completions"
error_json_is 400 BadRequestError
head -c $((16 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$WORK/big"
status_is 413 -H 'Content-Type: application/json' --data-binary @"$WORK/big" "$B/v1/completions"
error_json_is 413 RequestTooLargeError

# keep-alive: two requests in one curl invocation share the connection
curl -sv "$B/health" "$B/version" -o /dev/null -o /dev/null 2>"$WORK/verbose" || fail "keep-alive curl"
grep -qi "re-using existing connection\|reusing existing connection" "$WORK/verbose" || fail "no connection reuse: $(cat "$WORK/verbose")"
ok

# chat completion, non-streaming
status_is 200 -H 'Content-Type: application/json' \
  -d '{"model":"stories260K","messages":[{"role":"user","content":"Once"}],"max_tokens":4,"temperature":0}' "$B/v1/chat/completions"
python3 - "$WORK/body" <<'PY' || fail "chat body: $(cat "$WORK/body")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-"), r
assert r["choices"][0]["message"]["role"] == "assistant", r
assert r["usage"]["completion_tokens"] == 4 and r["choices"][0]["finish_reason"] == "length", r
PY
ok

# SSE stream: data: lines, the last one [DONE]
curl -sN -H 'Content-Type: application/json' \
  -d '{"model":"stories260K","prompt":"Once","max_tokens":5,"stream":true}' "$B/v1/completions" >"$WORK/sse" || fail "stream curl"
[[ $(grep -c '^data: ' "$WORK/sse") -ge 6 ]] || fail "stream: $(cat "$WORK/sse")"
[[ $(grep '^data: ' "$WORK/sse" | tail -1) == "data: [DONE]" ]] || fail "stream does not end with [DONE]"
ok

# SIGTERM mid-stream: the stream completes, the server exits 0.
curl -sN -H 'Content-Type: application/json' \
  -d '{"model":"stories260K","prompt":"Once","max_tokens":400,"ignore_eos":true,"stream":true}' \
  "$B/v1/completions" >"$WORK/drain" &
CURL=$!
for _ in $(seq 1 200); do grep -q '^data: {' "$WORK/drain" && break; sleep 0.02; done
kill -TERM "$PID"
wait "$CURL" || fail "draining stream: curl failed"
status=0; wait "$PID" || status=$?
PID=
[[ $status == 0 ]] || fail "server exit status $status after SIGTERM"
[[ $(grep '^data: ' "$WORK/drain" | tail -1) == "data: [DONE]" ]] || fail "drained stream cut: $(tail -c 300 "$WORK/drain")"
grep -q '"finish_reason":"length"' "$WORK/drain" || fail "drained stream did not finish"
grep -q "draining" "$LOG" || fail "no drain in the log"
ok
curl -s -o /dev/null "$B/health" && fail "still accepting after the drain"
ok

# --kv-cache-dtype: f16 serves (and logs its KV pool); anything else is refused at start.
"$BIN" serve --port 0 --bidi-port -1 --kv-cache-dtype bf16 >"$WORK/bad.log" 2>&1 && fail "--kv-cache-dtype bf16 accepted"
grep -q "kv-cache-dtype must be" "$WORK/bad.log" || fail "no error line for --kv-cache-dtype bf16: $(cat "$WORK/bad.log")"
ok
start_server --kv-cache-dtype f16
body=$(curl -s -H 'Content-Type: application/json' -d '{"prompt":"Once","max_tokens":24,"temperature":0}' \
  "http://127.0.0.1:$PORT/v1/completions")
[[ $body == *'"completion_tokens":24'* ]] || fail "f16 KV cache completion: $body"
ok
kill -TERM "$PID"; wait "$PID"; PID=
echo "$n_pass passed, 0 failed"
