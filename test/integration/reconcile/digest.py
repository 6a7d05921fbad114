#!/usr/bin/python3
"""A mutable tag tracked by digest (policy.digest.tag) moves only forward, end to end against a
real docker-registry and a bare Git remote: the first pass pins `latest@A`; a newer build under
`latest` is an update; yesterday's build re-pushed under `latest` is hold/downgrade-blocked;
where `created` cannot order the builds (equal, absent) the marker's Git history decides: a
digest never held there moves (warning created-unknown), one held and replaced is
hold/downgrade-blocked (warning digest-replaced);
a rollback override naming digest A commits it and then holds; a missing digest holds as
candidate-missing; an index is judged by the configured platform's image. Audit records carry
both digests and both build times."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file  # noqa: E402

t = Checks()
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00.25Z", "2026-01-03T00:00:00Z"
REASON = "INC-7: today's latest crashes on start"


def policy(annotations=None, platform=None):
    meta = "metadata:\n  name: app\n  namespace: default\n"
    if annotations:
        meta += "  annotations:\n" + "".join(
            "    %s: %s\n" % (k, json.dumps(v)) for k, v in annotations.items())
    return ("---\napiVersion: imageguard.io/v1alpha1\nkind: ImagePolicy\n" + meta +
            "spec:\n  imageRepositoryRef:\n    name: app\n  policy:\n    digest:\n"
            "      tag: latest\n" + ("      platform: %s\n" % platform if platform else ""))


def configure(env, annotations=None, platform=None):
    env.config(env.repository("app", "team/app") + policy(annotations, platform)
               + env.automation())


def audit_of(env, name):
    path = os.path.join(env.dir, name)
    return path, (lambda: [json.loads(line) for line in open(path)])


def reconcile(env, audit):
    r = env.imageguard("reconcile", "-o", "json", "--audit-log", audit)
    try:
        return r, {i["file"]: i for i in r.json()}
    except ValueError:
        return r, {}


def held(env, what, reason, items, r, log_len):
    t.check(r.rc == 0 and len(items) == 2 and all(
        i["decision"] == "hold" and i["reason"] == reason for i in items.values()),
        "%s: hold/%s on both markers" % (what, reason), r)
    t.check(len(env.remote_log()) == log_len, "%s: no commit" % what)


def forward_only():
    with Env() as env:
        a = env.push("team/app", ["b1", "latest"], created=T1)
        env.seed({"app.yaml": marker_file(env.image("team/app") + ":latest", "app"),
                  "values.yaml": marker_file(a, "app", "digest", "digest")})
        configure(env)
        audit, records = audit_of(env, "audit.log")

        r, items = reconcile(env, audit)
        t.check(r.rc == 0 and items.get("app.yaml", {}).get("decision") == "update"
                and items["app.yaml"]["reason"] == "adopt"
                and items["values.yaml"]["decision"] == "none", "first pass pins latest@A", r)
        t.check(("latest@%s #" % a) in env.remote_file("app.yaml"), "app.yaml holds latest@A")
        log_len = len(env.remote_log())

        b = env.push("team/app", ["b2", "latest"], created=T2)
        r, items = reconcile(env, audit)
        t.check(r.rc == 0 and len(items) == 2 and all(i["decision"] == "update" and i["reason"] == "forward"
                                  and i["digest"] == b for i in items.values()),
                "a newer build under latest: update/forward to B", r)
        t.check(("latest@%s #" % b) in env.remote_file("app.yaml")
                and ("%s #" % b) in env.remote_file("values.yaml"), "both markers hold B")
        t.check(len(env.remote_log()) == log_len + 1, "one commit for the update")
        log_len += 1
        rec = [x for x in records() if x["decision"] == "update" and x["reason"] == "forward"]
        t.check(len(rec) == 2 and all(x["current_digest"] == a and x["digest"] == b
                                      and x["current_created"] == "2026-01-02T00:00:00.25Z"
                                      and x["candidate_created"] == T2 and x["commit"]
                                      for x in rec),
                "audit: both digests and both build times of the update", rec)

        c = env.push("team/app", ["b0", "latest"], created=T0)
        r, items = reconcile(env, audit)
        held(env, "yesterday's build under latest", "downgrade-blocked", items, r, log_len)
        t.check(("latest@%s #" % b) in env.remote_file("app.yaml"), "app.yaml still holds B")
        rec = [x for x in records() if x["reason"] == "downgrade-blocked"]
        t.check(len(rec) == 2 and all(
            x["digest"] == c and x["current_digest"] == b and x["candidate_created"] == T0
            and x["current_created"] == T2 and "is older than" in x.get("message", "")
            and x["commit"] is None for x in rec), "audit: the blocked downgrade, explained", rec)

        # build times cannot order these: the marker's Git history decides (CONTRACT §6)
        e = env.push("team/app", ["b3", "latest"], created=T2)
        r, items = reconcile(env, audit)
        t.check(r.rc == 0 and len(items) == 2 and all(
            i["decision"] == "update" and i["reason"] == "forward" and i["digest"] == e
            and i["warnings"] == ["created-unknown"] for i in items.values()),
            "same created as B, never held here: update/forward, warning created-unknown", r)
        t.check(len(env.remote_log()) == log_len + 1, "one commit for it")
        log_len += 1
        t.check(env.push("team/app", ["b2", "latest"], created=T2) == b, "latest re-pointed at B")
        r, items = reconcile(env, audit)
        held(env, "back to B, held before and replaced", "downgrade-blocked", items, r, log_len)
        t.check(len(items) == 2 and all(i["warnings"] == ["digest-replaced"] for i in items.values())
                and "held at this marker before" in items.get("app.yaml", {}).get("message", ""),
                "the hold says digest-replaced and why", r)
        t.check(("latest@%s #" % e) in env.remote_file("app.yaml"), "app.yaml still holds b3")

        f = env.push("team/app", ["b4", "latest"], created=None)
        r, items = reconcile(env, audit)
        t.check(r.rc == 0 and len(items) == 2 and all(
            i["decision"] == "update" and i["digest"] == f and i["warnings"] == ["created-unknown"]
            for i in items.values()), "a build without created, never held: update", r)
        t.check("no 'created'" in items.get("app.yaml", {}).get("message", ""),
                "created-unknown says why", r)
        log_len += 1

        r = env.imageguard("plan", "-o", "json")
        t.check(r.rc == 0 and len(r.json()) == 2
                and all(i["reason"] == "up-to-date" for i in r.json()), "plan: up to date", r)

        # the rollback override names a digest
        configure(env, {"imageguard.io/rollback-to": a, "imageguard.io/rollback-reason": REASON})
        r, items = reconcile(env, audit)
        t.check(r.rc == 0 and len(items) == 2 and all(i["decision"] == "rollback" and i["reason"] == "override"
                                  and i["digest"] == a for i in items.values()),
                "rollback-to digest A: rollback/override", r)
        t.check(("latest@%s #" % a) in env.remote_file("app.yaml")
                and ("%s #" % a) in env.remote_file("values.yaml"), "both markers back at A")
        log = env.remote_log()
        t.check(len(log) == log_len + 1 and REASON in log[0][1], "one rollback commit with the "
                "reason", log[:1])
        log_len += 1
        rec = [x for x in records() if x["decision"] == "rollback"]
        t.check(len(rec) == 2 and all(x["digest"] == a and x["rollback_reason"] == REASON
                                      and x["commit"] for x in rec), "audit: the rollback", rec)
        r, items = reconcile(env, audit)
        held(env, "override in force", "override", items, r, log_len)

        configure(env, {"imageguard.io/rollback-to": "sha256:" + "0" * 64,
                        "imageguard.io/rollback-reason": REASON})
        r, items = reconcile(env, audit)
        held(env, "rollback to a digest the registry lacks", "candidate-missing", items, r,
             log_len)

        configure(env, {"imageguard.io/rollback-to": "b1", "imageguard.io/rollback-reason": REASON})
        r = env.imageguard("reconcile", "-o", "json")
        # the invalid policy is left out (an error, exit 1), the rest runs
        t.check(r.rc == 1 and "is not a digest" in r.err, "rollback-to a tag is a config error", r)

        # override removed: forward-only resumes from A; latest (b4, no created) cannot be
        # ordered by build time, and the rollback commit replaced it: held
        configure(env)
        r, items = reconcile(env, audit)
        held(env, "override removed, latest was replaced by the rollback", "downgrade-blocked",
             items, r, log_len)
        d = env.push("team/app", ["b5", "latest"], created="2026-02-01T00:00:00+01:00")
        r, items = reconcile(env, audit)
        t.check(r.rc == 0 and len(items) == 2 and all(i["decision"] == "update" and i["digest"] == d
                                  for i in items.values()), "a newer build moves on from A", r)


def platform():
    """An index: the platform's own image decides, not linux/amd64's."""
    import registry
    with Env() as env:
        def push(tag0, amd64, arm64):
            return registry.push_image(env.reg.url, "team/app", [tag0, "latest"],
                                       created={"amd64": amd64, "arm64": arm64}, multi_arch=True)
        a = push("m1", T1, T1)
        env.seed({"app.yaml": marker_file(env.image("team/app") + ":latest@" + a, "app")})
        configure(env, platform="linux/arm64")
        push("m2", T2, T0)  # newer for amd64, older for arm64
        r = env.imageguard("reconcile", "-o", "json")
        t.check(r.rc == 0 and r.json()[0]["reason"] == "downgrade-blocked",
                "linux/arm64: its older image blocks the move", r)
        configure(env)
        r = env.imageguard("reconcile", "-o", "json")
        t.check(r.rc == 0 and r.json()[0]["decision"] == "update",
                "linux/amd64 (default): its newer image moves", r)
        configure(env, platform="linux/s390x")
        push("m3", T2, T2)
        r = env.imageguard("reconcile", "-o", "json")
        t.check(r.rc == 0 and r.json()[0]["decision"] == "update"
                and r.json()[0]["warnings"] == ["created-unknown"]
                and "no linux/s390x entry" in r.json()[0].get("message", ""),
                "a platform absent from the index, a digest never held: update, created-unknown",
                r)


forward_only()
platform()
sys.exit(t.done())
