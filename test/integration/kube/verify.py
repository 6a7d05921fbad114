#!/usr/bin/python3
"""`imageguard run --kube --verify-interval`: a Deployment served by the Kubernetes API fixture
(kubeapi_etcd.py, a real etcd behind it) whose pod runs an image other than the one Git pins
becomes a Warning DriftDetected Event on the automation and on its ImagePolicy (read with
`kubectl get events -o json`), de-duplicated by count, and the Flux payload with severity error
reaches the notification-controller stand-in; a pod back on Git's digest adds no more; every
request is one manifests/rbac.yaml grants (the pods list is used here). With --shards 2 the
shard that does not own the automation verifies nothing of it and emits no Event, while its
owner does; under leader election a standby verifies nothing and emits no Event until it
leads."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi  # noqa: E402
import kubeapi_etcd  # noqa: E402
from guard_env import Env  # noqa: E402
from kuberun import IMG, Run, kubectl, posted, start_receiver, teardown, wait  # noqa: E402

WEB = {"app.kubernetes.io/name": "web"}


def workload(image):
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n"
            "spec:\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: web\n"
            "  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: web\n"
            "    spec:\n      containers:\n        - name: web\n"
            "          image: %s # {\"$imagepolicy\": \"default:app\"}\n" % image)


def running(st, tag):
    """prod/web-0 runs team/app:tag (its digest in imageID)."""
    ref = st["env"].image("team/app")
    p = kubeapi.pod("prod", "web-0", WEB, [("web", "%s:%s" % (ref, tag), "docker-pullable://%s@%s"
                                            % (ref, st["digests"][tag]))])
    if st["api"].get("", "pods", "prod", "web-0") is None:
        st["api"].create_object(p)
    st["api"].patch("", "pods", "prod", "web-0", {"status": p["status"]}, status_sub=True)


def kube_events(st, reason, kind):
    """The Events kubectl lists (every namespace) for reason on kind."""
    items = json.loads(kubectl(st, "get", "events", "--all-namespaces", "-o", "json"))["items"]
    return [e for e in items if e["reason"] == reason and e["involvedObject"]["kind"] == kind]


def setup():
    env = Env()
    try:
        api = kubeapi_etcd.start()
    except BaseException:
        env.close()
        raise
    st = {"env": env, "api": api, "receiver": start_receiver(), "digests": {}}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
    st["digests"]["v1.0.0"] = env.push("team/app", ["v1.0.0"])
    st["digests"]["v1.1.0"] = env.push("team/app", ["v1.1.0"])
    env.seed({"apps/web.yaml": workload(env.image("team/app") + ":v1.1.0")})
    kubectl(st, "apply", "-f", "-", stdin=env.repository("app", "team/app") +
            env.policy("app", "app", semver=">=1.0.0") + env.automation(interval="10m"))
    api.create_object(kubeapi.deployment("prod", "web", env.image("team/app") + ":v1.1.0", WEB))
    running(st, "v1.0.0")
    st["run"] = Run(st, "--verify-interval", "1s")
    return st


@harness.test
def drift_is_a_warning_event_on_the_automation(st):
    e = wait(lambda: kube_events(st, "DriftDetected", "ImageUpdateAutomation"), "drift Event",
             30, st["run"].text)[0]
    ref = st["env"].image("team/app")
    harness.check(e["type"] == "Warning" and e["involvedObject"]["name"] == "auto" and
                  e["involvedObject"]["namespace"] == "default" and
                  e["involvedObject"]["apiVersion"].startswith(IMG + "/") and
                  e["source"]["component"] == "imageguard", "event", e)
    harness.check("prod/Deployment/web container web (pod web-0) runs %s:v1.0.0 (%s)" % (
        ref, st["digests"]["v1.0.0"]) in e["message"] and "Git pins v1.1.0 (%s)" % st[
        "digests"]["v1.1.0"] in e["message"] and "apps/web.yaml:17" in e["message"],
        "message names the workload, both images and the marker", e["message"])
    p = wait(lambda: kube_events(st, "DriftDetected", "ImagePolicy"), "on the policy", 10)[0]
    harness.check(p["involvedObject"]["name"] == "app" and p["message"] == e["message"], "p", p)
    harness.check(st["env"].remote_head() and "v1.1.0" in st["env"].remote_file("apps/web.yaml"),
                  "Git untouched")


@harness.test
def drift_is_posted_with_severity_error(st):
    b = wait(lambda: posted(st, "DriftDetected"), "posted", 10, lambda: st["receiver"].got)[0]
    harness.check(b["severity"] == "error" and b["reportingController"] == "imageguard" and
                  b["involvedObject"]["kind"] in ("ImageUpdateAutomation", "ImagePolicy") and
                  "Git pins v1.1.0" in b["message"] and "metadata" not in b, "payload", b)


@harness.test
def repeated_drift_is_counted_on_one_event(st):
    e = wait(lambda: [e for e in kube_events(st, "DriftDetected", "ImageUpdateAutomation")
                      if e["count"] >= 3], "count 3 after three verifications", 20,
             lambda: kube_events(st, "DriftDetected", "ImageUpdateAutomation"))[0]
    harness.check(len(kube_events(st, "DriftDetected", "ImageUpdateAutomation")) == 1,
                  "one Event", kube_events(st, "DriftDetected", "ImageUpdateAutomation"))
    harness.check(e["lastTimestamp"] >= e["firstTimestamp"], "times", e)


@harness.test
def a_deleted_event_is_created_again_with_its_count(st):
    # as client-go: the patch answers 404 (the Event expired or was deleted), so the Event is
    # created again under the same name, its count carried on
    e = kube_events(st, "DriftDetected", "ImageUpdateAutomation")[0]
    st["api"].remove("", "events", "default", e["metadata"]["name"])
    again = wait(lambda: kube_events(st, "DriftDetected", "ImageUpdateAutomation"),
                 "created again", 20, st["run"].text)[0]
    harness.check(again["metadata"]["name"] == e["metadata"]["name"] and
                  again["count"] > e["count"] and again["firstTimestamp"] == e["firstTimestamp"],
                  "same name, count carried on", e, again)


@harness.test
def a_pod_on_gits_digest_adds_no_drift(st):
    running(st, "v1.1.0")
    n = len(st["run"].events("verify.pass"))
    wait(lambda: [x for x in st["run"].events("verify.pass")[n:] if " 0 drift" in x["msg"]],
         "a verification without drift", 20, st["run"].text)
    count = kube_events(st, "DriftDetected", "ImageUpdateAutomation")[0]["count"]
    posts = len(posted(st, "DriftDetected"))
    n = len(st["run"].events("verify.pass"))
    wait(lambda: len(st["run"].events("verify.pass")) >= n + 2, "two more verifications", 20)
    harness.check(kube_events(st, "DriftDetected", "ImageUpdateAutomation")[0]["count"] == count
                  and len(posted(st, "DriftDetected")) == posts, "no new drift Event")


@harness.test
def verify_reads_what_rbac_grants(st):
    import yaml
    with open(os.path.join(HERE, "..", "..", "..", "manifests", "rbac.yaml")) as f:
        roles = [d for d in yaml.safe_load_all(f) if d and d["kind"] in ("ClusterRole", "Role")]
    granted = {(g, r, v) for role in roles for rule in role["rules"] for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    used = {kubeapi_etcd.rbac_request(q["method"], q["path"], q["query"])
            for q in st["api"].requests if q["agent"].startswith("imageguard/")} - {None}
    harness.check(used <= granted, "requests the roles do not grant", used - granted)
    harness.check(("", "pods", "list") in used and ("apps", "deployments", "get") in used,
                  "verify's reads", used)


@harness.test
def sigterm_exits_zero(st):
    rc = st["run"].stop()
    harness.check(rc == 0 and "Sanitizer" not in st["run"].text(), "exit 0 (under ASan: no leak)",
                  rc, st["run"].text()[-3000:])


def owner(remote, shards=2):
    """shard.h's owner of (file://remote, main): FNV-1a 64 + fmix64 of the normalised URL (the
    path with '/' runs folded, no '.git') and the branch, mod shards."""
    m = 1 << 64
    h = 14695981039346656037
    p = "/".join(x for x in remote.split("/") if x)
    for b in ("file:///" + (p[:-4] if p.endswith(".git") else p) + "\nmain").encode():
        h = ((h ^ b) * 1099511628211) % m
    for k in (0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53):
        h = ((h ^ (h >> 33)) * k) % m
    return (h ^ (h >> 33)) % shards


def drift_count(st):
    """Drift reports on the automation so far: every process names its own Events."""
    return sum(e["count"] for e in kube_events(st, "DriftDetected", "ImageUpdateAutomation"))


def passes(run, n):
    return wait(lambda: len(run.events("verify.pass")) >= n and run.events("verify.pass"),
                "%d verifications" % n, 30, run.text)


@harness.test
def another_shards_drift_is_not_verified_here(st):
    running(st, "v1.0.0")  # drift again
    mine = owner(st["env"].remote)
    count, posts = drift_count(st), len(posted(st, "DriftDetected"))
    st["run"] = Run(st, "--verify-interval", "1s", "--shards", "2", "--shard-index",
                    str(1 - mine))
    got = passes(st["run"], 3)
    harness.check(all(x["msg"].startswith("0 ok, 0 drift, 0 not running, 0 unknown")
                      for x in got), "the other shard verifies nothing of it", got)
    harness.check(drift_count(st) == count and len(posted(st, "DriftDetected")) == posts,
                  "no drift Event from the shard that does not own the automation",
                  kube_events(st, "DriftDetected", "ImageUpdateAutomation"))
    harness.check(st["run"].stop() == 0, "exit 0", st["run"].text()[-2000:])
    # the owner, same objects and pod: its verification finds the drift and reports it
    st["run"] = Run(st, "--verify-interval", "1s", "--shards", "2", "--shard-index", str(mine))
    wait(lambda: drift_count(st) > count, "the owning shard's drift Event", 30, st["run"].text)
    harness.check(" 1 drift" in passes(st["run"], 1)[0]["msg"], "owner sees the drift",
                  st["run"].events("verify.pass"))
    harness.check(st["run"].stop() == 0, "exit 0", st["run"].text()[-2000:])


def holder(st):
    o = st["api"].get("coordination.k8s.io", "leases", "default", "imageguard-leader-election")
    return ((o or {}).get("spec") or {}).get("holderIdentity")


def identity(run):
    e = run.events("leader.start")
    return e and e[0]["msg"].split("identity '", 1)[1].split("'", 1)[0]


@harness.test
def a_standby_verifies_nothing_and_emits_no_event(st):
    elect = ["--verify-interval", "1s", "--enable-leader-election",
             "--leader-election-lease-duration", "3s", "--leader-election-renew-deadline", "2s",
             "--leader-election-retry-period", "500ms"]
    a = st["run"] = Run(st, *elect)
    wait(lambda: identity(a) and holder(st) == identity(a), "a leads", 20, a.text)
    b = Run(st, *elect)
    try:
        wait(lambda: identity(b), "b started", 10, b.text)
        n = len(a.events("verify.pass"))
        count = drift_count(st)
        passes(a, n + 3)  # three of the leader's verifications, each a drift Event
        harness.check(drift_count(st) > count, "the leader reports the drift")
        harness.check(holder(st) == identity(a) and not b.events("verify.pass") and
                      not b.events("leader.elected"), "the standby verified nothing",
                      b.text()[-2000:])
        harness.check(a.stop() == 0, "the leader exits 0 and releases", a.text()[-2000:])
        count = drift_count(st)
        # once elected, the same replica verifies and reports: the check above can fail
        wait(lambda: b.events("verify.pass"), "the new leader verifies", 20, b.text)
        wait(lambda: drift_count(st) > count, "the new leader's drift Event", 20, b.text)
    finally:
        st["run"] = b


if __name__ == "__main__":
    harness.main(setup, teardown)
