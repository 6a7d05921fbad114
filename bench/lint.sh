#!/usr/bin/env bash
# Benchmark: `imageguard lint` over 5,000 generated manifests (Deployments with Services,
# StatefulSets, CronJobs, Pods, kustomization.yaml, HelmReleases) in a nested tree.
# Environment: IMAGEGUARD (binary), LINT_BENCH_FILES (default 5000), LINT_BENCH_RUNS (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${IMAGEGUARD:-$PWD/build/imageguard}
n=${LINT_BENCH_FILES:-5000}
runs=${LINT_BENCH_RUNS:-10}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-bench-lint.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 - "$tmp/tree" "$n" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
D = "sha256:" + "4d6a8fbcc5e8b8d8a6ed46e9bbbb1cb0e7e1e5d6d44f2cfd1cbd1b73d0f4b0c7"
tags = ["1.4.2", "v2.0.1", "latest", "stable", "2024.03.01", "main", "3.1.0@" + D, "", "@" + D]
def img(i):
    t = rnd.choice(tags)
    name = "ghcr.io/acme/svc-%d" % (i % 97)
    return name + (t if t.startswith("@") else (":" + t if t else ""))
def container(i, ind):
    pol = rnd.choice(["", "Always", "IfNotPresent", "Never"])
    s = f"{ind}- name: c{i}\n{ind}  image: {img(i)}\n"
    if pol: s += f"{ind}  imagePullPolicy: {pol}\n"
    s += f"{ind}  ports:\n{ind}  - containerPort: 8080\n{ind}  resources:\n{ind}    limits: {{cpu: 500m, memory: 256Mi}}\n"
    s += f"{ind}  env:\n" + "".join(f"{ind}  - {{name: VAR_{k}, value: \"value-{k}\"}}\n" for k in range(5))
    return s
def podspec(i, ind):
    s = f"{ind}initContainers:\n" + container(i, ind) if rnd.random() < 0.3 else ""
    return s + f"{ind}containers:\n" + "".join(container(i * 3 + k, ind) for k in range(rnd.randint(1, 3)))
def deployment(i, kind="Deployment"):
    return (f"apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: app-{i}\n  namespace: team-{i % 20}\n"
            f"  labels: {{app: app-{i}}}\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {{app: app-{i}}}\n"
            f"  template:\n    metadata:\n      labels: {{app: app-{i}}}\n    spec:\n" + podspec(i, "      ") +
            f"---\napiVersion: v1\nkind: Service\nmetadata:\n  name: app-{i}\nspec:\n  ports: [{{port: 80, targetPort: 8080}}]\n")
def cronjob(i):
    return (f"apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: job-{i}\nspec:\n  schedule: \"*/5 * * * *\"\n"
            f"  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n" + podspec(i, "          "))
def pod(i):
    return f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i}\nspec:\n" + podspec(i, "  ")
def kustomization(i):
    return ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [deployment.yaml]\nimages:\n" +
            "".join(f"- name: ghcr.io/acme/svc-{k}\n  newTag: {rnd.choice(['1.2.3', 'latest', 'main'])}\n" for k in range(3)))
def helmrelease(i):
    return (f"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: hr-{i}\nspec:\n  interval: 5m\n"
            f"  chart: {{spec: {{chart: podinfo, version: '6.x', sourceRef: {{kind: HelmRepository, name: podinfo}}}}}}\n"
            f"  values:\n    replicaCount: 2\n    image:\n      repository: ghcr.io/acme/hr-{i}\n      tag: {rnd.choice(['latest', '6.5.0', 'stable'])}\n"
            f"      pullPolicy: IfNotPresent\n    redis:\n      enabled: true\n      image: \"docker.io/redis:7.2\"\n"
            f"    ingress: {{enabled: false, hosts: [{{host: a.example.com, paths: [{{path: /}}]}}]}}\n")
gens = [deployment, lambda i: deployment(i, "StatefulSet"), lambda i: deployment(i, "DaemonSet"),
        cronjob, pod, helmrelease]
for i in range(n):
    d = os.path.join(root, "clusters", "c%d" % (i % 5), "apps", "app-%d" % (i // 5 % 200))
    os.makedirs(d, exist_ok=True)
    if i % 10 == 9:
        os.makedirs(os.path.join(d, "overlay-%d" % i))
        path, body = os.path.join(d, "overlay-%d" % i, "kustomization.yaml"), kustomization(i)
    else:
        path, body = os.path.join(d, "m%d.yaml" % i), rnd.choice(gens)(i)
    with open(path, "w") as f:
        f.write(body)
PY
files=$(find "$tmp/tree" -name '*.yaml' | wc -l)
bytes=$(du -sb "$tmp/tree" | cut -f1)
# The tree holds mutable tags on purpose: lint exits 1 (findings at error). Anything else
# (2: usage, or a crash) fails the benchmark.
lint_ok() { # ARGS...: runs lint, output to $tmp/out; fails unless the exit is 1
	local rc=0
	"$bin" lint "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[[ $rc -eq 1 ]] || { echo "bench/lint.sh: lint $* exited $rc, want 1" >&2; head -5 "$tmp/err" >&2; exit 1; }
}
lint_ok "$tmp/tree" -o json
findings=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$tmp/out")
lint_ok "$tmp/tree"
text_lines=$(grep -c ': error \|: warning ' "$tmp/out" || :)
echo "lint bench: $files manifests, $((bytes / 1024)) KiB, $findings findings"
# Element by element: the text output names the same findings as the JSON, one line each.
if [[ $text_lines -ne $findings ]]; then
	echo "bench/lint.sh: text output has $text_lines finding lines, JSON $findings" >&2
	exit 1
fi
echo "lint bench: target: none set (no peer lints these rules); the figures track regressions"
if command -v hyperfine >/dev/null; then
	# Through the shell (hyperfine subtracts its start-up) so that exit 1 (findings) counts as a
	# success and any other exit as a failure.
	hyperfine --warmup 1 --runs "$runs" --export-json "$tmp/h.json" \
		"'$bin' lint '$tmp/tree' -o json >/dev/null; test \$? -eq 1" \
		"'$bin' lint '$tmp/tree' >/dev/null; test \$? -eq 1" >/dev/null 2>"$tmp/hf.err" ||
		{ cat "$tmp/hf.err" >&2; exit 1; }
	/usr/bin/python3 - "$tmp/h.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("lint bench: %-6s mean %.3f s ± %.3f (min %.3f, max %.3f, %d runs)" % (
        "json" if "-o json" in r["command"] else "text", r["mean"], r["stddev"] or 0, r["min"], r["max"], len(r["times"])))
PY
else
	echo "bench/lint.sh: hyperfine is required (scripts/install-deps installs it)" >&2
	exit 1
fi
rc=0
/usr/bin/time -q -f "lint bench: %M KiB max RSS" -o "$tmp/time" "$bin" lint "$tmp/tree" -o json >/dev/null || rc=$?
[[ $rc -eq 1 ]] || { echo "bench/lint.sh: lint under /usr/bin/time exited $rc, want 1" >&2; exit 1; }
cat "$tmp/time"
