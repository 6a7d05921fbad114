#!/usr/bin/env bash
# The example Prometheus alerting rules are valid (promtool check rules) and fire, or stay quiet,
# on the synthetic series of their unit tests (promtool test rules): a blocked downgrade, a
# policy error, a stalled controller, registry errors, a shrunken tag list and a committed tag
# missing from the listing; every metric they name exists in the binary.
set -euo pipefail
SRC=${IMAGEGUARD_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
command -v promtool >/dev/null || { echo "not ok - promtool missing (scripts/install-deps installs prometheus)"; exit 1; }
IMAGEGUARD=$(realpath "${IMAGEGUARD:-$SRC/build/imageguard}")
cd "$SRC/examples/prometheus"
promtool check rules imageguard-rules.yaml
echo "ok - promtool check rules"
promtool test rules imageguard-rules.test.yaml
echo "ok - promtool test rules"
# Every metric the rules and the docs' queries name is one the binary declares (a histogram's
# _sum/_count/_bucket series counted as its own name). /metrics is served by `run`, which the
# front binary hands to imageguard-full beside it (src/main.c): read that one.
FULL=$(dirname "$IMAGEGUARD")/imageguard-full
declared=$(grep -aoE 'imageguard_[a-z_]+' "$FULL" | sort -u)
missing=0
for m in $(cat imageguard-rules.yaml imageguard-rules.test.yaml "$SRC/docs/operations.md" \
		| grep -oE 'imageguard_[a-z_]+' | sed -E 's/_(sum|count|bucket)$//' | sort -u); do
	if ! grep -qx -- "$m" <<<"$declared"; then
		echo "not ok - metric $m is not declared by $FULL"
		missing=$((missing + 1))
	fi
done
[[ $missing == 0 ]] || exit 1
echo "ok - every metric named in the rules and docs/operations.md exists"
echo "PASS alerts"
