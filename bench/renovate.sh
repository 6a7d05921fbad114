#!/usr/bin/env bash
# The same job as Renovate (issue 38): 200 images of 20 tags on a TLS docker-registry on
# loopback, one Git repository of manifests with Flux markers and semver policies.
# `imageguard plan -o json` beside Renovate in local-platform lookup mode (`renovate
# --platform=local` in a checkout of the same manifests, the registry's CA through
# NODE_EXTRA_CA_CERTS): the same (image, new version) pairs from both, then wall time and peak
# RSS (/usr/bin/time) over interleaved rounds, medians, ratios, and the requests per image each
# sends. Targets: >= 20x faster wall and >= 20x less peak RSS, in the same run.
# Renovate is pinned by bench/renovate/package-lock.json and installed here with `npm ci` into
# bench/renovate/node_modules (git-ignored; never by scripts/install-deps: CI does not download
# it). Its optional native deps (re2, better-sqlite3) are omitted: re2 needs a build, and
# Renovate falls back to JavaScript regular expressions without it.
# Environment: IMAGEGUARD (binary), BENCH_IMAGES (200), BENCH_TAGS (20), BENCH_ROUNDS (5).
set -euo pipefail
cd "$(dirname "$0")/.."
export IMAGEGUARD_SRC=$PWD
export IMAGEGUARD=${IMAGEGUARD:-$PWD/${BUILD:-build}/imageguard}
for tool in node npm; do
	command -v $tool >/dev/null || { echo "bench/renovate.sh: $tool is required" >&2; exit 1; }
done
dir=bench/renovate
if [[ ! -x $dir/node_modules/.bin/renovate || $dir/package-lock.json -nt $dir/node_modules/.stamp ]]; then
	echo "installing Renovate (npm ci, pinned lockfile, optional native deps omitted)"
	(cd "$dir" && npm ci --omit=optional --no-audit --no-fund --loglevel=error >/dev/null)
	touch "$dir/node_modules/.stamp"
fi
export RENOVATE_BIN=$PWD/$dir/node_modules/.bin/renovate
# The registry storage and the Git remote go to tmpfs when there is one (BENCH_TMPDIR overrides).
if [[ -z ${BENCH_TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then BENCH_TMPDIR=/dev/shm; fi
export TMPDIR=${BENCH_TMPDIR:-${TMPDIR:-/tmp}}
exec /usr/bin/python3 -u bench/renovate_bench.py
