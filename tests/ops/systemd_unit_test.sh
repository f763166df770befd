#!/usr/bin/env bash
# The systemd files: tools/install stages binary, model, units and env file into a
# DESTDIR; the installed unit has what docs/deploying.md promises (Type=notify, watchdog,
# restart, user, device access, hardening); `systemd-analyze verify` accepts it (with
# ExecStart pointed at this build's binary, as verify checks that it exists).
# Usage: systemd_unit_test.sh BUILD/vkserve   (exit 77 when systemd-analyze is missing)
set -uo pipefail
BIN=$(readlink -f "${1:?usage: systemd_unit_test.sh path/to/vkserve}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# tools/install into a staging root, with the binary of this build.
mkdir -p "$WORK/b"
ln -s "$BIN" "$WORK/b/vkserve"
"$SRC/tools/install" --no-build --build-dir "$WORK/b" --destdir "$WORK/root" --prefix /opt/vks \
  >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "tools/install"; }
R=$WORK/root
for f in opt/vks/bin/vkserve opt/vks/share/vkserve/models/stories260K.gguf etc/systemd/system/vkserve.service \
         etc/systemd/system/vkserve.socket etc/vkserve/vkserve.env opt/vks/share/doc/vkserve/deploying.md; do
  [[ -f $R/$f ]] || fail "tools/install did not place $f"
done
[[ -x $R/opt/vks/bin/vkserve ]] || fail "binary not executable"
U=$R/etc/systemd/system/vkserve.service
grep -q '^ExecStart=/opt/vks/bin/vkserve serve \$VKSERVE_ARGS$' "$U" || fail "ExecStart not rewritten to the prefix"
grep -q 'models/stories260K.gguf' "$R/etc/vkserve/vkserve.env" || fail "env file names no model"
grep -q '/opt/vks/share/vkserve/models/stories260K.gguf' "$R/etc/vkserve/vkserve.env" || fail "env file model path not rewritten"
# A second run keeps an edited env file.
echo "# edited" >>"$R/etc/vkserve/vkserve.env"
"$SRC/tools/install" --no-build --build-dir "$WORK/b" --destdir "$R" --prefix /opt/vks >/dev/null 2>&1 || fail "second install"
grep -q '^# edited' "$R/etc/vkserve/vkserve.env" || fail "tools/install overwrote the env file"
echo "ok: tools/install stages binary, model, units, env file"

for want in '^Type=notify$' '^WatchdogSec=' '^Restart=on-failure$' '^User=vkserve$' '^DevicePolicy=closed$' \
            '^DeviceAllow=char-drm rw$' '^DeviceAllow=/dev/nvidiactl rw$' '^NoNewPrivileges=yes$' \
            '^ProtectSystem=strict$' '^ProtectHome=yes$' '^PrivateTmp=yes$' '^ReadOnlyPaths=' \
            '^EnvironmentFile=-/etc/vkserve/vkserve.env$' '^NotifyAccess=main$'; do
  grep -q "$want" "$U" || fail "unit lacks $want"
done
grep -q '^#MemoryMax=' "$U" || fail "unit lacks the MemoryMax advice"
echo "ok: unit settings"

command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze missing (apt-get install systemd)"; exit 77; }
mkdir -p "$WORK/verify"
sed "s|^ExecStart=[^ ]*|ExecStart=$BIN|" "$U" >"$WORK/verify/vkserve.service"
cp "$R/etc/systemd/system/vkserve.socket" "$WORK/verify/"
# verify prints problems and exits non-zero on errors; warnings about this machine (no
# user vkserve, no such device nodes, not booted with systemd) are filtered, not ours.
out=$(cd "$WORK/verify" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./vkserve.service ./vkserve.socket 2>&1)
rc=$?
bad=$(grep -v -E 'Failed to (connect|open)|System has not been booted|DeviceAllow=.*(No such file|ignoring)|Unknown (user|group)|run/systemd|bus|Couldn.t stat device|Operation not permitted|Failed to load configuration for|Failed to create .*bus|Failed to initialize manager|Cannot find unit' <<<"$out" | grep -v '^$')
echo "$out"
[[ -z $bad ]] || fail "systemd-analyze verify: $bad"
[[ $rc -eq 0 ]] || { grep -q -E 'System has not been booted|Failed to initialize manager' <<<"$out" && { echo "SKIP: systemd-analyze cannot run here"; exit 77; }; fail "systemd-analyze verify exit $rc"; }
echo "ok: systemd-analyze verify"
