#!/usr/bin/python3
"""Wall time of commands run interleaved (bench/tags_scale.py, bench/registry.sh): each round
runs every command once, the order reversed every other round (A B C, C B A, ...), so that a
burst of load from another process on a shared machine hits both sides of a comparison alike.
hyperfine runs all of one command's runs before the next command's, so a burst lands on one
side only; on this 2-core machine that moved its 10k-tag median ratio from 0.90x to 1.72x.
Besides each command's median, the figure to judge is the median of the per-round ratios
against a reference command. Wall time is taken around posix_spawn and wait4 (the same
overhead for every command), CPU from wait4's rusage.

As a program: interleave.py [--rounds N] [--warmup N] [--ref NAME] -n NAME CMD [-n NAME CMD]...
prints one JSON object: {"rounds", "ref", "results": {NAME: {median, mean, stddev, min,
user, sys, wall: [...]}}, "ratios": {NAME: {median, q1, q3, min, max, within: {"1.2": share}}}}
(times in seconds; each CMD split as a shell would, without a shell)."""
import argparse
import json
import os
import shlex
import statistics
import sys
import time


def run_once(argv):
    """(wall s, user s, sys s) of one run of argv, stdout and stderr to /dev/null; raises on a
    non-zero exit."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        t0 = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, os.environ,
                              file_actions=[(os.POSIX_SPAWN_DUP2, null, 1),
                                            (os.POSIX_SPAWN_DUP2, null, 2)])
        _, status, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
    finally:
        os.close(null)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s: exit %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return wall, ru.ru_utime, ru.ru_stime


def quartiles(xs):
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else xs * 3
    return q[0], q[2]


def run(cmds, rounds, warmup=3, ref=None, thresholds=(1.2,)):
    """cmds: [(name, argv)]. Runs warmup rounds (not counted), then rounds rounds. Returns the
    dict the program prints; ratios are each command's wall over ref's (default: the last
    command) in the same round."""
    names = [n for n, _ in cmds]
    ref = ref or names[-1]
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for r in range(warmup + rounds):
        order = cmds if r % 2 == 0 else cmds[::-1]
        for name, argv in order:
            w, u, s = run_once(argv)
            if r >= warmup:
                wall[name].append(w)
                cpu[name].append((u, s))
    results, ratios = {}, {}
    for n in names:
        xs = wall[n]
        results[n] = {"median": statistics.median(xs), "mean": statistics.mean(xs),
                      "stddev": statistics.stdev(xs) if len(xs) > 1 else 0.0, "min": min(xs),
                      "user": statistics.median(u for u, _ in cpu[n]),
                      "sys": statistics.median(s for _, s in cpu[n]), "wall": xs}
        if n == ref:
            continue
        rs = [a / b for a, b in zip(xs, wall[ref])]
        q1, q3 = quartiles(rs)
        ratios[n] = {"median": statistics.median(rs), "q1": q1, "q3": q3, "min": min(rs),
                     "max": max(rs),
                     "within": {"%g" % t: sum(x <= t for x in rs) / len(rs) for t in thresholds}}
    return {"rounds": rounds, "ref": ref, "results": results, "ratios": ratios}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ref", help="the command the ratios divide by (default: the last)")
    ap.add_argument("--within", type=float, action="append", default=[],
                    help="report the share of rounds at most this ratio (repeatable)")
    ap.add_argument("-n", nargs=2, action="append", metavar=("NAME", "CMD"), required=True)
    a = ap.parse_args(argv)
    cmds = [(n, shlex.split(c)) for n, c in a.n]
    json.dump(run(cmds, a.rounds, a.warmup, a.ref, tuple(a.within) or (1.2,)), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
