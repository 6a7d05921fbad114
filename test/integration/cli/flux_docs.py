#!/usr/bin/python3
"""Every YAML example of Flux's image-update guide and of the three API pages (imagerepositories,
imagepolicies, imageupdateautomations), vendored in test/data/flux-docs/ (README: sources and
commits), is accepted by check-config, or refused with a message naming the real problem
(test/data/flux-docs/expected.txt, one line per example).

Partial snippets are completed as the pages describe them: a document without apiVersion gets
its kind's v1 group version, a placeholder (`<automation-name>`) the name it stands for
(`automation-name`), alternatives shown under one name in one block a second name, without
metadata.name the name the page's walkthrough uses
(podinfo), in namespace flux-system; what an example refers to and does not define (the
ImageRepository of a policy, the GitRepository of an automation) is added beside it, as the page's
first complete example defines it; a partial ImagePolicy gets the walkthrough's
imageRepositoryRef (podinfo), a partial automation the walkthrough's sourceRef and interval.
Documents of other kinds (Secrets, Deployments, Receivers) are left as they are: they are
Flux's neighbours, not objects of ours, and must pass silently.

Run with --print to show what check-config says of each example (to review expected.txt)."""
import os
import re
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import IMAGEGUARD, Checks  # noqa: E402

t = Checks()
DOCS = os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "data", "flux-docs")
PAGES = ("image-update", "imagerepositories", "imagepolicies", "imageupdateautomations")
API = {"ImageRepository": "image.toolkit.fluxcd.io/v1", "ImagePolicy": "image.toolkit.fluxcd.io/v1",
       "ImageUpdateAutomation": "image.toolkit.fluxcd.io/v1",
       "GitRepository": "source.toolkit.fluxcd.io/v1"}


def complete(doc):
    """A partial document of ours completed as the page describes it (see above)."""
    kind = doc.get("kind")
    if kind not in API:
        return doc
    doc.setdefault("apiVersion", API[kind])
    meta = doc.setdefault("metadata", {}) or {}
    doc["metadata"] = meta
    meta.setdefault("name", "podinfo")
    meta.setdefault("namespace", "flux-system")
    spec = doc.setdefault("spec", {}) or {}
    doc["spec"] = spec
    if kind == "ImageRepository":
        spec.setdefault("image", "ghcr.io/stefanprodan/podinfo")
        spec.setdefault("interval", "5m")
    elif kind == "ImagePolicy":
        spec.setdefault("imageRepositoryRef", {"name": "podinfo"})
        spec.setdefault("policy", {"semver": {"range": "5.0.x"}})
    elif kind == "ImageUpdateAutomation":
        spec.setdefault("interval", "30m")
        spec.setdefault("sourceRef", {"kind": "GitRepository", "name": "flux-system"})
    elif kind == "GitRepository":
        spec.setdefault("url", "https://github.com/example/fleet")
        spec.setdefault("interval", "1m")
    return doc


def companions(docs):
    """What the documents refer to and do not define: ImageRepositories of policies,
    GitRepositories of automations."""
    have = {(d.get("kind"), d["metadata"].get("namespace"), d["metadata"].get("name"))
            for d in docs if d.get("kind") in API}
    out = []
    for d in docs:
        ns = d.get("metadata", {}).get("namespace", "flux-system")
        spec = d.get("spec") or {}
        if d.get("kind") == "ImagePolicy":
            ref = spec.get("imageRepositoryRef") or {}
            key = ("ImageRepository", ref.get("namespace", ns), ref.get("name"))
            kind = "ImageRepository"
        elif d.get("kind") == "ImageUpdateAutomation":
            ref = spec.get("sourceRef") or {}
            key = ("GitRepository", ref.get("namespace", ns), ref.get("name"))
            kind = "GitRepository"
        else:
            continue
        if key[2] and key not in have:
            have.add(key)
            out.append(complete({"kind": kind, "metadata": {"name": key[2],
                                                            "namespace": key[1]}}))
    return out


def check_config(docs, tmp):
    cfg = os.path.join(tmp, "example.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)
    # no --secrets-dir: the Secrets an example names live in the cluster, not in the example
    p = subprocess.run([IMAGEGUARD, "check-config", "--config", cfg],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr.replace(cfg, "example.yaml")


def expectations():
    out = {}
    with open(os.path.join(DOCS, "expected.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, verdict, *rest = line.rstrip("\n").split(" ", 2)
                out[name] = (verdict, rest[0] if rest else "")
    return out


def main():
    printing = "--print" in sys.argv
    want = {} if printing else expectations()
    counts = {}
    with tempfile.TemporaryDirectory(prefix="imageguard-fluxdocs.") as tmp:
        for page in PAGES:
            for f in sorted(os.listdir(os.path.join(DOCS, page))):
                name = "%s/%s" % (page, f)
                path = os.path.join(DOCS, page, f)
                with open(path) as fh:
                    # placeholders are the reader's to fill: <automation-name> -> automation-name
                    text = re.sub(r"(?<!\?P)<([a-z][a-z-]*)>", r"\1", fh.read())
                try:
                    docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
                except yaml.YAMLError:
                    docs = None  # not YAML as printed ("[...]"): imageguard must say so
                ours = [complete(d) for d in docs if d.get("kind") in API] if docs else []
                seen = set()
                for d in ours:  # alternatives shown in one block under one name
                    key = (d["kind"], d["metadata"]["namespace"], d["metadata"]["name"])
                    if key in seen:
                        d["metadata"]["name"] += "-2"
                    seen.add(key)
                c = counts.setdefault(page, [0, 0, 0])
                c[0] += 1
                if docs is None:
                    c[1] += 1
                    p = subprocess.run([IMAGEGUARD, "check-config", "--config", path],
                                       capture_output=True, text=True, timeout=60)
                    verdict = "accepted" if p.returncode == 0 else "refused"
                    text = " | ".join(p.stderr.replace(DOCS + "/", "").splitlines())
                elif not ours:
                    verdict, text = "other", ""
                else:
                    c[1] += 1
                    rc, err = check_config(docs + companions(docs), tmp)
                    verdict = "accepted" if rc == 0 else "refused"
                    text = " | ".join(err.splitlines())
                c[2] += verdict == "accepted"
                if printing:
                    print(name, verdict, text)
                    continue
                w = want.get(name)
                t.check(w is not None, "%s: listed in expected.txt" % name)
                if w is None:
                    continue
                ok = verdict == w[0] and (not w[1] or w[1] in text)
                t.check(ok, "%s: %s%s" % (name, w[0], " naming " + w[1] if w[1] else ""),
                        {"got": verdict, "message": text})
        for page, (n, run, acc) in counts.items():
            print("# %s: %d examples, %d with objects of ours, %d accepted" % (page, n, run, acc))
    if not printing:
        t.done()


main()
