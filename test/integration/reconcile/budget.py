#!/usr/bin/python3
"""A tenant's messageTemplate runs within its budget (CONTRACT §4), end to end against a real
docker-registry and a bare Git remote: beside a normal automation (Flux's own v1 template), a
hostile one (infinite recursion; exponential recursion in a define; catastrophic regex
backtracking that only the real data reaches) is an error/config decision naming the object,
at load or at commit, and the normal automation still commits in the same pass. How long the
pass takes is measured outside the tests (docs/configuration.md#template-budget)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, Result, IMAGEGUARD, marker_file, by_file  # noqa: E402

t = Checks()

# Flux's image-automation-controller v1 documentation's messageTemplate
FLUX_TEMPLATE = (
    "Automated image update\n\nAutomation name: {{ .AutomationObject }}\n\nFiles:\n"
    "{{ range $filename, $_ := .Changed.FileChanges -}}\n- {{ $filename }}\n{{ end -}}\n\n"
    "Objects:\n{{ range $resource, $changes := .Changed.Objects -}}\n"
    "- {{ $resource.Kind }} {{ $resource.Name }}\n  Changes:\n"
    "{{- range $_, $change := $changes }}\n    - {{ $change.OldValue }} -> "
    "{{ $change.NewValue }}\n{{ end -}}\n{{ end -}}\n")

# refused at load: each spends its budget on one sample change
AT_LOAD = {
    "recursion": '{{define "a"}}{{template "a"}}{{end}}{{template "a"}}',
    # only more than five changes would call it: the load runs each define alone
    "define": ('{{define "a"}}{{range until 2}}{{template "a" $}}{{end}}{{end}}'
               '{{if gt (len .Changed.Changes) 5}}{{template "a" .}}{{end}}'),
    "regex": '{{range until 5000}}{{regexMatch "^(a|aa)*$" "aaaaaaaaaaaaaaaaaaaaaaaab"}}'
             '{{end}}',
}
# passes the load (one file), over budget at commit (two files)
AT_COMMIT = ('{{if gt (len .Changed.FileChanges) 1}}'
             '{{regexMatch "^(a+)+$" (printf "%sb" (repeat 40 "a"))}}{{end}}')


def check_config(env):
    return Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir],
                                 capture_output=True, text=True, timeout=120))


def template_block(tmpl):
    return "    commit:\n      messageTemplate: |-\n%s\n" % "\n".join(
        "        " + line for line in tmpl.split("\n"))


def automation(name, path, tmpl):
    """An ImageUpdateAutomation on env.automation()'s GitRepository 'gitops'."""
    return ("---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: %s\n  namespace: default\nspec:\n  interval: 1m\n"
            "  sourceRef:\n    kind: GitRepository\n    name: gitops\n"
            "  git:\n    checkout:\n      ref:\n        branch: main\n"
            "%s      author:\n        name: imageguard\n"
            "        email: imageguard@test\n    push:\n      branch: main\n"
            "  update:\n    path: %s\n    strategy: Setters\n"
            % (name, template_block(tmpl), path))


def setup(env, hostile_tmpl):
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.push("team/evil", ["1.0.0", "1.1.0"])
    env.seed({"good/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
              "evil/a.yaml": marker_file(env.image("team/evil") + ":1.0.0", "evil"),
              "evil/b.yaml": marker_file(env.image("team/evil") + ":1.0.0", "evil")})
    env.config(env.repository("app", "team/app") + env.repository("evil", "team/evil")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.policy("evil", "evil", semver=">=1.0.0")
               # the GitRepository of env.automation(), without its automation
               + env.automation().split("---\napiVersion: image")[0]
               + automation("good", "./good", FLUX_TEMPLATE)
               + automation("hostile", "./evil", hostile_tmpl))


def good_committed(env, r):
    t.check(env.remote_file("good/app.yaml") ==
            marker_file(env.image("team/app") + ":v1.1.0", "app"),
            "the normal automation commits in the same pass", r)
    msg = "\n".join(m for _, m in env.remote_log())
    t.check("Automation name: default/good" in msg and "v1.0.0 -> " in msg,
            "its commit message is Flux's template's", msg)


def evil_untouched(env):
    for f in ("evil/a.yaml", "evil/b.yaml"):
        t.check(env.remote_file(f) == marker_file(env.image("team/evil") + ":1.0.0", "evil"),
                "the hostile automation's marker %s is untouched" % f)


def at_load(env, kind):
    setup(env, AT_LOAD[kind])
    r = check_config(env)
    t.check(r.rc == 2 and "ImageUpdateAutomation 'default/hostile'" in r.err
            and "'spec.git.commit.messageTemplate'" in r.err
            and ("over budget" in r.err or "exceeded maximum template depth" in r.err),
            "%s: check-config refuses it, naming the object and the budget" % kind, r)
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json()) if r.out.strip() else {}
    evil = [i for i in items.values() if i["policy"] == "default/evil"]
    t.check(r.rc == 1 and evil and all(i["decision"] == "error" and i["reason"] == "config"
                                       and "default/hostile" in i.get("message", "")
                                       for i in evil),
            "%s: the hostile automation's policy is error/config naming it" % kind, items)
    good_committed(env, r)
    evil_untouched(env)


def at_commit(env):
    setup(env, AT_COMMIT)
    r = check_config(env)
    t.check(r.rc == 0, "a template over budget only on the real data passes the load", r)
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json()) if r.out.strip() else {}
    want = ("automation 'default/hostile': 'spec.git.commit.messageTemplate': template "
            "'messageTemplate': line 1: over budget: a regex match backtracked more than")
    for f in ("evil/a.yaml", "evil/b.yaml"):
        it = items.get(("default/evil", f), {})
        t.check(it.get("decision") == "error" and it.get("reason") == "config"
                and want in it.get("message", ""),
                "at commit: %s is error/config naming the automation and the budget" % f, it)
    t.check(r.rc == 1, "the pass reports the error (exit 1)", r)
    good_committed(env, r)
    evil_untouched(env)


scenarios = [(lambda env, k=k: at_load(env, k), "at_load_" + k) for k in AT_LOAD]
scenarios.append((at_commit, "at_commit"))
for scenario, name in scenarios:
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (name, e))
sys.exit(t.done())
