#!/usr/bin/python3
"""`imageguard run --kube --verify-interval`: a Deployment served by the Kubernetes API fixture
(kubeapi_etcd.py, a real etcd behind it) whose pod runs an image other than the one Git pins
becomes a Warning DriftDetected Event on the automation and on its ImagePolicy (read with
`kubectl get events -o json`), de-duplicated by count, and the Flux payload with severity error
reaches the notification-controller stand-in; a pod back on Git's digest adds no more; every request is one manifests/rbac.yaml
grants (the pods list is used here)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import harness  # noqa: E402
import kubeapi  # noqa: E402
import kubeapi_etcd  # noqa: E402
from guard_env import Env  # noqa: E402
from kuberun import IMG, Run, kubectl, posted, start_receiver, wait  # noqa: E402

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


def teardown(st):
    if st:
        st["run"].stop()
        st["api"].stop()
        st["receiver"].shutdown()
        st["env"].close()


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
    with open(os.path.join(HERE, "..", "..", "manifests", "rbac.yaml")) as f:
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


if __name__ == "__main__":
    harness.main(setup, teardown)
