#!/usr/bin/python3
"""Two tenants on one `run --kube`, as Flux's multi-tenancy lockdown keeps them apart, against
real peers: the Kubernetes API fixture (kubeapi_etcd.py over etcd) with namespaces team-a and
team-b, a docker-registry with htpasswd auth holding tenant B's private repository (B's Secret
unlocks it), a plain registry for tenant A, and a bare Git remote for each.

Attacks, each a check that fails without its fix:
- A's ImagePolicy names B's ImageRepository (spec.imageRepositoryRef.namespace): refused while
  B's spec.accessFrom does not select A's namespace (no commit of B's tag in A's repository,
  error/config naming both objects, Ready=False AccessDenied, a Warning Event); used once B's
  accessFrom selects A by its labels; refused again when A's namespace loses the label.
- A marker in A's repository naming B's policy is never written.
- A secretRef named '..' (which the HTTP client squashed into a GET of the namespace) is never
  requested; the object is an error naming the field.
- With --no-cross-namespace-refs: A's policy is refused although B's accessFrom admits it, and
  A's automation whose sourceRef names B's GitRepository writes nothing into B's repository
  (without the flag it does, as in Flux)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
import registry  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402
from kuberun import Run, events, kubectl, posted, ready, start_receiver, wait  # noqa: E402

USER, PASSWORD = "team-b-puller", "b-s3cret-4e1d"
IMG = "image.toolkit.fluxcd.io"


def marker(image, ns, policy):
    return marker_file(image, policy).replace('"default:', '"%s:' % ns)


def namespace(name, labels):
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels}}


def repository(ns, name, image, extra=""):
    return ("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
            "metadata:\n  name: %s\n  namespace: %s\nspec:\n  image: %s\n  interval: 1m\n"
            "  insecure: true\n%s" % (name, ns, image, extra))


def policy(ns, name, repo, repo_ns=None):
    ref = "    namespace: %s\n" % repo_ns if repo_ns else ""
    return ("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
            "metadata:\n  name: %s\n  namespace: %s\nspec:\n  imageRepositoryRef:\n"
            "    name: %s\n%s  policy:\n    semver:\n      range: '>=1.0.0'\n"
            % (name, ns, repo, ref))


def git_source(ns, name, remote):
    return ("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
            "metadata:\n  name: %s\n  namespace: %s\nspec:\n  interval: 1m\n"
            "  url: file://%s\n  ref:\n    branch: main\n" % (name, ns, remote))


def automation(ns, name, source, source_ns=None, path="./"):
    ref = "    namespace: %s\n" % source_ns if source_ns else ""
    return ("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: %s\n  namespace: %s\nspec:\n  interval: 10m\n"
            "  sourceRef:\n    kind: GitRepository\n    name: %s\n%s"
            "  git:\n    checkout:\n      ref:\n        branch: main\n"
            "    commit:\n      author:\n        name: imageguard\n"
            "        email: imageguard@test\n    push:\n      branch: main\n"
            "  update:\n    path: %s\n    strategy: Setters\n" % (name, ns, source, ref, path))


def pull_secret(ns, host):
    auths = {host: {"auth": kubeapi_etcd.b64("%s:%s" % (USER, PASSWORD))}}
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "regcred", "namespace": ns},
            "data": {".dockerconfigjson": kubeapi_etcd.b64(json.dumps({"auths": auths}))}}


def setup():
    reg_b = registry.start_registry(htpasswd=(USER, PASSWORD))
    env_a = env_b = api = None
    try:
        env_a = Env()  # A's own plain registry and remote
        env_b = Env(registry_host=reg_b.host, start_registry=False)
        registry.push_image(reg_b.url, "team-b/private", ["v1.0.0", "v1.1.0"],
                            auth=(USER, PASSWORD))
        env_a.push("team-a/public", ["v1.0.0", "v1.1.0"])
        api = kubeapi_etcd.start()
    except BaseException:
        for e in (env_a, env_b):
            if e:
                e.close()
        reg_b.stop()
        raise
    # the Run's files go under env_a (st["env"]); B's remote is env_b's
    st = {"env": env_a, "b": env_b, "reg_b": reg_b, "api": api, "receiver": start_receiver()}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env_a.dir, "kubeconfig"))
    private, public = env_b.image("team-b/private"), env_a.image("team-a/public")
    st["private"], st["public"] = private, public
    api.create_object(namespace("team-a", {"tenant": "a"}))
    api.create_object(namespace("team-b", {"tenant": "b"}))
    api.create_object(pull_secret("team-b", reg_b.host))
    env_b.seed({"apps/app.yaml": marker(private + ":v1.0.0", "team-b", "app"),
                # what A's automation writes into B's repository through sourceRef.namespace
                "apps/intruder.yaml": marker(public + ":v1.0.0", "team-a", "own")})
    env_a.seed({"apps/stolen.yaml": marker(private + ":v1.0.0", "team-a", "stolen"),
                "apps/b-policy.yaml": marker(private + ":v1.0.0", "team-b", "app"),
                "apps/own.yaml": marker(public + ":v1.0.0", "team-a", "own")})
    kubectl(st, "apply", "-f", "-", stdin=(
        # tenant B: its private repository, its policy and automation
        repository("team-b", "private", private, "  secretRef:\n    name: regcred\n") +
        policy("team-b", "app", "private") + git_source("team-b", "gitops", env_b.remote) +
        automation("team-b", "auto", "gitops") +
        # tenant A: its own repository and policy, a policy on B's repository, its automation,
        # and one on B's GitRepository
        repository("team-a", "public", public) + policy("team-a", "own", "public") +
        policy("team-a", "stolen", "private", repo_ns="team-b") +
        git_source("team-a", "gitops", env_a.remote) + automation("team-a", "auto", "gitops") +
        automation("team-a", "intruder", "gitops", source_ns="team-b", path="./apps") +
        # a third tenant's repository whose secretRef is '..'
        repository("team-c", "dots", public, "  secretRef:\n    name: '..'\n") +
        policy("team-c", "dots", "dots")))
    st["run"] = Run(st)
    return st


def teardown(st):
    if not st:
        return
    try:
        for r in [st.get("run")] + st.get("runs", []):
            if r:
                r.stop()
        st["api"].stop()
        st["receiver"].shutdown()
    finally:
        st["env"].close()
        st["b"].close()
        st["reg_b"].stop()


def decisions(st, pol, run=None):
    return [d for d in (run or st["run"]).decisions() if d["policy"] == pol]


@harness.test
def b_lists_its_private_repository_with_its_secret(st):
    wait(lambda: "v1.1.0" in st["b"].remote_file("apps/app.yaml"), "B's own update", 40,
         st["run"].text)


@harness.test
def a_cannot_use_bs_repository_without_its_consent(st):
    ds = wait(lambda: decisions(st, "team-a/stolen"), "a decision for team-a/stolen", 30,
              st["run"].text)
    d = ds[-1]
    harness.check(d["decision"] == "error" and d["reason"] == "config", "error/config", d)
    msg = d.get("message") or ""
    harness.check("ImagePolicy 'team-a/stolen'" in msg and "'team-b/private'" in msg and
                  "can't be accessed due to missing ACL labels on 'accessFrom'" in msg,
                  "names both objects, Flux's message", msg)
    wait(lambda: "v1.1.0" in st["env"].remote_file("apps/own.yaml"), "A's own update", 30,
         st["run"].text)
    harness.check(st["env"].remote_file("apps/stolen.yaml") ==
                  marker(st["private"] + ":v1.0.0", "team-a", "stolen"),
                  "B's tag never written into A's repository")
    c = wait(lambda: (ready(st, "auto", "team-a") or {}).get("reason") == "AccessDenied" and
             ready(st, "auto", "team-a"), "A's automation Ready=False AccessDenied", 20,
             lambda: ready(st, "auto", "team-a"))
    harness.check(c["status"] == "False" and "team-a/stolen" in c["message"] and
                  "team-b/private" in c["message"], "Ready names both", c)
    e = wait(lambda: events(st, "AccessDenied", ns="team-a"), "a Warning Event", 20,
             lambda: st["api"].objects("", "events", "team-a"))[0]
    harness.check(e["type"] == "Warning" and "team-b/private" in e["message"], "Event", e)
    wait(lambda: events(st, "AccessDenied", "ImagePolicy", ns="team-a"), "on the policy too", 20,
         lambda: st["api"].objects("", "events", "team-a"))
    harness.check(not events(st, "AccessDenied", ns="team-b"), "nothing in B's namespace")
    b = wait(lambda: posted(st, "AccessDenied"), "posted to the notification-controller", 10)[0]
    harness.check(b["severity"] == "error", "severity error", b)
    wait(lambda: (ready(st, "auto", "team-b") or {}).get("status") == "True",
         "B's own automation is fine", 20, lambda: st["api"].get(IMG, "imageupdateautomations",
                                                                 "team-b", "auto"))


@harness.test
def a_marker_naming_bs_policy_is_never_written(st):
    harness.check(st["env"].remote_file("apps/b-policy.yaml") ==
                  marker(st["private"] + ":v1.0.0", "team-b", "app"), "left as it was")
    harness.check(not [d for d in st["run"].decisions() if d.get("file") == "apps/b-policy.yaml"],
                  "no decision for it in A's repository")


@harness.test
def a_secret_named_dot_dot_is_never_requested(st):
    ds = wait(lambda: decisions(st, "team-c/dots"), "a decision for team-c/dots", 20,
              st["run"].text)
    reqs = [q["path"] for q in st["api"].requests if q["agent"].startswith("imageguard/")]
    harness.check(reqs, "imageguard made requests")
    # the client squashes ".../secrets/.." into a GET of the namespace itself
    bad = [p for p in reqs if p.rstrip("/") == "/api/v1/namespaces/team-c" or ".." in p or
           "%2e" in p.lower() or p.startswith("/api/v1/namespaces/team-c/secrets")]
    harness.check(not bad, "no request leaves the Secret's place", bad)
    msg = ds[-1].get("message") or ""
    harness.check(ds[-1]["decision"] == "error" and "'spec.secretRef.name': '..'" in msg,
                  "the field named", ds[-1])


@harness.test
def bs_accessfrom_admits_a_by_its_labels(st):
    kubectl(st, "-n", "team-b", "patch", "imagerepository", "private", "--type", "merge", "-p",
            '{"spec":{"accessFrom":{"namespaceSelectors":[{"matchLabels":{"tenant":"a"}}]}}}')
    wait(lambda: "v1.1.0" in st["env"].remote_file("apps/stolen.yaml"),
         "A's policy on B's repository, now admitted", 30, st["run"].text)
    wait(lambda: (ready(st, "auto", "team-a") or {}).get("status") == "True",
         "A's automation Ready again", 20, lambda: ready(st, "auto", "team-a"))


@harness.test
def a_namespace_that_loses_the_label_is_refused_again(st):
    # the Namespace watch takes the change up at once: no restart, no object of A's touched
    kubectl(st, "label", "namespace", "team-a", "tenant=x", "--overwrite")
    registry.push_image(st["reg_b"].url, "team-b/private", ["v1.2.0"], auth=(USER, PASSWORD))
    kubectl(st, "-n", "team-b", "annotate", "imageupdateautomation", "auto", "--overwrite",
            "reconcile.fluxcd.io/requestedAt=relabel")
    wait(lambda: "v1.2.0" in st["b"].remote_file("apps/app.yaml"), "B moves on", 30,
         st["run"].text)
    d = wait(lambda: [x for x in decisions(st, "team-a/stolen")[-1:]
                      if "ACL labels mismatch on namespace 'team-a'" in (x.get("message") or "")],
             "A refused: labels mismatch", 30, st["run"].text)
    harness.check(d[0]["decision"] == "error", "error", d)
    harness.check("v1.1.0" in st["env"].remote_file("apps/stolen.yaml"),
                  "A's marker stays where B last allowed it, never v1.2.0")


@harness.test
def without_the_flag_a_sourceref_reaches_bs_repository_as_in_flux(st):
    wait(lambda: "v1.1.0" in st["b"].remote_file("apps/intruder.yaml"),
         "A's automation on B's GitRepository writes there (Flux's behaviour without the flag)",
         30, st["run"].text)


@harness.test
def namespaces_are_only_listed_and_watched(st):
    ns = {kubeapi_etcd.rbac_request(q["method"], q["path"], q["query"])
          for q in st["api"].requests if q["agent"].startswith("imageguard/") and
          q["path"].startswith("/api/v1/namespaces") and
          q["path"].rstrip("/").count("/") == 3}
    harness.check(ns == {("", "namespaces", "list"), ("", "namespaces", "watch")}, "verbs", ns)


@harness.test
def with_the_flag_every_cross_namespace_reference_is_refused(st):
    st["run"].stop()
    st["run"] = None
    registry.push_image(st["reg_b"].url, "team-b/private", ["v1.3.0"], auth=(USER, PASSWORD))
    st["env"].push("team-a/public", ["v1.2.0"])
    kubectl(st, "label", "namespace", "team-a", "tenant=a", "--overwrite")  # admitted by ACL
    run = Run(st, "--no-cross-namespace-refs")
    st["runs"] = [run]
    wait(lambda: "v1.2.0" in st["env"].remote_file("apps/own.yaml"), "A's own moves", 40,
         run.text)
    wait(lambda: "v1.3.0" in st["b"].remote_file("apps/app.yaml"), "B's own moves", 40,
         run.text)
    d = wait(lambda: decisions(st, "team-a/stolen", run), "team-a/stolen decided", 20,
             run.text)[-1]
    harness.check(d["decision"] == "error" and
                  "cannot access 'ImageRepository/team-b/private', cross-namespace references "
                  "have been blocked" in (d.get("message") or ""), "Flux's flag message", d)
    harness.check("v1.1.0" in st["env"].remote_file("apps/stolen.yaml"), "not written")
    c = wait(lambda: "cross-namespace" in (ready(st, "auto", "team-a") or {}).get("message", "")
             and ready(st, "auto", "team-a"), "Ready names it", 20,
             lambda: ready(st, "auto", "team-a"))
    harness.check(c["reason"] == "AccessDenied" and c["status"] == "False", "AccessDenied", c)
    lines = [l for l in run.text().splitlines() if "config.invalid" in l and
             "GitRepository/team-b/gitops" in l]
    harness.check(lines and "can't access 'GitRepository/team-b/gitops', cross-namespace "
                  "references have been blocked" in lines[0] and "team-a/intruder" in lines[0],
                  "the automation on B's GitRepository is refused, both named", lines)
    harness.check("v1.1.0" in st["b"].remote_file("apps/intruder.yaml") and
                  "v1.2.0" not in st["b"].remote_file("apps/intruder.yaml"),
                  "nothing written into B's repository by A's automation")


if __name__ == "__main__":
    sys.exit(harness.main(setup, teardown))
