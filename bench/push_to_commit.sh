#!/usr/bin/env bash
# Benchmark: push-to-commit latency through docker-registry notifications (`run
# --webhook-listen`) against polling at a 1m interval, 20 pushes each (bench/push_to_commit.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bench/push_to_commit.py
