#!/usr/bin/env bash
# The example Prometheus alerting rules are valid (promtool check rules) and fire, or stay quiet,
# on the synthetic series of their unit tests (promtool test rules): a blocked downgrade, a
# policy error, a stalled controller, registry errors and a shrunken tag list.
set -euo pipefail
SRC=${IMAGEGUARD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v promtool >/dev/null || { echo "not ok - promtool missing (scripts/install-deps installs prometheus)"; exit 1; }
cd "$SRC/examples/prometheus"
promtool check rules imageguard-rules.yaml
echo "ok - promtool check rules"
promtool test rules imageguard-rules.test.yaml
echo "ok - promtool test rules"
echo "PASS alerts"
