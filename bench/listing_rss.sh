#!/usr/bin/env bash
# Benchmark: peak RSS of `imageguard tags` on one large tag listing (default ~25 MB of JSON, one
# page, tags of realistic shapes from bench/gen_tags.py) served by test/fixtures/faultserver.py
# (its tag-list override). Prints the listing's size, peak RSS (/usr/bin/time, the largest of
# BENCH_RUNS runs), and the ratio peak/listing, for the text and JSON outputs and for the same
# tags served out of byte order (imageguard must sort them), plus the
# process's floor (a 3-tag listing). Target (CONTRACT §1 / issue 12): peak at most about twice
# the listing, and below the shipped 128Mi limit. It fails only when a run fails or the tag
# count is wrong; the figures are for people (make check asserts none).
# Environment: IMAGEGUARD (binary), BENCH_LISTING_MB (default 25), BENCH_RUNS (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
IG=${IMAGEGUARD:-$PWD/build/imageguard}
MB=${BENCH_LISTING_MB:-25}
RUNS=${BENCH_RUNS:-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/imageguard-bench-rss.XXXXXX")
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

/usr/bin/python3 test/fixtures/faultserver.py --port 0 --port-file "$dir/port" >/dev/null &
pid=$!
for _ in $(seq 100); do [[ -f $dir/port ]] && break; sleep 0.1; done
port=$(cat "$dir/port")

# About MB megabytes of JSON: gen_tags.py's shapes average ~21 bytes an entry with quotes and
# comma. Distinct tags only, so the count is exact.
/usr/bin/python3 - "$MB" "$dir" "$port" <<'PY'
import json, subprocess, sys, urllib.request
mb, d, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
count = mb * 1000 * 1000 // 21
out = subprocess.run([sys.executable, "bench/gen_tags.py", str(count), "7"], check=True,
                     capture_output=True, text=True).stdout.split()
tags = sorted(set(out))
body = json.dumps({"tags": tags}).encode()
urllib.request.urlopen(urllib.request.Request(
    "http://127.0.0.1:%s/_fault/bench/big/tags" % port, data=body, method="POST")).read()
import random
shuffled = list(tags)
random.Random(7).shuffle(shuffled)
urllib.request.urlopen(urllib.request.Request(
    "http://127.0.0.1:%s/_fault/bench/shuffled/tags" % port, data=json.dumps(shuffled).encode(),
    method="POST")).read()
urllib.request.urlopen(urllib.request.Request(
    "http://127.0.0.1:%s/_fault/bench/small/tags" % port, data=b'["a","b","c"]',
    method="POST")).read()
listing = len(json.dumps({"name": "bench/big", "tags": tags}))
open(d + "/count", "w").write("%d\n" % len(tags))
open(d + "/bytes", "w").write("%d\n" % listing)
PY
count=$(cat "$dir/count")
bytes=$(cat "$dir/bytes")
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "listing: $count tags, $bytes bytes ($(mib "$bytes")), one page"

# peak RSS (KiB) of the largest run: measure IMAGE ARGS...
measure() {
	local peak=0 kb
	for _ in $(seq "$RUNS"); do
		/usr/bin/time -f %M -o "$dir/rss" "$IG" tags "$@" --insecure --page-size 0 \
			--max-bytes 268435456 --timeout 120s >"$dir/out" 2>"$dir/err" ||
			{ cat "$dir/err" >&2; return 1; }
		kb=$(tail -n 1 "$dir/rss")
		((kb > peak)) && peak=$kb
	done
	echo "$peak"
}

floor=$(measure "127.0.0.1:$port/bench/small")
echo "floor (3 tags):    peak RSS $(mib $((floor * 1024)))"
for mode in text json shuffled; do
	repo=big
	[[ $mode == shuffled ]] && repo=shuffled
	peak=$(measure "127.0.0.1:$port/bench/$repo" -o "${mode/shuffled/text}")
	if [[ $mode != json ]]; then
		n=$(wc -l <"$dir/out")
	else
		n=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$dir/out")
	fi
	[[ $n -eq $count ]] || { echo "bench/listing_rss: $mode output has $n tags, want $count" >&2; exit 1; }
	awk -v p=$((peak * 1024)) -v f=$((floor * 1024)) -v b="$bytes" -v m="$mode" 'BEGIN {
		printf "%-16s peak RSS %.1f MiB = %.2fx the listing (%.2fx above the floor); %s\n",
			(m == "shuffled" ? "unsorted listing" : "tags -o " m), p / 1048576, p / b, (p - f) / b,
			p <= 2.2 * b && p < 128 * 1048576 ? "within the target" : "OVER the target" }'
done
