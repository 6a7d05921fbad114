#!/usr/bin/env bash
# The messageTemplate budget (docs/configuration.md#template-budget): the CPU time of Flux's v1
# template over 2,000 changes and of each hostile template until its budget stops it
# (bench/template_budget.c), then the wall time of a `reconcile` pass of a normal automation
# alone and beside a hostile one, refused at load or at commit (bench/template_budget.py).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s "$BUILD/bench/template_budget"
"$BUILD/bench/template_budget" "${BENCH_CHANGES:-2000}"
IMAGEGUARD=${IMAGEGUARD:-$PWD/$BUILD/imageguard} IMAGEGUARD_SRC=$PWD python3 bench/template_budget.py
