#!/usr/bin/env bash
# Reconcile benchmark (issue 5): 500 policies over 500 repositories on a local docker-registry
# (20-200 tags each), one Git repository with their 500 markers. Times a full `reconcile` pass
# with everything up to date and with 10% of the markers updating, and reports the peak RSS of
# `run` over several passes. Targets: up-to-date pass < 2 s, peak RSS < 32 MiB.
# Then the scale table (issues 17, 38): N policies over N repositories of 100 tags each, all up
# to date, for N = 500, 2,000, 5,000 and 50,000: wall time beside curl fetching the same N lists
# over the same 4 keep-alive connections (`--parallel --parallel-max 4`), the CPU of the
# `reconcile` process and of one steady-state `run` pass beside curl's and the libcurl floor's
# (bench/curl_floor.c: 4 threads, one reused handle each, imageguard's options), the peak RSS of
# `reconcile` and of `run` over its passes, per-policy figures, and the growth. Targets at 5,000:
# wall <= 1.2x curl, a run pass's CPU <= 1.0x curl's in the same run (issue 38), RSS < 32 MiB
# (the larger of the two); growth from 500 to each larger N: CPU and wall per policy within 1.2x
# (issue 38). docs/performance.md has the figures. Environment: IMAGEGUARD (binary),
# BENCH_POLICIES (default 500), BENCH_PASSES (default 5), BENCH_SKIP_MIXED=1 (the scale table
# only), BENCH_SCALE (default 500,2000,5000,50000; 0 skips it), BENCH_SCALE_TAGS (100),
# BENCH_SCALE_RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
export IMAGEGUARD_SRC=$PWD
export IMAGEGUARD=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
make -s "${BUILD:-build}/bench/curl_floor" >/dev/null
# The registry storage (55000 tag links), the Git remote and the state dir go to tmpfs when there
# is one: the figures are imageguard's, not the disk's (BENCH_TMPDIR overrides).
if [[ -z ${BENCH_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then BENCH_TMPDIR=/dev/shm; fi
export TMPDIR=${BENCH_TMPDIR:-${TMPDIR:-/tmp}}
exec /usr/bin/python3 -u bench/reconcile_bench.py
