#!/usr/bin/python3
"""Deterministic tag lists of realistic shapes for the benchmarks: release and prerelease
semver (some with a v), main-<sha>-<unix ts>, suffixed (-alpine), calver, and noise (latest,
sha256-....sig). Release versions are unique by precedence so every tool has one right answer.
usage: gen_tags.py COUNT SEED"""
import random
import sys

count, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
seen = set()
out = []
while len(out) < count:
    r = rng.random()
    if r < 0.40:
        v = (rng.randrange(0, 25), rng.randrange(0, 60), rng.randrange(0, 300))
        if v in seen:
            continue
        seen.add(v)
        out.append(("v" if rng.random() < 0.3 else "") + "%d.%d.%d" % v)
    elif r < 0.55:
        out.append("%d.%d.%d-%s.%d" % (rng.randrange(0, 25), rng.randrange(0, 60),
                                       rng.randrange(0, 300),
                                       rng.choice(["rc", "beta", "alpha"]), rng.randrange(0, 20)))
    elif r < 0.80:
        out.append("main-%07x-%d" % (rng.getrandbits(28), 1600000000 + rng.randrange(0, 10**8)))
    elif r < 0.90:
        out.append("%d.%d.%d-%s" % (rng.randrange(0, 25), rng.randrange(0, 60),
                                    rng.randrange(0, 300), rng.choice(["alpine", "debian", "slim"])))
    elif r < 0.96:
        out.append("%04d.%02d.%02d" % (rng.randrange(2019, 2026), rng.randrange(1, 13),
                                       rng.randrange(1, 29)))
    else:
        out.append(rng.choice(["latest", "main", "sha256-%064x.sig" % rng.getrandbits(256)]))
sys.stdout.write("\n".join(out) + "\n")
