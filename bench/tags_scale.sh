#!/usr/bin/env bash
# Benchmark (issue 17): `imageguard tags` against curl on one repository of 10,000 and one of
# 100,000 tags on a local docker-registry: wall time over BENCH_RUNS rounds with the tools
# interleaved (bench/interleave.py), judged on the median of the per-round ratios, and peak RSS.
# Targets: 1.2x and 1.5x curl; the 100k listing's RSS at most twice the listing above the
# process's floor. Environment: IMAGEGUARD (binary), BENCH_RUNS (rounds, default 30),
# BENCH_TAG_SIZES (default 10000:1.2,100000:1.5, each tags:target).
set -euo pipefail
cd "$(dirname "$0")/.."
export IMAGEGUARD_SRC=$PWD
export IMAGEGUARD=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
if [[ -z ${BENCH_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then BENCH_TMPDIR=/dev/shm; fi
export TMPDIR=${BENCH_TMPDIR:-${TMPDIR:-/tmp}}
exec /usr/bin/python3 -u bench/tags_scale.py
