#!/usr/bin/env bash
# Benchmark: list a 10,000-tag repository on a local real registry (Debian's docker-registry)
# with `imageguard tags`, `skopeo list-tags` and a raw `curl` of the same tags/list URL (the
# floor). Reports wall time (hyperfine: mean, median, min of 20 runs after warm-up) and peak
# RSS (/usr/bin/time, median of 5). Targets, judged on medians: within 1.3x of curl, at most
# skopeo's wall time, less peak RSS than skopeo. Prints figures and verdicts; the benchmark itself fails only when
# a tool fails or the three disagree on the count.
set -euo pipefail
cd "$(dirname "$0")/.."
IG=${IMAGEGUARD:-$PWD/build/imageguard}
TAGS=${BENCH_TAGS:-10000}
RUNS=${BENCH_RUNS:-20}
dir=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-bench.XXXXXX")
cleanup() {
	/usr/bin/python3 test/fixtures/registry.py stop --dir "$dir" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

host=$(/usr/bin/python3 test/fixtures/registry.py start --dir "$dir")
echo "registry: $host; pushing $TAGS tags (one manifest, tag PUTs over 8 keep-alive connections)"
SECONDS=0
/usr/bin/python3 - "$host" "$TAGS" <<'PY'
import sys
sys.path.insert(0, "test/fixtures")
import registry
host, n = sys.argv[1], int(sys.argv[2])
registry.push_image("http://" + host, "bench/app", ["t%05d" % i for i in range(n)], connections=8)
PY
echo "pushed in ${SECONDS} s"

image="$host/bench/app"
url="http://$host/v2/bench/app/tags/list?n=$TAGS"
ig_cmd="$IG tags $image --insecure"
skopeo_cmd="skopeo list-tags --tls-verify=false docker://$image"
curl_cmd="curl -sSf $url"

# The three must agree before anything is timed.
n_ig=$($ig_cmd | wc -l)
n_skopeo=$($skopeo_cmd | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["Tags"]))')
n_curl=$($curl_cmd | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["tags"]))')
echo "tags seen: imageguard $n_ig, skopeo $n_skopeo, curl $n_curl"
if [[ $n_ig -ne $TAGS || $n_skopeo -ne $TAGS || $n_curl -ne $TAGS ]]; then
	echo "bench/registry: the tools disagree on the tag count" >&2
	exit 1
fi

hyperfine --warmup 3 --runs "$RUNS" --export-json "$dir/hf.json" -N \
	-n imageguard "$ig_cmd" -n skopeo "$skopeo_cmd" -n curl "$curl_cmd" >"$dir/hf.txt"

rss() { # median peak RSS in KiB of 5 runs
	for _ in 1 2 3 4 5; do /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n1; done | sort -n | sed -n 3p
}
rss_ig=$(rss $ig_cmd)
rss_skopeo=$(rss $skopeo_cmd)
rss_curl=$(rss $curl_cmd)

/usr/bin/python3 - "$dir/hf.json" "$rss_ig" "$rss_skopeo" "$rss_curl" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
rss = dict(zip(("imageguard", "skopeo", "curl"), map(int, sys.argv[2:5])))
print("%-11s %9s %9s %9s %9s %10s %12s" % ("tool", "mean ms", "stddev", "median", "min",
                                          "user ms", "peak RSS KiB"))
for k in ("imageguard", "skopeo", "curl"):
    r = res[k]
    print("%-11s %9.2f %9.2f %9.2f %9.2f %10.2f %12d" % (
        k, r["mean"] * 1000, r["stddev"] * 1000, r["median"] * 1000, r["min"] * 1000,
        r["user"] * 1000, rss[k]))
# Medians: the machine is shared, and a mean is at the mercy of whatever else runs.
ig, sk, cu = (res[k]["median"] for k in ("imageguard", "skopeo", "curl"))
def verdict(ok):
    return "met" if ok else "MISSED"
print("imageguard / curl   = %.2fx (target <= 1.30x: %s)" % (ig / cu, verdict(ig <= 1.3 * cu)))
print("imageguard / skopeo = %.2fx (target <= 1.00x: %s)" % (ig / sk, verdict(ig <= sk)))
print("RSS imageguard / skopeo = %.2fx (target < 1: %s)" % (rss["imageguard"] / rss["skopeo"],
      verdict(rss["imageguard"] < rss["skopeo"])))
PY
