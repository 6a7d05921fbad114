#!/usr/bin/python3
"""One invalid object stops only itself (CONTRACT §4), end to end against a real docker-registry
and a bare Git remote: two automations on one remote, one of them invalid (a template function
that does not exist) — the other still commits; a policy whose secret is missing from
--secrets-dir is left out — the others still move; an invalid automation in a namespace with no
valid policy is an error/config item of its own; a path with no object at all exits 2."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file  # noqa: E402

t = Checks()


def second_automation(name, path, extra=""):
    """Another ImageUpdateAutomation on env.automation()'s GitRepository 'gitops'."""
    return ("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: %s\n  namespace: default\nspec:\n  interval: 1m\n"
            "  sourceRef:\n    kind: GitRepository\n    name: gitops\n"
            "  git:\n    checkout:\n      ref:\n        branch: main\n"
            "    commit:\n      author:\n        name: imageguard\n"
            "        email: imageguard@test\n%s    push:\n      branch: main\n"
            "  update:\n    path: %s\n    strategy: Setters\n" % (name, extra, path))


def broken_automation(env):
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"good/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
              "bad/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    env.config(env.repository("app", "team/app")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.automation(name="good", path="./good")
               + second_automation("bad", "./bad",
                                   "      messageTemplate: '{{ nosuchfunction .Changed }}'\n"))
    # plan names the invalid automation on the policy it would select, JSON and text
    r = env.imageguard("plan", "-o", "json")
    items = json.loads(r.out) if r.out.strip().startswith("[") else []
    bad = [i for i in items if i.get("object") == "ImageUpdateAutomation/default/bad"]
    t.check(r.rc == 1 and len(bad) == 1 and bad[0]["policy"] == "default/app" and
            bad[0]["decision"] == "error" and bad[0]["reason"] == "config" and
            "'spec.git.commit.messageTemplate'" in bad[0]["message"] and
            "ImageUpdateAutomation 'default/bad'" in bad[0]["message"],
            "plan -o json: an error/config item naming the automation and why", r)
    t.check([i for i in items if i.get("object") is None and i["decision"] == "update"],
            "plan -o json: the valid automation's update beside it", r)
    r = env.imageguard("plan")
    t.check(r.rc == 1 and any(line.startswith("default/app - error/config: ") and
                              "ImageUpdateAutomation 'default/bad'" in line
                              for line in r.out.splitlines()),
            "plan text: the error line names the automation", r)
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 1, "an invalid automation: exit 1 (an error), not 2", r)
    t.check([i for i in json.loads(r.out) if i.get("object") ==
             "ImageUpdateAutomation/default/bad"], "reconcile -o json names it too", r)
    t.check("ImageUpdateAutomation 'default/bad'" in r.err and "config.yaml:" in r.err
            and "'spec.git.commit.messageTemplate'" in r.err,
            "the invalid automation's error names it, the field and file:line", r)
    t.check(marker_file(env.image("team/app") + ":v1.1.0", "app") ==
            env.remote_file("good/app.yaml"), "the other automation still commits", r)
    t.check(marker_file(env.image("team/app") + ":v1.0.0", "app") ==
            env.remote_file("bad/app.yaml"), "the invalid automation's markers are untouched")


def lone_automation(env):
    """An invalid automation whose namespace holds no valid policy: no policy names it, so it
    is an error/config item of its own (no policy, no image) in plan and reconcile output."""
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    bad = (env.automation(name="bad", extra="").replace("namespace: default",
                                                          "namespace: other")
           .replace("        email: imageguard@test\n",
                    "        email: imageguard@test\n"
                    "      messageTemplate: '{{ nosuchfunction .Changed }}'\n"))
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation() + bad)
    for verb in ("plan", "reconcile"):
        r = env.imageguard(verb, "-o", "json")
        items = json.loads(r.out) if r.out.strip().startswith("[") else []
        mine = [i for i in items if i.get("object") == "ImageUpdateAutomation/other/bad"]
        t.check(r.rc == 1 and len(mine) == 1 and mine[0]["policy"] is None and
                mine[0]["image"] is None and mine[0]["decision"] == "error" and
                mine[0]["reason"] == "config" and
                "ImageUpdateAutomation 'other/bad'" in mine[0]["message"] and
                "'spec.git.commit.messageTemplate'" in mine[0]["message"],
                "%s -o json: the lone invalid automation is an error/config item" % verb, r)
        t.check([i for i in items if i["policy"] == "default/app" and "object" not in i],
                "%s -o json: the valid namespace's policy beside it, not blamed" % verb, r)
    t.check(marker_file(env.image("team/app") + ":v1.1.0", "app") == env.remote_file("app.yaml"),
            "the valid automation still commits")
    r = env.imageguard("plan")
    t.check(r.rc == 1 and any(line.startswith("- - error/config: ") and
                              "ImageUpdateAutomation 'other/bad'" in line
                              for line in r.out.splitlines()),
            "plan text: an error line for the automation itself", r)


def missing_secret(env):
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.push("team/web", ["2.0.0", "2.1.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
              "web.yaml": marker_file(env.image("team/web") + ":2.0.0", "web")})
    env.config(env.repository("app", "team/app")
               + env.repository("web", "team/web", extra="  secretRef:\n    name: nowhere\n")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.policy("web", "web", semver=">=1.0.0")
               + env.automation())
    r = env.imageguard("reconcile")
    want = ("ImageRepository 'default/web': 'spec.secretRef': secret 'nowhere' not found: "
            "'%s/nowhere' is not a folder" % env.secrets)
    t.check(r.rc == 1 and want in r.err, "a missing secret: its path named, exit 1", r)
    t.check(marker_file(env.image("team/app") + ":v1.1.0", "app") ==
            env.remote_file("app.yaml"), "the policies of other repositories still move", r)
    t.check(marker_file(env.image("team/web") + ":2.0.0", "web") ==
            env.remote_file("web.yaml"), "the policy of the repository in error is untouched")


def nothing_at_all(env):
    env.config("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n")
    r = env.imageguard("reconcile")
    t.check(r.rc == 2 and "no ImageRepository, ImagePolicy, GitRepository or "
            "ImageUpdateAutomation found" in r.err, "a path with no object: exit 2, said so", r)


for scenario in (broken_automation, lone_automation, missing_secret, nothing_at_all):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (scenario.__name__, e))
sys.exit(t.done())
