#!/usr/bin/python3
"""Flux's own test data for the setters, end to end.

1. The setters golden tree (test/golden/flux-setters, transcribed from
image-automation-controller internal/update/testdata/setters with TestUpdateWithSetters'
policies) end to end: Debian's docker-registry serves the policies' images, a bare remote holds
the original tree, `imageguard reconcile` commits once, and the new head equals Flux's expected
tree byte for byte; files Flux leaves alone stay as they were.
2. internal/policy/applier_test.go Test_applyPolicies (at 458e0338c39659058fc56750cc6970907599d24c,
   testdata appconfig/ and pathconfig/ at ffcb4d1f317aca7bd58427d1572294ce043718a0 and
   83865d39c95f19495b6f3b1391d071e31c17a5ee): one policy, several policies of which one is
   marked, an update path that leaves the other directory alone, and an unknown update strategy
   refused. Flux's SETTER_SITE placeholder becomes the target policy's marker, as its
   testutil.ReplaceMarker does; `@REG@`/`helloworld` stands for Flux's `helloworld`."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
import subprocess  # noqa: E402
from guard_env import IMAGEGUARD, Env, Checks, Result  # noqa: E402

t = Checks()
GOLDEN = os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "golden", "flux-setters")


def tree(side, subst):
    out = {}
    for name in sorted(os.listdir(os.path.join(GOLDEN, side))):
        with open(os.path.join(GOLDEN, side, name)) as f:
            text = f.read()
        for k, v in subst.items():
            text = text.replace(k, v)
        out[name] = text
    return out


def config(env):
    ns = "automation-ns"

    def repo(name, image):
        return ("---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
                "metadata: {name: %s, namespace: %s}\nspec: {image: '%s', insecure: true}\n"
                % (name, ns, env.image(image)))

    def policy(name, repo_name, extra=""):
        return ("---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
                "metadata: {name: %s, namespace: %s}\nspec:\n"
                "  imageRepositoryRef: {name: %s}\n  policy: {semver: {range: '>=1.0.0'}}\n%s"
                % (name, ns, repo_name, extra))
    auto = env.automation().replace("namespace: default", "namespace: " + ns)
    return (repo("updated", "updated") + repo("image", "image") + policy("policy", "updated")
            + policy("unchanged", "image")
            + policy("policy-with-digest", "image", "  digestReflectionPolicy: Always\n") + auto)


with Env() as env:
    env.push("updated", ["v1.0.0"])
    env.push("updated", ["v1.0.1"], created="2026-01-02T00:00:00Z")
    digest = env.push("image", ["v1.0.0"])
    reg = env.image("").rstrip("/")
    original = tree("original", {"@REG@": reg})
    expected = tree("expected", {"@REG@": reg, "@DIGEST@": digest})
    env.seed(original)
    env.config(config(env))
    r = Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir],
                              capture_output=True, text=True, timeout=60))
    t.check(r.rc == 0, "the policies and automation load", r)
    before = len(env.remote_log())
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0, "reconcile exits 0", r)
    t.check(len(env.remote_log()) == before + 1, "one commit", env.remote_log()[:2])
    for name, want in expected.items():
        got = env.remote_file(name)
        t.check(got == want, "%s equals Flux's expected file byte for byte" % name,
                {"got": got, "want": want})
    for name in sorted(set(original) - set(expected)):
        t.check(env.remote_file(name) == original[name], "%s is left as it was" % name)
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and all(i["decision"] == "none" for i in r.json()),
            "the next pass finds everything up to date", r)

DEPLOY = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  template:\n"
          "    spec:\n      containers:\n      - name: hello\n        image: %s # %s\n")
MARKER = '{"$imagepolicy": "test-ns:%s"}'


def applier(name, latest, target, files, path="./", strategy="Setters"):
    """latest: policy -> (repository, tags); files: path -> (object name, changes?)."""
    with Env() as env:
        ns = "test-ns"
        objs = ""
        for pol, (repo, tags) in latest.items():
            for tag in tags:
                env.push(repo, [tag])
            objs += ("---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
                     "metadata: {name: %s, namespace: %s}\nspec: {image: '%s', insecure: true}\n"
                     "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
                     "metadata: {name: %s, namespace: %s}\nspec:\n"
                     "  imageRepositoryRef: {name: %s}\n  policy: {semver: {range: '>=0.1.0'}}\n"
                     % (pol, ns, env.image(repo), pol, ns, pol))
        image = env.image("helloworld")
        env.seed({f: DEPLOY % (obj, image + ":1.0.0", MARKER % target)
                  for f, (obj, _) in files.items()})
        auto = env.automation(path=path).replace("namespace: default", "namespace: " + ns)
        auto = auto.replace("strategy: Setters", "strategy: " + strategy)
        env.config(objs + auto)
        r = env.imageguard("reconcile", "-o", "json")
        if strategy != "Setters":
            t.check(r.rc != 0 and "strategy" in r.err, name + ": refused, naming the field", r)
            return
        t.check(r.rc == 0, name + ": reconcile exits 0", r)
        for f, (obj, changes) in files.items():
            want = DEPLOY % (obj, image + (":1.0.1" if changes else ":1.0.0"), MARKER % target)
            t.check(env.remote_file(f) == want, "%s: %s as Flux expects" % (name, f),
                    env.remote_file(f))


applier("valid update strategy and one policy", {"policy1": ("helloworld", ["1.0.0", "1.0.1"])},
        "policy1", {"deploy.yaml": ("test", True)})
applier("valid update strategy and multiple policies",
        {"policy1": ("foo", ["1.1.1"]), "policy2": ("helloworld", ["1.0.0", "1.0.1"]),
         "policy3": ("bar", ["2.2.2"])}, "policy2", {"deploy.yaml": ("test", True)})
applier("valid update strategy with update path", {"policy1": ("helloworld", ["1.0.0", "1.0.1"])},
        "policy1", {"yes/deploy.yaml": ("update-yes", True), "no/deploy.yaml": ("update-no", False)},
        path="./yes")
applier("unknown update strategy", {"policy1": ("helloworld", ["1.0.0", "1.0.1"])}, "policy1",
        {"deploy.yaml": ("test", False)}, strategy="foo")
sys.exit(t.done())
