#!/usr/bin/python3
"""`run` keeps each single-page listing of up to 64 KiB from one pass to the next (listmemo.h):
a page that comes back byte for byte is not parsed again. Checked against the real registry
behind the fault proxy: later passes say they reused the page and decide exactly as the first
(the audit's tag count and tags sha256), a list that grows or shrinks is read again at the next
pass (the new tag is committed, the stale list is held), and multi-page and larger listings are
never reused."""
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, serve_tags, wait_for  # noqa: E402

t = Checks()
SAME = ", the same page as the pass before"


def lines(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def listed(log, repo):
    """The registry.tags debug messages of repo, in order."""
    return [x["msg"] for x in lines(log) if x.get("event") == "registry.tags" and
            ("/%s'" % repo) in x.get("msg", "")]


def passes(log):
    return sum(1 for x in lines(log) if x.get("event") == "reconcile.pass")


def audits(path, policy):
    return [x for x in lines(path) if x.get("policy") == policy] if os.path.exists(path) else []


def sha(tags):
    return hashlib.sha256("\n".join(sorted(tags)).encode()).hexdigest()


def scenario(env):
    fault = env.fault()
    env.push("team/app", ["1.0.0", "1.1.0", "1.2.0"])
    serve_tags(fault, "team/app", ["1.0.0", "1.1.0"])  # 1.2.0 is hidden at first
    env.seed({"app.yaml": marker_file(env.image("team/app", fault.host) + ":1.1.0", "app"),
              "paged.yaml": marker_file(env.image("pages-absolute/m", fault.host) + ":t024", "paged"),
              "huge.yaml": marker_file(env.image("huge/m", fault.host) + ":tag-%050d" % 59999, "huge")})
    env.config(env.repository("app", "team/app", host=fault.host, interval="1s") +
               env.policy("app", "app", semver="*") +
               env.repository("paged", "pages-absolute/m", host=fault.host, interval="1s") +
               env.policy("paged", "paged", alphabetical="asc") +
               env.repository("huge", "huge/m", host=fault.host, interval="1s") +
               env.policy("huge", "huge", alphabetical="asc") +
               env.automation(interval="1s"))
    log = os.path.join(env.dir, "run.log")
    audit = os.path.join(env.dir, "audit.log")
    errlog = open(log, "w")
    proc = subprocess.Popen(env.args("run", "--log-level", "debug", "--log-format", "json",
                                     "--audit-log", audit),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        t.check(wait_for(lambda: passes(log) >= 3), "three passes ran", open(log).read()[-2000:])
        app = listed(log, "team/app")
        t.check(len(app) >= 3 and SAME not in app[0] and all(SAME in m for m in app[1:]),
                "the first pass parses the page, the later ones reuse it", app)
        recs = audits(audit, "default/app")
        t.check(len(recs) >= 3 and all(r["tag_count"] == 2 and r["tags_sha256"] == sha(["1.0.0", "1.1.0"])
                                       and r["decision"] == "none" and r["reason"] == "up-to-date"
                                       for r in recs),
                "a reused listing decides as the parsed one: same count, sha256 and decision",
                recs)
        for repo, what in (("pages-absolute/m", "a multi-page listing"),
                           ("huge/m", "a page over 64 KiB")):
            got = listed(log, repo)
            t.check(len(got) >= 3 and not any(SAME in m for m in got),
                    "%s is read again at every pass" % what, got[:3])
        for name, count in (("default/paged", 25), ("default/huge", 60000)):
            recs = audits(audit, name)
            t.check(recs and all(r["tag_count"] == count and r["reason"] == "up-to-date" for r in recs),
                    "%s: every pass lists all %d tags" % (name, count), recs[:2])

        serve_tags(fault, "team/app", None)  # the registry now lists 1.2.0
        t.check(wait_for(lambda: "1.2.0 #" in env.remote_file("app.yaml")),
                "a grown list is read again and its new tag committed", listed(log, "team/app")[-3:])
        serve_tags(fault, "team/app", ["1.0.0"])  # a stale, shorter list
        n = len(audits(audit, "default/app"))
        t.check(wait_for(lambda: any(r["tag_count"] == 1 for r in audits(audit, "default/app")[n:])),
                "a shrunk list is read again, not the memo's longer one")
        stale = [r for r in audits(audit, "default/app")[n:] if r["tag_count"] == 1]
        t.check(stale and stale[0]["decision"] == "hold" and
                stale[0]["tags_sha256"] == sha(["1.0.0"]) and "1.2.0 #" in env.remote_file("app.yaml"),
                "the stale list is held and nothing moves back", stale[:1])
    finally:
        proc.terminate()
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        errlog.close()
    t.check(rc == 0, "SIGTERM: clean exit 0", open(log).read()[-2000:])


with Env() as env:
    try:
        scenario(env)
    except Exception:
        import traceback
        t.check(False, "scenario raised", traceback.format_exc())
sys.exit(t.done())
