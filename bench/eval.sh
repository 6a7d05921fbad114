#!/usr/bin/env bash
# `imageguard eval` on generated lists of 100k and 1M tags for each policy kind, and node-semver's
# maxSatisfying (npm package `semver`, installed into a temp dir) on the same 100k and 1M lists and
# range: wall time and peak RSS of the whole process, the ratios, and a check that both pick the
# same tag. Targets: 10x on each at 100k (issue 17); 30x faster and 15x less RSS at 1M (issue 38).
set -euo pipefail
cd "$(dirname "$0")/.."
IG=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
RANGE='>=1.0.0 <20.0.0'
RUNS=${BENCH_RUNS:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ig-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# measure OUTFILE CMD...: best wall seconds, best CPU seconds (user+sys) and peak RSS (KiB) over
# $RUNS runs, stdin from $input. CPU time is reported too because wall time on a shared machine
# includes waiting for a core.
measure() {
	local out=$1 best_t= best_c= best_m=0 t u s m c rc
	shift
	for ((r = 0; r < RUNS; r++)); do
		rc=0
		/usr/bin/time -q -f '%e %U %S %M' -o "$tmp/time" "$@" <"$input" >"$out" 2>"$tmp/stderr" || rc=$?
		if [[ $rc -ne ${MEASURE_RC:-0} ]]; then
			echo "bench/eval.sh: '$*' exited $rc, want ${MEASURE_RC:-0}:" >&2
			head -n 5 "$tmp/stderr" >&2
			return 1
		fi
		read -r t u s m <"$tmp/time"
		c=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u + s}')
		if [[ -z $best_t ]] || awk -v a="$t" -v b="$best_t" 'BEGIN{exit !(a<b)}'; then best_t=$t; fi
		if [[ -z $best_c ]] || awk -v a="$c" -v b="$best_c" 'BEGIN{exit !(a<b)}'; then best_c=$c; fi
		((m > best_m)) && best_m=$m
	done
	echo "$best_t $best_c $best_m"
}

for n in 100000 1000000; do
	bench/gen_tags.py "$n" 42 >"$tmp/tags-$n"
done

printf '%-46s %7s %7s %9s  %s\n' "case" "wall s" "cpu s" "peak KiB" "picked"
for n in 100000 1000000; do
	input=$tmp/tags-$n
	while IFS='|' read -r name args; do
		eval "set -- $args"
		measure "$tmp/out" "$IG" eval "$@" >"$tmp/m" || exit 1
		read -r t c m <"$tmp/m"
		printf '%-46s %7s %7s %9s  %s\n' "eval $name ($((n / 1000))k)" "$t" "$c" "$m" "$(cat "$tmp/out")"
	done <<'CASES'
semver '>=1.0.0 <20.0.0'|--semver '>=1.0.0 <20.0.0'
semver '>=1.0.0-0' (prereleases)|--semver '>=1.0.0-0'
numerical asc, extract $ts|--pattern '^main-[a-f0-9]+-(?P<ts>[0-9]+)$' --extract '$ts' --numerical asc
alphabetical asc (calver filter)|--pattern '^[0-9]{4}\.[0-9]{2}\.[0-9]{2}$' --alphabetical asc
alphabetical desc (all)|--alphabetical desc
CASES
done

# node-semver peer on the 100k list
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "bench/eval.sh: node and npm are required for the node-semver comparison" >&2
	exit 1
fi
npm install --silent --no-audit --no-fund --prefix "$tmp/node" semver >/dev/null
cat >"$tmp/max.js" <<'JS'
const semver = require(process.argv[2] + '/node_modules/semver');
const tags = require('fs').readFileSync(0, 'utf8').split('\n').filter((t) => t.length > 0);
const best = semver.maxSatisfying(tags, process.argv[3]);
if (best === null) process.exit(1);
console.log(best);
JS
# compare N WALL_TARGET RSS_TARGET: node-semver and imageguard on the N-tag list; prints the
# figures and verdicts and fails when the two pick different tags.
compare() {
	local n=$1 wt=$2 mt=$3 nt nc nm it ic im
	input=$tmp/tags-$n
	measure "$tmp/node.out" node "$tmp/max.js" "$tmp/node" "$RANGE" >"$tmp/m" || return 1
	read -r nt nc nm <"$tmp/m"
	measure "$tmp/ig.out" "$IG" eval --semver "$RANGE" >"$tmp/m" || return 1
	read -r it ic im <"$tmp/m"
	echo
	echo "node-semver $(node -p "require('$tmp/node/node_modules/semver/package.json').version") maxSatisfying vs imageguard eval, $((n / 1000))k tags, range '$RANGE' (best of $RUNS):"
	printf '  %-12s %6s s wall %6s s cpu %8s KiB  %s\n' node "$nt" "$nc" "$nm" "$(cat "$tmp/node.out")" \
		imageguard "$it" "$ic" "$im" "$(cat "$tmp/ig.out")"
	awk -v nt="$nt" -v it="$it" -v nc="$nc" -v ic="$ic" -v nm="$nm" -v im="$im" -v wt="$wt" -v mt="$mt" '
	function ratio(a, b) { return b > 0 ? a / b : a / 0.005 } # /usr/bin/time has 10 ms resolution
	BEGIN {
		w = ratio(nt, it); c = ratio(nc, ic); m = nm / im
		printf "  ratio: %.1fx faster wall, %.1fx less cpu, %.1fx smaller peak RSS\n", w, c, m
		printf "  target: >= %dx faster wall: %s; >= %dx smaller peak RSS: %s\n",
			wt, (w >= wt ? "met" : "MISSED"), mt, (m >= mt ? "met" : "MISSED") }'
	if [[ $(cat "$tmp/node.out") != "$(cat "$tmp/ig.out")" ]]; then
		echo "bench/eval.sh: MISMATCH: node-semver picked '$(cat "$tmp/node.out")', imageguard '$(cat "$tmp/ig.out")'" >&2
		return 1
	fi
	echo "  same tag picked: $(cat "$tmp/ig.out")"
	last_im=$im last_nm=$nm
}
# 100k: issue 17's 10x on each; 1M: issue 38's 30x faster and 15x less RSS (text output
# streams the list through one 1 MiB block; JSON output reads it whole).
compare 100000 10 10 || exit 1
compare 1000000 30 15 || exit 1
# The floor: the same process on empty input (the shared libraries the eval binary maps).
input=/dev/null
# (no candidate on empty input: eval exits 1, as CONTRACT §3 says)
MEASURE_RC=1 measure "$tmp/floor.out" "$IG" eval --semver "$RANGE" >"$tmp/m" || exit 1
read -r _ _ fm <"$tmp/m"
awk -v fm="$fm" -v im="$last_im" -v nm="$last_nm" 'BEGIN {
	printf "  imageguard floor on empty input: %d KiB (1M tags: %d); node at 1M / floor = %.1fx\n", fm, im, nm / fm }'
