#!/usr/bin/python3
"""The Kubernetes API fixture (test/fixtures/kubeapi_etcd.py) against kubectl, a real client,
and against raw watch streams: what `run --kube` relies on must behave as kube-apiserver's."""
import http.client
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402

FLUX = os.path.join(HERE, "..", "..", "data", "kube", "flux")
IMG = "image.toolkit.fluxcd.io"


def kubectl(state, *args, check=True, stdin=None):
    p = subprocess.run(["kubectl", "--kubeconfig", state["kubeconfig"]] + list(args),
                       capture_output=True, text=True, timeout=60, input=stdin)
    if check:
        harness.check(p.returncode == 0, "kubectl %s" % " ".join(args), p.stderr)
    return p


def request(state, method, path, body=None, ctype="application/json"):
    api = state["api"]
    ctx = ssl.create_default_context(cafile=api.ca_file)
    c = http.client.HTTPSConnection("127.0.0.1", api.port, context=ctx, timeout=10)
    headers = {"Authorization": "Bearer " + api.token, "Content-Type": ctype}
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    data = json.loads(r.read() or b"null")
    c.close()
    return r.status, data


class Watch:
    """A raw watch stream read on a thread: events in order."""

    def __init__(self, state, path, **query):
        api = state["api"]
        ctx = ssl.create_default_context(cafile=api.ca_file)
        self.conn = http.client.HTTPSConnection("127.0.0.1", api.port, context=ctx, timeout=30)
        query["watch"] = "true"
        self.conn.request("GET", path + "?" + urllib.parse.urlencode(query),
                          headers={"Authorization": "Bearer " + api.token})
        self.resp = self.conn.getresponse()
        self.events, self.ended = [], False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.resp:
                if line.strip():
                    self.events.append(json.loads(line))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass  # AttributeError: closed under the reader
        self.ended = True

    def wait(self, cond, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond(self.events):
                return self.events
            time.sleep(0.05)
        raise AssertionError("watch: condition not met; events %r" % self.events)

    def close(self):
        if self.conn.sock is not None:
            try:
                self.conn.sock.shutdown(2)
            except OSError:
                pass  # the server closed it first
        self.conn.close()


def types(events):
    return [(e["type"], e["object"].get("metadata", {}).get("name")) for e in events
            if e["type"] != "BOOKMARK"]


def setup():
    api = kubeapi_etcd.start(preferred={IMG: "v1beta2"})
    d = harness.tempdir()
    return {"api": api, "kubeconfig": api.kubeconfig(os.path.join(d, "kubeconfig")), "dir": d}


def teardown(state):
    if state:
        state["api"].stop()


@harness.test
def discovery_names_the_preferred_version(state):
    code, groups = request(state, "GET", "/apis")
    harness.check(code == 200, "GET /apis", groups)
    img = [g for g in groups["groups"] if g["name"] == IMG][0]
    harness.check(img["preferredVersion"]["version"] == "v1beta2", "preferred", img)
    code, res = request(state, "GET", "/apis/%s/v1beta2" % IMG)
    names = [r["name"] for r in res["resources"]]
    harness.check("imageupdateautomations/status" in names and "imagepolicies" in names,
                  "resources", names)
    out = kubectl(state, "api-resources", "--api-group", IMG).stdout
    harness.check("imageupdateautomations" in out and "v1beta2" in out, "api-resources", out)


@harness.test
def kubectl_apply_creates_flux_objects(state):
    for f in sorted(os.listdir(FLUX)):
        if f.endswith(".yaml"):
            kubectl(state, "apply", "-f", os.path.join(FLUX, f))
    obj = json.loads(kubectl(state, "get", "imageupdateautomations", "-n", "default",
                             "podinfo-update", "-o", "json").stdout)
    harness.check(obj["apiVersion"] == IMG + "/v1beta2", "served at the preferred version", obj)
    harness.check(obj["metadata"]["generation"] == 1 and obj["metadata"]["uid"], "meta", obj)
    harness.check(obj["spec"]["git"]["push"]["branch"] == "main", "spec", obj)
    stored, rev = state["api"].etcd.get("/registry/%s/imageupdateautomations/default/"
                                        "podinfo-update" % IMG)
    harness.check(obj["metadata"]["resourceVersion"] == str(rev), "resourceVersion is etcd's "
                  "mod_revision", obj, rev)
    out = kubectl(state, "get", "gitrepositories", "-A", "-o", "name").stdout
    harness.check(out.strip() == "gitrepository.source.toolkit.fluxcd.io/podinfo", "list", out)


@harness.test
def generation_grows_only_with_spec(state):
    get = lambda: json.loads(kubectl(state, "get", "imgpol", "podinfo", "-o", "json").stdout)  # noqa: E731
    g0 = get()["metadata"]["generation"]
    kubectl(state, "annotate", "imgpol", "podinfo", "reconcile.fluxcd.io/requestedAt=t1",
            "--overwrite")
    harness.check(get()["metadata"]["generation"] == g0, "an annotation is not a spec change")
    kubectl(state, "patch", "imgpol", "podinfo", "--type", "merge", "-p",
            '{"spec":{"suspend":true}}')
    o = get()
    harness.check(o["metadata"]["generation"] == g0 + 1 and o["spec"]["suspend"] is True,
                  "spec change bumps generation", o)
    kubectl(state, "patch", "imgpol", "podinfo", "--type", "json", "-p",
            '[{"op":"remove","path":"/spec/suspend"}]')
    o = get()
    harness.check(o["metadata"]["generation"] == g0 + 2 and "suspend" not in o["spec"],
                  "json patch", o)


@harness.test
def status_subresource_is_separate(state):
    kubectl(state, "patch", "imageupdateautomation", "podinfo-update", "--subresource=status",
            "--type", "merge", "-p", '{"status":{"observedGeneration":1,"conditions":[{"type":'
            '"Ready","status":"True","reason":"Succeeded","message":"ok","lastTransitionTime":'
            '"2026-12-01T00:00:00Z"}]}}')
    out = kubectl(state, "get", "imageupdateautomation", "podinfo-update", "-o",
                  "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason} "
                  "{.metadata.generation}").stdout
    harness.check(out == "Succeeded 1", "status written, generation kept", out)
    kubectl(state, "patch", "imageupdateautomation", "podinfo-update", "--type", "merge", "-p",
            '{"status":{"observedGeneration":7}}')
    o = state["api"].get(IMG, "imageupdateautomations", "default", "podinfo-update")
    harness.check(o["status"]["observedGeneration"] == 1, "the main resource ignores status", o)
    code, out = request(state, "PATCH", "/apis/%s/v1/namespaces/default/imageupdateautomations/"
                        "podinfo-update/status" % IMG, {"spec": {"interval": "1m"}, "status": {
                            "observedGeneration": 2}}, "application/merge-patch+json")
    harness.check(code == 200 and out["spec"]["interval"] == "30m" and
                  out["status"]["observedGeneration"] == 2, "status ignores spec", out)


@harness.test
def stale_resource_version_conflicts(state):
    path = "/apis/%s/v1/namespaces/default/imageupdateautomations/podinfo-update/status" % IMG
    code, cur = request(state, "GET", path.rsplit("/", 1)[0])
    cur["status"]["observedGeneration"] = 3
    code, ok = request(state, "PUT", path, cur)
    harness.check(code == 200, "PUT at the current resourceVersion", ok)
    cur["status"]["observedGeneration"] = 4
    code, out = request(state, "PUT", path, cur)
    harness.check(code == 409 and out["reason"] == "Conflict", "stale PUT refused", out)
    code, out = request(state, "PATCH", path, {"metadata": {"resourceVersion": cur["metadata"][
        "resourceVersion"]}, "status": {"observedGeneration": 5}}, "application/merge-patch+json")
    harness.check(code == 409, "a patch with a stale resourceVersion precondition", out)
    del cur["metadata"]["resourceVersion"]
    code, out = request(state, "PUT", path, cur)
    harness.check(code == 422, "an update without resourceVersion", out)


@harness.test
def list_selects_and_pages(state):
    api = state["api"]
    for i in range(5):
        api.create_object({"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "s%d" % i, "namespace": "tenant", "labels": {"n": str(i % 2)}},
            "data": {"k": "dg=="}})
    code, out = request(state, "GET", "/api/v1/namespaces/tenant/secrets?labelSelector=n%3D1")
    harness.check(sorted(o["metadata"]["name"] for o in out["items"]) == ["s1", "s3"], "sel", out)
    names, cont, pages = [], "", 0
    while True:
        code, out = request(state, "GET", "/api/v1/secrets?limit=2" + (
            "&continue=" + urllib.parse.quote(cont) if cont else ""))
        harness.check(code == 200, "page", out)
        names += [o["metadata"]["name"] for o in out["items"]]
        pages += 1
        cont = out["metadata"].get("continue")
        if not cont:
            break
    harness.check(names == ["s0", "s1", "s2", "s3", "s4"] and pages == 3, "pages", names, pages)
    code, out = request(state, "GET", "/api/v1/namespaces/tenant/secrets?fieldSelector="
                        "metadata.name%3Ds2")
    harness.check([o["metadata"]["name"] for o in out["items"]] == ["s2"], "field sel", out)


def list_all(state, path, limit, **query):
    """Every page of a paged list: (names, [each page's metadata])."""
    names, metas, cont = [], [], ""
    while True:
        q = dict(query, limit=str(limit))
        if cont:
            q["continue"] = cont
        code, out = request(state, "GET", path + "?" + urllib.parse.urlencode(q))
        harness.check(code == 200, "page", out)
        names += [o["metadata"]["name"] for o in out["items"]]
        metas.append(out["metadata"])
        cont = out["metadata"].get("continue")
        if not cont or len(metas) > 100:
            return names, metas


@harness.test
def list_pages_are_one_snapshot_read_once(state):
    """Continue pages as kube-apiserver serves them: every page at the first page's revision
    (a write between pages is not seen), remainingItemCount without selectors only, a selector
    filled page by page, a compacted revision 410; and etcd reads about each object once
    (the fixture once re-read the whole prefix for every page)."""
    api = state["api"]
    path = "/api/v1/namespaces/paging/configmaps"
    for i in range(25):
        api.create_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "cm%02d" % i, "namespace": "paging", "labels": {"n": str(i % 3)}}})
    read = [0]
    real = api.etcd.page

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        read[0] += len(out[0])
        return out
    api.etcd.page = counted
    try:
        code, first = request(state, "GET", path + "?limit=4")
        harness.check(first["metadata"].get("remainingItemCount") == 21, "remaining", first)
        api.create_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "cm99", "namespace": "paging"}})
        api.remove("", "configmaps", "paging", "cm10")
        names, metas = list_all(state, path, 4)
        harness.check(names == ["cm%02d" % i for i in range(25) if i != 10] + ["cm99"],
                      "a fresh list sees the writes", names)
        read[0] = 0
        cont = first["metadata"]["continue"]
        rest, pages = [], []
        while cont:
            code, out = request(state, "GET", path + "?limit=4&continue=" +
                                urllib.parse.quote(cont))
            harness.check(code == 200, "continue page", out)
            rest += [o["metadata"]["name"] for o in out["items"]]
            pages.append(out["metadata"])
            cont = out["metadata"].get("continue")
        harness.check(rest == ["cm%02d" % i for i in range(4, 25)],
                      "continue pages: the first page's snapshot", rest)
        harness.check({m["resourceVersion"] for m in pages} ==
                      {first["metadata"]["resourceVersion"]}, "one resourceVersion", pages)
        harness.check(read[0] <= 21 + len(pages), "each object read once", read[0])
        names, metas = list_all(state, path, 3, labelSelector="n=1")
        harness.check(names == ["cm%02d" % i for i in range(25) if i % 3 == 1 and i != 10],
                      "selector pages", names)
        harness.check(len(metas) == 3 and all("remainingItemCount" not in m for m in metas),
                      "no count with a selector", metas)
        code, out = request(state, "GET", path + "?limit=2")
        api.remove("", "configmaps", "paging", "cm99")  # etcd keeps the compacted revision
        api.compact()
        code, gone = request(state, "GET", path + "?limit=2&continue=" +
                             urllib.parse.quote(out["metadata"]["continue"]))
        harness.check(code == 410 and gone["reason"] == "Expired", "compacted: 410", gone)
        code, bad = request(state, "GET", path + "?limit=2&continue=eyJ4Ijox")
        harness.check(code == 400, "a bad token", bad)
    finally:
        api.etcd.page = real


@harness.test
def watch_streams_changes_and_selector_transitions(state):
    api = state["api"]
    code, lst = request(state, "GET", "/api/v1/namespaces/tenant/secrets?labelSelector=n%3D1")
    w = Watch(state, "/api/v1/namespaces/tenant/secrets", labelSelector="n=1",
              resourceVersion=lst["metadata"]["resourceVersion"], allowWatchBookmarks="true")
    try:
        kubectl(state, "label", "secret", "-n", "tenant", "s0", "n=1", "--overwrite")
        kubectl(state, "label", "secret", "-n", "tenant", "s1", "n=0", "--overwrite")
        kubectl(state, "annotate", "secret", "-n", "tenant", "s3", "a=b")
        kubectl(state, "delete", "secret", "-n", "tenant", "s3")
        kubectl(state, "delete", "secret", "-n", "tenant", "s4")
        ev = w.wait(lambda e: len(types(e)) >= 4)
        harness.check(types(ev) == [("ADDED", "s0"), ("DELETED", "s1"), ("MODIFIED", "s3"),
                                    ("DELETED", "s3")], "events", types(ev))
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in ev
               if e["type"] != "BOOKMARK"]
        harness.check(rvs == sorted(rvs) and rvs[0] > int(lst["metadata"]["resourceVersion"]),
                      "resourceVersions grow", rvs)
        ev = w.wait(lambda e: any(x["type"] == "BOOKMARK" for x in e), timeout=5)
        bm = [e for e in ev if e["type"] == "BOOKMARK"][-1]
        harness.check(int(bm["object"]["metadata"]["resourceVersion"]) >= rvs[-1] and
                      bm["object"]["kind"] == "Secret", "bookmark", bm)
    finally:
        w.close()


@harness.test
def watch_from_zero_replays_then_follows(state):
    w = Watch(state, "/apis/%s/v1beta2/imagepolicies" % IMG)
    try:
        w.wait(lambda e: ("ADDED", "podinfo") in types(e))
        kubectl(state, "annotate", "imgpol", "podinfo", "x=1")
        w.wait(lambda e: ("MODIFIED", "podinfo") in types(e))
    finally:
        w.close()


@harness.test
def compacted_revision_is_410(state):
    api = state["api"]
    code, lst = request(state, "GET", "/api/v1/namespaces/tenant/secrets")
    old = lst["metadata"]["resourceVersion"]
    kubectl(state, "annotate", "secret", "-n", "tenant", "s2", "c=1")
    kubectl(state, "annotate", "secret", "-n", "tenant", "s2", "c=2", "--overwrite")
    api.compact()
    w = Watch(state, "/api/v1/namespaces/tenant/secrets", resourceVersion=old)
    try:
        ev = w.wait(lambda e: e and w.ended)
        harness.check(ev[-1]["type"] == "ERROR" and ev[-1]["object"]["code"] == 410 and
                      ev[-1]["object"]["reason"] == "Expired", "410 Expired", ev)
    finally:
        w.close()
    api.gone_next_watches = 1
    w = Watch(state, "/api/v1/namespaces/tenant/secrets", resourceVersion=str(api.etcd.revision()))
    try:
        ev = w.wait(lambda e: e and w.ended)
        harness.check(ev[-1]["object"]["code"] == 410, "injected 410", ev)
    finally:
        w.close()


@harness.test
def dropped_watch_ends_the_stream(state):
    api = state["api"]
    w = Watch(state, "/api/v1/namespaces/tenant/secrets", resourceVersion=str(api.etcd.revision()))
    try:
        deadline = time.time() + 5
        while api.watch_count() == 0 and time.time() < deadline:
            time.sleep(0.05)
        harness.check(api.drop_watches() >= 1, "a watch was open")
        w.wait(lambda e: w.ended)
    finally:
        w.close()


@harness.test
def wrong_token_is_401(state):
    api = state["api"]
    p = subprocess.run(["kubectl", "--kubeconfig", api.kubeconfig(
        os.path.join(state["dir"], "bad"), token="wrong"), "get", "secrets", "-A"],
        capture_output=True, text=True, timeout=60)
    harness.check(p.returncode != 0 and "Unauthorized" in p.stderr, "401", p.stderr)


if __name__ == "__main__":
    harness.main(setup, teardown)
