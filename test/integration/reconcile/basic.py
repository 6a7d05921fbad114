#!/usr/bin/python3
"""End to end against a real docker-registry and a bare Git remote: forward update (text and
JSON), adopt from `latest`, suspend, two markers of one policy at different values, digest
reflection (IfNotPresent and Always), plan writes nothing, no-markers, audit records, and a
rollback annotation without reason rejected as a config error."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, by_file  # noqa: E402

t = Checks()


def forward_and_plan(env):
    env.push("team/app", ["v1.0.0"])
    env.push("team/web", ["1.0.0", "latest"])
    env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
              "apps/web.yaml": marker_file(env.image("team/web") + ":latest", "web"),
              "apps/tag.yaml": marker_file("v1.0.0", "app", part="tag", key="tag")})
    env.config(env.repository("app", "team/app") + env.repository("web", "team/web")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.policy("web", "web", semver=">=1.0.0")
               + env.policy("lonely", "app", semver=">=1.0.0")
               + env.automation())
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json())
    t.check(r.rc == 0, "first pass exits 0", r)
    t.check(items[("default/app", "apps/app.yaml")]["decision"] == "none"
            and items[("default/app", "apps/app.yaml")]["reason"] == "up-to-date",
            "committed newest tag is up-to-date", items)
    web = items[("default/web", "apps/web.yaml")]
    t.check(web["decision"] == "update" and web["reason"] == "adopt"
            and web["current"] == "latest" and web["candidate"] == "1.0.0" and web.get("commit"),
            "`latest` is adopted into the policy's order", web)
    t.check(env.remote_file("apps/web.yaml") ==
            marker_file(env.image("team/web") + ":1.0.0", "web"),
            "adopt rewrote only the value's bytes")
    lonely = items[("default/lonely", None)]
    t.check(lonely["decision"] == "none" and lonely["reason"] == "no-markers"
            and lonely["file"] is None, "a policy without marker is none/no-markers", lonely)

    env.push("team/app", ["v1.1.0"])
    head = env.remote_head()
    snap = env.state_snapshot()
    audit = os.path.join(env.dir, "plan-audit.log")
    r = env.imageguard("plan", "-o", "json", "--audit-log", audit)
    items = by_file(r.json())
    t.check(r.rc == 0 and items[("default/app", "apps/app.yaml")]["decision"] == "update",
            "plan shows the forward update", r)
    t.check(items[("default/app", "apps/tag.yaml")]["candidate"] == "v1.1.0",
            "plan decides the :tag marker too", items)
    t.check(env.remote_head() == head, "plan pushed nothing")
    t.check(env.state_snapshot() == snap, "plan left the state dir unchanged")
    t.check(not os.path.exists(audit), "plan wrote no audit record")

    r = env.imageguard("plan")
    line = [l for l in r.out.splitlines() if l.startswith("default/app apps/app.yaml:")]
    t.check(len(line) == 1 and line[0].endswith("v1.0.0 -> v1.1.0 update/forward"),
            "plan text: one line per marker", r.out)

    audit = os.path.join(env.dir, "audit.log")
    r = env.imageguard("reconcile", "--audit-log", audit, "--audit-tags")
    t.check(r.rc == 0, "reconcile of the forward update exits 0", r)
    t.check(env.remote_file("apps/app.yaml") ==
            marker_file(env.image("team/app") + ":v1.1.0", "app")
            and env.remote_file("apps/tag.yaml") == marker_file("v1.1.0", "app", "tag", "tag"),
            "both markers of the policy moved forward")
    log = env.remote_log()
    t.check(len(log) == 4 and ":v1.0.0 -> " in log[0][1] and ":v1.1.0 (apps/app.yaml)" in log[0][1],
            "one commit for the pass, naming the move", log[:2])
    records = [json.loads(l) for l in open(audit)]
    app = [x for x in records if x["policy"] == "default/app" and x["file"] == "apps/app.yaml"]
    t.check(len(app) == 1 and app[0]["decision"] == "update" and app[0]["tag_count"] == 2
            and app[0]["tags"] == ["v1.0.0", "v1.1.0"] and len(app[0]["tags_sha256"]) == 64
            and app[0]["commit"] == env.remote_head() and app[0]["line"] == 8,
            "audit record per marker with listing proof and commit", app)
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and len(r.json()) == 4 and all(i["decision"] == "none" for i in r.json()),
            "next pass: everything up to date, no commit", r)
    t.check(len(env.remote_log()) == 4, "no commit when nothing moves")


def two_markers_and_suspend(env):
    env.push("team/app", ["v1.0.0", "v1.2.0"])
    env.push("team/other", ["2.0.0", "2.1.0"])
    # staging holds a tag the registry does not list (ahead): it must not be pulled back,
    # while prod moves forward in the same pass.
    env.seed({"staging/app.yaml": marker_file(env.image("team/app") + ":v1.5.0", "app"),
              "prod/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
              "other.yaml": marker_file(env.image("team/other") + ":2.0.0", "other")})
    env.config(env.repository("app", "team/app") + env.repository("other", "team/other")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.policy("other", "other", semver=">=1.0.0", extra="  suspend: true\n")
               + env.automation())
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json())
    st, pr = items[("default/app", "staging/app.yaml")], items[("default/app", "prod/app.yaml")]
    t.check(st["decision"] == "hold" and st["reason"] == "downgrade-blocked"
            and st["warnings"] == ["current-missing"], "staging ahead is held", st)
    t.check(pr["decision"] == "update" and pr["candidate"] == "v1.2.0",
            "prod moves forward in the same pass", pr)
    t.check("v1.5.0" in env.remote_file("staging/app.yaml")
            and "v1.2.0" in env.remote_file("prod/app.yaml"), "Git holds both values")
    o = items[("default/other", "other.yaml")]
    t.check(o["decision"] == "hold" and o["reason"] == "suspended"
            and "2.0.0 #" in env.remote_file("other.yaml"), "suspended policy holds", o)


def digests(env):
    d1 = env.push("team/app", ["v1.0.0"])
    d2 = env.push("team/app", ["v1.1.0"], created="2026-02-01T00:00:00Z")
    env.seed({"a.yaml": marker_file(env.image("team/app") + ":v1.0.0", "ifnp"),
              "b.yaml": marker_file(env.image("team/app") + ":v1.1.0@" + d1, "always"),
              "c.yaml": marker_file("sha256:0", "always", part="digest", key="digest")})
    env.config(env.repository("app", "team/app")
               + env.policy("ifnp", "app", semver=">=1.0.0", reflect="IfNotPresent")
               + env.policy("always", "app", semver=">=1.0.0", reflect="Always")
               + env.automation())
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json())
    t.check(r.rc == 0, "digest pass exits 0", r)
    t.check(env.remote_file("a.yaml") ==
            marker_file(env.image("team/app") + ":v1.1.0@" + d2, "ifnp"),
            "IfNotPresent writes repo:tag@digest with the tag change", items)
    t.check(env.remote_file("b.yaml") ==
            marker_file(env.image("team/app") + ":v1.1.0@" + d2, "always"),
            "Always rewrites a stale digest of the same tag", items[("default/always", "b.yaml")])
    t.check(env.remote_file("c.yaml") == marker_file(d2, "always", "digest", "digest"),
            ":digest marker gets the confirmed digest")
    d3 = env.push("team/app", ["v1.1.0"], created="2026-03-01T00:00:00Z")
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json())
    t.check(d3 in env.remote_file("b.yaml") and d2 in env.remote_file("a.yaml"),
            "re-pushed tag: Always follows, IfNotPresent keeps its digest", items)


def config_error(env):
    env.push("team/app", ["v1.0.0"])
    env.seed({"a.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    env.config(env.repository("app", "team/app")
               + env.policy("app", "app", semver=">=1.0.0",
                            annotations={"imageguard.io/rollback-to": "v1.0.0"})
               + env.automation())
    head = env.remote_head()
    r = env.imageguard("reconcile")
    # the invalid policy is left out (an error, exit 1); the rest of the config still runs
    t.check(r.rc == 1 and "rollback-reason" in r.err and "config.yaml:" in r.err,
            "rollback-to without reason: config error naming file:line", r)
    t.check(env.remote_head() == head, "config error: nothing written")


for scenario in (forward_and_plan, two_markers_and_suspend, digests, config_error):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
