#!/usr/bin/env bash
# Benchmark (issues 17, 38): `imageguard tags` against curl on one repository each of 10,000,
# 100,000 and 1,000,000 tags on a local docker-registry: wall time over BENCH_RUNS rounds with the tools
# interleaved (bench/interleave.py), judged on the median of the per-round ratios, and peak RSS.
# Targets: 1.2x, 1.5x and 1.5x curl; the 100k and 1M listings' RSS at most twice the listing above the
# process's floor. Environment: IMAGEGUARD (binary), BENCH_RUNS (rounds, default 30),
# BENCH_TAG_SIZES (default 10000:1.2,100000:1.5,1000000:1.5, each tags:target).
set -euo pipefail
cd "$(dirname "$0")/.."
export IMAGEGUARD_SRC=$PWD
export IMAGEGUARD=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
if [[ -z ${BENCH_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then BENCH_TMPDIR=/dev/shm; fi
export TMPDIR=${BENCH_TMPDIR:-${TMPDIR:-/tmp}}
exec /usr/bin/python3 -u bench/tags_scale.py
