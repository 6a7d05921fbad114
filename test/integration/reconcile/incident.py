#!/usr/bin/python3
"""The incident imageguard exists for, end to end: tags `release-<sha>-<ts>` under a numerical
policy on the extracted ts; a forward tag is committed; the registry (through the fault proxy)
then serves the tag list of two months ago - the committed tag missing, the newest listed tag
older - and nothing is committed (hold/downgrade-blocked, warning current-missing, metric-free
CLI pass); the fresh list returns and a newer tag is committed. Also: a candidate listed whose
manifest is gone (404) holds as candidate-missing; failed, empty, unparseable, slow and
persistently rate-limited (429 on every request) listings commit nothing while a healthy policy
of the same pass still moves forward."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, by_file, serve_tags  # noqa: E402

t = Checks()
PATTERN = r"^release-(?P<sha>[0-9a-f]+)-(?P<ts>[0-9]+)$"


def incident(env):
    fault = env.fault()
    img = env.image("team/app", fault.host)
    old = ["release-%04x-%d" % (i, 1764000000 + i) for i in range(1, 6)]   # two months ago
    env.push("team/app", old[:3])
    env.seed({"apps/app.yaml": marker_file(img + ":" + old[0], "app")})
    env.config(env.repository("app", "team/app", host=fault.host)
               + env.policy("app", "app", numerical="asc", pattern=PATTERN, extract="$ts")
               + env.automation())
    new = "release-beef-1769000000"
    env.push("team/app", old[3:] + [new])
    r = env.imageguard("reconcile", "-o", "json")
    item = r.json()[0]
    t.check(r.rc == 0 and item["decision"] == "update" and item["candidate"] == new,
            "forward tag committed", r)
    t.check(env.remote_file("apps/app.yaml") == marker_file(img + ":" + new, "app"),
            "Git holds the forward tag")
    commits = len(env.remote_log())

    serve_tags(fault, "team/app", old)  # the stale cache: current missing, best is older
    r = env.imageguard("reconcile", "-o", "json")
    item = r.json()[0]
    t.check(r.rc == 0 and item["decision"] == "hold" and item["reason"] == "downgrade-blocked"
            and item["warnings"] == ["current-missing"] and item["current"] == new
            and item["candidate"] == old[-1], "stale list: hold/downgrade-blocked, current-missing", r)
    t.check("current-missing" in r.err, "current-missing is logged", r.err)
    t.check(len(env.remote_log()) == commits and new in env.remote_file("apps/app.yaml"),
            "stale list: no commit")

    newer = "release-cafe-1769500000"
    env.push("team/app", [newer])
    serve_tags(fault, "team/app", None)
    r = env.imageguard("reconcile", "-o", "json")
    item = r.json()[0]
    t.check(item["decision"] == "update" and item["reason"] == "forward"
            and item["candidate"] == newer and item["warnings"] == [], "fresh list: forward", r)
    t.check(env.remote_file("apps/app.yaml") == marker_file(img + ":" + newer, "app")
            and len(env.remote_log()) == commits + 1, "fresh list: newer tag committed")

    # listed but its manifest is gone: never written
    serve_tags(fault, "team/app", old + [new, newer, "release-dead-1770000000"])
    r = env.imageguard("reconcile", "-o", "json")
    item = r.json()[0]
    t.check(item["decision"] == "hold" and item["reason"] == "candidate-missing"
            and item["candidate"] == "release-dead-1770000000", "manifest 404: candidate-missing", r)
    t.check(len(env.remote_log()) == commits + 1, "manifest 404: no commit")


FAILING = [("e500", "e500/x", "error", "registry"),
           ("invalid", "invalid/x", "error", "registry"),
           ("truncated", "truncated/x", "error", "registry"),
           ("notags", "notags/x", "error", "registry"),
           ("slow", "slow/x", "error", "registry"),
           # 429 once: retried, listed; its candidate has no manifest behind the proxy
           ("r429", "r429/x", "hold", "candidate-missing"),
           # 429 on every request: the bounded retries run out, an error, not a hang
           ("r429always", "r429always/x", "error", "registry"),
           ("empty", "team/empty", "hold", "no-candidates")]


def failures(env):
    fault = env.fault()
    env.push("team/good", ["1.0.0"])
    env.push("team/empty", ["0.0.1"])
    serve_tags(fault, "team/empty", [])
    files = {"good.yaml": marker_file(env.image("team/good", fault.host) + ":1.0.0", "good")}
    cfg = env.repository("good", "team/good", host=fault.host) + env.policy("good", "good", semver="*")
    for name, repo, _, _ in FAILING:
        files[name + ".yaml"] = marker_file(env.image(repo, fault.host) + ":t000", name)
        cfg += env.repository(name, repo, host=fault.host, extra="  timeout: 2s\n")
        cfg += env.policy(name, name, alphabetical="asc")
    env.seed(files)
    env.config(cfg + env.automation())
    env.push("team/good", ["1.1.0"])
    before = {n: env.remote_file(n + ".yaml") for n, _, _, _ in FAILING}
    r = env.imageguard("reconcile", "-o", "json", timeout=300)
    items = {i["policy"]: i for i in r.json()}
    t.check(r.rc == 1, "a policy in error makes the pass exit 1", r)
    for name, _, decision, reason in FAILING:
        it = items["default/" + name]
        t.check(it["decision"] == decision and it["reason"] == reason
                and env.remote_file(name + ".yaml") == before[name],
                "%s listing: %s/%s, nothing written" % (name, decision, reason), it)
    t.check(items["default/good"]["decision"] == "update"
            and "1.1.0" in env.remote_file("good.yaml"),
            "the healthy policy moved forward in the same pass", items["default/good"])
    errors = [i for i in r.json() if i["decision"] == "error"]
    t.check(errors and all(i.get("message") for i in errors),
            "every error carries a one-line message")
    msg = items["default/r429always"].get("message") or ""
    t.check("\n" not in msg and fault.host in msg and "429" in msg,
            "persistent 429: one line naming the registry and the 429", msg)
    hits = [q for q in fault.requests() if "/r429always/" in q["path"]]
    t.check(2 <= len(hits) <= 10, "persistent 429: retried, but a bounded number of times",
            len(hits))


for scenario in (incident, failures):
    with Env() as env:
        try:
            scenario(env)
        except Exception:
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
