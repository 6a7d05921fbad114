#!/usr/bin/python3
"""A push branch other than the checkout branch (CONTRACT §4, Flux's review flow), end to end
against a real docker-registry and a bare Git remote. Values are decided against the checkout
branch's head. When the push branch has only imageguard's own commits beyond the checkout branch
(its Imageguard-Policy trailers prove it) it is rebuilt: the checkout head plus this pass's
commit, the old imageguard commit gone from the branch (a compare-and-swap, never a blind
force). When a person has added a commit there, the new commit goes on top of it, the person's
commit is kept, and the log warns that a person has added commits to the push branch."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, git, marker_file  # noqa: E402

t = Checks()


def rev(env, spec):
    return git("--git-dir", env.remote, "rev-parse", "--verify", "-q", spec, check=False).strip()


def is_ancestor(env, a, b):
    return subprocess.run(["git", "--git-dir", env.remote, "merge-base", "--is-ancestor", a, b],
                          capture_output=True).returncode == 0


def person_commit(env, branch, path):
    d = os.path.join(env.dir, "person")
    git("clone", "-q", "-b", branch, env.remote, d)
    with open(os.path.join(d, path), "w") as f:
        f.write("a person's file\n")
    git("add", "-A", cwd=d)
    git("commit", "-q", "-m", "person: review note", cwd=d)
    git("push", "-q", "origin", "HEAD:" + branch, cwd=d)
    shutil.rmtree(d)
    return rev(env, "refs/heads/" + branch)


def review_flow(env):
    img = env.image("team/app")
    env.push("team/app", ["1.0.0", "1.1.0"])
    env.seed({"app.yaml": marker_file(img + ":1.0.0", "app")})
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation().replace("      branch: main\n  update", "      branch: auto\n"
                                          "  update"))
    r = env.imageguard("reconcile", "-o", "json")
    first = rev(env, "refs/heads/auto")
    t.check(r.rc == 0 and first and rev(env, "auto^") == env.remote_head(),
            "the push branch is created from the checkout branch with the commit", r)
    t.check(env.remote_file("app.yaml") == marker_file(img + ":1.0.0", "app"),
            "the checkout branch is not written", r)

    # main moves on (someone else's change), a new tag: rebuilt on main's new head
    env.seed({"other.txt": "other\n"}, message="unrelated change on main")
    main = env.remote_head()
    env.push("team/app", ["1.2.0"])
    r = env.imageguard("reconcile", "-o", "json")
    second = rev(env, "refs/heads/auto")
    t.check(r.rc == 0 and second not in ("", first) and rev(env, "auto^") == main,
            "rebuild: the new commit sits on the checkout branch's head", (r, first, second))
    t.check(not is_ancestor(env, first, second),
            "rebuild: the old imageguard commit is gone from the push branch", r)
    t.check(env.remote_file("app.yaml", rev="auto") == marker_file(img + ":1.2.0", "app"),
            "rebuild: the push branch holds the new value", r)
    t.check("a person has added commits" not in r.err, "no warning for imageguard's own", r)

    # a person adds a commit to the push branch: appended to, kept, with a warning
    person = person_commit(env, "auto", "review.txt")
    env.push("team/app", ["1.3.0"])
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and rev(env, "auto^") == person,
            "append: the new commit goes on top of the person's commit", r)
    t.check(is_ancestor(env, person, "auto") and is_ancestor(env, second, "auto"),
            "append: nobody's commit is lost", r)
    t.check("a person has added commits to the push branch" in r.err,
            "append: the log warns that a person has added commits", r)
    t.check(env.remote_file("app.yaml", rev="auto") == marker_file(img + ":1.3.0", "app"),
            "append: the push branch holds the new value", r)


for scenario in (review_flow,):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (scenario.__name__, e))
sys.exit(t.done())
