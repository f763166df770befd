#!/usr/bin/env bash
# CLI checks of `vkserve generate`: the stories260K golden output (greedy, empty prompt),
# broken model files (one clear error line, non-zero exit, no crash), Hugging Face
# directories written by make-test-model (single file and sharded with an index), and for
# vk the device options (--device index/name, the logged choice, --profile, --stats,
# --vk-tuning).
# Usage: cli_test.sh VKSERVE BACKEND MAKE_TEST_MODEL   (BACKEND vk exits 77 without Vulkan)
set -uo pipefail
vkserve=$1
backend=$2
make_test_model=$3
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
# Byte patches of a generated model: the architecture string, a tensor's type id, a tensor's
# data offset past the end of the file.
"$make_test_model" --shape tiny-llama --type q8_0 -o "$tmp/tiny.gguf" 2>/dev/null || { echo "FAIL: make-test-model"; fail=1; }
patch() {  # in out python-expression-on-bytes-b
  python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
def at(s): return b.index(s.encode())
exec(sys.argv[3])
open(sys.argv[2], 'wb').write(b)
PY
}
patch "$tmp/tiny.gguf" "$tmp/arch.gguf" "i = at('general.architecture') + 20 + 4 + 8; b[i:i+5] = b'gptjx'"
expect_error "$tmp/arch.gguf" "unknown architecture 'gptjx'"
patch "$tmp/tiny.gguf" "$tmp/type.gguf" "i = at('blk.0.attn_k.weight') + 19 + 4 + 16; b[i:i+4] = struct.pack('<I', 77)"
expect_error "$tmp/type.gguf" "unknown type 77"
patch "$tmp/tiny.gguf" "$tmp/oob.gguf" "i = at('blk.1.ffn_down.weight') + 21 + 4 + 16 + 4; b[i:i+8] = struct.pack('<Q', 1 << 40)"
expect_error "$tmp/oob.gguf" "outside the file"

# Hugging Face directories from make-test-model: one file and 3 shards with an index.
for shards in 1 3; do
  dir=$tmp/hf$shards
  "$make_test_model" --shape tiny-qwen2 --type bf16 --format hf --shards $shards -o "$dir" 2>/dev/null
  if [[ $shards == 3 && ! -f $dir/model.safetensors.index.json ]]; then echo "FAIL: no index for 3 shards"; fail=1; fi
  if "$vkserve" --log-level warn generate --backend "$backend" --model "$dir" -n 8 --temperature 0 >"$tmp/o" 2>"$tmp/e" &&
      [[ $(grep -o '<[0-9]*>' "$tmp/o" | wc -l) -ge 2 ]]; then
    echo "ok: HF directory with $shards shard(s): $(head -c 60 "$tmp/o")"
  else
    echo "FAIL: HF directory with $shards shard(s):"; cat "$tmp/o" "$tmp/e"; fail=1
  fi
done

if [[ $backend == vk ]]; then  # device selection, the logged choice, --profile
  tiny=$tmp/tiny.gguf
  if "$vkserve" --log-level info generate --model "$tiny" --device 0 -n 2 --profile >"$tmp/o" 2>"$tmp/e" &&
      grep -q "vulkan: using '" "$tmp/e" && grep -Eq "profile matvec_(texel_)?q8_0" "$tmp/e"; then
    echo "ok: --device 0 --profile: $(grep -o "vulkan: using '[^']*' ([a-z]*)" "$tmp/e")"
  else
    echo "FAIL: --device 0 --profile:"; cat "$tmp/e"; fail=1
  fi
  name=$(grep -o "vulkan: using '[^']*'" "$tmp/e" | head -1 | sed "s/vulkan: using '//; s/'$//")
  sub=${name:0:4}
  if "$vkserve" --log-level warn generate --model "$tiny" --device "$sub" -n 2 >/dev/null 2>"$tmp/e"; then
    echo "ok: --device '$sub' (name substring)"
  else
    echo "FAIL: --device '$sub':"; cat "$tmp/e"; fail=1
  fi
  for bad in 97 no-such-device; do
    "$vkserve" --log-level warn generate --model "$tiny" --device $bad -n 2 >/dev/null 2>"$tmp/e"
    rc=$?
    if [[ $rc == 0 || $rc -ge 128 || $(wc -l <"$tmp/e") != 1 ]] || ! grep -q "no device matches '$bad'" "$tmp/e"; then
      echo "FAIL: --device $bad: rc=$rc:"; cat "$tmp/e"; fail=1
    else
      echo "ok: --device $bad: $(cat "$tmp/e")"
    fi
  done
  # --stats: one JSON line of per-step counters; --vk-tuning gpu: the GPU kernels (8
  # dispatches per layer, tiny-llama has 2 layers), a bad value refused.
  if "$vkserve" --log-level warn generate --model "$tiny" -n 6 --temperature 0 --stats --vk-tuning gpu \
      >/dev/null 2>"$tmp/e" && python3 - "$tmp/e" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith('{')]
assert len(lines) == 1, lines
s = json.loads(lines[0])
for k in ("dispatches_per_step", "barriers_per_step", "submits_per_step", "fence_waits_per_step",
          "bytes_uploaded_per_step", "bytes_downloaded_per_step", "bytes_moved_per_step", "weight_bytes",
          "kv_bytes_read_per_step", "n_layers", "record_us_per_step", "wait_us_per_step", "device"):
    assert k in s, k
assert s["n_layers"] == 2 and s["decode_steps"] == 5, s
assert s["submits_per_step"] >= 1 and s["fence_waits_per_step"] >= 1 and s["dispatches_per_step"] >= 16, s
assert 0 < s["weight_bytes"] < s["bytes_moved_per_step"] and s["kv_bytes_read_per_step"] > 0, s
assert s["wait_us_per_step"] > 0, s  # the device ran the step while the host waited
# Greedy: the device's argmax comes back (one token id per row), not a logit row.
assert 0 < s["bytes_downloaded_per_step"] <= 64, s
PY
  then
    echo "ok: --stats --vk-tuning gpu: $(grep '^{' "$tmp/e")"
  else
    echo "FAIL: --stats --vk-tuning gpu:"; cat "$tmp/e"; fail=1
  fi
  # --overlap-record on (#19): every decode step (but the first, after a longer prompt) is
  # submitted from the recording made while the step before ran; the text is that of
  # --overlap-record off.
  if "$vkserve" --log-level warn generate --model "$tiny" -n 6 --temperature 0 --stats --overlap-record on \
      >"$tmp/o1" 2>"$tmp/e" &&
     "$vkserve" --log-level warn generate --model "$tiny" -n 6 --temperature 0 --overlap-record off \
      >"$tmp/o0" 2>/dev/null && cmp -s "$tmp/o0" "$tmp/o1" && python3 - "$tmp/e" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0])
# (a one-token prompt is itself decode-shaped: then the first decode step is resumed too)
assert s["decode_steps"] == 5 and 4 <= s["overlapped_records"] <= 5, s
assert "record_hidden_us_per_step" in s, s
PY
  then
    echo "ok: --overlap-record on: $(grep -o '"overlapped_records":[0-9]*' "$tmp/e")"
  else
    echo "FAIL: --overlap-record on:"; cat "$tmp/e"; fail=1
  fi
  "$vkserve" --log-level warn generate --model "$tiny" -n 2 --vk-tuning fast >/dev/null 2>"$tmp/e"
  rc=$?
  if [[ $rc == 0 || $rc -ge 128 ]] || ! grep -q "expected cpu, cpu:ssbo" "$tmp/e"; then
    echo "FAIL: --vk-tuning fast: rc=$rc:"; cat "$tmp/e"; fail=1
  else
    echo "ok: --vk-tuning fast: $(head -1 "$tmp/e")"
  fi
  # --kv-cache-dtype q8_0 (#19): runs under both kernel families, its step reads 34 bytes
  # per 32 cached values (--stats: 136/512 of the f32 cache's KV bytes at tiny-llama's
  # 2 x 64 values per row); stories260K's head dim of 8 is refused with one line.
  for tuning in cpu gpu; do
    ok=1
    for kv in f32 q8_0; do
      "$vkserve" --log-level warn generate --model "$tiny" -n 6 --temperature 0 --stats --vk-tuning $tuning \
        --kv-cache-dtype $kv >"$tmp/o.$kv" 2>"$tmp/e.$kv" || ok=0
    done
    if [[ $ok == 1 ]] && python3 - "$tmp/e.f32" "$tmp/e.q8_0" <<'PY'
import json, sys
f32, q8 = ([json.loads(l) for l in open(p) if l.startswith('{')][0] for p in sys.argv[1:3])
assert q8["kv_bytes_read_per_step"] * 512 == f32["kv_bytes_read_per_step"] * 136, (f32, q8)
PY
    then
      echo "ok: --kv-cache-dtype q8_0 --vk-tuning $tuning: KV bytes per step 136/512 of f32's"
    else
      echo "FAIL: --kv-cache-dtype q8_0 --vk-tuning $tuning:"; cat "$tmp/e.f32" "$tmp/e.q8_0"; fail=1
    fi
  done
  "$vkserve" --log-level warn generate --model "$shared/models/stories260K/stories260K.gguf" -n 2 \
    --kv-cache-dtype q8_0 >/dev/null 2>"$tmp/e"
  rc=$?
  if [[ $rc == 0 || $rc -ge 128 ]] || ! grep -q "divisible by 32" "$tmp/e"; then
    echo "FAIL: --kv-cache-dtype q8_0 on head dim 8: rc=$rc:"; cat "$tmp/e"; fail=1
  else
    echo "ok: --kv-cache-dtype q8_0 on head dim 8: $(head -1 "$tmp/e")"
  fi
fi
exit $fail
