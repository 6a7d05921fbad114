#!/usr/bin/python3
"""Public Flux fleets read as Flux reads them (issue 35, yardsticks).

Each fleet under test/data/fleets/<owner>-<repo>/ is vendored from its public repository at the
commit its README names (gotk-components.yaml left out: the CRDs). Only two things are rewritten:
the registry host of every image (to Debian's docker-registry on loopback) and the Git URL of
every GitRepository (to a bare remote holding the fleet). Then check-config, markers, lint and
plan run over it, and the result is checked against what Flux does with the same objects:

- the documents counted, and how many imageguard accepts (the rest refused with the message
  naming the real problem: Flux v1's removed `.Updated` template field);
- kustomize patches skipped with one info line, never a second object;
- markers: every `$imagepolicy` marker of the tree is found, and lint finds no unknown policy;
- plan: each policy's choice among the tags pushed is the one Flux's policy makes (semver
  ranges without prereleases, alphabetical over `extract`), and the file Flux would write is
  what `reconcile` commits for the automations Flux runs.
"""
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import IMAGEGUARD, Env, Checks, Result, git  # noqa: E402

t = Checks()
FLEETS = os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "data", "fleets")
MARKER = re.compile(r'\{"\$imagepolicy": "([^"]+)"\}')

# name -> what Flux does with it. images: the image as the fleet spells it -> tags pushed;
# want: policy -> the tag Flux's policy picks among them; refused: files:line of the objects
# refused and a word the message must hold; writes: path -> (old line, new line) of what Flux
# commits (the automations Flux runs; none when every automation is refused).
CASES = {
    "alkrauss48-fleet-infra": {
        "docs": 35, "accepted": 34, "patches": 0, "plan_error": ".Updated",
        "images": {"alkrauss48/%s" % n: ["1.1.4", "1.2.0", "1.10.0-rc.1", "2.0.0"]
                   for n in ("cyrus-lyrics-api", "cyrus-lyrics-web", "lucas-hints-web",
                             "thecodeboss-hugo", "websockets-frontend", "websockets-backend",
                             "the-krauss-haus-web", "simple-slides-laravel", "labs-nginx",
                             "labs-php")},
        "want": {},
        "refused": {"flux-system-image-scanning.yaml:16": ".Updated"},
        "writes": {},
    },
    "jfmatth-k3s-flux": {
        "docs": 22, "accepted": 22, "patches": 0, "branch": "master",
        "images": {"ghcr.io/jfmatth/tornado-imageserver": ["v1.32", "v1.33", "v1.4", "v2.0"],
                   "ghcr.io/jfmatth/justneverlift.com": ["v2026.02.12-0", "v2026.03.01",
                                                         "v2026.03.01-1", "v2026.02.28-9"]},
        # ^v\d+\.\d{2}$ keeps v1.32, v1.33; extract $YEAR$MONTH$DAY.$PATCH gives 20260301.1
        # above 20260301. (no patch): both alphabetical asc, as Flux orders them
        "want": {"images": "v1.33", "justneverlift": "v2026.03.01-1"},
        "refused": {},
        "writes": {
            "clusters/my-cluster/justneverlift.com/jnl-helmrelease.yaml":
                ("      tag: v2026.02.12-0 #", "      tag: v2026.03.01-1 #"),
            "clusters/my-cluster/images/allinone.yaml":
                ("      tag: v1.32 #", "      tag: v1.33 #"),
        },
    },
    "gcleroux-fleet-infra": {
        "docs": 52, "accepted": 49, "patches": 0, "plan_error": ".Updated",
        "images": {"ghcr.io/gcleroux/substreams-sink-webhook": ["v0.1.0", "v0.2.0",
                                                                "v1.0.0-alpha.1"],
                   "ghcr.io/gcleroux/pinax-cloud-webhooks/pinax-cloud-webhooks.bun":
                       ["v0.1.0", "v0.1.1"],
                   "ghcr.io/gcleroux/substreams-sink-prometheus": ["v0.4.0", "v4.20.69",
                                                                   "v4.21.0"]},
        "want": {},
        "refused": {"pinax-cloud/flux-system-automation.yaml:16": ".Updated",
                    "repo-substreams/flux-system-automation.yaml:16": ".Updated",
                    "substreams-webhook/flux-system-automation.yaml:16": ".Updated"},
        "writes": {},
    },
    "fluxcd-flux2-multi-tenancy": {
        "docs": 15, "accepted": 15, "patches": 2, "images": {}, "want": {}, "refused": {},
        "writes": {},
    },
}


def documents(root, skipped):
    """The Kubernetes objects (apiVersion and kind) of the YAML files below root: kustomize's
    own kustomization files and the patches (skipped) left out."""
    n = 0
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if (not f.endswith((".yaml", ".yml")) or os.path.relpath(p, root) in skipped
                    or f in ("kustomization.yaml", "kustomization.yml")):
                continue
            with open(p) as fh:
                n += sum(1 for doc in yaml.safe_load_all(fh)
                         if isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc)
    return n


def rewrite(root, env, images):
    """Only the registry host and the Git URL change: image names keep their path."""
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p) as fh:
                text = fh.read()
            new = re.sub(r"(?m)^(\s*url:\s*)(ssh://git@github\.com/\S+|https://github\.com/\S+)$",
                         lambda m: m.group(1) + "file://" + env.remote, text)
            for image in sorted(images, key=len, reverse=True):
                path = image.split("/", 1)[1] if image.startswith("ghcr.io/") else image
                new = re.sub(r"(image:\s*|repository:\s*)%s\b" % re.escape(image),
                             lambda m: m.group(1) + env.image(path), new)
            # the loopback registry speaks plain HTTP: its ImageRepositories say so, as Flux
            # needs them to (`spec.insecure`), part of the registry host's rewrite
            new = re.sub(r"(?m)^(  image: %s/\S+)$" % re.escape(env.host),
                         lambda m: m.group(1) + "\n  insecure: true", new)
            if new != text:
                with open(p, "w") as fh:
                    fh.write(new)


def tree_files(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p) as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def fleet(name, c):
    with Env() as env:
        tree = os.path.join(env.dir, "fleet")
        shutil.copytree(os.path.join(FLEETS, name), tree, ignore=shutil.ignore_patterns("README*"))
        for image, tags in c["images"].items():
            path = image.split("/", 1)[1] if image.startswith("ghcr.io/") else image
            for i, tag in enumerate(tags):
                env.push(path, [tag], created="2026-01-%02dT00:00:00Z" % (i + 1))
        rewrite(tree, env, c["images"])
        files = tree_files(tree)
        env.seed(files)
        git("push", "-q", "origin", "main:master", cwd=env.work)  # jfmatth's fleet is on master
        for secret in set(re.findall(r"(?m)^  secretRef:\n    name: (\S+)$", "".join(files.values()))):
            os.makedirs(os.path.join(env.secrets, secret), exist_ok=True)
            for k in ("username", "password"):  # as `flux bootstrap` leaves it for HTTPS
                with open(os.path.join(env.secrets, secret, k), "w") as fh:
                    fh.write("git")

        # check-config: the patches skipped with one info line each, the refusals named
        r = Result(subprocess.run([IMAGEGUARD, "check-config", "--config", tree],
                                  capture_output=True, text=True, timeout=60))
        infos = [l for l in r.err.splitlines() if ": info: a patch named by " in l]
        t.check(len(infos) == c["patches"], "%s: %d patch(es) skipped with one info line"
                % (name, c["patches"]), r)
        skipped = {os.path.relpath(l.split(": info:")[0][len("imageguard: "):], tree)
                   for l in infos}
        errors = [l for l in r.err.splitlines() if re.match(r"imageguard: .*:\d+: ", l)
                  and ": warning: " not in l and ": info: " not in l]
        for where, word in c["refused"].items():
            t.check(any(where in l and word in l for l in errors),
                    "%s: %s refused naming %s" % (name, where, word), r.err)
        t.check(len(errors) == len(c["refused"]), "%s: nothing else refused" % name, r.err)
        t.check((r.rc == 0) == (not c["refused"]), "%s: check-config exit" % name, r)
        docs = documents(tree, skipped)
        t.check(docs == c["docs"], "%s: %d documents" % (name, c["docs"]), docs)
        t.check(docs - len(errors) == c["accepted"], "%s: %d accepted" % (name, c["accepted"]),
                (docs, errors))

        # markers: every marker of the tree; lint: none names an unknown policy
        want_markers = sum(len(MARKER.findall(v)) for k, v in files.items()
                           if k.endswith((".yaml", ".yml")))
        r = Result(subprocess.run([IMAGEGUARD, "markers", tree, "-o", "json"],
                                  capture_output=True, text=True, timeout=60))
        t.check(r.rc == 0 and len(r.json()) == want_markers,
                "%s: markers finds the %d markers grep finds" % (name, want_markers), r)
        r = Result(subprocess.run([IMAGEGUARD, "lint", tree, "--config", tree, "-o", "json"],
                                  capture_output=True, text=True, timeout=60))
        t.check(r.out.strip() and not [f for f in r.json() if f["rule"] == "unknown-policy"],
                "%s: lint --config finds no unknown policy" % name, r)

        r = Result(subprocess.run([IMAGEGUARD, "plan", "--config", tree, "--state-dir",
                                   env.state, "--secrets-dir", env.secrets, "-o", "json"],
                                  capture_output=True, text=True, timeout=120))
        items = r.json() if r.out.strip().startswith("[") else []
        if c.get("plan_error"):
            # every automation refused, as Flux refuses it: nothing is written, and each policy
            # under it says why in plan
            t.check(r.rc != 0 and items and all(
                i["decision"] == "error" and i["reason"] == "config"
                and c["plan_error"] in i["message"] for i in items),
                "%s: plan: every policy error/config naming %s" % (name, c["plan_error"]), r)
            t.check(env.remote_log()[0][1].startswith("seed files"),
                    "%s: nothing written" % name, env.remote_log()[:1])
        if not c["want"]:
            return
        # plan: each policy's choice is Flux's
        for pol, tag in c["want"].items():
            got = {i.get("candidate") or i.get("current") for i in items
                   if i.get("policy") == "flux-system/" + pol and i.get("decision") != "error"}
            t.check(got == {tag}, "%s: plan picks %s for %s, as Flux" % (name, tag, pol),
                    [i for i in items if i.get("policy") == "flux-system/" + pol] or r)
        # reconcile: what Flux writes
        if c["writes"]:
            r = Result(subprocess.run([IMAGEGUARD, "reconcile", "--config", tree,
                                       "--state-dir", env.state, "--secrets-dir", env.secrets,
                                       "-o", "json"], capture_output=True, text=True,
                                      timeout=120))
            t.check(r.rc == 0, "%s: reconcile exits 0" % name, r)
            for path, (old, new) in c["writes"].items():
                want = files[path].replace(old, new)
                got = env.remote_file(path, rev=c.get("branch", "main"))
                t.check(got == want, "%s: %s is what Flux writes" % (name, path),
                        {"got": got, "want": want})


for fleet_name, case in CASES.items():
    fleet(fleet_name, case)
t.done()
