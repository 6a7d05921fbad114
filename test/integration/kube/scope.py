#!/usr/bin/python3
"""`imageguard run --kube` scoped as Flux's controllers are, end to end against the Kubernetes
API fixture (kubeapi_etcd.py, real etcd), a real docker-registry and a bare Git remote:
--watch-namespace reconciles only that namespace's automations (objects in another namespace
are never requested, their files stay, their status stays empty, no Event is written there);
--watch-label-selector only objects whose labels match (an unlabeled automation writes nothing
and gets no status, until it and its objects are labeled: then it is taken up without a
restart)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402
from kuberun import IMG, Run, kubectl, ready, start_receiver, status, teardown, wait  # noqa: E402

LABEL = "imageguard.io/shard"


def in_namespace(text, ns):
    return text.replace("namespace: default", "namespace: " + ns)


def labeled(text):
    return text.replace("metadata:\n", "metadata:\n  labels:\n    %s: a\n" % LABEL)


def docs(text):
    return ["---\n" + d for d in text.split("---\n") if d.strip()]


def marker(env, ns, policy):
    return marker_file(env.image("team/app") + ":v1.0.0", policy).replace(
        '"default:', '"%s:' % ns)


def setup():
    env = Env()
    try:
        api = kubeapi_etcd.start()
    except BaseException:
        env.close()
        raise
    st = {"env": env, "api": api, "receiver": start_receiver(), "run": None}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"ns/a.yaml": marker(env, "team-a", "app"),
              "ns/b.yaml": marker(env, "team-b", "app"),
              "sel/on/app.yaml": marker(env, "default", "chosen"),
              "sel/off/app.yaml": marker(env, "default", "other")})
    one = (env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0") +
           env.automation(interval="10m", path="./ns"))
    for ns in ("team-a", "team-b"):
        kubectl(st, "apply", "-f", "-", stdin=in_namespace(one, ns))
    git, auto_on = docs(env.automation(name="auto-on", interval="10m", path="./sel/on"))
    auto_off = docs(env.automation(name="auto-off", interval="10m", path="./sel/off"))[1]
    kubectl(st, "apply", "-f", "-", stdin=labeled(
        env.repository("chosen", "team/app") + env.policy("chosen", "chosen", semver=">=1.0.0") + git +
        auto_on) + env.repository("other", "team/app") + env.policy("other", "other", semver=">=1.0.0")
        + auto_off)
    return st


def flux_requests(st, since):
    """Paths of imageguard's requests for Flux's kinds after the first `since` requests (API
    discovery aside: it names no namespace)."""
    return [q["path"] for q in st["api"].requests[since:] if q["agent"].startswith("imageguard/")
            and ("/apis/%s/" % IMG in q["path"] or "/apis/source.toolkit.fluxcd.io/" in q["path"])
            and kubeapi_etcd.rbac_request(q["method"], q["path"], q["query"])]


@harness.test
def watch_namespace_reconciles_only_that_namespace(st):
    env = st["env"]
    since = len(st["api"].requests)
    st["run"] = Run(st, "--watch-namespace", "team-a")
    wait(lambda: "v1.1.0" in env.remote_file("ns/a.yaml"), "team-a's commit", 30,
         st["run"].text)
    # one more pass after a reconcile requested on both: team-b's request is never seen
    for ns in ("team-a", "team-b"):
        kubectl(st, "-n", ns, "annotate", "imageupdateautomation", "auto", "--overwrite",
                "reconcile.fluxcd.io/requestedAt=scoped")
    wait(lambda: status(st, "auto", "team-a").get("lastHandledReconcileAt") == "scoped",
         "team-a's requested pass", 20, lambda: status(st, "auto", "team-a"))
    harness.check((ready(st, "auto", "team-a") or {}).get("status") == "True", "team-a Ready",
                  status(st, "auto", "team-a"))
    harness.check("v1.0.0" in env.remote_file("ns/b.yaml"), "team-b's file untouched")
    harness.check(status(st, "auto", "team-b") == {}, "no status on team-b's automation",
                  status(st, "auto", "team-b"))
    harness.check(not st["api"].objects("", "events", "team-b"), "no Event in team-b",
                  st["api"].objects("", "events", "team-b"))
    paths = flux_requests(st, since)
    harness.check(paths and all("/namespaces/team-a/" in p for p in paths),
                  "every request for Flux's kinds is scoped to team-a on the server",
                  [p for p in paths if "/namespaces/team-a/" not in p])
    harness.check(not any(p.startswith("/api/v1/namespaces/team-b/") for p in [
        q["path"] for q in st["api"].requests[since:] if q["agent"].startswith("imageguard/")]),
        "nothing read or written in team-b")
    rc = st["run"].stop()
    harness.check(rc == 0, "exit 0 on SIGTERM", rc, st["run"].text()[-3000:])
    st["run"] = None


@harness.test
def watch_label_selector_reconciles_only_labeled_objects(st):
    env = st["env"]
    since = len(st["api"].requests)
    st["run"] = Run(st, "--watch-label-selector", LABEL + "=a")
    wait(lambda: "v1.1.0" in env.remote_file("sel/on/app.yaml"), "the labeled automation's "
         "commit", 30, st["run"].text)
    kubectl(st, "annotate", "imageupdateautomation", "auto-on", "auto-off", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=selected")
    wait(lambda: status(st, "auto-on").get("lastHandledReconcileAt") == "selected",
         "the labeled automation's requested pass", 20, lambda: status(st, "auto-on"))
    harness.check("v1.0.0" in env.remote_file("sel/off/app.yaml"), "unlabeled: file untouched")
    harness.check(status(st, "auto-off") == {}, "unlabeled: no status", status(st, "auto-off"))
    harness.check(not [e for e in st["api"].objects("", "events", "default")
                       if e["involvedObject"]["name"] in ("auto-off", "other")],
                  "unlabeled: no Event")
    # the namespaces are not the scope here: team-a and team-b are unlabeled, so untouched too
    harness.check(status(st, "auto", "team-b") == {}, "team-b unlabeled", status(st, "auto",
                                                                                  "team-b"))
    lists = [q for q in st["api"].requests[since:] if q["agent"].startswith("imageguard/") and
             q["path"] in set(flux_requests(st, since)) and
             (kubeapi_etcd.rbac_request(q["method"], q["path"], q["query"]) or ("",))[-1] in
             ("list", "watch")]
    harness.check(lists and all(q["query"].get("labelSelector") == LABEL + "=a" for q in lists),
                  "every list and watch carries the selector to the server",
                  [q for q in lists if q["query"].get("labelSelector") != LABEL + "=a"][:3])


@harness.test
def labeling_an_automation_takes_it_up_without_restart(st):
    env = st["env"]
    kubectl(st, "label", "imagerepository", "other", LABEL + "=a")
    kubectl(st, "label", "imagepolicy", "other", LABEL + "=a")
    kubectl(st, "label", "imageupdateautomation", "auto-off", LABEL + "=a")
    wait(lambda: "v1.1.0" in env.remote_file("sel/off/app.yaml"), "the newly labeled "
         "automation's commit", 30, st["run"].text)
    wait(lambda: (ready(st, "auto-off") or {}).get("status") == "True", "its status", 20,
         lambda: status(st, "auto-off"))
    harness.check(st["run"].p.poll() is None, "the same process, no restart")


if __name__ == "__main__":
    harness.main(setup, teardown)
