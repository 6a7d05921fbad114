#!/usr/bin/python3
"""Another writer pushes while imageguard is pushing (a pre-receive hook on the bare remote,
served by git http-backend so that hooks run, pushes a human commit first, so imageguard's push is rejected): the human's commit is kept
(never forced over) and imageguard re-decides on the new head - it re-applies a forward move
that still is one, and writes nothing where the human already moved the marker further."""
import os
import stat
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, git  # noqa: E402

t = Checks()

HOOK = """#!/bin/bash
# Test hook: once, before imageguard's update is applied, another writer pushes first.
cat >/dev/null
[ -f '{flag}' ] || exit 0
rm -f '{flag}'
env -u GIT_DIR -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES \\
    /usr/bin/python3 '{script}' >>'{log}' 2>&1
exit 0
"""

HUMAN = """import sys
sys.path.insert(0, {fixtures!r})
from guard_env import git
work = {work!r}
git("pull", "-q", "--rebase", "origin", "main", cwd=work)
for path, content in {files!r}.items():
    open(work + "/" + path, "w").write(content)
git("add", "-A", cwd=work)
git("commit", "-q", "-m", "human edit during imageguard's push", cwd=work)
git("push", "-q", "origin", "main", cwd=work)
"""


def arm(env, files):
    flag = os.path.join(env.dir, "race-flag")
    script = os.path.join(env.dir, "human.py")
    with open(script, "w") as f:
        f.write(HUMAN.format(fixtures=os.path.dirname(os.path.abspath(sys.modules["guard_env"].__file__)),
                             work=env.work, files=files))
    hook = os.path.join(env.remote, "hooks", "pre-receive")
    with open(hook, "w") as f:
        f.write(HOOK.format(flag=flag, script=script, log=os.path.join(env.dir, "hook.log")))
    os.chmod(hook, os.stat(hook).st_mode | stat.S_IXUSR)
    open(flag, "w").close()
    return flag


def setup(env):
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
              "notes.yaml": "a: 1\n"})
    url, secret = env.git_http()
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation(url=url, secret=secret))


def reapply(env):
    setup(env)
    flag = arm(env, {"notes.yaml": "a: 2\n"})
    r = env.imageguard("reconcile", "-o", "json")
    log = env.remote_log()
    t.check(not os.path.exists(flag), "the other writer pushed during the pass",
            open(os.path.join(env.dir, "hook.log")).read() if os.path.exists(os.path.join(env.dir, "hook.log")) else "")
    t.check(r.rc == 0 and r.json()[0]["decision"] == "update" and r.json()[0].get("commit") == log[0][0],
            "imageguard re-applied its forward move on the new head", r)
    t.check(env.remote_file("notes.yaml") == "a: 2\n" and "human edit" in log[1][1],
            "the other writer's commit is kept (no force push)", log[:3])
    t.check("v1.1.0 #" in env.remote_file("app.yaml"), "Git holds the forward move")


def redecide(env):
    setup(env)
    # the other writer moves the marker further (to a tag the listing does not hold)
    arm(env, {"app.yaml": marker_file(env.image("team/app") + ":v1.5.0", "app")})
    r = env.imageguard("reconcile", "-o", "json")
    item = r.json()[0]
    log = env.remote_log()
    t.check(r.rc == 0 and item["decision"] == "hold" and item["reason"] == "downgrade-blocked"
            and item["current"] == "v1.5.0", "re-decided on the new head: hold, not a write", r)
    t.check("v1.5.0 #" in env.remote_file("app.yaml") and "human edit" in log[0][1],
            "no commit moved the marker back", log[:2])


for scenario in (reapply, redecide):
    with Env() as env:
        try:
            scenario(env)
        except Exception:
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
