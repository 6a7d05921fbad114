#!/usr/bin/python3
"""The signature gate (CONTRACT §12) under `imageguard run --kube`, end to end: Flux's objects in
the Kubernetes API fixture (kubeapi_etcd.py over a real etcd), an ImagePolicy with the
imageguard.io/verify-* annotations naming a Secret that lives in the API (a cosign.pub made with
OpenSSL), a real docker-registry and a bare Git remote.

An unsigned candidate is held: the pass's decision is hold/unverified (unsigned) with its
digest, the automation's Ready condition says Unverified with "hold/unverified", nothing is
committed, and a Warning Event SignatureUnverified exists in the API on the ImagePolicy (its
involvedObject carrying the policy's uid, read back with kubectl and with python3-kubernetes'
CoreV1Api) and on the automation, and reaches the notification-controller stand-in with
severity error. A signature pushed later (cosign's `sha256-<hex>.sig` layout, signed with
OpenSSL) is seen by the next pass: committed with `Imageguard-Verified: key cosign.pub ...`
and an UpdateCommitted Event. A signature by another key stays bad-signature.

imageguard writes no ImagePolicy status (docs/operations.md): the hold shows in the
automation's status. `imageguard.io/v1alpha1` ImagePolicy (spec.verify.secretRef) is not
exercised here: run --kube watches only Flux's API groups and the fixture serves no
imageguard.io group; test/integration/reconcile/verify_keyless.py covers spec.verify in file
mode."""
import base64
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
import registry  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402
from kuberun import (Run, events, kubectl, posted, ready, start_receiver, status,  # noqa: E402
                     teardown, wait)

SIMPLESIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
VERIFY = {"imageguard.io/verify-provider": "cosign", "imageguard.io/verify-secret": "cosign-keys"}
POLICY = "default/app"


def keypair(d, name):
    key, pub = os.path.join(d, name + ".key"), os.path.join(d, name + ".pub")
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out",
                    key], check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", key, "-pubout", "-out", pub], check=True,
                   capture_output=True)
    return key, pub


def openssl_sign(key, data, d):
    path = os.path.join(d, "payload")
    with open(path, "wb") as f:
        f.write(data)
    p = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key, path], capture_output=True,
                       check=True, timeout=30)
    return base64.b64encode(p.stdout).decode()


def push_sig(env, repo, digest, key, d):
    """cosign's `sha256-<hex>.sig` manifest for digest: a simple-signing payload naming it,
    signed with key (as test/integration/reconcile/verify.py)."""
    payload = json.dumps({"critical": {"identity": {"docker-reference": env.image(repo)},
                                       "image": {"docker-manifest-digest": digest},
                                       "type": "cosign container image signature"},
                          "optional": None}).encode()
    c = registry.Client(env.reg.url)
    scope = "repository:%s:pull,push" % repo
    config = b"{}"
    manifest = {"schemaVersion": 2, "mediaType": registry.OCI_MANIFEST,
                "config": {"mediaType": registry.OCI_CONFIG, "size": len(config),
                           "digest": registry._blob(c, repo, config, scope)},
                "layers": [{"mediaType": SIMPLESIGNING, "size": len(payload),
                            "digest": registry._blob(c, repo, payload, scope),
                            "annotations": {"dev.cosignproject.cosign/signature":
                                            openssl_sign(key, payload, d)}}]}
    registry.put_manifest(c, repo, digest.replace(":", "-") + ".sig", json.dumps(manifest).encode(),
                          registry.OCI_MANIFEST)


def setup():
    env = Env()
    try:
        api = kubeapi_etcd.start()
    except BaseException:
        env.close()
        raise
    st = {"env": env, "api": api, "receiver": start_receiver()}
    try:
        st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
        keys = os.path.join(env.dir, "keys")
        os.makedirs(keys)
        st["keys"] = keys
        st["key"], pub = keypair(keys, "trusted")
        st["other"], _ = keypair(keys, "other")
        with open(pub) as f:
            api.create_object({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                               "metadata": {"name": "cosign-keys", "namespace": "default"},
                               "data": {"cosign.pub": kubeapi_etcd.b64(f.read())}})
        env.push("team/app", ["v1.0.0"])
        st["d11"] = env.push("team/app", ["v1.1.0"], created="2026-01-02T00:00:00Z")
        env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
        st["log_len"] = len(env.remote_log())
        kubectl(st, "apply", "-f", "-", stdin=env.repository("app", "team/app") +
                env.policy("app", "app", semver=">=1.0.0", annotations=VERIFY) +
                env.automation(interval="10m"))
        st["run"] = Run(st)
    except BaseException:
        teardown(st)
        raise
    return st


def decisions(st):
    return [d for d in st["run"].decisions() if d.get("policy") == POLICY]


def next_pass(st, stamp):
    """Asks for a pass (Flux's requestedAt) and waits until the automation's status says it
    was handled."""
    kubectl(st, "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=" + stamp)
    wait(lambda: status(st).get("lastHandledReconcileAt") == stamp, "pass " + stamp, 30,
         lambda: status(st), st["run"].text)


def policy_uid(st):
    return json.loads(kubectl(st, "get", "imagepolicy", "app", "-o", "json"))["metadata"]["uid"]


def kubectl_events(st, reason):
    got = json.loads(kubectl(st, "get", "events", "-n", "default", "-o", "json"))["items"]
    return [e for e in got if e.get("reason") == reason]


@harness.test
def an_unsigned_candidate_is_held(st):
    d = wait(lambda: decisions(st), "a decision for %s" % POLICY, 40, st["run"].text)[-1]
    harness.check(d["decision"] == "hold" and d["reason"] == "unverified" and
                  d.get("warnings") == ["unsigned"] and d.get("digest") == st["d11"] and
                  d.get("candidate") == "v1.1.0", "hold/unverified (unsigned) on v1.1.0", d)
    c = wait(lambda: (ready(st) or {}).get("reason") == "Unverified" and ready(st),
             "the automation's Ready says Unverified", 20, lambda: status(st))
    harness.check(c["status"] == "True" and "1 hold/unverified" in c["message"],
                  "Ready: the hold counted", c)
    harness.check(len(st["env"].remote_log()) == st["log_len"] and
                  "v1.0.0" in st["env"].remote_file("apps/app.yaml"), "nothing committed")


@harness.test
def a_warning_event_names_the_policy(st):
    uid = policy_uid(st)
    e = wait(lambda: [e for e in kubectl_events(st, "SignatureUnverified")
                      if e["involvedObject"]["kind"] == "ImagePolicy"],
             "a SignatureUnverified Event on the ImagePolicy", 20,
             lambda: st["api"].objects("", "events", "default"))[0]
    inv = e["involvedObject"]
    harness.check(e["type"] == "Warning" and inv["name"] == "app" and
                  inv["namespace"] == "default" and inv.get("uid") == uid and
                  inv.get("apiVersion", "").startswith("image.toolkit.fluxcd.io/"),
                  "Warning, involvedObject the ImagePolicy with its uid", e, uid)
    harness.check(st["d11"] in e["message"] and "unsigned" in e["message"] and
                  e["source"]["component"] == "imageguard", "the message: why and the digest", e)
    harness.check(events(st, "SignatureUnverified"), "on the automation too",
                  st["api"].objects("", "events", "default"))
    # kubectl describe lists the Events whose involvedObject.uid is the object's
    section = kubectl(st, "describe", "imagepolicy", "app").partition("\nEvents:")[2]
    harness.check("SignatureUnverified" in section, "kubectl describe imagepolicy app", section)
    b = wait(lambda: posted(st, "SignatureUnverified"), "posted to the notification-controller",
             10, lambda: st["receiver"].got)[0]
    harness.check(b["severity"] == "error" and st["d11"] in b["message"], "severity error", b)


CORE_EVENTS = r'''
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
print(json.dumps([[e.type, e.reason, e.involved_object.kind, e.involved_object.name,
                   e.involved_object.uid] for e in
                  client.CoreV1Api().list_namespaced_event("default").items]))
'''


@harness.test
def the_python_client_reads_the_event(st):
    p = subprocess.run(["/usr/bin/python3", "-c", CORE_EVENTS, st["kubeconfig"]],
                       capture_output=True, text=True, timeout=60)
    harness.check(p.returncode == 0, "CoreV1Api.list_namespaced_event", p.stderr[-2000:])
    got = json.loads(p.stdout)
    harness.check(["Warning", "SignatureUnverified", "ImagePolicy", "app", policy_uid(st)] in got,
                  "python3-kubernetes sees the Warning on the ImagePolicy", got)


@harness.test
def another_keys_signature_stays_held(st):
    push_sig(st["env"], "team/app", st["d11"], st["other"], st["keys"])
    n = len(decisions(st))
    next_pass(st, "other-key")
    d = wait(lambda: decisions(st)[n:], "the next pass's decision", 20, st["run"].text)[-1]
    harness.check(d["reason"] == "unverified" and d.get("warnings") == ["bad-signature"],
                  "bad-signature", d)
    harness.check(len(st["env"].remote_log()) == st["log_len"], "nothing committed")
    wait(lambda: [e for e in kubectl_events(st, "SignatureUnverified")
                  if e["involvedObject"]["kind"] == "ImagePolicy" and
                  "bad-signature" in e["message"]], "the Event says bad-signature", 20,
         lambda: kubectl_events(st, "SignatureUnverified"))


@harness.test
def a_valid_signature_is_committed_on_the_next_pass(st):
    push_sig(st["env"], "team/app", st["d11"], st["key"], st["keys"])
    next_pass(st, "signed")
    env = st["env"]
    wait(lambda: "v1.1.0" in env.remote_file("apps/app.yaml"), "the commit", 20, st["run"].text)
    log = env.remote_log()
    harness.check(len(log) == st["log_len"] + 1 and
                  "Imageguard-Verified: key cosign.pub (sha256:" in log[0][1],
                  "one commit carrying Imageguard-Verified", log[:1])
    d = decisions(st)[-1]
    harness.check(d["decision"] == "update" and d.get("commit") == log[0][0], "update", d)
    wait(lambda: (ready(st) or {}).get("reason") == "Succeeded", "Ready: Succeeded", 20,
         lambda: status(st))
    wait(lambda: [e for e in events(st, "UpdateCommitted", "ImagePolicy")
                  if log[0][0][:12] in e["message"]], "an UpdateCommitted Event", 20,
         lambda: st["api"].objects("", "events", "default"))


if __name__ == "__main__":
    sys.exit(harness.main(setup, teardown))
