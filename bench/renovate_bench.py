#!/usr/bin/python3
"""The body of bench/renovate.sh (issue 38, "the same job as Renovate"): IMAGES images of TAGS
tags each on a TLS docker-registry on loopback, one Git repository whose manifests reference
them with Flux markers and semver policies. `imageguard plan -o json` against Renovate in
local-platform lookup mode (`renovate --platform=local` in a checkout of the same manifests):
both must find the same (image, new version) pairs; then wall time and peak RSS of each
(/usr/bin/time), ROUNDS rounds interleaved (the order reversed every other round), medians and
ratios. Requests per image of each tool are counted from the registry's access log.
BENCH_KEEP=1 leaves the registry running and the directories in place (for profiling by hand;
with BENCH_ROUNDS=0 nothing is timed)."""
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.environ["IMAGEGUARD_SRC"]
sys.path.insert(0, os.path.join(SRC, "test", "fixtures"))
sys.path.insert(0, os.path.join(SRC, "bench"))
import registry  # noqa: E402
import regstore  # noqa: E402
from guard_env import Env, git  # noqa: E402

IMAGES = int(os.environ.get("BENCH_IMAGES", "200"))
TAGS = int(os.environ.get("BENCH_TAGS", "20"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
RENOVATE = os.environ.get("RENOVATE_BIN", "")
WALL_TARGET, RSS_TARGET = 20.0, 20.0
rnd = random.Random(38)


def verdict(ok):
    return "met" if ok else "MISSED"


def tag_sets():
    """Per image TAGS versions within major 1 (Renovate's default groups minor and patch into
    one non-major update, and a `>=1.0.0` semver policy picks the same newest) and the committed
    one: the newest for one image in ten (up to date), else an older one."""
    out = []
    for i in range(IMAGES):
        pool = ["1.%d.%d" % (m, p) for m in range(40) for p in range(3)]
        tags = sorted(rnd.sample(pool, TAGS), key=lambda t: tuple(map(int, t.split("."))))
        current = tags[-1] if i % 10 == 0 else tags[rnd.randrange(TAGS - 1)]
        out.append((tags, current))
    return out


def layout(reg, sets):
    """Repositories bench/r<i> laid out in the registry's storage (bench/regstore.py): each tag
    is a real manifest, listed and served."""
    digest = registry.push_image(reg.url, "bench/r0", ["0.0.1"], ca_file=reg.ca_file)
    shutil.rmtree(os.path.join(reg.dir, "data", "docker", "registry", "v2", "repositories",
                               "bench", "r0", "_manifests", "tags", "0.0.1"))
    regstore.link_repos(reg.dir, digest, [tags for tags, _ in sets])


def manifest(host, i, tag):
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: r%d\nspec:\n  template:\n"
            "    spec:\n      containers:\n        - name: app\n"
            "          image: %s/bench/r%d:%s # {\"$imagepolicy\": \"default:p%d\"}\n"
            % (i, host, i, tag, i))


def config(host):
    """ImageRepository (TLS, the CA from Secret regca) and ImagePolicy per image."""
    docs = []
    for i in range(IMAGES):
        docs.append("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
                    "metadata:\n  name: r%d\n  namespace: default\nspec:\n"
                    "  image: %s/bench/r%d\n  interval: 5m\n  certSecretRef:\n    name: regca\n"
                    % (i, host, i))
        docs.append("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
                    "metadata:\n  name: p%d\n  namespace: default\nspec:\n"
                    "  imageRepositoryRef:\n    name: r%d\n  policy:\n    semver:\n"
                    "      range: \">=1.0.0\"\n" % (i, i))
    return "".join(docs)


RENOVATE_JSON = {
    "$schema": "https://docs.renovatebot.com/renovate-schema.json",
    "extends": [],
    "enabledManagers": ["kubernetes"],
    "kubernetes": {"fileMatch": ["(^|/)apps/.+\\.yaml$"]},
    "dependencyDashboard": False,
    "prHourlyLimit": 0,
    "prConcurrentLimit": 0,
}


def usage(argv, cwd=None, env=None):
    """wall s (monotonic), peak RSS KiB and CPU s (user+sys) (/usr/bin/time), stdout, stderr;
    raises on a non-zero exit."""
    fd, path = tempfile.mkstemp(prefix="ig-usage.")
    os.close(fd)
    try:
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-q", "-f", "%U %S %M", "-o", path] + argv, cwd=cwd,
                           env=env, capture_output=True)
        dt = time.monotonic() - t0
        with open(path) as f:
            user, system, rss = f.read().split()[-3:]
    finally:
        os.unlink(path)
    if p.returncode != 0:
        raise RuntimeError("%s exited %d:\n%s" % (
            argv[0], p.returncode, (p.stdout + p.stderr).decode(errors="replace")[-3000:]))
    return dt, int(rss), float(user) + float(system), p.stdout, p.stderr


def plan_updates(out):
    got = set()
    for d in json.loads(out):
        if d["decision"] == "update":
            got.add((d["image"].rsplit("/", 1)[-1], d["candidate"]))
        elif d["decision"] != "none":
            raise RuntimeError("plan: unexpected decision %r" % d)
    return got


def renovate_updates(err_and_out):
    """The (image, newValue) pairs of Renovate's `packageFiles with updates` debug record."""
    got, seen = set(), False
    for line in err_and_out.splitlines():
        if not line.startswith(b"{"):
            continue
        rec = json.loads(line)
        if rec.get("msg") != "packageFiles with updates":
            continue
        seen = True
        for files in rec["config"].values():
            for pf in files:
                for dep in pf.get("deps", []):
                    if dep.get("datasource") != "docker":  # apiVersion/kind: kubernetes-api
                        continue
                    for u in dep.get("updates", []):
                        got.add((dep["depName"].rsplit("/", 1)[-1], u["newValue"]))
    if not seen:
        raise RuntimeError("renovate: no 'packageFiles with updates' record")
    return got


def count_requests(log, start, end, label):
    """Requests between two offsets of the registry's access log, by kind."""
    with open(log, "rb") as f:
        f.seek(start)
        text = f.read(end - start).decode(errors="replace")
    kinds = {}
    for m in re.finditer(r'"(GET|HEAD|POST|PUT) (/v2/[^ ?]*)', text):
        method, path = m.groups()
        kind = ("tags/list" if path.endswith("/tags/list") else
                "manifests" if "/manifests/" in path else
                "blobs" if "/blobs/" in path else "/v2/" if path == "/v2/" else "other")
        kinds["%s %s" % (method, kind)] = kinds.get("%s %s" % (method, kind), 0) + 1
    total = sum(kinds.values())
    print("  %-10s %4d requests, %.2f per image: %s" % (
        label, total, total / IMAGES,
        ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))


def main():
    regdir = tempfile.mkdtemp(prefix="ig-renovate-reg.")
    reg = registry.start_registry(regdir, tls=True, access_log=True)
    env = None
    try:
        env = Env(registry_host=reg.host, start_registry=False)
        t0 = time.monotonic()
        sets = tag_sets()
        layout(reg, sets)
        files = {"apps/r%d.yaml" % i: manifest(reg.host, i, cur) for i, (_, cur) in enumerate(sets)}
        files["renovate.json"] = json.dumps(RENOVATE_JSON, indent=2) + "\n"
        env.seed(files, message="200 images")
        os.makedirs(os.path.join(env.secrets, "regca"))
        shutil.copy(reg.ca_file, os.path.join(env.secrets, "regca", "ca.crt"))
        env.config(config(reg.host) + env.automation(path="./apps"))
        checkout = os.path.join(env.dir, "checkout")
        git("clone", "-q", env.remote, checkout)
        want = {("r%d" % i, tags[-1]) for i, (tags, cur) in enumerate(sets) if cur != tags[-1]}
        print("setup: %d images of %d tags on %s (TLS), %d markers behind, %.1fs"
              % (IMAGES, TAGS, reg.url, len(want), time.monotonic() - t0))

        cache = os.path.join(env.dir, "renovate-cache")
        renv = dict(os.environ, LOG_FORMAT="json", LOG_LEVEL="debug",
                    NODE_EXTRA_CA_CERTS=reg.ca_file, RENOVATE_PLATFORM="local",
                    RENOVATE_ONBOARDING="false", RENOVATE_REQUIRE_CONFIG="optional",
                    RENOVATE_CACHE_DIR=cache, RENOVATE_BASE_DIR=os.path.join(env.dir, "rbase"),
                    NO_COLOR="1")
        for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "GITHUB_COM_TOKEN",
                  "RENOVATE_TOKEN"):
            renv.pop(k, None)
        ig_argv = env.args("plan", "-o", "json")
        rv_argv = [RENOVATE, "--platform=local"]

        def run_ig():
            dt, rss, cpu, out, _ = usage(ig_argv)
            return dt, rss, cpu, plan_updates(out)

        def run_rv():
            shutil.rmtree(cache, ignore_errors=True)  # every round looks the tags up again
            dt, rss, cpu, out, err = usage(rv_argv, cwd=checkout, env=renv)
            return dt, rss, cpu, renovate_updates(out + b"\n" + err)

        env.imageguard("plan")  # the clone cache, as a controller holds it
        log = os.path.join(regdir, "access.log")
        print("requests (registry access log), one run each:")
        a = os.path.getsize(log)
        _, _, _, ig_got = run_ig()
        time.sleep(0.3)
        b = os.path.getsize(log)
        count_requests(log, a, b, "imageguard")
        _, _, _, rv_got = run_rv()
        time.sleep(0.3)
        count_requests(log, b, os.path.getsize(log), "renovate")
        for name, got in (("imageguard plan", ig_got), ("renovate", rv_got)):
            if got != want:
                raise RuntimeError("%s: %d updates, %d expected, %d differ: %s" % (
                    name, len(got), len(want), len(got ^ want), sorted(got ^ want)[:5]))
        print("same updates: %d (image, new version) pairs from both, equal to the expected set"
              % len(want))

        ig, rv = [], []
        if not ROUNDS:
            return
        for r in range(ROUNDS):
            order = (("ig", run_ig), ("rv", run_rv))
            for name, fn in (order if r % 2 == 0 else order[::-1]):
                dt, rss, cpu, got = fn()
                if got != want:
                    raise RuntimeError("round %d: %s's updates changed" % (r, name))
                (ig if name == "ig" else rv).append((dt, rss, cpu))
            print("  round %d: plan %.3fs %.1f MiB cpu %.2fs, renovate %.3fs %.1f MiB cpu %.2fs, "
                  "load %s" % (r + 1, ig[-1][0], ig[-1][1] / 1024, ig[-1][2], rv[-1][0],
                               rv[-1][1] / 1024, rv[-1][2], open("/proc/loadavg").read().split()[0]))
        iw, im, ic = (statistics.median(x[k] for x in ig) for k in range(3))
        rw, rm, rc = (statistics.median(x[k] for x in rv) for k in range(3))
        per_round = statistics.median(b[0] / a[0] for a, b in zip(ig, rv))
        version = [x for x in subprocess.run([RENOVATE, "--version"], capture_output=True,
                                             text=True, env=renv).stdout.splitlines()
                   if x and not x.startswith("{")][-1]
        print("medians of %d rounds (%d images, %d tags each):" % (ROUNDS, IMAGES, TAGS))
        print("  %-22s %8s %12s %10s" % ("", "wall s", "peak RSS MiB", "cpu s"))
        print("  %-22s %8.3f %12.1f %10.2f" % ("imageguard plan", iw, im / 1024, ic))
        print("  %-22s %8.3f %12.1f %10.2f" % ("renovate %s" % version, rw, rm / 1024, rc))
        print("  ratio: %.1fx faster wall (per-round median %.1fx), %.1fx less peak RSS, "
              "%.1fx less cpu" % (rw / iw, per_round, rm / im, rc / ic))
        print("  target: >= %dx faster wall: %s; >= %dx less peak RSS: %s" % (
            WALL_TARGET, verdict(rw / iw >= WALL_TARGET), RSS_TARGET,
            verdict(rm / im >= RSS_TARGET)))
        print("  load average while it ran: %s" % open("/proc/loadavg").read().strip())
    finally:
        if os.environ.get("BENCH_KEEP"):  # for profiling by hand: the caller stops the registry
            print("kept: %s %s" % (env.dir if env else None, regdir))
        else:
            if env:
                env.close()
            reg.stop()
            shutil.rmtree(regdir, ignore_errors=True)


if __name__ == "__main__":
    main()
