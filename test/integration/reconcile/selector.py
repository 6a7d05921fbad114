#!/usr/bin/python3
"""policySelector end to end against a real docker-registry and a bare Git remote: markers of the
policies an automation does not select (labels, or another namespace) are left untouched, as
Flux's image-automation-controller does; with the selector removed they move. Also the invalid
objects reported as error/config decisions in the JSON report."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, by_file  # noqa: E402

t = Checks()

SELECTOR = ("  policySelector:\n    matchExpressions:\n"
            "      - {key: app.kubernetes.io/part-of, operator: In, values: [shop]}\n")


def labelled(env, name, repo, labels, ns="default"):
    text = env.policy(name, repo, semver=">=1.0.0")
    text = text.replace("  namespace: default\n", "  namespace: %s\n%s" % (ns, labels), 1)
    return text.replace("imageRepositoryRef:\n    name: %s\n" % repo,
                        "imageRepositoryRef:\n    name: %s\n    namespace: default\n" % repo)


def selector(env):
    env.push("team/app", ["1.0.0", "1.1.0"])
    env.seed({"shop.yaml": marker_file(env.image("team/app") + ":1.0.0", "shop"),
              "blog.yaml": marker_file(env.image("team/app") + ":1.0.0", "blog"),
              "other.yaml": marker_file(env.image("team/app") + ":1.0.0", "x").replace(
                  "default:x", "other:x")})
    # the repository admits every namespace (Flux's ACL): what keeps other:x out is the
    # automation's namespace alone
    base = (env.repository("app", "team/app",
                           extra="  accessFrom:\n    namespaceSelectors: [{matchLabels: {}}]\n")
            + labelled(env, "shop", "app", "  labels:\n    app.kubernetes.io/part-of: shop\n")
            + labelled(env, "blog", "app", "  labels:\n    app.kubernetes.io/part-of: blog\n")
            + labelled(env, "x", "app", "  labels:\n    app.kubernetes.io/part-of: shop\n",
                       ns="other"))
    env.config(base + env.automation(extra=SELECTOR))
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json()) if r.out.strip() else {}
    t.check(r.rc == 0, "selector pass exits 0", r)
    t.check(env.remote_file("shop.yaml") == marker_file(env.image("team/app") + ":1.1.0", "shop"),
            "the selected policy's marker moves", items)
    t.check(env.remote_file("blog.yaml") == marker_file(env.image("team/app") + ":1.0.0", "blog"),
            "an unselected policy's marker is untouched", items)
    t.check("other:x" in env.remote_file("other.yaml") and ":1.0.0" in env.remote_file("other.yaml"),
            "a policy of another namespace is untouched, as in Flux", items)
    t.check(items.get(("default/blog", None), {}).get("reason") == "no-markers",
            "the unselected policy is reported without markers", items)

    env.config(base + env.automation())
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and env.remote_file("blog.yaml") ==
            marker_file(env.image("team/app") + ":1.1.0", "blog"),
            "without a selector every policy of the namespace moves", r)


def invalid_reported(env):
    env.push("team/app", ["1.0.0"])
    env.seed({"a.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    env.config(env.repository("app", "team/app")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.policy("bad", "app", semver=">=>1")
               + env.automation())
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json())
    bad = items.get(("default/bad", None), {})
    t.check(r.rc == 1 and bad.get("decision") == "error" and bad.get("reason") == "config"
            and "config.yaml:" in bad.get("message", "") and "semver range" in bad["message"],
            "an invalid policy is an error/config decision with its file:line message", items)
    t.check(items[("default/app", "a.yaml")]["reason"] == "up-to-date",
            "the valid policy is still decided", items)


for scenario in (selector, invalid_reported):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (scenario.__name__, e))
sys.exit(t.done())
