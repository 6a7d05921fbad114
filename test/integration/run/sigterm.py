#!/usr/bin/python3
"""SIGTERM while `imageguard run` is mid-push (CONTRACT §3: run finishes the commit in flight,
exits 0). The remote is served by git http-backend with a pre-receive hook that touches a
marker and then stalls: the test waits for the marker (the pack is on the server, the ref not
yet updated), sends SIGTERM, and checks that the push completed (the forward tag is on the
remote, in imageguard's commit), the process exited 0 within a bound, and nothing is
half-written (remote fsck clean, no ref lock left, audit records whole, clone cache clean)."""
import json
import os
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, git, wait_for  # noqa: E402

t = Checks()
STALL = 3  # seconds the hook holds the push after the marker

HOOK = """#!/bin/sh
cat >/dev/null
touch '{marker}'
sleep {stall}
touch '{done}'
exit 0
"""


def scenario(env):
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    base = env.remote_head()
    url, secret = env.git_http()
    env.config(env.repository("app", "team/app", interval="1s")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.automation(url=url, secret=secret, interval="1s"))
    marker = os.path.join(env.dir, "push-started")
    done = os.path.join(env.dir, "push-done")
    hook = os.path.join(env.remote, "hooks", "pre-receive")
    with open(hook, "w") as f:
        f.write(HOOK.format(marker=marker, done=done, stall=STALL))
    os.chmod(hook, os.stat(hook).st_mode | stat.S_IXUSR)
    audit = os.path.join(env.dir, "audit.log")
    errpath = os.path.join(env.dir, "run.log")
    errlog = open(errpath, "w+")
    proc = subprocess.Popen(env.args("run", "--audit-log", audit),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    rc = None
    try:
        t.check(wait_for(lambda: os.path.exists(marker) or proc.poll() is not None),
                "the push reached the remote's pre-receive hook")
        t.check(proc.poll() is None and not os.path.exists(done),
                "imageguard is mid-push when SIGTERM is sent")
        sent = time.time()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(STALL + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            t.check(False, "the process exits within %d s of SIGTERM" % (STALL + 30))
        exited = time.time()
        took = exited - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        errlog.close()
    log = open(errpath).read()
    t.check(rc == 0, "SIGTERM mid-push: exit 0", "rc=%s\n%s" % (rc, log[-3000:]))
    # The hook's last act (touching `done`) happened before imageguard exited: the process
    # waited for the push it had in flight instead of leaving on SIGTERM.
    ended = os.stat(done).st_mtime if os.path.exists(done) else None
    t.check(ended is not None and ended <= exited + 0.01,
            "the hook ran to its end before imageguard exited (the push was not cut)",
            "took %.2fs, hook end %s, exit %.3f" % (took, ended, exited))
    head = env.remote_head()
    history = env.remote_log()
    t.check(head != base and len(history) == 3 and "v1.1.0 #" in env.remote_file("app.yaml"),
            "the commit in flight landed: the forward tag is on the remote", history[:2])
    t.check(git("--git-dir", env.remote, "rev-parse", "main^").strip() == base,
            "exactly one commit on top of the base, nothing forced", history[:3])
    t.check("pushed " + head in log, "imageguard logged the push of that commit", log[-2000:])
    fsck = subprocess.run(["git", "--git-dir", env.remote, "fsck", "--strict"],
                          capture_output=True, text=True)
    t.check(fsck.returncode == 0, "the remote passes git fsck", fsck.stdout + fsck.stderr)
    locks = [os.path.join(r, f) for r, _, fs in os.walk(env.remote) for f in fs
             if f.endswith(".lock")]
    t.check(not locks, "no lock file left on the remote", locks)
    records = open(audit).read().splitlines() if os.path.exists(audit) else []
    parsed = []
    for line in records:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            parsed.append(None)
    t.check(records and None not in parsed, "audit records are whole JSON lines", records[-3:])
    t.check(head in open(audit).read(), "the audit log records the pushed commit", records[-3:])
    dirty = []
    gitdir = os.path.join(env.state, "git")
    for name in os.listdir(gitdir) if os.path.isdir(gitdir) else []:
        path = os.path.join(gitdir, name)
        if ".tmp-" in name:
            dirty.append(name)
        elif os.path.isdir(os.path.join(path, ".git")):
            st = git("status", "--porcelain", cwd=path)
            if st.strip() or git("rev-parse", "HEAD", cwd=path).strip() != head:
                dirty.append(name + ": " + st)
    t.check(os.path.isdir(gitdir) and not dirty, "the clone cache is clean at the pushed commit",
            dirty)


with Env() as env:
    try:
        scenario(env)
    except Exception:
        import traceback
        t.check(False, "scenario raised", traceback.format_exc())
sys.exit(t.done())
