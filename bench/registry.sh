#!/usr/bin/env bash
# Benchmark: list a 10,000-tag repository on a local real registry (Debian's docker-registry)
# with `imageguard tags`, `skopeo list-tags` and a raw `curl` of the same tags/list URL (the
# floor). Reports wall time (mean, median, min of BENCH_RUNS rounds after warm-up, default 30,
# the three tools interleaved in each round: bench/interleave.py) and peak RSS (/usr/bin/time,
# median of 5). Targets, judged on the median of the per-round ratios: within 1.2x of curl
# (issue 17; it was 1.3x), at most skopeo's wall time; and less peak RSS than skopeo. Prints
# figures and verdicts; the benchmark itself fails when a tool fails or the three disagree on a
# single tag.
set -euo pipefail
cd "$(dirname "$0")/.."
IG=${IMAGEGUARD:-$PWD/build/imageguard}
TAGS=${BENCH_TAGS:-10000}
RUNS=${BENCH_RUNS:-30}
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

# The three must agree, tag for tag, before anything is timed: the same set as pushed.
/usr/bin/python3 -c 'import sys; print("\n".join("t%05d" % i for i in range(int(sys.argv[1]))))' "$TAGS" >"$dir/want"
$ig_cmd | LC_ALL=C sort >"$dir/ig"
$skopeo_cmd | /usr/bin/python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["Tags"]))' | LC_ALL=C sort >"$dir/skopeo"
$curl_cmd | /usr/bin/python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["tags"]))' | LC_ALL=C sort >"$dir/curl"
echo "tags seen: imageguard $(wc -l <"$dir/ig"), skopeo $(wc -l <"$dir/skopeo"), curl $(wc -l <"$dir/curl")"
for tool in ig skopeo curl; do
	if ! cmp -s "$dir/want" "$dir/$tool"; then
		echo "bench/registry: $tool's tags differ from the $TAGS pushed:" >&2
		diff "$dir/want" "$dir/$tool" | head -5 >&2
		exit 1
	fi
done
echo "same tag set: the $TAGS pushed, from all three"

/usr/bin/python3 bench/interleave.py --rounds "$RUNS" --ref curl --within 1.2 \
	-n imageguard "$ig_cmd" -n skopeo "$skopeo_cmd" -n curl "$curl_cmd" >"$dir/runs.json"

rss() { # median peak RSS in KiB of 5 runs; a failed run fails the benchmark
	for _ in 1 2 3 4 5; do
		/usr/bin/time -f %M -o "$dir/rss1" "$@" >/dev/null 2>"$dir/rss.err" ||
			{ echo "bench/registry: '$*' failed" >&2; cat "$dir/rss.err" >&2; return 1; }
		tail -n1 "$dir/rss1"
	done | sort -n | sed -n 3p
}
rss $ig_cmd >"$dir/rss_ig"
rss $skopeo_cmd >"$dir/rss_skopeo"
rss $curl_cmd >"$dir/rss_curl"
rss_ig=$(cat "$dir/rss_ig") rss_skopeo=$(cat "$dir/rss_skopeo") rss_curl=$(cat "$dir/rss_curl")

/usr/bin/python3 - "$dir/runs.json" "$rss_ig" "$rss_skopeo" "$rss_curl" <<'PY'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))
res = runs["results"]
rss = dict(zip(("imageguard", "skopeo", "curl"), map(int, sys.argv[2:5])))
print("%-11s %9s %9s %9s %9s %10s %12s" % ("tool", "mean ms", "stddev", "median", "min",
                                          "user ms", "peak RSS KiB"))
for k in ("imageguard", "skopeo", "curl"):
    r = res[k]
    print("%-11s %9.2f %9.2f %9.2f %9.2f %10.2f %12d" % (
        k, r["mean"] * 1000, r["stddev"] * 1000, r["median"] * 1000, r["min"] * 1000,
        r["user"] * 1000, rss[k]))
# Per-round ratios: the machine is shared, a mean is at the mercy of whatever else runs, and a
# burst of load moves one round's pair together far less than it moves one tool's median.
ig, sk, cu = (res[k]["median"] for k in ("imageguard", "skopeo", "curl"))
r_cu = runs["ratios"]["imageguard"]
r_sk = statistics.median(a / b for a, b in zip(res["imageguard"]["wall"], res["skopeo"]["wall"]))
def verdict(ok):
    return "met" if ok else "MISSED"
print("imageguard / curl   = %.2fx per round, median of %d (quartiles %.2f-%.2fx, %.0f%% of "
      "rounds within 1.2x; ratio of the medians %.2fx) (target <= 1.20x: %s)"
      % (r_cu["median"], runs["rounds"], r_cu["q1"], r_cu["q3"], 100 * r_cu["within"]["1.2"],
         ig / cu, verdict(r_cu["median"] <= 1.2)))
print("imageguard / skopeo = %.2fx per round, median (ratio of the medians %.2fx) (target <= "
      "1.00x: %s)" % (r_sk, ig / sk, verdict(r_sk <= 1.0)))
print("RSS imageguard / skopeo = %.2fx (target < 1: %s)" % (rss["imageguard"] / rss["skopeo"],
      verdict(rss["imageguard"] < rss["skopeo"])))
PY
