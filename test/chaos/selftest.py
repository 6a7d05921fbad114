#!/usr/bin/python3
"""The invariant checker's own check (test/chaos/invariants.py): synthetic remotes with one
breach of each invariant (a backward step without a rollback annotation, a forced non-fast-
forward update, a commit under a lower generation of the same lease, an audited commit that the
forced update dropped) must be reported, each exactly once and by name; a clean history with a
forward move, an annotated rollback and a new lease after a re-shard must report nothing; a
remote without a reflog is a breach. Prints TAP lines."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import invariants  # noqa: E402

ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@test", GIT_COMMITTER_NAME="t",
           GIT_COMMITTER_EMAIL="t@test")
n = failed = 0


def tap(cond, what, detail=""):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what))
    if not cond:
        failed += 1
        print("    " + str(detail).replace("\n", "\n    "))
    sys.stdout.flush()


def git(cwd, *args):
    r = subprocess.run(["git"] + list(args), cwd=cwd, capture_output=True, text=True, env=ENV)
    if r.returncode:
        raise RuntimeError("git %s: %s" % (" ".join(args), r.stderr))
    return r.stdout.strip()


def marker(app, num):
    return ('image: reg/team/app:%s # {"$imagepolicy": "default:app"}\n'
            'other: reg/team/num:%s # {"$imagepolicy": "default:num"}\n' % (app, num))


def trailers(policy, decision, lease=None):
    text = "\n\nImageguard-Policy: default/%s\nImageguard-Decision: %s\n" % (policy, decision)
    return text + ("Imageguard-Lease: %s\n" % lease if lease else "")


class Remote:
    def __init__(self, root, name, reflog=True):
        self.bare = os.path.join(root, name + ".git")
        self.work = os.path.join(root, name + ".work")
        git(root, "init", "-q", "--bare", "-b", "main", self.bare)
        if reflog:
            git(self.bare, "config", "core.logAllRefUpdates", "always")
        git(root, "init", "-q", "-b", "main", self.work)
        git(self.work, "remote", "add", "origin", self.bare)

    def commit(self, app, num, message, extra=None):
        with open(os.path.join(self.work, "app.yaml"), "w") as f:
            f.write(marker(app, num))
        if extra:
            with open(os.path.join(self.work, "notes.txt"), "a") as f:
                f.write(extra + "\n")
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "--allow-empty", "-m", message)
        git(self.work, "push", "-q", "origin", "main")
        return git(self.work, "rev-parse", "HEAD")


def main():
    root = tempfile.mkdtemp(prefix="imageguard-chaos-selftest.")
    orders = {"default:app": invariants.semver_key, "default:num": invariants.num_key}
    try:
        bad = Remote(root, "bad")
        bad.commit("1.0.0", "100", "seed")
        bad.commit("1.1.0", "100", "forward" + trailers("app", "update/forward", "L/1"))
        bad.commit("1.1.0", "100", "human note", extra="a person")
        bad.commit("1.0.5", "100", "backward, no annotation" + trailers("app", "update/forward"))
        bad.commit("1.0.0", "100", "rollback" + trailers("app", "rollback/override", "L/1"))
        bad.commit("1.2.0", "120", "newer generation" + trailers("num", "update/forward", "L/2"))
        bad.commit("1.2.0", "130", "deposed writer" + trailers("num", "update/forward", "L/1"))
        dropped = bad.commit("1.3.0", "130", "another lease" + trailers("app", "update/forward",
                                                                       "M/0"))
        git(bad.work, "commit", "-q", "--amend", "-m", "rewritten")
        git(bad.work, "push", "-q", "--force", "origin", "main")
        audit = os.path.join(root, "audit.log")
        with open(audit, "w") as f:
            f.write(json.dumps({"policy": "default/app", "commit": dropped}) + "\n")
            f.write(json.dumps({"policy": "default/app", "commit": ""}) + "\n")
            f.write("not json\n")
        r = invariants.check([bad.bare], "main", orders, [audit])
        for name, want in (("marker-forward", "1.1.0 -> 1.0.5"), ("reflog-fast-forward",
                                                                  "not a fast-forward"),
                           ("lease-generation", "under L/1 on a head already written under L/2"),
                           ("audit-in-history", dropped[:12])):
            tap(len(r[name]) == 1 and want in r[name][0], "a breach of %s is reported" % name,
                r[name])

        good = Remote(root, "good")
        good.commit("1.0.0", "100", "seed")
        good.commit("1.1.0", "100", "forward" + trailers("app", "update/forward", "L/0"))
        good.commit("1.1.0", "100", "human", extra="x")
        good.commit("1.0.0", "100", "rollback" + trailers("app", "rollback/override", "L/1"))
        good.commit("1.2.0", "101", "forward" + trailers("num", "update/forward", "L/1"))
        head = good.commit("1.3.0", "101", "resharded" + trailers("app", "update/forward",
                                                                  "S/0"))
        with open(audit, "w") as f:
            f.write(json.dumps({"commit": head}) + "\n")
        r = invariants.check([good.bare], "main", orders, [audit])
        tap(all(not r[k] for k in invariants.NAMES) and r["stats"]["commits"] == 6 and
            r["stats"]["leased"] == 4 and r["stats"]["audited"] == 1,
            "a clean history reports nothing", r)

        nolog = Remote(root, "nolog", reflog=False)
        nolog.commit("1.0.0", "100", "seed")
        r = invariants.check([nolog.bare], "main", orders, [])
        tap(len(r["reflog-fast-forward"]) == 1 and "no reflog" in r["reflog-fast-forward"][0],
            "a remote without a reflog is a breach", r)
        tap(invariants.tag_of("reg:5000/a/b:1.2.3@sha256:ab") == "1.2.3" and
            invariants.tag_of("reg:5000/a/b") == "" and
            invariants.lease_of([("Imageguard-Lease", "ns/name-x/7")]) == ("ns/name-x", 7),
            "tags and lease trailers parse")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("%d passed, %d failed" % (n - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
