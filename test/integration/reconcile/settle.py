#!/usr/bin/python3
"""imageguard.io/settle (CONTRACT §11) end to end against Debian's docker-registry (through the
fault proxy, so a tag can vanish from the listing) and a bare Git remote: a new candidate is
hold/settling with the time left until it has been listed, with the same digest, for the whole
window; plan decides the same and writes no state; the window survives a restart (state dir);
a candidate that vanishes or is re-pointed starts again; a rollback override never waits."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, serve_tags  # noqa: E402

t = Checks()
WINDOW = 3  # seconds: long enough to see the hold, short enough for make check


def configure(env, host, annotations):
    env.config(env.repository("app", "team/app", host=host)
               + env.policy("app", "app", semver=">=1.0.0", annotations=annotations)
               + env.automation())


def one(env, *args):
    r = env.imageguard(*args, "-o", "json")
    try:
        return r, r.json()[0]
    except (ValueError, IndexError):
        return r, {}


with Env() as env:
    fault = env.fault()
    env.push("team/app", ["1.0.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app", fault.host) + ":1.0.0", "app")})
    settle = {"imageguard.io/settle": "%ds" % WINDOW}
    configure(env, fault.host, settle)
    state_file = os.path.join(env.state, "settle.json")
    log_len = len(env.remote_log())

    env.push("team/app", ["1.1.0"])
    r, it = one(env, "plan")
    t.check(r.rc == 0 and it.get("decision") == "hold" and it.get("reason") == "settling"
            and "left" in it.get("message", ""), "plan: a new candidate is hold/settling", r)
    t.check(not os.path.exists(state_file), "plan writes no settle state")
    r, it = one(env, "reconcile")
    t.check(r.rc == 0 and it.get("reason") == "settling" and it.get("candidate") == "1.1.0",
            "reconcile: hold/settling on 1.1.0", r)
    t.check(len(env.remote_log()) == log_len, "no commit while settling")
    saved = json.load(open(state_file))
    t.check(saved["policies"]["default/app"]["candidate"] == "1.1.0"
            and oct(os.stat(state_file).st_mode & 0o777) == "0o600",
            "the window is remembered in the state dir (0600)", saved)

    time.sleep(WINDOW + 0.5)
    r, it = one(env, "reconcile")  # a new process: the window survived the "restart"
    t.check(r.rc == 0 and it.get("decision") == "update" and it.get("reason") == "forward"
            and it.get("commit"), "after the window: update/forward committed", r)
    t.check(":1.1.0 #" in env.remote_file("app.yaml"), "the remote holds 1.1.0")
    log_len += 1

    # a candidate that vanishes from the listing starts again when it is back
    env.push("team/app", ["1.2.0"])
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "settling" and it.get("candidate") == "1.2.0", "1.2.0 settles", r)
    time.sleep(WINDOW / 2 + 0.5)
    serve_tags(fault, "team/app", ["1.0.0", "1.1.0"])
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "up-to-date", "1.2.0 gone from the listing: up to date", r)
    serve_tags(fault, "team/app", None)
    time.sleep(WINDOW / 2 + 0.2)
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "settling" and "listed for 0s" in it.get("message", ""),
            "1.2.0 back: its window starts again (it would have been over otherwise)", r)

    # re-pointed while settling: the clock restarts
    time.sleep(WINDOW / 2 + 0.2)
    env.push("team/app", ["1.2.0"], created="2026-02-01T00:00:00Z")  # another digest
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "settling" and "listed for 0s" in it.get("message", ""),
            "1.2.0 re-pointed at another image: its window starts again", r)
    t.check(len(env.remote_log()) == log_len, "still no commit")

    # an override never waits
    configure(env, fault.host, dict(settle, **{"imageguard.io/rollback-to": "1.0.0",
                                               "imageguard.io/rollback-reason": "INC-9"}))
    r, it = one(env, "reconcile")
    t.check(r.rc == 0 and it.get("decision") == "rollback" and it.get("commit"),
            "a rollback override is committed at once, settle or not", r)

sys.exit(t.done())
