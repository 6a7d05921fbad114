#!/usr/bin/env bash
# One update in a 5,000-manifest repository (issue 38, item 3): `imageguard reconcile` with a
# warm clone cache beside `git clone --depth 1` + sed + commit + push, over file:// and smart
# HTTP (`git http-backend`), on a quiet and on a busy machine (two CPU-burning loops). Target:
# >= 5x in wall time, median of the per-round ratios, each of the four. The body and the setup
# are bench/git_reconcile.py. Environment: IMAGEGUARD (binary), FILES (5000), ROUNDS (15),
# WARMUP (2), BENCH_TMPDIR (default /dev/shm: both sides' clones on tmpfs, the figures are the
# tools', not the disk's).
set -euo pipefail
cd "$(dirname "$0")/.."
export IMAGEGUARD_SRC=$PWD
export IMAGEGUARD=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
make -s "$IMAGEGUARD" >/dev/null 2>&1 || make -s all >/dev/null
if [[ -z ${BENCH_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then BENCH_TMPDIR=/dev/shm; fi
export TMPDIR=${BENCH_TMPDIR:-${TMPDIR:-/tmp}}
exec /usr/bin/python3 -u bench/git_reconcile.py
