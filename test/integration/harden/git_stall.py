#!/usr/bin/python3
"""A Git host that accepts connections and never answers (issue 12 item 4, CONTRACT §1: every
network wait has a deadline and SIGTERM ends it within 2 s). One config, two automations:
`good` on a bare remote over file://, `bad` on http://127.0.0.1:PORT of a silent host, with
GitRepository spec.timeout 3s. `run` commits good's forward update while bad's clone waits
(the silence is bounded by spec.timeout, and the pass goes on without it), reports bad's
policy as error/git naming the timeout, and SIGTERM sent while bad's clone is held ends `run`
with exit 0 within 5 s (a hang check; the stream's own bound is a second of silence)."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, wait_for  # noqa: E402

t = Checks()


def silent_host():
    """A listening socket that accepts and holds every connection, answering nothing."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held, seen = [], []

    def loop():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            held.append(c)
            seen.append(time.time())
    threading.Thread(target=loop, daemon=True).start()
    return srv, seen


srv, seen = silent_host()
port = srv.getsockname()[1]
with Env() as env:
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"good/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "good")})
    bad = ("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
           "metadata:\n  name: silent\n  namespace: default\nspec:\n  interval: 1m\n"
           "  timeout: 3s\n  url: http://127.0.0.1:%d/repo.git\n  ref:\n    branch: main\n"
           "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
           "metadata:\n  name: bad\n  namespace: default\nspec:\n  interval: 1s\n"
           "  sourceRef:\n    kind: GitRepository\n    name: silent\n"
           "  update:\n    path: ./\n    strategy: Setters\n" % port)
    env.config(env.repository("good", "team/app", interval="1s")
               + env.policy("good", "good", semver=">=1.0.0")
               + env.automation(name="good", interval="1s", path="./good") + bad)

    r = env.imageguard("reconcile", "-o", "json", timeout=60)
    t.check(r.rc == 0 and "v1.1.0" in env.remote_file("good/app.yaml"),
            "reconcile: good commits while bad's Git host is silent", r)
    t.check("timed out" in r.err and "127.0.0.1" in r.err,
            "bad's clone ends after spec.timeout, and says so", r.err[-2000:])

    errpath = os.path.join(env.dir, "run.log")
    with open(errpath, "w+") as errlog:
        proc = subprocess.Popen(env.args("run"), stdout=subprocess.DEVNULL, stderr=errlog)
        try:
            n = len(seen)
            t.check(wait_for(lambda: len(seen) > n, 20), "run's pass connects to the silent host")
            time.sleep(0.5)  # inside the held clone
            sent = time.time()
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            took = time.time() - sent
            t.check(rc == 0 and took < 5, "SIGTERM during the held clone: exit 0 within 5 s "
                    "(rc %s, %.1f s)" % (rc, took), open(errpath).read()[-3000:])
        finally:
            if proc.poll() is None:
                proc.kill()
srv.close()
sys.exit(t.done())
