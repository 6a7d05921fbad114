#!/usr/bin/python3
"""Annotated rollback (CONTRACT §7) end to end: rollback-to + rollback-reason writes one rollback
commit carrying the reason; later passes hold (override) even with newer tags; when
rollback-until passes, or the annotations are removed, forward-only automation resumes from what
is committed. A rollback-to tag absent from the registry holds as candidate-missing."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file  # noqa: E402

t = Checks()
REASON = "INC-42: v1.2.0 corrupts sessions"


def setup(env, annotations):
    env.push("team/app", ["v1.0.0", "v1.1.0", "v1.2.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":v1.2.0", "app"),
              "tag.yaml": marker_file("v1.2.0", "app", "tag", "tag")})
    configure(env, annotations)


def configure(env, annotations):
    env.config(env.repository("app", "team/app")
               + env.policy("app", "app", semver=">=1.0.0", annotations=annotations)
               + env.automation())


def rollback_then_lapse(env):
    setup(env, {"imageguard.io/rollback-to": "v1.1.0", "imageguard.io/rollback-reason": REASON,
                "imageguard.io/rollback-until": "2099-01-01T00:00:00Z"})
    audit = os.path.join(env.dir, "audit.log")
    r = env.imageguard("reconcile", "-o", "json", "--audit-log", audit)
    items = r.json()
    t.check(r.rc == 0 and len(items) == 2 and all(i["decision"] == "rollback" and i["reason"] == "override"
                              and i["candidate"] == "v1.1.0" for i in items),
            "override in force: rollback/override on every marker", r)
    log = env.remote_log()
    t.check(len(log) == 3 and REASON in log[0][1], "one rollback commit carrying the reason", log)
    t.check("v1.1.0 #" in env.remote_file("app.yaml") and "v1.1.0 #" in env.remote_file("tag.yaml"),
            "both markers rolled back")
    recs = [json.loads(l) for l in open(audit)]
    t.check(len(recs) == 2 and all(x["decision"] == "rollback" and x.get("rollback_reason") == REASON for x in recs),
            "audit records carry the rollback reason", recs)

    env.push("team/app", ["v1.3.0"])
    for n in range(2):
        r = env.imageguard("reconcile", "-o", "json")
        t.check(r.rc == 0 and len(r.json()) == 2 and all(i["decision"] == "hold" and i["reason"] == "override"
                                  for i in r.json()), "pass %d after rollback: hold/override" % n, r)
    t.check(len(env.remote_log()) == 3, "held passes commit nothing")

    configure(env, {"imageguard.io/rollback-to": "v1.1.0", "imageguard.io/rollback-reason": REASON,
                    "imageguard.io/rollback-until": "2020-01-01T00:00:00Z"})
    r = env.imageguard("reconcile", "-o", "json")
    items = r.json()
    t.check(r.rc == 0 and len(items) == 2 and all(i["decision"] == "update" and i["reason"] == "forward"
                              and i["candidate"] == "v1.3.0" for i in items),
            "rollback-until passed: forward resumes", r)
    t.check(len(items) == 2 and all("override-lapsed" in i["warnings"] for i in items), "lapsed override is warned", items)
    t.check("v1.3.0 #" in env.remote_file("app.yaml") and len(env.remote_log()) == 4,
            "forward commit after the lapse")


def rollback_then_removal(env):
    setup(env, {"imageguard.io/rollback-to": "v1.0.0", "imageguard.io/rollback-reason": REASON})
    r = env.imageguard("reconcile")
    t.check(r.rc == 0 and "rollback/override" in r.out and "v1.0.0 #" in env.remote_file("app.yaml"),
            "rollback to v1.0.0 committed", r)
    configure(env, None)
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and len(r.json()) == 2 and all(i["decision"] == "update" and i["candidate"] == "v1.2.0"
                              for i in r.json()), "annotations removed: forward resumes", r)


def rollback_missing_tag(env):
    setup(env, {"imageguard.io/rollback-to": "v0.9.0", "imageguard.io/rollback-reason": REASON})
    head = env.remote_head()
    r = env.imageguard("reconcile", "-o", "json")
    t.check(len(r.json()) == 2 and all(i["decision"] == "hold" and i["reason"] == "candidate-missing" for i in r.json())
            and env.remote_head() == head, "rollback-to an unlisted tag: candidate-missing", r)


for scenario in (rollback_then_lapse, rollback_then_removal, rollback_missing_tag):
    with Env() as env:
        try:
            scenario(env)
        except Exception:
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
