#!/usr/bin/env python3
"""Offline checks of the container recipes (configs/container/Containerfile,
configs/sagemaker/Dockerfile), since no container engine runs in CI:
- each file parses as a Dockerfile (known instructions, continuations, exec-form JSON);
- the general image: Debian 12 slim, a non-root USER, a HEALTHCHECK on /health, the model
  volume, exec-form ENTRYPOINT, NVIDIA's `graphics` capability (its Vulkan ICD), Mesa;
- the SageMaker image builds FROM the general one, runs as root, has `serve` as CMD;
- every package an `apt-get install` line names exists in Debian 12 (apt-cache);
- the runtime stage installs the Debian packages of every shared library that
  build/vkserve links (ldd + dpkg -S), beyond what debian:12-slim has.
Usage: container_recipes_test.py build/vkserve   (exit 77 without apt lists or dpkg)
"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
                "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
# In debian:12-slim already: apt and its dependencies (the C/C++ runtime among them).
SLIM_BASE = ["apt", "libc6", "libstdc++6", "libgcc-s1"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def parse(path):
    """Returns the stages: [{'from': str, 'as': str|None, 'ins': [(INSTR, args)]}]."""
    lines = open(path).read().split("\n")
    stages, logical, buf = [], [], ""
    for raw in lines:
        s = raw.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if s.startswith("#"):
            continue  # comment inside a continuation
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        logical.append(buf + s)
        buf = ""
    if buf:
        fail(f"{path}: ends inside a line continuation")
    pre_from = []
    for l in logical:
        instr, _, args = l.partition(" ")
        instr = instr.upper()
        if instr not in INSTRUCTIONS:
            fail(f"{path}: unknown instruction {instr!r}")
        if instr in ("CMD", "ENTRYPOINT") or (instr == "HEALTHCHECK" and " CMD " in f" {args} "):
            form = args.split(" CMD ", 1)[1] if instr == "HEALTHCHECK" else args
            if form.strip().startswith("["):
                try:
                    json.loads(form)
                except ValueError as e:
                    fail(f"{path}: {instr} exec form is not JSON: {e}")
        if instr == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", args.strip(), re.I)
            if not m:
                fail(f"{path}: bad FROM {args!r}")
            stages.append({"from": m.group(1), "as": m.group(2), "ins": []})
        elif not stages:
            if instr != "ARG":
                fail(f"{path}: {instr} before FROM")
            pre_from.append(args)
        else:
            stages[-1]["ins"].append((instr, args.strip()))
    if not stages:
        fail(f"{path}: no FROM")
    return stages


def find(stage, instr):
    return [a for i, a in stage["ins"] if i == instr]


def apt_packages(stage):
    pkgs = []
    for run in find(stage, "RUN"):
        for cmd in re.split(r"&&|;", run):
            words = cmd.split()
            if "apt-get" in words and "install" in words:
                pkgs += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return pkgs


general = parse(os.path.join(ROOT, "configs/container/Containerfile"))
sm = parse(os.path.join(ROOT, "configs/sagemaker/Dockerfile"))
rt = general[-1]
if not all(s["from"] == "debian:12-slim" for s in general):
    fail("the general image's stages are not all FROM debian:12-slim")
users = find(rt, "USER")
if not users or users[-1].split(":")[0] in ("root", "0"):
    fail("the general image does not end as a non-root USER")
hc = find(rt, "HEALTHCHECK")
if not hc or "/health" not in hc[-1]:
    fail("no HEALTHCHECK on /health")
if not any("/models" in v for v in find(rt, "VOLUME")):
    fail("no /models volume")
ep = find(rt, "ENTRYPOINT")
if not ep or json.loads(ep[-1]) != ["/usr/local/bin/vkserve"]:
    fail("ENTRYPOINT is not exec-form vkserve")
if not any("graphics" in e for e in find(rt, "ENV")):
    fail("NVIDIA_DRIVER_CAPABILITIES lacks graphics (the NVIDIA Vulkan ICD)")
rt_pkgs = apt_packages(rt)
for need in ("libvulkan1", "mesa-vulkan-drivers"):
    if need not in rt_pkgs:
        fail(f"the runtime stage does not install {need}")
if any(p.endswith("-dev") or p in ("build-essential", "meson") for p in rt_pkgs):
    fail(f"build tools in the runtime stage: {rt_pkgs}")
cmd = json.loads(find(rt, "CMD")[-1])
if cmd[:1] != ["serve"] or "0.0.0.0" not in cmd:
    fail(f"the general image's CMD does not serve on all interfaces: {cmd}")
if sm[-1]["from"] != "${VKSERVE_IMAGE}":
    fail("the SageMaker image is not built FROM the general image (ARG VKSERVE_IMAGE)")
if find(sm[-1], "USER") != ["root"]:
    fail("the SageMaker image does not run as root")
if json.loads(find(sm[-1], "CMD")[-1]) != ["serve"] or json.loads(find(sm[-1], "ENTRYPOINT")[-1]) != ["/usr/local/bin/vkserve"]:
    fail("the SageMaker image's ENTRYPOINT/CMD are not vkserve serve")
for f in ("models/stories260K.gguf",):
    if not any(f in c for c in find(rt, "COPY")):
        fail(f"the runtime stage does not copy {f}")
print("ok: both recipes parse; image settings")

# Packages exist in Debian 12.
if not shutil.which("apt-cache") or not shutil.which("dpkg") or not os.listdir("/var/lib/apt/lists"):
    print("SKIP: no apt lists here (apt-get update) to check the package names")
    sys.exit(77)
every = sorted(set(apt_packages(general[0]) + rt_pkgs))
shown = subprocess.run(["apt-cache", "show", "--no-all-versions"] + every, capture_output=True, text=True).stdout
found = {l.split(":", 1)[1].strip() for l in shown.split("\n") if l.startswith("Package:")}
missing = [p for p in every if p not in found]
if missing:
    fail(f"not in this machine's Debian 12 apt lists: {missing}")
print(f"ok: {len(every)} apt packages exist")

# The runtime stage covers build/vkserve's shared libraries.
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "vkserve")
ldd = subprocess.run(["ldd", binary], capture_output=True, text=True)
if ldd.returncode != 0:
    fail(f"ldd {binary}: {ldd.stderr}")
libs = [m.group(1) for m in re.finditer(r"=> (/\S+)", ldd.stdout)]
# A sanitizer build (tools/test runs this suite under ASan/UBSan too) links the sanitizer
# runtimes, which no release image ships.
libs = [l for l in libs if not re.search(r"/lib(a|ub|t|l)san\.so", l)]
deps = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                       "--no-breaks", "--no-replaces", "--no-enhances"] + rt_pkgs + SLIM_BASE,
                      capture_output=True, text=True).stdout
covered = set(rt_pkgs) | set(SLIM_BASE) | {re.sub(r"^(Pre)?Depends: ", "", l.strip()).strip("<>").split(":")[0]
                                            for l in deps.split("\n") if l.strip()}
# dpkg -S by path; a library found through /lib may be registered under /usr/lib (merged /usr).
cands = sorted({c for lib in libs for r in (lib, os.path.realpath(lib))
                for c in (r, r.replace("/usr/lib/", "/lib/"), r.replace("/lib/", "/usr/lib/", 1))})
owned = {}
for line in subprocess.run(["dpkg", "-S"] + cands, capture_output=True, text=True).stdout.split("\n"):
    if ": " in line:
        pkg, path = line.split(": ", 1)
        owned[path.strip()] = pkg.split(":")[0].split(",")[0].strip()
uncovered = []
for lib in libs:
    real = os.path.realpath(lib)
    owner = next((owned[c] for c in (lib, real, lib.replace("/usr/lib/", "/lib/"), real.replace("/usr/lib/", "/lib/"),
                                     lib.replace("/lib/", "/usr/lib/", 1), real.replace("/lib/", "/usr/lib/", 1))
                  if c in owned), None)
    if owner is None:
        fail(f"no Debian package owns {lib} (built against a library outside Debian?)")
    if owner not in covered:
        uncovered.append(f"{lib} ({owner})")
if uncovered:
    fail(f"the runtime stage lacks the packages of: {uncovered}")
print(f"ok: the runtime stage provides all {len(libs)} shared libraries of {binary}")
