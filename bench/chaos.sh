#!/usr/bin/env bash
# RSS flatness under chaos (moved out of make check, where only a generous no-growth bound is
# asserted): runs test/integration/run/chaos.py (which still asserts every invariant and fails
# the benchmark if one breaks) and judges its RSS figures against the target: RSS at the end
# within 10% of RSS after warm-up. Environment: CHAOS_SECONDS (default 120 here), CHAOS_SEED.
set -euo pipefail
cd "$(dirname "$0")/.."
export IMAGEGUARD_SRC=$PWD
export IMAGEGUARD=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
export IMAGEGUARD_BUILD=${IMAGEGUARD_BUILD:-$PWD/${BUILD:-build}}
export CHAOS_SECONDS=${CHAOS_SECONDS:-120}
log=$(mktemp "${TMPDIR:-/tmp}/imageguard-bench-chaos.XXXXXX")
trap 'rm -f "$log"' EXIT
if ! /usr/bin/python3 -u test/integration/run/chaos.py >"$log" 2>&1; then
	grep -E '^not ok' -A3 "$log" >&2 || tail -n 30 "$log" >&2
	echo "bench/chaos.sh: the chaos run failed" >&2
	exit 1
fi
grep -E '^# (seed|RSS|[0-9]+ passes)' "$log"
/usr/bin/python3 - "$log" <<'PY'
import re, sys
m = re.search(r"^# RSS after warm-up (\d+) kB, at the end (\d+) kB; fds (\d+) -> (\d+)",
              open(sys.argv[1]).read(), re.M)
if not m:
    sys.exit("bench/chaos.sh: no RSS figures in the chaos run's output")
rss0, rss1, fd0, fd1 = map(int, m.groups())
ok = rss1 <= rss0 * 1.10
print("chaos: RSS %d -> %d kB (%+.1f%%), target within +10%%: %s; fds %d -> %d"
      % (rss0, rss1, (rss1 - rss0) * 100.0 / rss0, "met" if ok else "MISSED", fd0, fd1))
PY
