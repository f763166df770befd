#!/usr/bin/env bash
# CLI checks of `vkserve generate`: the stories260K golden output (greedy, empty prompt)
# and broken model files (one clear error line, non-zero exit, no crash).
# Usage: cli_test.sh VKSERVE BACKEND   (BACKEND vk exits 77 when Vulkan is unavailable)
set -uo pipefail
vkserve=$1
backend=$2
shared=${VKS_SHARED:?VKS_SHARED must point to ../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

"$vkserve" --log-level warn generate --backend "$backend" --model "$shared/models/stories260K/stories260K.gguf" \
  --prompt "" -n 256 --temperature 0 >"$tmp/out.txt" 2>"$tmp/err.txt"
rc=$?
if [[ $rc != 0 && $backend == vk ]] && grep -qi "vulkan\|unsupported\|no device" "$tmp/err.txt"; then
  echo "SKIP: vk backend unavailable: $(head -1 "$tmp/err.txt")"
  exit 77
fi
tail -n +2 "$shared/models/stories260K/expected_greedy_t0_llama2c.txt" >"$tmp/want.txt"
if [[ $rc != 0 ]]; then
  echo "FAIL: generate exited $rc:"; cat "$tmp/err.txt"; fail=1
elif ! python3 -c "import sys; a=open(sys.argv[1]).read(); b=open(sys.argv[2]).read().rstrip('\n'); sys.exit(0 if a.startswith(b) else 1)" \
    "$tmp/out.txt" "$tmp/want.txt"; then
  echo "FAIL: output differs from llama2.c's:"; diff "$tmp/out.txt" "$tmp/want.txt" | head -20; fail=1
else
  echo "ok: stories260K golden output ($backend)"; grep "tok/s" "$tmp/err.txt"
fi

# Broken files: exactly one line on stderr, non-zero exit.
model=$shared/models/stories260K/stories260K.gguf
head -c 100000 "$model" >"$tmp/truncated.gguf"
{ printf 'GGML'; tail -c +5 "$model"; } >"$tmp/magic.gguf"
: >"$tmp/empty.gguf"
expect_error() {  # file, expected substring
  "$vkserve" --log-level warn generate --backend "$backend" --model "$1" -n 4 >"$tmp/o" 2>"$tmp/e"
  local rc=$? lines
  lines=$(wc -l <"$tmp/e")
  if [[ $rc == 0 || $rc -ge 128 || $lines != 1 ]] || ! grep -q "$2" "$tmp/e"; then
    echo "FAIL: $1: rc=$rc, stderr:"; cat "$tmp/e"; fail=1
  else
    echo "ok: $(basename "$1"): $(cat "$tmp/e")"
  fi
}
expect_error "$tmp/truncated.gguf" "outside the file"
expect_error "$tmp/magic.gguf" "magic"
expect_error "$tmp/empty.gguf" "magic"
expect_error "$tmp/missing.gguf" "no such file"
expect_error "$shared/models/vocab/ggml-vocab-llama-spm.gguf" "vocab-only"
exit $fail
