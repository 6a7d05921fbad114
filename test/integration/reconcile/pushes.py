#!/usr/bin/python3
"""A pass that commits to several remotes pushes them concurrently: it decides and commits the
next automation while the last one's push is on the wire, and lands each push (its report,
and its retries when the remote moved) afterwards. Two remotes served by `git http-backend`
(so that hooks run), each with a pre-receive hook that waits up to 20 s for the other remote's
push to arrive and logs whether it did: pushed one after another, the first push waits alone.
In the second scenario the second remote also takes another writer's commit first, so its push
is rejected and re-applied on the new head when it lands, while the first push is in
flight."""
import os
import stat
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, git  # noqa: E402

t = Checks()

# Each remote's hook: note this push's arrival, then wait for the other's (100 x 0.2 s).
# With a flag file, another writer first pushes to this remote (as race.py's hook).
HOOK = """#!/bin/bash
cat >/dev/null
touch '{dir}/arrived-{me}'
if [ -f '{flag}' ]; then
    rm -f '{flag}'
    env -u GIT_DIR -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY \\
        -u GIT_ALTERNATE_OBJECT_DIRECTORIES /usr/bin/python3 '{human}' >>'{dir}/human.log' 2>&1
fi
for i in $(seq 100); do
    if [ -f '{dir}/arrived-{other}' ]; then echo "together {me}" >>'{dir}/pushes.log'; exit 0; fi
    sleep 0.2
done
echo "alone {me}" >>'{dir}/pushes.log'
exit 0
"""

HUMAN = """import sys
sys.path.insert(0, {fixtures!r})
from guard_env import git
work = {work!r}
git("pull", "-q", "--rebase", "origin", "main", cwd=work)
open(work + "/notes.yaml", "w").write("a: 2\\n")
git("add", "-A", cwd=work)
git("commit", "-q", "-m", "human edit during imageguard's push", cwd=work)
git("push", "-q", "origin", "main", cwd=work)
"""

SOURCE = """---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: {name}
  namespace: default
spec:
  interval: 1m
  url: {url}
  secretRef:
    name: {secret}
  ref:
    branch: main
---
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageUpdateAutomation
metadata:
  name: {name}
  namespace: default
spec:
  interval: 1m
  sourceRef:
    kind: GitRepository
    name: {name}
  git:
    checkout:
      ref:
        branch: main
    commit:
      author:
        name: imageguard
        email: imageguard@test
    push:
      branch: main
  update:
    path: ./
    strategy: Setters
"""


def hook(env, name, other, work, race):
    flag, human = os.path.join(env.dir, "flag-" + name), os.path.join(env.dir, "human-" + name)
    with open(human, "w") as f:
        f.write(HUMAN.format(fixtures=os.path.dirname(os.path.abspath(
            sys.modules["guard_env"].__file__)), work=work))
    path = os.path.join(env.dir, name + ".git", "hooks", "pre-receive")
    with open(path, "w") as f:
        f.write(HOOK.format(dir=env.dir, me=name, other=other, flag=flag, human=human))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    if race:
        open(flag, "w").close()
    return flag


def head_file(bare, path):
    return git("--git-dir", bare, "show", "main:" + path)


def log_of(bare):
    out = git("--git-dir", bare, "log", "--format=%H %s", "main")
    return [line.split(" ", 1) for line in out.splitlines()]


def scenario(env, race):
    env.push("team/one", ["v1.0.0", "v1.1.0"])
    env.push("team/two", ["v2.0.0", "v2.3.0"])
    bares, works = {}, {}
    for name, repo, tag in (("one", "team/one", "v1.0.0"), ("two", "team/two", "v2.0.0")):
        bares[name], works[name] = env.bare_remote(name, {
            "app.yaml": marker_file(env.image(repo) + ":" + tag, name), "notes.yaml": "a: 1\n"})
    hook(env, "one", "two", works["one"], False)
    flag = hook(env, "two", "one", works["two"], race)
    url, secret = env.git_http()  # serves every bare repository under env.dir
    base = url.rsplit("/", 1)[0]
    env.config(env.repository("one", "team/one") + env.policy("one", "one", semver=">=1.0.0")
               + env.repository("two", "team/two") + env.policy("two", "two", semver=">=2.0.0")
               + "".join(SOURCE.format(name=n, url="%s/%s.git" % (base, n), secret=secret)
                         for n in ("one", "two")))
    r = env.imageguard("reconcile", "-o", "json", timeout=180)
    pushes_log = os.path.join(env.dir, "pushes.log")
    pushes = open(pushes_log).read().split("\n") if os.path.exists(pushes_log) else []
    what = "with a moved remote" if race else "plain"
    t.check(r.rc == 0, "%s: reconcile exits 0" % what, r)
    t.check(pushes[:2] and all(p.startswith("together") for p in pushes if p)
            and not any(p.startswith("alone") for p in pushes),
            "%s: each push arrived while the other was in flight" % what, pushes)
    items = {i["policy"]: i for i in r.json()} if r.rc == 0 else {}
    for name, tag in (("one", "v1.1.0"), ("two", "v2.3.0")):
        log = log_of(bares[name])
        item = items.get("default/" + name, {})
        t.check(item.get("decision") == "update" and item.get("commit") == log[0][0],
                "%s: %s's report item names the commit its remote holds" % (what, name),
                (item, log[:3]))
        t.check(tag + " #" in head_file(bares[name], "app.yaml"),
                "%s: %s's remote holds the forward move" % (what, name))
    if race:
        log = log_of(bares["two"])
        t.check(not os.path.exists(flag) and head_file(bares["two"], "notes.yaml") == "a: 2\n"
                and "human edit" in log[1][1],
                "the other writer's commit is kept and imageguard's re-applied on it", log[:3])
        t.check("re-applying (attempt 1 of" in r.err,
                "the moved remote's retry is logged", r.err[-2000:])


for race in (False, True):
    with Env() as env:
        try:
            scenario(env, race)
        except Exception:
            import traceback
            t.check(False, "scenario raised (race=%s)" % race, traceback.format_exc())
sys.exit(t.done())
