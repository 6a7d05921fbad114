#!/usr/bin/python3
"""`run --kube` with an ImageRepository's spec.serviceAccountName, as Flux reads it: the
ServiceAccount's imagePullSecrets (a kubernetes.io/dockerconfigjson Secret in the object's
namespace, served by kubeapi_etcd.py over a real etcd) unlock a docker-registry with htpasswd
auth, which refuses the same repository without them. A missing ServiceAccount fails that
repository alone, in one log line naming it, while the other automates; no password is
logged. check-config accepts serviceAccountName with --kube and refuses it in file mode."""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
import registry  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402
from run import Run, kubectl, ready, wait, start_receiver  # noqa: E402

del harness._tests[:]  # importing run_kube for its helpers registered its tests: not ours

USER, PASSWORD = "puller", "pull-s3cret-7f3a"
# a second registry user, for spec.secretRef's Secret, whose password is rotated
ROTATOR, OLD_PASSWORD, NEW_PASSWORD = "rotator", "rot-old-2b9e", "rot-new-91c4"


def pull_secret(host, name="regcred", legacy=False, user=USER, password=PASSWORD):
    """A kubernetes.io/dockerconfigjson Secret, or (legacy) a kubernetes.io/dockercfg one,
    whose .dockercfg is the "auths" object alone."""
    auths = {host: {"auth": kubeapi_etcd.b64("%s:%s" % (user, password))}}
    key, conf = ((".dockercfg", json.dumps(auths)) if legacy else
                 (".dockerconfigjson", json.dumps({"auths": auths})))
    return {"apiVersion": "v1", "kind": "Secret",
            "type": "kubernetes.io/dockercfg" if legacy else "kubernetes.io/dockerconfigjson",
            "metadata": {"name": name, "namespace": "default"},
            "data": {key: kubeapi_etcd.b64(conf)}}


def set_registry_password(reg, user, password):
    """Adds or changes user in the registry's htpasswd file (the registry reads it again when
    it changes)."""
    subprocess.run(["htpasswd", "-Bb", "-C", "4", os.path.join(reg.dir, "htpasswd"), user,
                    password], check=True, capture_output=True)


def setup():
    reg = registry.start_registry(htpasswd=(USER, PASSWORD))
    env = api = None
    try:
        set_registry_password(reg, ROTATOR, OLD_PASSWORD)
        env = Env(registry_host=reg.host, start_registry=False)
        registry.push_image(reg.url, "team/app", ["v1.0.0", "v1.1.0"], auth=(USER, PASSWORD))
        api = kubeapi_etcd.start()
    except BaseException:
        reg.stop()
        if env:
            env.close()
        raise
    st = {"env": env, "api": api, "reg": reg, "receiver": start_receiver()}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
    api.create_object(pull_secret(reg.host))
    api.create_object(pull_secret(reg.host, "keyed", user=ROTATOR, password=OLD_PASSWORD))
    api.create_object({"apiVersion": "v1", "kind": "ServiceAccount",
                       "metadata": {"name": "puller", "namespace": "default"},
                       "imagePullSecrets": [{"name": "regcred"}]})
    env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
              "apps/plain.yaml": marker_file(env.image("team/app") + ":v1.0.0", "plain"),
              "apps/ghost.yaml": marker_file(env.image("team/app") + ":v1.0.0", "ghost"),
              "apps/keyed.yaml": marker_file(env.image("team/app") + ":v1.0.0", "keyed")})
    kubectl(st, "apply", "-f", "-", stdin=(
        env.repository("app", "team/app", extra="  serviceAccountName: puller\n") +
        env.repository("plain", "team/app") +
        env.repository("ghost", "team/app", extra="  serviceAccountName: ghost\n") +
        env.policy("app", "app", semver=">=1.0.0") +
        env.policy("plain", "plain", semver=">=1.0.0") +
        env.policy("ghost", "ghost", semver=">=1.0.0") + env.automation(interval="10m")))
    st["run"] = Run(st, "--log-level", "debug")
    return st


def teardown(st):
    if st:
        st["run"].stop()
        st["api"].stop()
        st["receiver"].shutdown()
        st["env"].close()
        st["reg"].stop()


def log_lines(st, needle):
    return [line for line in st["run"].text().splitlines() if needle in line]


@harness.test
def pull_secret_of_the_service_account_unlocks_the_registry(st):
    env = st["env"]
    wait(lambda: "v1.1.0" in env.remote_file("apps/app.yaml"), "the update through the "
         "ServiceAccount's pull secret", 40, st["run"].text)


@harness.test
def the_same_registry_refuses_a_repository_without_it(st):
    lines = wait(lambda: log_lines(st, "repository 'default/plain'"), "plain's failure", 20,
                 st["run"].text)
    harness.check(any("401" in line or "unauthorized" in line.lower() for line in lines),
                  "refused", lines)
    harness.check("v1.0.0" in st["env"].remote_file("apps/plain.yaml"), "plain not updated")


@harness.test
def a_missing_service_account_fails_alone_in_one_line(st):
    lines = wait(lambda: log_lines(st, "registry.credentials"), "the credentials line", 20,
                 st["run"].text)
    ghost = [json.loads(line) for line in lines if "default/ghost" in line]
    harness.check(ghost, "a line for ghost", lines)
    msg = ghost[0]["msg"] if "msg" in ghost[0] else json.dumps(ghost[0])
    harness.check("repository 'default/ghost'" in msg and "serviceaccount 'default/ghost'" in msg
                  and "404" in msg, "names the repository, the account and what failed", msg)
    harness.check("v1.0.0" in st["env"].remote_file("apps/ghost.yaml"), "ghost not updated")
    harness.check("v1.1.0" in st["env"].remote_file("apps/app.yaml"), "app went on")
    c = wait(lambda: "serviceaccount 'default/ghost'" in (ready(st) or {}).get("message", "")
             and ready(st), "the automation's Ready condition records it", 20,
             lambda: ready(st))
    harness.check(c["status"] == "False" and "default/ghost" in c["message"], "recorded", c)


@harness.test
def a_new_pull_secret_is_read_without_restart(st):
    # the account now lists a Secret for another registry first: the right one still wins
    # (a legacy kubernetes.io/dockercfg one), and a pull secret that is missing is a clear
    # error, never anonymous
    api, env = st["api"], st["env"]
    api.create_object(pull_secret("other.example:5000", "other"))
    kubectl(st, "patch", "serviceaccount", "puller", "--type", "merge", "-p",
            '{"imagePullSecrets":[{"name":"other"},{"name":"regcred"},{"name":"gone"}]}')
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=sa-1")
    lines = wait(lambda: [l for l in log_lines(st, "serviceaccount 'default/puller'")
                          if "gone" in l], "the missing pull secret named", 20, st["run"].text)
    harness.check("image pull secret 'default/gone'" in lines[0], "names it", lines)
    api.create_object(pull_secret(st["reg"].host, "legacy", legacy=True))
    kubectl(st, "patch", "serviceaccount", "puller", "--type", "merge", "-p",
            '{"imagePullSecrets":[{"name":"other"},{"name":"legacy"}]}')
    registry.push_image(st["reg"].url, "team/app", ["v1.2.0"], auth=(USER, PASSWORD))
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=sa-2")
    wait(lambda: "v1.2.0" in env.remote_file("apps/app.yaml"), "the legacy .dockercfg used",
         30, st["run"].text)


@harness.test
def it_only_gets_service_accounts_in_the_objects_namespace(st):
    # the one rule this needs beyond manifests/kube/rbac.yaml's: get serviceaccounts
    sa = [q for q in st["api"].requests if q["agent"].startswith("imageguard/") and
          "/serviceaccounts" in q["path"]]
    kinds = {kubeapi_etcd.rbac_request(q["method"], q["path"], q["query"]) for q in sa}
    harness.check(kinds == {("", "serviceaccounts", "get")}, "get only", kinds)
    harness.check(all(q["path"].startswith("/api/v1/namespaces/default/serviceaccounts/")
                      for q in sa), "in the object's namespace", [q["path"] for q in sa])


def decisions_of(st, policy, start):
    return [d for d in st["run"].decisions()[start:] if d["policy"] == policy]


def secret_reads(st, start, name):
    return [q for q in st["api"].requests[start:] if q["agent"].startswith("imageguard/") and
            q["path"] == "/api/v1/namespaces/default/secrets/" + name]


@harness.test
def a_rotated_secret_is_used_at_the_next_pass(st):
    """The registry's password changes, then the Secret (no Flux object touched): the pass
    after the new Secret lists with it. Passes every second: the automation's interval and
    the repository's."""
    env, api, reg = st["env"], st["api"], st["reg"]
    kubectl(st, "apply", "-f", "-", stdin=(
        env.repository("keyed", "team/app", interval="1s",
                       extra="  secretRef:\n    name: keyed\n") +
        env.policy("keyed", "keyed", semver=">=1.0.0")))
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"interval":"1s"}}')
    wait(lambda: "v1.2.0" in env.remote_file("apps/keyed.yaml"), "keyed listed with its "
         "Secret", 30, st["run"].text)
    # read again at every pass, and unchanged (ghost's account still a 404): no reload
    run, passes = st["run"], len(st["run"].events("reconcile.pass"))
    seen = len(run.events("kube.secrets"))
    wait(lambda: len(run.events("reconcile.pass")) >= passes + 3, "three passes", 20, run.text)
    harness.check(not [e for e in run.events("kube.secrets")[seen:] if "changed" in e["msg"]],
                  "nothing changed, nothing reloaded", run.events("kube.secrets")[seen:])
    set_registry_password(reg, ROTATOR, NEW_PASSWORD)
    n = len(st["run"].decisions())
    lines = wait(lambda: [d for d in decisions_of(st, "default/keyed", n)
                          if d["decision"] == "error"], "the old password refused", 20,
                 st["run"].text)
    harness.check("401" in lines[0].get("message", "") or
                  "unauthorized" in lines[0].get("message", "").lower(), "refused", lines)
    registry.push_image(reg.url, "team/app", ["v1.3.0"], auth=(USER, PASSWORD))
    requests = len(api.requests)
    api.patch("", "secrets", "default", "keyed",
              {"data": pull_secret(reg.host, user=ROTATOR, password=NEW_PASSWORD)["data"]})
    wait(lambda: "v1.3.0" in env.remote_file("apps/keyed.yaml"), "listed with the rotated "
         "Secret", 30, st["run"].text)
    harness.check(secret_reads(st, requests, "keyed"), "read again by name")


@harness.test
def a_deleted_pull_secret_of_the_account_is_an_error_at_the_next_pass(st):
    """The ServiceAccount's pull secret goes (no Flux object, no account touched): the next
    passes fail that repository in a line naming it, never anonymous or with the copy read
    before; created again, it is used at the pass after."""
    env, api, reg = st["env"], st["api"], st["reg"]
    legacy = api.get("", "secrets", "default", "legacy")
    n = len(st["run"].decisions())
    api.remove("", "secrets", "default", "legacy")
    wait(lambda: [d for d in decisions_of(st, "default/app", n) if d["decision"] == "error"],
         "an error after the deletion", 20, st["run"].text)
    registry.push_image(reg.url, "team/app", ["v1.4.0"], auth=(USER, PASSWORD))
    n = len(st["run"].decisions())
    got = wait(lambda: len(decisions_of(st, "default/app", n)) >= 3 and
               decisions_of(st, "default/app", n), "three passes more", 30, st["run"].text)
    harness.check(all(d["decision"] == "error" and d["tag_count"] is None and
                      "image pull secret 'default/legacy'" in d.get("message", "")
                      for d in got), "each pass: an error naming it, no listing", got)
    harness.check("v1.4.0" not in env.remote_file("apps/app.yaml"), "app not written")
    wait(lambda: "v1.4.0" in env.remote_file("apps/keyed.yaml"), "keyed went on", 30,
         st["run"].text)
    requests = len(api.requests)
    api.create_object({k: legacy[k] for k in ("apiVersion", "kind", "type", "data")} |
                      {"metadata": {"name": "legacy", "namespace": "default"}})
    wait(lambda: "v1.4.0" in env.remote_file("apps/app.yaml"), "the pull secret back: used",
         30, st["run"].text)
    harness.check(secret_reads(st, requests, "legacy"), "read again by name")
    kubectl(st, "patch", "imageupdateautomation", "auto", "--type", "merge", "-p",
            '{"spec":{"interval":"10m"}}')
    kubectl(st, "patch", "imagerepository", "keyed", "--type", "merge", "-p",
            '{"spec":{"interval":"10m"}}')


@harness.test
def no_password_in_the_log(st):
    text = st["run"].text()
    harness.check(PASSWORD not in text and kubeapi_etcd.b64("%s:%s" % (USER, PASSWORD))
                  not in text, "no credential in the log")
    harness.check(not [p for p in (OLD_PASSWORD, NEW_PASSWORD) if p in text or
                       kubeapi_etcd.b64("%s:%s" % (ROTATOR, p)) in text],
                  "no rotated credential in the log")


@harness.test
def check_config_accepts_it_with_kube_only(st):
    env = st["env"]
    path = os.path.join(env.dir, "sa.yaml")
    with open(path, "w") as f:
        f.write(env.repository("app", "team/app", extra="  serviceAccountName: puller\n") +
                env.policy("app", "app", semver=">=1.0.0"))
    r = harness.run("check-config", "--kube", "--config", path)
    harness.check(r.rc == 0 and r.err == "", "accepted without warnings", r)
    r = harness.run("check-config", "--config", path)
    harness.check(r.rc == 2 and "'spec.serviceAccountName' is not supported" in r.err and
                  "--kube" in r.err, "file mode refuses", r)


@harness.test
def run_stops_cleanly(st):
    rc = st["run"].stop()
    text = st["run"].text()
    harness.check(rc == 0 and "Sanitizer" not in text, "SIGTERM: exit 0, nothing reported",
                  rc, text[-3000:])


if __name__ == "__main__":
    harness.main(setup, teardown)
