#!/usr/bin/python3
"""Issue 12 item 3, end to end: a password in the Git URL, over `git http-backend` with basic
auth and a real docker-registry. After a clone and push, a warm pass with a second push, a
reclone, and a pass with a wrong password, nothing under the state dir, in the logs (text and
JSON, debug level), in the audit log or in any output holds the password (or its Basic
encoding), and the clone cache is 0600 files / 0700 directories."""
import base64
import glob
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, by_file  # noqa: E402
import registry  # noqa: E402

t = Checks()
SECRETS = [b"s3cret", base64.b64encode(b"git:s3cret"), b"wr0ng-pw-123",
           base64.b64encode(b"git:wr0ng-pw-123")]


def leaks(data):
    return [s.decode() for s in SECRETS if s in data]


def scan_tree(root):
    """[(path, secret)] for every file under root holding a secret, and paths readable by
    others."""
    found, loose = [], []
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                continue
            if st.st_mode & 0o077:
                loose.append((p, oct(st.st_mode & 0o777)))
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    found += [(p, s) for s in leaks(f.read())]
    return found, loose


def password_in_url(env):
    url, _ = env.git_http()
    good = url.replace("http://", "http://git:s3cret@", 1)
    bad = url.replace("http://", "http://git:wr0ng-pw-123@", 1)
    audit = os.path.join(env.dir, "audit.log")
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    policies = env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
    env.config(policies + env.automation(url=good))
    outputs = []

    def run(*args):
        r = env.imageguard(*args, "--audit-log", audit, "--log-level", "debug")
        outputs.append((" ".join(args), (r.out + r.err).encode()))
        return r

    r = run("reconcile", "-o", "json")
    items = by_file(r.json()) if r.out.startswith("[") else {}
    t.check(r.rc == 0 and items.get(("default/app", "apps/app.yaml"), {}).get("commit"),
            "clone and push with the password in the URL", r)
    env.push("team/app", ["v1.2.0"])
    r = run("reconcile", "--log-format", "json")
    t.check(r.rc == 0 and ":v1.2.0" in env.remote_file("apps/app.yaml"),
            "warm pass: fetch and a second push", r)
    for d in glob.glob(os.path.join(env.state, "git", "*")):
        if os.path.isdir(d):
            shutil.rmtree(d)
    env.push("team/app", ["v1.3.0"])
    r = run("reconcile")
    t.check(r.rc == 0 and ":v1.3.0" in env.remote_file("apps/app.yaml"),
            "reclone and a third push", r)
    r = run("plan", "-o", "json")
    t.check(r.rc == 0, "plan over the warm cache", r)

    found, loose = scan_tree(env.state)
    t.check(not found, "no credential under the state dir", found)
    t.check(not loose, "state files 0600 and directories 0700", loose)
    with open(audit, "rb") as f:
        t.check(not leaks(f.read()), "no credential in the audit log")

    env.config(policies + env.automation(url=bad))
    r = run("reconcile")
    t.check(r.rc == 1 and "http://127.0.0.1:" in r.err, "a wrong password is an error", r)
    bad_outputs = [(what, leaks(data)) for what, data in outputs if leaks(data)]
    t.check(not bad_outputs, "no credential in any output or log line", bad_outputs)
    found, loose = scan_tree(env.state)
    t.check(not found and not loose, "still nothing at rest after the failed pass", found + loose)


def registry_echo(env):
    """A registry whose error body echoes the Authorization header and the password it got:
    the decision's message, the logs and the audit log must not repeat them."""
    fault = env.fault()
    creds = [b"wonderland-s3cret", base64.b64encode(b"alice:wonderland-s3cret")]
    sec = os.path.join(env.secrets, "reg-auth")
    os.makedirs(sec)
    with open(os.path.join(sec, ".dockerconfigjson"), "w") as f:
        json.dump({"auths": {fault.host: {"username": "alice",
                                          "password": "wonderland-s3cret"}}}, f)
    audit = os.path.join(env.dir, "audit.log")
    env.seed({"apps/app.yaml": marker_file(env.image("echo/app", fault.host) + ":v1.0.0", "app")})
    env.config(env.repository("app", "echo/app", host=fault.host,
                              extra="  secretRef:\n    name: reg-auth\n")
               + env.policy("app", "app", semver=">=1.0.0") + env.automation())
    outs, first = [], None
    for args in (("reconcile", "-o", "json"), ("reconcile", "--log-format", "json"),
                 ("plan",)):
        r = env.imageguard(*args, "--audit-log", audit, "--log-level", "debug")
        first = first or r
        outs.append((r.out + r.err).encode())
    items = first.json() if first.out.startswith("[") else []
    item = [i for i in items if i.get("file") == "apps/app.yaml"]
    t.check(item and item[0]["decision"] == "error" and "403" in item[0].get("message", ""),
            "the registry's refusal is an error/registry decision", items)
    t.check(item and "***" in item[0].get("message", ""), "its echo is scrubbed", item)
    t.check(any("authorization" in q["headers"] for q in fault.requests()),
            "the registry did receive the credentials (the echo is real)")
    with open(audit, "rb") as f:
        data = f.read()
    leaked = [c.decode() for c in creds for o in outs + [data] if c in o]
    t.check(not leaked, "no echoed credential in outputs, logs or audit", leaked)


def run_metrics(env):
    """`run` with the password in the Git URL: /metrics, the run log and the state dir hold no
    credential after a committing pass."""
    url, _ = env.git_http()
    good = url.replace("http://", "http://git:s3cret@", 1)
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    env.config(env.repository("app", "team/app", interval="1s")
               + env.policy("app", "app", semver=">=1.0.0") + env.automation(url=good, interval="1s"))
    port = registry.free_port()
    log = open(os.path.join(env.dir, "run.log"), "w+b")
    proc = subprocess.Popen(env.args("run", "--listen", "127.0.0.1:%d" % port, "--log-level",
                                     "debug"), stdout=log, stderr=log)
    metrics = b""
    try:
        registry.wait_for_port(port, proc)
        deadline = time.time() + 60
        while time.time() < deadline and b"imageguard_commits_total 1" not in metrics:
            time.sleep(0.3)
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                metrics = r.read()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    t.check(b"imageguard_commits_total 1" in metrics, "run committed", metrics[-2000:])
    log.seek(0)
    t.check(not leaks(metrics) and not leaks(log.read()), "no credential in /metrics or the run log")
    log.close()
    found, loose = scan_tree(env.state)
    t.check(not found and not loose, "nothing at rest after run", found + loose)


for scenario in (password_in_url, registry_echo, run_metrics):
    with Env() as env:
        try:
            scenario(env)
        except Exception:  # a crash is a failure of this scenario, not of the others
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
