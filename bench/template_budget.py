#!/usr/bin/python3
"""Wall time of one `reconcile` pass (docker-registry, bare remote) for a normal automation
(Flux's v1 messageTemplate) alone, beside a benign second automation, and beside a hostile
automation whose template burns its
whole CPU budget at load, or at commit (it passes the load on one change). Best of BENCH_RUNS
(default 5). The difference is what one hostile tenant costs the others' pass."""
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, marker_file  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
FLUX_TEMPLATE = (
    "Automated image update\n\nAutomation name: {{ .AutomationObject }}\n\nFiles:\n"
    "{{ range $filename, $_ := .Changed.FileChanges -}}\n- {{ $filename }}\n{{ end -}}\n")
BURN = ('{{range 90000}}{{regexMatch "^(a|aa)*$" "aaaaaaaaaaaaaaaaaaaaaaaab"}}{{end}}')
HOSTILE = {
    "alone": None,
    "beside a benign one": "benign {{ .AutomationObject }}",
    "hostile refused at load": BURN,
    "hostile refused at commit": "{{if gt (len .Changed.FileChanges) 1}}%s{{end}}" % BURN,
}


def automation(name, path, tmpl):
    block = "\n".join("        " + line for line in tmpl.split("\n"))
    return ("---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: %s\n  namespace: default\nspec:\n  interval: 1m\n"
            "  sourceRef:\n    kind: GitRepository\n    name: gitops\n"
            "  git:\n    checkout:\n      ref:\n        branch: main\n"
            "    commit:\n      messageTemplate: |-\n%s\n      author:\n"
            "        name: imageguard\n        email: imageguard@test\n"
            "    push:\n      branch: main\n"
            "  update:\n    path: %s\n    strategy: Setters\n" % (name, block, path))


def one_pass(hostile):
    with Env() as env:
        env.push("team/app", ["v1.0.0", "v1.1.0"])
        env.push("team/evil", ["1.0.0", "1.1.0"])
        env.seed({"good/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
                  "evil/a.yaml": marker_file(env.image("team/evil") + ":1.0.0", "evil"),
                  "evil/b.yaml": marker_file(env.image("team/evil") + ":1.0.0", "evil")})
        text = (env.repository("app", "team/app") + env.repository("evil", "team/evil")
                + env.policy("app", "app", semver=">=1.0.0")
                + env.policy("evil", "evil", semver=">=1.0.0")
                + env.automation().split("---\napiVersion: image")[0]
                + automation("good", "./good", FLUX_TEMPLATE))
        if hostile:
            text += automation("hostile", "./evil", hostile)
        env.config(text)
        t0, u0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        r = env.imageguard("reconcile")
        wall = time.monotonic() - t0
        u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime
        if os.environ.get("BENCH_VERBOSE"):
            print(r.err)
        ok = env.remote_file("good/app.yaml") == marker_file(
            env.image("team/app") + ":v1.1.0", "app")
        return wall, cpu, ok, r.rc


# wall time on a busy machine includes waiting for a core: the process's CPU time is shown too
for name, hostile in HOSTILE.items():
    runs = [one_pass(hostile) for _ in range(RUNS)]
    print("reconcile, normal automation %-26s best %.2f s wall, %.2f s CPU of %d (normal "
          "committed: %s, exit %s)" % (name + ":", min(r[0] for r in runs),
                                       min(r[1] for r in runs), RUNS,
                                       all(r[2] for r in runs), sorted({r[3] for r in runs})))
