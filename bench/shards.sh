#!/usr/bin/env bash
# 50,000 policies over 10 shards (issue 38, item 4): `run --kube --enable-leader-election
# --shards 10 --shard-index I`, one replica per shard and a standby for two of them, against the
# etcd-backed API fixture, one docker-registry (the repositories are symlinks to one stored
# repository of 20 tags) and 80 bare remotes behind `git http-backend`, eight per shard (picked
# with `check-config --shards 10`). Each shard alone, in turn (2 cores cannot time 10 at once):
# decisions per pass = the policies it owns, registry requests per policy per pass (the
# registry's access log), the steady passes summed against curl fetching the same lists over 4
# connections, peak RSS. Then all 12 at once: the leader of shard 0 killed (-9) and a new tag
# for every policy; the standby's first pass within the lease (6 s) + one pass, every policy moved
# by exactly one commit, each commit pushed once, from the lease of the shard that owns its
# remote; peak RSS. Started one by one (12 at once overran the Python API fixture).
# Targets: requests per policy per pass <= 1, aggregate pass <= 1.2x curl, RSS < 32 MiB.
# docs/performance.md has the figures. Environment: IMAGEGUARD (binary), BENCH_SHARD_POLICIES
# (50000), BENCH_SHARD_PASSES (3), BENCH_SHARD_TAGS (20), BENCH_SHARD_REMOTES (per shard, 8),
# BENCH_SHARD_TIMEOUT (s, 1800), BENCH_SHARD_KEEP=1 (keep the temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
export IMAGEGUARD_SRC=$PWD
export IMAGEGUARD=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
if [[ -z ${BENCH_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then BENCH_TMPDIR=/dev/shm; fi
export TMPDIR=${BENCH_TMPDIR:-${TMPDIR:-/tmp}}
exec /usr/bin/python3 -u bench/shards_bench.py
