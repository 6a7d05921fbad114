#!/usr/bin/python3
"""The API fixture behaves as kube-apiserver on what imageguard touches (issue 35, point 6):
Flux's CRDs (test/data/kube/crds, vendored at the commits its README names) are the served
schema: invalid objects and statuses answer 422 with the fields, unknown fields are pruned with
a Warning, and fieldValidation=Strict refuses them; status is a subresource; watch takes Go's
boolean spellings; a Lease has no generation; events.k8s.io/v1 serves the core Events. Debian's
python3-kubernetes is the second real client (beside kubectl): list, watch, status, Events."""
import http.client
import json
import os
import ssl
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402

IMG = "image.toolkit.fluxcd.io"
REPO = {"apiVersion": IMG + "/v1", "kind": "ImageRepository",
        "metadata": {"name": "podinfo", "namespace": "default"},
        "spec": {"image": "ghcr.io/stefanprodan/podinfo", "interval": "5m"}}


def request(state, method, path, body=None, ctype="application/json"):
    """(status, body, Warning headers)."""
    api = state["api"]
    ctx = ssl.create_default_context(cafile=api.ca_file)
    c = http.client.HTTPSConnection("127.0.0.1", api.port, context=ctx, timeout=10)
    headers = {"Authorization": "Bearer " + api.token, "Content-Type": ctype}
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    warnings = r.headers.get_all("Warning") or []
    data = json.loads(r.read() or b"null")
    c.close()
    return r.status, data, warnings


def repos(ns="default"):
    return "/apis/%s/v1/namespaces/%s/imagerepositories" % (IMG, ns)


def setup():
    api = kubeapi_etcd.start()
    d = harness.tempdir()
    return {"api": api, "kubeconfig": api.kubeconfig(os.path.join(d, "kubeconfig")), "dir": d}


def teardown(state):
    if state:
        state["api"].stop()


@harness.test
def an_invalid_object_is_422_naming_its_fields(state):
    bad = json.loads(json.dumps(REPO))
    bad["metadata"]["name"] = "bad"
    bad["spec"]["interval"] = "5 minutes"
    del bad["spec"]["image"]
    code, out, _ = request(state, "POST", repos(), bad)
    harness.check(code == 422 and out["reason"] == "Invalid", "422 Invalid", out)
    fields = sorted(c["field"] for c in out["details"]["causes"])
    harness.check(fields == ["spec.image", "spec.interval"], "the causes name both fields", out)
    harness.check(out["message"].startswith('ImageRepository.%s "bad" is invalid: [' % IMG)
                  and "should match" in out["message"], "kube-apiserver's message", out)
    harness.check(state["api"].get(IMG, "imagerepositories", "default", "bad") is None,
                  "nothing stored")


@harness.test
def unknown_fields_are_pruned_with_a_warning(state):
    obj = json.loads(json.dumps(REPO))
    obj["spec"]["imagee"] = "typo"
    code, out, warnings = request(state, "POST", repos(), obj)
    harness.check(code == 201 and "imagee" not in out["spec"], "created, pruned", out)
    harness.check(warnings == ['299 - "unknown field \\"spec.imagee\\""'], "one Warning", warnings)
    stored = state["api"].get(IMG, "imagerepositories", "default", "podinfo")
    harness.check("imagee" not in stored["spec"] and stored["spec"]["image"], "stored pruned",
                  stored)


@harness.test
def field_validation_strict_refuses_unknown_fields(state):
    patch = {"spec": {"intervall": "1m"}}
    path = repos() + "/podinfo?fieldValidation=Strict"
    code, out, _ = request(state, "PATCH", path, patch, "application/merge-patch+json")
    harness.check(code == 400 and 'strict decoding error: unknown field "spec.intervall"'
                  in out["message"], "Strict: 400 naming the field", out)
    code, out, warnings = request(state, "PATCH", repos() + "/podinfo?fieldValidation=Ignore",
                                  patch, "application/merge-patch+json")
    harness.check(code == 200 and not warnings and "intervall" not in out["spec"],
                  "Ignore: pruned silently", (out, warnings))
    obj = json.loads(json.dumps(REPO))
    obj["metadata"]["name"] = "strict"
    obj["spec"]["intervall"] = "1m"
    p = subprocess.run(["kubectl", "--kubeconfig", state["kubeconfig"], "create",
                        "--validate=strict", "-f", "-"], input=json.dumps(obj),
                       capture_output=True, text=True, timeout=60)
    harness.check(p.returncode != 0 and "intervall" in p.stderr,
                  "kubectl --validate=strict is refused by the server", p.stderr)


@harness.test
def status_is_a_subresource_checked_against_the_schema(state):
    path = repos() + "/podinfo/status"
    cur = state["api"].get(IMG, "imagerepositories", "default", "podinfo")
    bad = dict(cur, status={"conditions": [{"type": "Ready", "status": "Maybe"}]})
    code, out, _ = request(state, "PUT", path, bad)
    fields = sorted(c["field"] for c in out.get("details", {}).get("causes", []))
    harness.check(code == 422 and "status.conditions[0].status" in fields and
                  "status.conditions[0].reason" in fields, "an invalid condition is 422", out)
    good = dict(cur, status={"canonicalImageName": "ghcr.io/stefanprodan/podinfo",
                             "conditions": [{"type": "Ready", "status": "True",
                                             "reason": "Succeeded", "message": "ok",
                                             "lastTransitionTime": "2026-01-01T00:00:00Z",
                                             "observedGeneration": 1}]})
    code, out, _ = request(state, "PUT", path, good)
    harness.check(code == 200 and out["status"]["conditions"][0]["status"] == "True",
                  "a valid status is stored", out)
    code, out, _ = request(state, "PUT", repos() + "/podinfo", dict(out, status={}))
    harness.check(code == 200 and out["status"]["conditions"], "the main resource keeps status",
                  out)


@harness.test
def watch_takes_gos_boolean_spellings(state):
    for spelling in ("true", "True", "1", "t", "T", "TRUE"):
        api = state["api"]
        ctx = ssl.create_default_context(cafile=api.ca_file)
        c = http.client.HTTPSConnection("127.0.0.1", api.port, context=ctx, timeout=10)
        c.request("GET", repos() + "?watch=%s&timeoutSeconds=1" % spelling,
                  headers={"Authorization": "Bearer " + api.token})
        r = c.getresponse()
        first = json.loads(r.readline())
        c.close()
        harness.check(first.get("type") == "ADDED", "watch=%s is a watch" % spelling, first)


@harness.test
def a_lease_has_no_generation(state):
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "imageguard", "namespace": "default"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    code, out, _ = request(state, "POST",
                           "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)
    harness.check(code == 201 and "generation" not in out["metadata"], "no generation", out)
    out["spec"]["holderIdentity"] = "b"
    code, out, _ = request(state, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/"
                           "leases/imageguard", out)
    harness.check(code == 200 and "generation" not in out["metadata"], "still none", out)


@harness.test
def events_k8s_io_serves_the_core_events(state):
    ev = {"apiVersion": "v1", "kind": "Event",
          "metadata": {"name": "podinfo.1", "namespace": "default"},
          "involvedObject": {"apiVersion": IMG + "/v1", "kind": "ImageRepository",
                             "name": "podinfo", "namespace": "default", "uid": "u-1"},
          "reason": "Succeeded", "message": "scanned", "type": "Normal", "count": 1,
          # events.k8s.io/v1 requires eventTime, and python3-kubernetes refuses an Event without
          # one (kubernetes-client/python#1616): the core Event sets it, as newer recorders do
          "eventTime": "2026-01-01T00:00:00.000000Z",
          "source": {"component": "imageguard"}, "reportingComponent": "imageguard"}
    code, out, _ = request(state, "POST", "/api/v1/namespaces/default/events", ev)
    harness.check(code == 201, "core Event created", out)
    code, out, _ = request(state, "GET", "/apis/events.k8s.io/v1/namespaces/default/events")
    item = out["items"][0] if code == 200 and out["items"] else {}
    harness.check(item.get("apiVersion") == "events.k8s.io/v1" and item.get("note") == "scanned"
                  and item.get("regarding", {}).get("uid") == "u-1"
                  and item.get("deprecatedCount") == 1
                  and item.get("reportingController") == "imageguard",
                  "the same Event in events.k8s.io/v1's shape", out)
    code, out, _ = request(state, "GET", "/apis/events.k8s.io/v1")
    harness.check(code == 200 and [r["name"] for r in out["resources"]] == ["events"],
                  "discovery", out)


PY_CLIENT = r'''
import json, sys, threading
from kubernetes import client, config, watch
config.load_kube_config(sys.argv[1])
co, core, ev = client.CustomObjectsApi(), client.CoreV1Api(), client.EventsV1Api()
out = {}
out["list"] = [o["metadata"]["name"] for o in co.list_namespaced_custom_object(
    "image.toolkit.fluxcd.io", "v1", "default", "imagerepositories")["items"]]
out["status"] = co.get_namespaced_custom_object_status(
    "image.toolkit.fluxcd.io", "v1", "default", "imagerepositories", "podinfo").get("status")
out["watch"] = [(e["type"], e["object"]["metadata"]["name"]) for e in watch.Watch().stream(
    co.list_namespaced_custom_object, "image.toolkit.fluxcd.io", "v1", "default",
    "imagerepositories", timeout_seconds=1)]
out["core_events"] = [(e.reason, e.involved_object.uid, e.message)
                      for e in core.list_namespaced_event("default").items]
out["events"] = [(e.reason, e.regarding.uid, e.note)
                 for e in ev.list_namespaced_event("default").items]
print(json.dumps(out))
'''


@harness.test
def the_python_client_lists_watches_and_reads_status_and_events(state):
    p = subprocess.run(["/usr/bin/python3", "-c", PY_CLIENT, state["kubeconfig"]],
                       capture_output=True, text=True, timeout=60)
    harness.check(p.returncode == 0, "python3-kubernetes ran", p.stderr[-2000:])
    out = json.loads(p.stdout)
    harness.check(out["list"] == ["podinfo"], "list", out)
    harness.check(out["status"]["conditions"][0]["reason"] == "Succeeded", "status", out)
    harness.check(out["watch"] == [["ADDED", "podinfo"]], "watch=True is a watch", out)
    harness.check(out["core_events"] == [["Succeeded", "u-1", "scanned"]], "core Events", out)
    harness.check(out["events"] == [["Succeeded", "u-1", "scanned"]], "events.k8s.io", out)
    agents = {r["agent"] for r in state["api"].requests}
    harness.check(any(a.startswith("OpenAPI-Generator") for a in agents),
                  "the requests came from the Python client", agents)


if __name__ == "__main__":
    harness.main(setup, teardown)
