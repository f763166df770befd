#!/usr/bin/env python3
"""Offline validation of configs/kubernetes (no cluster in CI):
- every YAML document has apiVersion/kind/metadata.name, and a small schema per kind
  (required fields and types);
- the references hold: Service, PodMonitor and InferencePool select the Deployment's pods,
  ports and volumes named exist, the HPA targets the Deployment with a metric the adapter
  rules produce, kustomize resources exist and the AMD/Intel overlays' JSON patches apply;
- the Deployment: a GPU resource of a known device plugin, startup/readiness (/ping) and
  liveness (/health) probes, the model mounted read-only, non-root, and a grace period that
  covers preStop + --drain-timeout;
- against build/vkserve started with the Deployment's arguments: every probe path answers
  200, and /metrics carries what the HPA, the adapter rules and the inference gateway's
  endpoint picker read.
Usage: kubernetes_manifests_test.py build/vkserve   (exit 77 without PyYAML or a Vulkan device)
"""
import copy
import os
import re
import signal
import sys

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML missing (apt-get install python3-yaml)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opslib import check, fail, start_server, wait_ready  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
K8S = os.path.join(ROOT, "configs", "kubernetes")
GPU_RESOURCES = {"nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe"}


def bad(where, msg):
    fail(None, f"{where}: {msg}")


def get(doc, path, typ, where):
    """doc at a dotted path, checked to exist and to be of `typ`."""
    cur = doc
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            bad(where, f"missing {path}")
        cur = cur[key]
    if not isinstance(cur, typ):
        bad(where, f"{path} is {type(cur).__name__}, want {typ}")
    return cur


docs = []  # (file, doc)
for dirpath, _, files in os.walk(K8S):
    for f in sorted(files):
        if f.endswith(".yaml"):
            path = os.path.join(dirpath, f)
            for d in yaml.safe_load_all(open(path)):
                if d is not None:
                    docs.append((os.path.relpath(path, K8S), d))
by_kind = {}
for f, d in docs:
    kind = d.get("kind")
    if kind != "Kustomization":
        get(d, "apiVersion", str, f)
        get(d, "metadata.name", str, f)
    get(d, "kind", str, f)
    by_kind.setdefault(kind, []).append((f, d))
for need in ("Deployment", "Service", "PersistentVolumeClaim", "HorizontalPodAutoscaler", "PodMonitor",
             "ConfigMap", "InferencePool", "HTTPRoute", "Kustomization"):
    if need not in by_kind:
        bad("configs/kubernetes", f"no {need}")


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_deployment(f, dep):
    get(dep, "spec.selector.matchLabels", dict, f)
    pod_labels = get(dep, "spec.template.metadata.labels", dict, f)
    if not selects(dep["spec"]["selector"]["matchLabels"], pod_labels):
        bad(f, "the selector does not match the pod template's labels")
    spec = get(dep, "spec.template.spec", dict, f)
    c = get(spec, "containers", list, f)[0]
    for key, typ in (("name", str), ("image", str), ("args", list), ("ports", list)):
        get(c, key, typ, f)
    ports = {p["name"]: get(p, "containerPort", int, f) for p in c["ports"]}
    limits = get(c, "resources.limits", dict, f)
    gpus = [r for r in limits if r in GPU_RESOURCES]
    if len(gpus) != 1 or limits[gpus[0]] != 1:
        bad(f, f"want one GPU of a known device plugin in limits, got {limits}")
    probes = {}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        path = get(c, probe + ".httpGet.path", str, f)
        port = c[probe]["httpGet"]["port"]
        if port not in ports and port not in ports.values():
            bad(f, f"{probe} port {port} is not a container port")
        probes[probe] = path
    if probes["readinessProbe"] != "/ping" or probes["livenessProbe"] != "/health":
        bad(f, f"probes: {probes}")
    args = c["args"]
    drain = next((float(a.split("=", 1)[1]) for a in args if a.startswith("--drain-timeout=")), 25.0)
    pre = get(c, "lifecycle.preStop.exec.command", list, f)
    pre_s = float(pre[1]) if pre[0] == "sleep" else 0.0
    grace = get(spec, "terminationGracePeriodSeconds", int, f)
    if grace < pre_s + drain:
        bad(f, f"terminationGracePeriodSeconds {grace} < preStop {pre_s} + --drain-timeout {drain}")
    vols = {v["name"]: v for v in get(spec, "volumes", list, f)}
    for m in get(c, "volumeMounts", list, f):
        if m["name"] not in vols:
            bad(f, f"volumeMount {m['name']} has no volume")
    model = next((m for m in c["volumeMounts"] if m["mountPath"] == "/models"), None)
    if not model or not model.get("readOnly"):
        bad(f, "the model is not mounted read-only at /models")
    claim = vols[model["name"]].get("persistentVolumeClaim", {}).get("claimName")
    if claim not in {d["metadata"]["name"] for _, d in by_kind["PersistentVolumeClaim"]}:
        bad(f, f"the model volume's claim {claim} is not defined")
    if not get(spec, "securityContext.runAsNonRoot", bool, f):
        bad(f, "not runAsNonRoot")
    return pod_labels, ports, args, probes, gpus[0]


f, dep = by_kind["Deployment"][0]
pod_labels, ports, args, probes, gpu = check_deployment(f, dep)
for f, svc in by_kind["Service"]:
    if not selects(get(svc, "spec.selector", dict, f), pod_labels):
        bad(f, "the Service does not select the pods")
    for p in get(svc, "spec.ports", list, f):
        if p["targetPort"] not in ports and p["targetPort"] not in ports.values():
            bad(f, f"targetPort {p['targetPort']} is not a container port")
for f, pm in by_kind["PodMonitor"]:
    if not selects(get(pm, "spec.selector.matchLabels", dict, f), pod_labels):
        bad(f, "the PodMonitor does not select the pods")
    for ep in get(pm, "spec.podMetricsEndpoints", list, f):
        if ep["port"] not in ports or ep.get("path") != "/metrics":
            bad(f, f"bad metrics endpoint {ep}")
adapter_cfg = get(by_kind["ConfigMap"][0][1], "data", dict, "adapter rules").get("config.yaml")
if not isinstance(adapter_cfg, str):
    bad("adapter rules", "missing data.config.yaml")
rules = yaml.safe_load(adapter_cfg)["rules"]
adapter_metrics = {}  # HPA metric name -> the series regex it comes from
for r in rules:
    m = re.search(r'__name__=~"([^"]+)"', r["seriesQuery"])
    series_re = m.group(1) if m else r["seriesQuery"].split("{")[0]
    adapter_metrics[(r["name"]["matches"], r["name"]["as"])] = series_re
for f, hpa in by_kind["HorizontalPodAutoscaler"]:
    tgt = get(hpa, "spec.scaleTargetRef", dict, f)
    if tgt.get("kind") != "Deployment" or tgt.get("name") != dep["metadata"]["name"]:
        bad(f, "the HPA does not target the Deployment")
    for m in get(hpa, "spec.metrics", list, f):
        name = get(m, "pods.metric.name", str, f)
        made = [re.sub(matches, as_.replace("${1}", r"\1"), series)
                for (matches, as_), series_re in adapter_metrics.items()
                for series in ("vkserve:num_requests_waiting", "vkserve:num_requests_running")
                if re.fullmatch(series_re, series)]
        if name not in made:
            bad(f, f"HPA metric {name} is not produced by the adapter rules ({made})")
for f, pool in by_kind["InferencePool"]:
    if not selects(get(pool, "spec.selector.matchLabels", dict, f), pod_labels):
        bad(f, "the InferencePool does not select the pods")
    for tp in get(pool, "spec.targetPorts", list, f):
        if tp.get("number") not in ports.values():
            bad(f, f"targetPort {tp} is not a container port")
    get(pool, "spec.endpointPickerRef.name", str, f)
    get(pool, "spec.endpointPickerRef.port.number", int, f)
pools = {d["metadata"]["name"] for _, d in by_kind["InferencePool"]}
for f, route in by_kind["HTTPRoute"]:
    for rule in get(route, "spec.rules", list, f):
        for b in rule["backendRefs"]:
            if b.get("kind") == "InferencePool" and b["name"] not in pools:
                bad(f, f"backendRef to unknown pool {b['name']}")


def json_patch(doc, ops, where):
    doc = copy.deepcopy(doc)
    for op in ops:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        cur = doc
        for k in keys[:-1]:
            cur = cur[int(k)] if isinstance(cur, list) else cur[k]
        if op["op"] == "remove":
            if keys[-1] not in cur:
                bad(where, f"patch removes a missing {op['path']}")
            del cur[keys[-1]]
        elif op["op"] in ("add", "replace"):
            cur[keys[-1]] = op["value"]
        else:
            bad(where, f"unsupported patch op {op['op']}")
    return doc


for f, k in by_kind["Kustomization"]:
    base = os.path.dirname(os.path.join(K8S, f))
    for r in get(k, "resources", list, f):
        if not os.path.exists(os.path.join(base, r)):
            bad(f, f"resource {r} does not exist")
    for p in k.get("patches", []):
        patched = json_patch(dep, yaml.safe_load(p["patch"]), f)
        _, _, _, _, vendor_gpu = check_deployment(f, patched)
        if vendor_gpu == "nvidia.com/gpu":
            bad(f, "the overlay still asks for an NVIDIA GPU")
print(f"ok: {len(docs)} documents: fields, types, references, overlays ({gpu} in the base)")

# The binary, started with the Deployment's arguments (host, port, model and bidi port are
# this test's), answers the probes and publishes the metrics the manifests name.
own = ("--host", "--port", "--model", "--bidi-port")
srv_args = [a for a in args[1:] if not a.startswith(own)]
srv = start_server(srv_args, {}, activated=False)
wait_ready(srv)
for probe, path in probes.items():
    status, body = srv.request("GET", path)
    check(status == 200, srv, f"{probe} {path}: {status} {body}")
status, text = srv.request("GET", "/metrics")
check(status == 200, srv, "/metrics")
names = set(re.findall(r"^([a-z_:]+)(?:\{| )", text, re.M))
for need in ("vkserve:num_requests_waiting", "vkserve:num_requests_running", "vllm:num_requests_waiting",
             "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
             "vllm:cache_config_info"):
    check(need in names, srv, f"/metrics lacks {need}")
check(re.search(r'^vllm:cache_config_info\{block_size="16",num_gpu_blocks="[1-9][0-9]*"\} 1$', text, re.M),
      srv, "vllm:cache_config_info labels")
check(re.search(r"^# TYPE vllm:num_requests_waiting gauge$", text, re.M), srv, "vllm:num_requests_waiting type")
srv.proc.send_signal(signal.SIGTERM)
check(srv.proc.wait(timeout=60) == 0, srv, "exit status after SIGTERM")
print("ok: the probes answer 200 and /metrics has the series the HPA and the endpoint picker read")
