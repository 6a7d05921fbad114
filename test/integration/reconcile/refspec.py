#!/usr/bin/python3
"""spec.git.push.refspec end to end against a real docker-registry and a bare Git remote, as
Flux's image-automation-controller pushes it (api docs of GitPushSpec.Refspec): with both
push.branch and a refspec the commit goes to the branch and also with the refspec; with only a
refspec, with the refspec alone (the checkout branch is untouched). Both source forms, HEAD:refs/...
and refs/heads/X:refs/heads/Y; a forced refspec ('+') is a configuration error naming the field."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import IMAGEGUARD, Env, Checks, Result, git, marker_file  # noqa: E402

t = Checks()


def with_push(env, push):
    return env.automation().replace("    push:\n      branch: main\n", "    push:\n" + push)


def ref(env, name):
    return git("--git-dir", env.remote, "rev-parse", "--verify", "-q", name,
               check=False).strip()


def setup(env):
    env.push("team/app", ["1.0.0", "1.1.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    return env.remote_head(), (env.repository("app", "team/app")
                               + env.policy("app", "app", semver=">=1.0.0"))


def refspec_only(env):
    seed, base = setup(env)
    env.config(base + with_push(env, "      refspec: HEAD:refs/heads/review\n"))
    r = env.imageguard("reconcile", "-o", "json")
    review = ref(env, "refs/heads/review")
    t.check(r.rc == 0 and review and review != seed, "the refspec's destination gets a commit", r)
    t.check(env.remote_file("app.yaml", rev="review") ==
            marker_file(env.image("team/app") + ":1.1.0", "app"),
            "the destination holds the moved marker", r)
    t.check(ref(env, "refs/heads/main") == seed,
            "with the refspec only, the checkout branch is not pushed (as Flux)", r)
    t.check(ref(env, "review^") == seed, "the commit sits on the checkout branch's head", r)
    # the next pass: the destination branch holds imageguard's commit only, so it is rebuilt on
    # the checkout head (CONTRACT §4), not refused as a non-fast-forward
    env.push("team/app", ["1.2.0"])
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and ref(env, "review^") == seed and ref(env, "review") != review
            and env.remote_file("app.yaml", rev="review") ==
            marker_file(env.image("team/app") + ":1.2.0", "app"),
            "a second pass rebuilds the refspec's destination branch on the checkout head", r)
    t.check(ref(env, "refs/heads/main") == seed, "the checkout branch is still not pushed", r)


def refspec_other_ref(env):
    seed, base = setup(env)
    env.config(base + with_push(env, "      refspec: HEAD:refs/for/main\n"))
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and ref(env, "refs/for/main") not in ("", seed)
            and ref(env, "refs/for/main^") == seed and ref(env, "refs/heads/main") == seed,
            "a refspec to a ref outside refs/heads (Gerrit's refs/for/main) gets the commit", r)


def branch_and_refspec(env):
    seed, base = setup(env)
    env.config(base + with_push(env, "      branch: main\n"
                                     "      refspec: refs/heads/main:refs/heads/mirror\n"))
    r = env.imageguard("reconcile", "-o", "json")
    main, mirror = ref(env, "refs/heads/main"), ref(env, "refs/heads/mirror")
    t.check(r.rc == 0 and main != seed and main == mirror,
            "with branch and refspec the commit is pushed to both", (r, main, mirror))


def forced(env):
    _, base = setup(env)
    env.config(base + with_push(env, "      refspec: +HEAD:refs/heads/review\n"))
    r = Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir],
                              capture_output=True, text=True, timeout=60))
    t.check(r.rc == 2 and "'spec.git.push.refspec': '+HEAD:refs/heads/review' is forced "
            "(leading '+'); imageguard never forces a push" in r.err,
            "a forced refspec is a configuration error naming the field", r)
    r = env.imageguard("reconcile", "-o", "json")
    t.check(ref(env, "refs/heads/review") == "", "nothing is pushed with a forced refspec", r)


for scenario in (refspec_only, refspec_other_ref, branch_and_refspec, forced):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (scenario.__name__, e))
sys.exit(t.done())
