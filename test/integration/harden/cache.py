#!/usr/bin/python3
"""Issue 12 item 6, end to end against a real docker-registry and a bare Git remote: one loose
object of the clone cache goes missing while HEAD still reads (the blob of a marked file that
the next pass does not change, in the same directory as one it does). Every later pass must
still commit: the cache is found damaged and recloned, never an error on each pass."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, by_file  # noqa: E402

t = Checks()


def lost_blob(env):
    env.push("team/a", ["v1.0.0", "v1.1.0"])
    env.push("team/b", ["v1.0.0", "v1.1.0"])
    env.seed({"apps/a.yaml": marker_file(env.image("team/a") + ":v1.0.0", "a"),
              "apps/b.yaml": marker_file(env.image("team/b") + ":v1.0.0", "b")})
    env.config(env.repository("a", "team/a") + env.repository("b", "team/b")
               + env.policy("a", "a", semver=">=1.0.0") + env.policy("b", "b", semver=">=1.0.0")
               + env.automation())
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and ":v1.1.0" in env.remote_file("apps/b.yaml"),
            "first pass commits both files (its objects are loose in the cache)", r)
    caches = [os.path.join(env.state, "git", d) for d in os.listdir(os.path.join(env.state, "git"))
              if os.path.isdir(os.path.join(env.state, "git", d))]
    t.check(len(caches) == 1, "one clone cache", caches)
    oid = subprocess.run(["git", "-C", caches[0], "rev-parse", "HEAD:apps/b.yaml"],
                         capture_output=True, text=True).stdout.strip()
    loose = os.path.join(caches[0], ".git", "objects", oid[:2], oid[2:])
    t.check(os.path.exists(loose), "b.yaml's blob is a loose object", loose)
    os.unlink(loose)
    for n, tag in enumerate(["v1.2.0", "v1.3.0"]):
        env.push("team/a", [tag])
        r = env.imageguard("reconcile", "-o", "json")
        items = by_file(r.json()) if r.out.startswith("[") else {}
        a = items.get(("default/a", "apps/a.yaml"), {})
        t.check(r.rc == 0 and a.get("decision") == "update" and a.get("commit")
                and (":" + tag) in env.remote_file("apps/a.yaml"),
                "pass %d after the loss commits a's %s" % (n + 2, tag), r)
    fsck = subprocess.run(["git", "-C", caches[0], "fsck", "--no-dangling"], capture_output=True,
                          text=True)
    t.check(fsck.returncode == 0, "the cache is whole again", fsck.stdout + fsck.stderr)


for scenario in (lost_blob,):
    with Env() as env:
        try:
            scenario(env)
        except Exception:  # a crash is a failure of this scenario, not of the others
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
