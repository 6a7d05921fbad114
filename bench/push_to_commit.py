#!/usr/bin/python3
"""Push-to-commit latency (issue 18): `run --webhook-listen` with Debian's docker-registry
notifying it, side by side in the same run with a second `run` polling at a 1m interval (its own
registry, remote and state). Each round pushes the next tag to both registries at once and
times until each remote's file names it. Prints median and maximum of both over BENCH_PUSHES
rounds (default 20). Target: webhook median under 2 s. Fails only when a commit never comes.
Environment: IMAGEGUARD (binary), BENCH_PUSHES (default 20), BENCH_POLL_INTERVAL (default 1m)."""
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, marker_file  # noqa: E402
import registry  # noqa: E402

PUSHES = int(os.environ.get("BENCH_PUSHES", "20"))
POLL = os.environ.get("BENCH_POLL_INTERVAL", "1m")
TOKEN = "bench-" + os.urandom(8).hex()


def setup(env, interval):
    env.push("team/app", ["1.0.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    env.config(env.repository("app", "team/app", interval=interval)
               + env.policy("app", "app", semver=">=1.0.0")
               + env.automation(interval=interval))


def start(env, extra):
    log = open(os.path.join(env.dir, "run.log"), "w")
    return subprocess.Popen(env.args("run", *extra), stdout=subprocess.DEVNULL, stderr=log)


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    hook_port = registry.free_port()
    with Env(start_registry=False) as hook_env, Env() as poll_env:
        hook_env.reg = registry.start_registry(
            os.path.join(hook_env.dir, "registry"),
            notifications={"url": "http://127.0.0.1:%d/hooks/registry" % hook_port,
                           "token": TOKEN})
        hook_env.host = hook_env.reg.host
        setup(hook_env, "1h")
        setup(poll_env, POLL)
        token_file = os.path.join(hook_env.secrets, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        procs = [start(hook_env, ["--webhook-listen", "127.0.0.1:%d" % hook_port,
                                  "--webhook-token-file", token_file]),
                 start(poll_env, [])]
        try:
            registry.wait_for_port(hook_port, procs[0])
            time.sleep(2)  # both first passes done
            got = {"webhook": [], "polling %s" % POLL: []}
            for i in range(PUSHES):
                tag = "1.0.%d" % (i + 1)
                t0 = time.time()
                hook_env.push("team/app", [tag])
                poll_env.push("team/app", [tag])
                pending = {"webhook": hook_env, "polling %s" % POLL: poll_env}
                while pending and time.time() - t0 < 600:
                    for name, env in list(pending.items()):
                        if tag + " #" in env.remote_file("app.yaml"):
                            got[name].append(time.time() - t0)
                            del pending[name]
                    time.sleep(0.02)
                if pending:
                    print("bench: %s never committed %s" % (sorted(pending), tag))
                    return 1
            for name, xs in got.items():
                print("%-14s push to commit over %d pushes: median %.2fs, max %.2fs"
                      % (name, len(xs), statistics.median(xs), max(xs)))
            med = statistics.median(got["webhook"])
            print("target webhook median < 2s: %s" % ("met" if med < 2 else "NOT met"))
        finally:
            for p in procs:
                stop(p)
    return 0


sys.exit(main())
