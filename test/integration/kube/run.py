#!/usr/bin/python3
"""`imageguard run --kube` end to end: Flux's objects created with kubectl in the Kubernetes API
fixture (kubeapi_etcd.py, a real etcd behind it), a real docker-registry and a bare Git remote;
the status imageguard writes read back with kubectl, field by field."""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
STOP_BOUND = 5  # seconds from SIGTERM to exit: a hang bound (a watch or read left uncut is 10 s)
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402
from kuberun import (IMG, Background, Run, events, kubectl, ready, start_receiver, status,  # noqa: E402
                     teardown, wait)


def setup():
    env = Env()
    try:
        api = kubeapi_etcd.start()
    except BaseException:
        env.close()
        raise
    st = {"env": env, "api": api, "receiver": start_receiver()}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    kubectl(st, "apply", "-f", "-", stdin=env.repository("app", "team/app") +
            env.policy("app", "app", semver=">=1.0.0") + env.automation(interval="10m"))
    st["run"] = Run(st)
    return st


@harness.test
def first_pass_commits_and_writes_flux_status(st):
    env = st["env"]
    wait(lambda: "v1.1.0" in env.remote_file("apps/app.yaml"), "the forward commit", 30,
         st["run"].text)
    head = env.remote_head()
    s = wait(lambda: status(st).get("lastPushCommit") == head and status(st), "status", 10,
             lambda: status(st))
    obj = json.loads(kubectl(st, "get", "imageupdateautomation", "auto", "-o", "json"))
    harness.check(s["observedGeneration"] == obj["metadata"]["generation"], "generation", s)
    c = ready(st)
    harness.check(c["status"] == "True" and c["reason"] == "Succeeded" and
                  c["message"].startswith("1 marker: 1 update/forward"), "Ready", c)
    harness.check(s["observedPolicies"] == {"app": {"name": env.image("team/app"),
                                                    "tag": "v1.1.0"}}, "observedPolicies", s)
    harness.check(s["lastPushTime"] and s["lastAutomationRunTime"], "times", s)
    # what `flux get images update` prints: READY, MESSAGE, LAST RUN
    out = kubectl(st, "get", "imageupdateautomation", "auto", "-o",
                  "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}|"
                  "{.status.lastAutomationRunTime}|{.status.lastPushCommit}")
    harness.check(out.split("|")[0] == "True" and out.split("|")[2] == head, "jsonpath", out)


@harness.test
def a_commit_is_a_normal_event(st):
    head = st["env"].remote_head()
    ev = wait(lambda: events(st, "UpdateCommitted"), "UpdateCommitted event", 10,
              lambda: st["api"].objects("", "events", "default"))
    e = ev[0]
    harness.check(e["type"] == "Normal" and e["count"] == 1 and head[:12] in e["message"] and
                  e["involvedObject"]["name"] == "auto" and e["source"]["component"] ==
                  "imageguard", "event", e)
    harness.check(events(st, "UpdateCommitted", "ImagePolicy"), "on the policy too")
    got = wait(lambda: [b for _, b in st["receiver"].got if b["reason"] == "UpdateCommitted"],
               "posted", 10, lambda: st["receiver"].got)
    b = got[0]
    harness.check(b["severity"] == "info" and b["reportingController"] == "imageguard" and
                  b["involvedObject"]["kind"] in ("ImageUpdateAutomation", "ImagePolicy") and
                  b["metadata"]["image.toolkit.fluxcd.io/revision"] == "main@sha1:" + head and
                  b["timestamp"] and b["message"], "payload", b)
    harness.check(all(t == "application/json" for t, _ in st["receiver"].got), "content type")


def described_events(st, kind, name):
    """The Events section of `kubectl describe KIND NAME`: kubectl lists the Events whose
    involvedObject names the object's uid (a field selector), so none without it."""
    out = kubectl(st, "describe", kind, name)
    return out.partition("\nEvents:")[2]


@harness.test
def kubectl_describe_lists_the_events(st):
    for kind, name in (("imageupdateautomation", "auto"), ("imagepolicy", "app")):
        obj = json.loads(kubectl(st, "get", kind, name, "-o", "json"))
        ev = [e for e in events(st, "UpdateCommitted", obj["kind"])
              if e["involvedObject"]["name"] == name]
        harness.check(ev and ev[0]["involvedObject"].get("uid") == obj["metadata"]["uid"] and
                      ev[0]["involvedObject"].get("resourceVersion"), "uid and resourceVersion",
                      ev, obj["metadata"])
        section = described_events(st, kind, name)
        harness.check("UpdateCommitted" in section and "<none>" not in section and
                      "imageguard" in section, "kubectl describe %s %s" % (kind, name), section)


EVENTS_V1 = r'''
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
print(json.dumps([[e.reason, e.regarding.kind, e.regarding.uid, e.reporting_controller,
                   e.action, e.event_time.isoformat() if e.event_time else None]
                  for e in client.EventsV1Api().list_namespaced_event("default").items]))
'''


@harness.test
def the_python_client_lists_the_events_as_events_k8s_io(st):
    """python3-kubernetes' events.k8s.io/v1 model requires eventTime: without it the whole list
    fails to deserialize, so imageguard's Events carry one (a MicroTime) and an action."""
    raw = [e for e in events(st, "UpdateCommitted") if e["involvedObject"]["name"] == "auto"]
    harness.check(raw and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z",
                                       raw[0].get("eventTime") or "") and
                  raw[0].get("action") == "Reconcile", "eventTime is a MicroTime", raw)
    p = subprocess.run(["/usr/bin/python3", "-c", EVENTS_V1, st["kubeconfig"]],
                       capture_output=True, text=True, timeout=60)
    harness.check(p.returncode == 0, "EventsV1Api.list_namespaced_event", p.stderr[-2000:])
    uid = json.loads(kubectl(st, "get", "imageupdateautomation", "auto", "-o",
                             "json"))["metadata"]["uid"]
    got = json.loads(p.stdout) if p.returncode == 0 else []
    harness.check([e for e in got if e[:5] == ["UpdateCommitted", "ImageUpdateAutomation", uid,
                                               "imageguard", "Reconcile"] and e[5]],
                  "imageguard's UpdateCommitted, read through events.k8s.io/v1", got)


@harness.test
def a_policy_change_takes_effect_without_restart(st):
    # a narrowed range puts the best candidate behind what is committed: blocked
    kubectl(st, "patch", "imagepolicy", "app", "--type", "merge", "-p",
            '{"spec":{"policy":{"semver":{"range":"<1.1.0"}}}}')
    c = wait(lambda: (ready(st) or {}).get("reason") == "DowngradeBlocked" and ready(st),
             "DowngradeBlocked", 20, lambda: status(st), st["run"].text)
    harness.check(c["status"] == "True" and "hold/downgrade-blocked" in c["message"], "c", c)
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=blocked-again")
    e = wait(lambda: [e for e in events(st, "DowngradeBlocked") if e["count"] >= 2],
             "a repeated DowngradeBlocked counted, not duplicated", 15,
             lambda: events(st, "DowngradeBlocked"))[0]
    harness.check(e["type"] == "Warning" and len(events(st, "DowngradeBlocked")) == 1 and
                  e["lastTimestamp"] >= e["firstTimestamp"], "one Event", e)
    b = wait(lambda: [b for _, b in st["receiver"].got if b["reason"] == "DowngradeBlocked"],
             "posted to the notification-controller", 10)[0]
    harness.check(b["severity"] == "error" and "v1.1.0 -> v1.0.0" in b["message"], "b", b)
    harness.check("v1.1.0" in st["env"].remote_file("apps/app.yaml"), "nothing written")
    kubectl(st, "patch", "imagepolicy", "app", "--type", "merge", "-p",
            '{"spec":{"policy":{"semver":{"range":">=1.0.0"}}}}')
    wait(lambda: (ready(st) or {}).get("reason") == "Succeeded", "back to Succeeded", 20,
         lambda: status(st))


def log_time(e):
    """A JSON log line's "time" (RFC 3339 UTC, milliseconds) as Unix seconds."""
    import calendar
    base, _, ms = e["time"].rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S")) + int(ms or 0) / 1000.0


@harness.test
def requested_reconcile_runs_within_a_second(st):
    before = status(st).get("lastAutomationRunTime")
    t0 = time.time()
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=2026-12-01T07:00:00.1Z")
    wait(lambda: status(st).get("lastHandledReconcileAt") == "2026-12-01T07:00:00.1Z",
         "lastHandledReconcileAt", 10, lambda: status(st))
    # the annotation's arrival (the fixture's request log) against the pass's start (the loop
    # logs config.reload, then runs the pass at once): both on this machine's clock. A bound on
    # a hang, not a benchmark: the loop looks every 50 ms, and 0.5 s of slack over the second
    # is for a loaded machine
    patched = [q["time"] for q in st["api"].requests if q["method"] == "PATCH" and
               q["path"].endswith("/imageupdateautomations/auto") and q["time"] >= t0 - 1]
    harness.check(patched, "the annotation's PATCH is in the request log")
    starts = [log_time(e) for e in st["run"].events("config.reload")
              if log_time(e) >= patched[-1] - 0.001]
    harness.check(starts and starts[0] - patched[-1] < 1.5, "the pass began %.3fs after the "
                  "annotation" % ((starts or [0])[0] - patched[-1]), starts)
    harness.check(status(st).get("lastAutomationRunTime") is not None and
                  status(st)["observedGeneration"] >= 1, "run time", before, status(st))


@harness.test
def lists_and_watches_use_only_the_preferred_version(st):
    """Each kind is listed and watched at the version discovery prefers (v1 here, v1beta2 also
    served), and, against a fixture that prefers v1beta2 for the image group, at v1beta2: never
    at another served version."""
    from kuberun import IMG as image_group
    plurals = {image_group: ("imagerepositories", "imagepolicies", "imageupdateautomations"),
               "source.toolkit.fluxcd.io": ("gitrepositories",)}

    def collection_gets(api):
        """(group, version, plural, watch?) of imageguard's list and watch requests."""
        out = []
        for q in list(api.requests):
            parts = q["path"].strip("/").split("/")
            if (q["method"] != "GET" or not q["agent"].startswith("imageguard/") or
                    len(parts) < 4 or parts[0] != "apis" or parts[1] not in plurals or
                    parts[-1] not in plurals[parts[1]]):
                continue
            out.append((parts[1], parts[2], parts[-1], q["query"].get("watch") == "true"))
        return out

    def check(api, what):
        got = collection_gets(api)
        for group, names in plurals.items():
            pref = api.preferred_version(group)
            for plural in names:
                mine = [g for g in got if g[0] == group and g[2] == plural]
                harness.check([g for g in mine if not g[3]] and [g for g in mine if g[3]],
                              "%s: %s listed and watched" % (what, plural), mine)
                harness.check({g[1] for g in mine} == {pref}, "%s: %s only at %s" % (
                    what, plural, pref), sorted({g[1] for g in mine}))

    check(st["api"], "v1 preferred")
    api = kubeapi_etcd.start(preferred={image_group: "v1beta2"})
    r = None
    try:
        k = api.kubeconfig(os.path.join(st["env"].dir, "kc-v1beta2"))
        r = Background(os.path.join(st["env"].dir, "run-v1beta2.log"),
                       [harness.IMAGEGUARD, "run", "--kube", "--kubeconfig", k, "--state-dir",
                        os.path.join(st["env"].dir, "state-v1beta2"), "--log-format", "json"])
        wait(lambda: len({g[2] for g in collection_gets(api) if g[3]}) == 4,
             "the four watches", 20, r.text)
        check(api, "v1beta2 preferred for the image group")
    finally:
        if r:
            r.stop()
        api.stop()


@harness.test
def a_suspended_automation_writes_nothing(st):
    env, run = st["env"], st["run"]

    def suspended_after(n):
        return [d for d in run.decisions()[n:] if d["reason"] == "suspended"]

    n = len(run.decisions())
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"suspend":true}}')
    # a pass has seen the suspension (not a sleep: the decision says so)
    wait(lambda: suspended_after(n), "a suspended decision", 20, run.text)
    head = env.remote_head()
    env.push("team/app", ["v1.2.0"])
    n = len(run.decisions())
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=suspended-1")
    wait(lambda: suspended_after(n), "a pass after the request, still suspended", 20, run.text)
    harness.check(env.remote_head() == head, "no commit while suspended")
    harness.check(status(st).get("lastHandledReconcileAt") != "suspended-1",
                  "a suspended object's status stays", status(st))
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"suspend":false}}')
    wait(lambda: "v1.2.0" in env.remote_file("apps/app.yaml"), "resumed: commit", 20,
         st["run"].text)


@harness.test
def dropped_and_expired_watches_recover(st):
    api = st["api"]
    api.gone_next_watches = 4
    harness.check(api.drop_watches() >= 1, "watches were open")
    # the four 410s answered and the watches open again: then a second cut
    n = api.watch_count()
    wait(lambda: api.gone_next_watches == 0 and api.watch_count() >= 1, "watches back", 20,
         st["run"].text)
    harness.check(api.drop_watches() >= 1, "reopened watches were cut", n)
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=after-drop")
    wait(lambda: status(st).get("lastHandledReconcileAt") == "after-drop",
         "a change after the drops", 20, lambda: status(st), st["run"].text)
    harness.check(any("listing again" in e.get("msg", "")
                      for e in st["run"].events("kube.watch")), "relisted on 410",
                  st["run"].text()[-3000:])


@harness.test
def a_missing_secret_is_a_clear_error(st):
    kubectl(st, "patch", "imagerepository", "app", "--type", "merge", "-p",
            '{"spec":{"secretRef":{"name":"regcred"}}}')
    c = wait(lambda: (ready(st) or {}).get("status") == "False" and ready(st),
             "Ready False", 20, lambda: status(st), st["run"].text)
    harness.check("secret 'default/regcred' not found in the Kubernetes API" in c["message"]
                  and "/dev/shm" not in c["message"] and "\n" not in c["message"] and
                  c["reason"] == "DependencyNotReady",
                  "names the Secret as namespace/name in the API, not its folder; the "
                  "policy's reason as image-reflector-controller gives it", c)
    kubectl(st, "create", "secret", "generic", "regcred", "--from-literal=username=u",
            "--from-literal=password=p")
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=with-secret")
    wait(lambda: (ready(st) or {}).get("status") == "True", "with the Secret", 20,
         lambda: status(st), st["run"].text)
    kubectl(st, "patch", "imagerepository", "app", "--type", "json", "-p",
            '[{"op":"remove","path":"/spec/secretRef"}]')


def run_metrics(run):
    """GET /metrics of a run (its port from the httpd.listen line)."""
    port = json.loads([l for l in run.text().splitlines() if "httpd.listen" in l][-1])[
        "msg"].rsplit(" ", 1)[1]
    return urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5).read().decode()


@harness.test
def a_missing_git_secret_is_ready_false_with_flux_reason(st):
    """The GitRepository names a Secret that does not exist: the automation is left out of
    the pass, and still shows why where a Flux user looks: Ready=False with
    image-automation-controller's reason (SourceManagerFailed: its source manager cannot be
    built), a Warning Event that `kubectl describe` lists, and the decision metric."""
    kubectl(st, "patch", "gitrepository", "gitops", "--type", "merge", "-p",
            '{"spec":{"secretRef":{"name":"gitcred"}}}')
    c = wait(lambda: (ready(st) or {}).get("reason") == "SourceManagerFailed" and ready(st),
             "Ready False SourceManagerFailed", 20, lambda: status(st), st["run"].text)
    harness.check(c["status"] == "False" and "secret 'default/gitcred' not found" in
                  c["message"] and "ImageUpdateAutomation 'default/auto'" in c["message"],
                  "the condition names the automation and the Secret", c)
    obj = json.loads(kubectl(st, "get", "imageupdateautomation", "auto", "-o", "json"))
    harness.check(obj["status"]["observedGeneration"] == obj["metadata"]["generation"],
                  "observedGeneration", obj["status"])
    # what `flux get images update` prints in READY and MESSAGE
    out = kubectl(st, "get", "imageupdateautomation", "auto", "-o",
                  "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}|"
                  "{.status.conditions[?(@.type==\"Ready\")].reason}")
    harness.check(out == "False|SourceManagerFailed", "jsonpath", out)
    e = wait(lambda: events(st, "SourceManagerFailed"), "the Warning Event", 10,
             lambda: st["api"].objects("", "events", "default"))[0]
    harness.check(e["type"] == "Warning" and "gitcred" in e["message"] and
                  e["involvedObject"].get("uid") == obj["metadata"]["uid"], "Event", e)
    section = described_events(st, "imageupdateautomation", "auto")
    harness.check("SourceManagerFailed" in section and "Warning" in section,
                  "kubectl describe lists it", section)
    metrics = wait(lambda: [m for m in run_metrics(st["run"]).splitlines() if
                            m.startswith("imageguard_decisions_total{") and
                            'decision="error"' in m and 'reason="config"' in m], "the metric",
                   10, st["run"].text)
    harness.check(metrics, "imageguard_decisions_total counts the error", metrics)
    kubectl(st, "patch", "gitrepository", "gitops", "--type", "json", "-p",
            '[{"op":"remove","path":"/spec/secretRef"}]')
    wait(lambda: (ready(st) or {}).get("status") == "True", "Ready again without it", 20,
         lambda: status(st), st["run"].text)


@harness.test
def a_deleted_secret_is_an_error_at_the_next_pass(st):
    """The Secret goes while run --kube runs with a short interval, and no Flux object is
    touched: the next passes re-read it, each reports the repository's policy as an error
    naming it, never a listing (anonymous, or with the copy read before), and Ready goes
    False; the Secret created again is used at the pass after."""
    env, run, api = st["env"], st["run"], st["api"]
    # passes every second (an invalid repository's interval no longer counts: the
    # automation's does)
    kubectl(st, "patch", "imagerepository", "app", "--type", "merge", "-p",
            '{"spec":{"interval":"1s","secretRef":{"name":"regcred"}}}')
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"interval":"1s"}}')
    wait(lambda: (ready(st) or {}).get("reason") == "Succeeded" and
         [d for d in run.decisions() if d["policy"] == "default/app" and
          d["tag_count"] is not None][-1:], "listed with the Secret", 20,
         lambda: status(st), run.text)
    n, requests = len(run.decisions()), len(api.requests)
    kubectl(st, "delete", "secret", "regcred")

    def app_after(k):
        return [d for d in run.decisions()[k:] if d["policy"] == "default/app"]

    # (a pass already running when the Secret went may still finish with it: the next one
    # must not)
    wait(lambda: [d for d in app_after(n) if d["decision"] == "error"], "an error after the "
         "deletion, no Flux object touched", 20, run.text)
    env.push("team/app", ["v1.3.0"])
    n = len(run.decisions())
    got = wait(lambda: len(app_after(n)) >= 3 and app_after(n), "three passes more", 30,
               lambda: app_after(n), lambda: run.text()[-3000:])
    harness.check(all(d["decision"] == "error" and d["reason"] == "config" and
                      d["tag_count"] is None and "secret 'default/regcred' not found in the "
                      "Kubernetes API" in (d.get("message") or "") and
                      "/dev/shm" not in d["message"] for d in got),
                  "each pass: an error naming the Secret namespace/name, no folder, no listing",
                  got)
    harness.check("v1.3.0" not in env.remote_file("apps/app.yaml"), "nothing written")
    lines = [e["msg"] for e in run.events("kube.secret") if "default/regcred" in e["msg"]]
    harness.check(lines and "404" in lines[-1] and "\n" not in lines[-1],
                  "one line naming namespace/secret", lines)
    c = wait(lambda: (ready(st) or {}).get("status") == "False" and ready(st), "Ready False",
             10, lambda: status(st))
    harness.check("secret 'default/regcred' not found in the Kubernetes API" in c["message"]
                  and "/dev/shm" not in c["message"], "the condition names the Secret", c)
    harness.check([q for q in api.requests[requests:] if q["agent"].startswith("imageguard/")
                   and q["path"] == "/api/v1/namespaces/default/secrets/regcred"],
                  "read by name in the object's namespace at the passes")
    kubectl(st, "create", "secret", "generic", "regcred", "--from-literal=username=u",
            "--from-literal=password=p")
    wait(lambda: "v1.3.0" in env.remote_file("apps/app.yaml"), "the Secret back: written",
         30, run.text)
    wait(lambda: (ready(st) or {}).get("status") == "True", "Ready True", 20,
         lambda: status(st))
    kubectl(st, "patch", "imagerepository", "app", "--type", "json", "-p",
            '[{"op":"remove","path":"/spec/secretRef"},'
            '{"op":"replace","path":"/spec/interval","value":"1m"}]')
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"interval":"10m"}}')


@harness.test
def sigterm_ends_the_watches(st):
    # this process's folder (from its log: other runs of this test may share /dev/shm)
    st["secrets"] = st["run"].secrets_dir()
    harness.check(st["secrets"] and st["secrets"].startswith("/dev/shm/imageguard-secrets.") and
                  os.path.isdir(os.path.join(st["secrets"], "default.regcred")),
                  "the fetched Secret is in a memory folder", st["secrets"])
    t0 = time.time()
    rc = st["run"].stop()
    took = time.time() - t0
    harness.check(rc == 0 and took < STOP_BOUND, "exit 0 within %ds, took %.1fs" % (
        STOP_BOUND, took), st["run"].text()[-2000:])
    harness.check(not os.path.exists(st["secrets"]), "secrets folder removed", st["secrets"])
    st["run"] = Run(st)  # for teardown; and a second start works
    wait(lambda: st["run"].events("reconcile.pass"), "second start", 20, st["run"].text)


@harness.test
def secret_reads_end_by_the_pass_deadline_and_at_sigterm(st):
    """The API server stops answering GETs of Secrets under a run with --pass-timeout 2s and
    passes every second: the pass's re-read gives up after half the pass's time (not after its
    own 5 s timeout), in one warning naming the Secret, and the pass goes on with what was read
    last, in the time left; SIGTERM while a start's read waits exits 0 at once."""
    api = st["api"]
    kubectl(st, "patch", "imagerepository", "app", "--type", "merge", "-p",
            '{"spec":{"interval":"1s","secretRef":{"name":"regcred"}}}')
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"interval":"1s"}}')
    st["run"].stop()
    run = st["run"] = Run(st, "--pass-timeout", "2s")
    try:
        wait(lambda: [d for d in run.decisions() if d["policy"] == "default/app" and
                      d["tag_count"] is not None], "a pass with the Secret", 20, run.text)
        api.stall_prefix = "/api/v1/namespaces/default/secrets/"
        t0 = time.time()
        warned = wait(lambda: [e for e in run.events("kube.secrets")
                               if "not read again" in e["msg"]], "the re-read given up", 20,
                      run.text)
        # a hang bound: the next pass within about a second, then half its 2 s
        harness.check(log_time(warned[0]) - t0 < 4 and "secret 'default/regcred'" in
                      warned[0]["msg"], "given up by the deadline, naming the Secret, "
                      "%.1fs after the stall" % (log_time(warned[0]) - t0), warned)
        n = len(run.decisions())
        got = wait(lambda: [d for d in run.decisions()[n:] if d["policy"] == "default/app"],
                   "the pass goes on", 20, run.text)
        harness.check(got[0]["decision"] != "error" and got[0]["tag_count"] is not None,
                      "listed with what was read last", got)
        # a start while the reads stall: the load's read waits up to 10 s a try, three tries,
        # which SIGTERM cuts
        run.stop()

        def reads():
            return [q for q in api.requests if q["path"].startswith(api.stall_prefix) and
                    q["agent"].startswith("imageguard/")]
        k = len(reads())
        run = st["run"] = Run(st)
        wait(lambda: len(reads()) > k, "a read waiting", 20, run.text)
        t1 = time.time()
        rc = run.stop()
        took = time.time() - t1
        # a hang bound, not a benchmark: an uncut read waits 10 s; 5 s leaves room for the
        # teardown of an instrumented build on a loaded machine
        harness.check(rc == 0 and took < STOP_BOUND, "SIGTERM during a read: exit 0 within "
                      "%ds, took %.1fs" % (STOP_BOUND, took), run.text()[-2000:])
    finally:
        api.stall_prefix = None
        st["run"].stop()
        st["run"] = Run(st)
    kubectl(st, "patch", "imagerepository", "app", "--type", "json", "-p",
            '[{"op":"remove","path":"/spec/secretRef"},'
            '{"op":"replace","path":"/spec/interval","value":"1m"}]')
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"interval":"10m"}}')
    wait(lambda: st["run"].events("reconcile.pass"), "restarted", 20, st["run"].text)


@harness.test
def flux_controller_running_beside_is_loud(st):
    api = st["api"]
    api.create_object({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "image-automation-controller", "namespace": "flux-system"}, "spec": {}})
    api.patch("apps", "deployments", "flux-system", "image-automation-controller",
              {"status": {"readyReplicas": 1}}, status_sub=True)
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=flux-running")
    c = wait(lambda: "image-automation-controller is running" in
             (ready(st) or {}).get("message", "") and ready(st), "Ready message", 20,
             lambda: status(st))
    harness.check(c["status"] == "True", "still a success", c)
    e = wait(lambda: events(st, "FluxControllerRunning"), "Event", 10)[0]
    harness.check(e["type"] == "Warning", "Warning", e)
    port = json.loads([l for l in st["run"].text().splitlines() if "httpd.listen" in l][-1])[
        "msg"].rsplit(" ", 1)[1]
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5).read().decode()
    harness.check("imageguard_flux_image_automation_ready_replicas 1" in body, "metric",
                  [l for l in body.splitlines() if "flux" in l])
    api.remove("apps", "deployments", "flux-system", "image-automation-controller")
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=flux-gone")
    wait(lambda: status(st).get("lastHandledReconcileAt") == "flux-gone" and
         "image-automation-controller" not in ready(st)["message"], "quiet again", 20,
         lambda: status(st))


# Rules this test cannot use: verify's, the Lease's and the ServiceAccount's, each exercised by
# the test named beside it.
RBAC_ELSEWHERE = {
    ("", "pods", "list"): "run_kube_verify.py", ("", "pods", "get"): "verify.py (a bare Pod)",
    ("apps", "statefulsets", "get"): "verify.py", ("apps", "daemonsets", "get"): "verify.py",
    ("apps", "replicasets", "get"): "verify.py", ("batch", "jobs", "get"): "verify.py",
    ("coordination.k8s.io", "leases", "get"): "run_leader.py",
    ("coordination.k8s.io", "leases", "create"): "run_leader.py",
    ("coordination.k8s.io", "leases", "update"): "run_leader.py",
    ("coordination.k8s.io", "leases", "list"): "run_leader.py (a standby's watch)",
    ("coordination.k8s.io", "leases", "watch"): "run_leader.py (a standby's watch)",
    ("", "serviceaccounts", "get"): "kube_serviceaccount.py",
    ("", "serviceaccounts/token", "create"): "kube_workload_identity.py",
}


def granted_rules():
    """(group, resource, verb) of every rule manifests/rbac.yaml grants imageguard."""
    import yaml
    with open(os.path.join(HERE, "..", "..", "..", "manifests", "rbac.yaml")) as f:
        roles = [d for d in yaml.safe_load_all(f) if d and d["kind"] in ("ClusterRole", "Role")]
    return {(g, r, v) for role in roles for rule in role["rules"] for g in rule["apiGroups"]
            for r in rule["resources"] for v in rule["verbs"]}


@harness.test
def rbac_is_exactly_what_it_uses(st):
    granted = granted_rules()
    used = set()
    for q in st["api"].requests:
        if q["agent"].startswith("imageguard/"):
            k = kubeapi_etcd.rbac_request(q["method"], q["path"], q["query"])
            if k:
                used.add(k)
    harness.check(used <= granted, "requests the roles do not grant", used - granted)
    harness.check(granted - used <= set(RBAC_ELSEWHERE), "rules never used",
                  granted - used - set(RBAC_ELSEWHERE))
    harness.check(set(RBAC_ELSEWHERE) <= granted, "rules listed as used elsewhere are granted",
                  set(RBAC_ELSEWHERE) - granted)


@harness.test
def every_status_written_is_valid_under_fluxs_crds(st):
    """The fixture checks each write of the v1 objects against Flux's CRD schema (422 when
    invalid): imageguard's statuses passed, and none had a field the schema does not know."""
    wait(lambda: any(r["method"] in ("PUT", "PATCH") and r["path"].endswith("/status")
                     for r in st["api"].requests), "a status write", 30, st["run"].text)
    statuses = [r for r in st["api"].requests if r["path"].endswith("/status")
                and "/apis/image.toolkit.fluxcd.io/v1/" in r["path"]]
    harness.check(statuses, "statuses written at v1, under the schema", st["api"].requests[-5:])
    harness.check(st["api"].pruned == [], "no unknown field pruned", st["api"].pruned)


@harness.test
def the_base_runs_kube_mode(st):
    import yaml
    p = subprocess.run(["kubectl", "kustomize", os.path.join(HERE, "..", "..", "..", "manifests")],
                       capture_output=True, text=True, timeout=60)
    harness.check(p.returncode == 0, "kustomize manifests/", p.stderr)
    objs = [d for d in yaml.safe_load_all(p.stdout) if d]
    dep = [o for o in objs if o["kind"] == "Deployment"][0]["spec"]["template"]["spec"]
    c = dep["containers"][0]
    harness.check(c["args"][:2] == ["run", "--kube"] and "--config" not in c["args"] and
                  "--secrets-dir" not in c["args"], "args", c["args"])
    # Flux's objects and Secrets come from the API: the base mounts no Secret at all (the
    # webhook's token comes only with the component manifests/webhook)
    harness.check(not any(v.get("secret") or v.get("projected") or v.get("configMap")
                          for v in dep["volumes"]), "no Secret or ConfigMap mounts",
                  dep["volumes"])
    harness.check(not [o for o in objs if o["kind"] == "ConfigMap"], "no ConfigMap")
    harness.check(c["securityContext"]["readOnlyRootFilesystem"] is True, "read-only root")
    b = [o for o in objs if o["kind"] == "ClusterRoleBinding" and
         o["roleRef"]["name"] == "imageguard-kube"]
    harness.check(b and b[0]["subjects"][0]["name"] == dep["serviceAccountName"], "bound", b)


@harness.test
def missing_crds_are_one_clear_line(st):
    api = kubeapi_etcd.start(absent=[IMG])
    try:
        k = api.kubeconfig(os.path.join(st["env"].dir, "kc-nocrd"))
        r = harness.run("run", "--kube", "--kubeconfig", k, "--state-dir", st["env"].state,
                        timeout=30)
        harness.check(r.rc == 2 and r.err.strip().count("\n") == 0 and
                      "API group 'image.toolkit.fluxcd.io' is not served" in r.err, "err", r)
    finally:
        api.stop()


@harness.test
def kube_flags_are_checked(st):
    r = harness.run("run", "--kube", "--config", "x")
    harness.check(r.rc == 2 and "'--config': not used with --kube" in r.err, "config", r)
    r = harness.run("run", "--kube", "--secrets-dir", "x")
    harness.check(r.rc == 2 and "'--secrets-dir': not used with --kube" in r.err, "secrets", r)
    r = harness.run("run", "--config", "x", "--watch-namespace", "a")
    harness.check(r.rc == 2 and "only used with --kube" in r.err, "ns", r)


@harness.test
def first_lists_end_by_kube_sync_timeout(st):
    """--kube-sync-timeout: an API server that never answers the list of ImageRepositories
    makes run exit 1 after that long (not the default 30 s), with one line naming the kind and
    the flag; the same stall lifted within the timeout is retried and run starts."""
    api = kubeapi_etcd.start()
    try:
        k = api.kubeconfig(os.path.join(st["env"].dir, "kc-sync"))
        api.stall_prefix = "/apis/%s/%s/imagerepositories" % (IMG, api.preferred_version(IMG))
        t0 = time.monotonic()
        r = harness.run("run", "--kube", "--kubeconfig", k, "--state-dir", st["env"].state,
                        "--kube-sync-timeout", "2s", timeout=60)
        took = time.monotonic() - t0
        line = [x for x in r.err.splitlines() if x.startswith("imageguard: run:")]
        harness.check(r.rc == 1 and len(line) == 1 and "no first list of imagerepositories "
                      "within 2.000s (--kube-sync-timeout)" in line[0], "exit 1, one line", r)
        harness.check(2 <= took < 20, "ended by the flag's 2 s, not the default 30 s", took)
        r = Background(os.path.join(st["env"].dir, "run-sync.log"),
                       [harness.IMAGEGUARD, "run", "--kube", "--kubeconfig", k, "--state-dir",
                        st["env"].state, "--log-format", "json", "--kube-sync-timeout", "40s"])
        wait(lambda: any(q["path"].startswith(api.stall_prefix) for q in api.requests[-20:]),
             "the list asked", 20, r.text)
        time.sleep(1)
        api.stall_prefix = None
        wait(lambda: [e for e in r.events("kube.watch") if "watching" in json.dumps(e)],
             "started after the stall", 40, r.text)
        harness.check(r.stop() == 0, "a clean stop", r.text())
    finally:
        api.stall_prefix = None
        api.stop()


@harness.test
def sigterm_while_starting_exits_zero(st):
    """SIGTERM before the first lists arrive (the API answers 503) is a clean stop, exit 0,
    not the error the failed start would otherwise be."""
    api = kubeapi_etcd.start()
    try:
        api.fail_with = 503
        k = api.kubeconfig(os.path.join(st["env"].dir, "kc-starting"))
        r = Background(os.path.join(st["env"].dir, "run-starting.log"),
                       [harness.IMAGEGUARD, "run", "--kube", "--kubeconfig", k, "--state-dir",
                        st["env"].state, "--log-format", "json"])
        wait(lambda: api.requests, "the first request refused", 20, r.text)
        rc = r.stop()
        harness.check(rc == 0 and r.events("run.stop"), "exit 0, one stop line", rc, r.text())
    finally:
        api.stop()


if __name__ == "__main__":
    harness.main(setup, teardown)
