#!/usr/bin/python3
"""Tenancy in file mode (plan, reconcile, check-config) against a real docker-registry and a bare
Git remote: Flux's ACL with the Namespace labels from `kind: Namespace` documents, a namespace
with no document (only kubernetes.io/metadata.name), and --no-cross-namespace-refs. A refused
reference is an error/config decision naming both objects in JSON and text, and nothing is
written for it; a marker naming another namespace's policy is never written."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import IMAGEGUARD, Env, Checks, Result, marker_file, by_file  # noqa: E402

t = Checks()


def marker(image, ns, policy):
    return marker_file(image, policy).replace('"default:', '"%s:' % ns)


def namespace(name, labels):
    text = "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n" % name
    if labels:
        text += "  labels:\n" + "".join("    %s: %s\n" % kv for kv in labels.items())
    return text


def objects(env, access_from="", source_ns=None):
    """B's repository (access_from: its spec.accessFrom lines) and policy; A's policy on it,
    A's own repository and policy, A's GitRepository and automation (on sourceRef namespace
    source_ns when given, where B's GitRepository is the same remote)."""
    src = "    namespace: %s\n" % source_ns if source_ns else ""
    return (
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
        "metadata: {name: private, namespace: team-b}\n"
        "spec:\n  image: %s\n  insecure: true\n%s" % (env.image("team-b/private"), access_from) +
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
        "metadata: {name: app, namespace: team-b}\n"
        "spec:\n  imageRepositoryRef: {name: private}\n  policy: {semver: {range: '>=1.0.0'}}\n"
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
        "metadata: {name: stolen, namespace: team-a}\n"
        "spec:\n  imageRepositoryRef: {name: private, namespace: team-b}\n"
        "  policy: {semver: {range: '>=1.0.0'}}\n"
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
        "metadata: {name: public, namespace: team-a}\n"
        "spec:\n  image: %s\n  insecure: true\n" % env.image("team-a/public") +
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
        "metadata: {name: own, namespace: team-a}\n"
        "spec:\n  imageRepositoryRef: {name: public}\n  policy: {semver: {range: '>=1.0.0'}}\n"
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
        "metadata: {name: gitops, namespace: %s}\n" % (source_ns or "team-a") +
        "spec:\n  interval: 1m\n  url: file://%s\n  ref: {branch: main}\n" % env.remote +
        "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
        "metadata: {name: auto, namespace: team-a}\n"
        "spec:\n  interval: 1m\n  sourceRef:\n    kind: GitRepository\n    name: gitops\n%s"
        "  git:\n    checkout: {ref: {branch: main}}\n    push: {branch: main}\n"
        "    commit: {author: {name: imageguard, email: imageguard@test}}\n"
        "  update: {path: ./, strategy: Setters}\n" % src)


def seed(env):
    env.push("team-b/private", ["v1.0.0", "v1.1.0"])
    env.push("team-a/public", ["v1.0.0", "v1.1.0"])
    env.seed({"stolen.yaml": marker(env.image("team-b/private") + ":v1.0.0", "team-a", "stolen"),
              "b-policy.yaml": marker(env.image("team-b/private") + ":v1.0.0", "team-b", "app"),
              "own.yaml": marker(env.image("team-a/public") + ":v1.0.0", "team-a", "own")})


def acl(env):
    seed(env)
    nss = namespace("team-a", {"tenant": "a"}) + namespace("team-b", {"tenant": "b"})
    env.config(nss + objects(env))
    r = env.imageguard("plan", "-o", "json")
    items = by_file(r.json()) if r.out.strip() else {}
    stolen = items.get(("team-a/stolen", None), {})
    t.check(r.rc == 1 and stolen.get("decision") == "error" and stolen.get("reason") == "config",
            "plan: A's policy on B's repository is error/config", r)
    t.check("ImagePolicy 'team-a/stolen'" in stolen.get("message", "") and
            "'team-b/private' can't be accessed due to missing ACL labels on 'accessFrom'"
            in stolen.get("message", ""), "the message names both objects", stolen)
    r = env.imageguard("plan")
    lines = [line for line in r.out.splitlines() if line.startswith("team-a/stolen")]
    t.check(lines and "error/config" in lines[0] and "team-b/private" in lines[0],
            "the text line too", r.out)
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 1 and "v1.1.0" in env.remote_file("own.yaml"), "A's own moves", r)
    t.check(":v1.0.0" in env.remote_file("stolen.yaml"), "B's tag not written in A's repo")
    t.check(":v1.0.0" in env.remote_file("b-policy.yaml") and
            not [i for i in r.json() if i.get("file") == "b-policy.yaml"],
            "a marker of B's policy is never written", r.json())

    # B consents: its accessFrom selects A's namespace by A's label
    consent = "  accessFrom:\n    namespaceSelectors:\n      - matchLabels: {tenant: a}\n"
    env.config(nss + objects(env, consent))
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and "v1.1.0" in env.remote_file("stolen.yaml"),
            "admitted by accessFrom: A's marker moves", r)

    # without a Namespace document team-a has only kubernetes.io/metadata.name: the tenant label
    # no longer admits it, a selector on its name does
    env.push("team-b/private", ["v1.2.0"])
    env.config(namespace("team-b", {"tenant": "b"}) + objects(env, consent))
    r = env.imageguard("reconcile", "-o", "json")
    stolen = by_file(r.json()).get(("team-a/stolen", None), {})
    t.check(r.rc == 1 and "ACL labels mismatch on namespace 'team-a'" in stolen.get("message", ""),
            "no Namespace document: the tenant label is absent", r)
    t.check(":v1.1.0" in env.remote_file("stolen.yaml"), "nothing written")
    by_name = ("  accessFrom:\n    namespaceSelectors:\n"
               "      - matchLabels: {kubernetes.io/metadata.name: team-a}\n")
    env.config(namespace("team-b", {"tenant": "b"}) + objects(env, by_name))
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and "v1.2.0" in env.remote_file("stolen.yaml"),
            "a selector on kubernetes.io/metadata.name admits it", r)


def flag(env):
    seed(env)
    consent = "  accessFrom:\n    namespaceSelectors:\n      - matchLabels: {}\n"
    nss = namespace("team-a", {"tenant": "a"}) + namespace("team-b", {})
    env.config(nss + objects(env, consent))
    r = env.imageguard("plan", "-o", "json", "--no-cross-namespace-refs")
    stolen = by_file(r.json()).get(("team-a/stolen", None), {})
    t.check(r.rc == 1 and stolen.get("decision") == "error" and
            "cannot access 'ImageRepository/team-b/private', cross-namespace references have "
            "been blocked" in stolen.get("message", "") and
            "team-a/stolen" in stolen.get("message", ""), "plan: refused with the flag", r)
    r = env.imageguard("reconcile", "-o", "json", "--no-cross-namespace-refs")
    t.check(":v1.0.0" in env.remote_file("stolen.yaml") and "v1.1.0" in
            env.remote_file("own.yaml"), "reconcile: only A's own moves", r)
    r = env.imageguard("reconcile", "-o", "json", "--no-cross-namespace-refs=false")
    t.check(r.rc == 0 and "v1.1.0" in env.remote_file("stolen.yaml"),
            "=false: the ACL decides (it admits every namespace)", r)

    # A's automation on B's GitRepository
    env.push("team-a/public", ["v1.2.0"])
    env.config(nss + objects(env, consent, source_ns="team-b"))
    r = env.imageguard("reconcile", "-o", "json", "--no-cross-namespace-refs")
    t.check(r.rc != 0 and "can't access 'GitRepository/team-b/gitops', cross-namespace "
            "references have been blocked" in r.err and "team-a/auto" in r.err,
            "the sourceRef refused, both named", r)
    t.check("v1.1.0" in env.remote_file("own.yaml"), "nothing written through it")
    r = Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir,
                               "--no-cross-namespace-refs"], capture_output=True, text=True,
                              timeout=60))
    t.check(r.rc == 2 and r.err.count("cross-namespace references have been blocked") == 2,
            "check-config: both references are errors", r)
    r = Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir],
                              capture_output=True, text=True, timeout=60))
    t.check(r.rc == 0, "without the flag, as Flux: accepted", r)


for scenario in (acl, flag):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (scenario.__name__, e))
sys.exit(t.done())
