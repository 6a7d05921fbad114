#!/usr/bin/python3
"""Where a shard's memory goes (issue 38): N ImageRepository/ImagePolicy pairs in one namespace
("default", the bench's layout: every automation there selects every policy, Flux's rule),
loaded into the etcd-backed API fixture as bench/shards_bench.py loads them, AUTOS automations
per shard (names placed with `check-config --shards 10`, imageguard's own hash) whose remotes
(git http-backend) hold markers naming N/10 policies a shard (policy i in remote i mod 20, as
shards_bench.py), images on a stub registry that answers every tags/list with the same TAGS tags
(--no-git: Git URLs and registry refuse at once, 127.0.0.1:1: no markers, no scan), then
`imageguard run --kube --shards 10 --shard-index I`. VmHWM, VmRSS and smaps_rollup are read
from /proc when the --passes-th `reconcile.pass` is logged (a shard other than 0 decides its
markers from its second: its first finds which policies they name).

    bench/shard_mem.py [--pairs N] [--shard I] [--autos K] [--owner-none]
                       [--wrap 'valgrind --tool=massif ...'] [--keep] [--smaps FILE]
                       [--api-dir DIR (reuse a running fixture: DIR/kubeconfig)]
                       [--serve-only DIR (start the fixture, print DIR, wait)]

Prints one JSON line: pairs, shard, owned automations, VmHWM_kib, VmRSS_kib, the
smaps_rollup figures, seconds to the first pass."""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
IMAGEGUARD = os.environ.get("IMAGEGUARD") or os.path.join(SRC, "build", "imageguard")
BENCH = os.path.join(SRC, "bench", "shards_bench.py")
sys.path.insert(0, os.path.join(SRC, "bench"))
from shards_bench import PER_FILE, automation, git, git_repository  # noqa: E402
IMG = "image.toolkit.fluxcd.io"
SHARDS = 10
DEAD = "127.0.0.1:1"  # refuses at once: passes are quick
GIT_HTTP = os.path.join(SRC, "test", "fixtures", "git_http.py")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def seed_remotes(tmp, pairs, names, host, tag):
    """Policy i's marker in remote names[i % len(names)] (as shards_bench.py), its image on host."""
    root = os.path.join(tmp, "git")
    order = sorted(names)
    for r, name in enumerate(order):
        bare = os.path.join(root, name + ".git")
        git("init", "-q", "--bare", "-b", "main", bare)
        git("--git-dir", bare, "config", "http.receivepack", "true")
        work = os.path.join(tmp, "human", name)
        os.makedirs(os.path.join(work, "apps"))
        mine = list(range(r, pairs, len(order)))
        for k in range(0, len(mine), PER_FILE):
            out = ["apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d%d\nspec:\n"
                   "  template:\n    spec:\n      containers:\n" % k]
            for i in mine[k:k + PER_FILE]:
                out.append("        - name: c%d\n          image: %s/bench/s%d:%s"
                           " # {\"$imagepolicy\": \"default:p%d\"}\n" % (i, host, i, tag, i))
            with open(os.path.join(work, "apps", "d%05d.yaml" % (k // PER_FILE)), "w") as f:
                f.write("".join(out))
        git("init", "-q", "-b", "main", cwd=work)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "seed " + name, cwd=work)
        git("push", "-q", bare, "main", cwd=work)
    return root


def serve_registry(port, tags):
    """A registry that answers every tags/list with the same tags, at once (HTTP/1.1,
    keep-alive), and 404 to anything else."""
    import http.server
    import hashlib
    body = json.dumps({"name": "x", "tags": ["1.%d.0" % k for k in range(tags)]}).encode()
    manifest = json.dumps({"schemaVersion": 2, "mediaType":
                           "application/vnd.oci.image.manifest.v1+json", "config": {
                               "mediaType": "application/vnd.oci.image.config.v1+json",
                               "digest": "sha256:" + "0" * 64, "size": 2}, "layers": []}).encode()
    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, head):
            path = self.path.split("?")[0]
            if path.endswith("/tags/list"):
                code, data = 200, body
            elif "/manifests/" in path or path == "/v2/":
                code, data = 200, manifest
            else:
                code, data = 404, b"{}"
            self.send_response(code)
            self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json"
                             if "/manifests/" in path else "application/json")
            self.send_header("Docker-Content-Digest", digest)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not head:
                self.wfile.write(data)

        def do_GET(self):
            self.answer(False)

        def do_HEAD(self):
            self.answer(True)

        def log_message(self, *a):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()


def owners(tmp, cands, git_url):
    """{name: shard} from `check-config --shards 10` (the hash reads the Git URL)."""
    d = os.path.join(tmp, "pick")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.yaml"), "w") as f:
        for c in cands:
            f.write(git_repository(c, git_url(c)) + automation(c))
    r = subprocess.run([IMAGEGUARD, "check-config", "--config", d, "--shards", str(SHARDS)],
                       capture_output=True, text=True)
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r"ImageUpdateAutomation 'default/(\S+)': shard (\d+)/%d" % SHARDS, r.stdout)}


def pick(tmp, autos, git_url, skip_shard=None):
    """autos automation names per shard (none for skip_shard); {name: shard}."""
    cands = ["app%03d" % i for i in range(SHARDS * max(autos, 1) * 8)]
    own = owners(tmp, cands, git_url)
    out = {}
    for c in cands:
        s = own.get(c)
        if s is None or s == skip_shard:
            continue
        if sum(1 for v in out.values() if v == s) < autos:
            out[c] = s
    return out


def objects(path, pairs, names, git_url, host):
    with open(path, "w") as f:
        f.write(json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "git-auth", "namespace": "default"}, "type": "Opaque",
            "data": {"username": "Z2l0", "password": "YmVuY2gtczNjcmV0"}}) + "\n")
        for i in range(pairs):
            f.write(json.dumps({"apiVersion": IMG + "/v1beta2", "kind": "ImageRepository",
                                "metadata": {"name": "s%d" % i, "namespace": "default"},
                                "spec": {"image": "%s/bench/s%d" % (host, i),
                                         "interval": "1s", "insecure": True}}) + "\n")
            f.write(json.dumps({"apiVersion": IMG + "/v1beta2", "kind": "ImagePolicy",
                                "metadata": {"name": "p%d" % i, "namespace": "default"},
                                "spec": {"imageRepositoryRef": {"name": "s%d" % i},
                                         "policy": {"semver": {"range": ">=1.0.0"}}}})
                    + "\n")
        for name in names:
            f.write(json.dumps({
                "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                "metadata": {"name": "git-" + name, "namespace": "default"},
                "spec": {"interval": "1m", "ref": {"branch": "main"},
                         "url": git_url(name),
                         "secretRef": {"name": "git-auth"}}}) + "\n")
            f.write(json.dumps({
                "apiVersion": IMG + "/v1beta2", "kind": "ImageUpdateAutomation",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"interval": "1s",
                         "sourceRef": {"kind": "GitRepository", "name": "git-" + name},
                         "git": {"checkout": {"ref": {"branch": "main"}},
                                 "commit": {"author": {"name": "imageguard",
                                                       "email": "imageguard@test"}},
                                 "push": {"branch": "main"}},
                         "update": {"path": "./", "strategy": "Setters"}}}) + "\n")


def start_api(tmp, objs):
    d = os.path.join(tmp, "api")
    os.makedirs(d)
    log = open(os.path.join(tmp, "api.log"), "w")
    p = subprocess.Popen([sys.executable, BENCH, "serve-api", d, objs], stdout=log,
                         stderr=subprocess.STDOUT)
    while not os.path.exists(os.path.join(d, "port")):
        if p.poll() is not None:
            raise RuntimeError("API fixture: " + open(os.path.join(tmp, "api.log")).read()[-2000:])
        time.sleep(0.2)
    return p, os.path.join(d, "kubeconfig")


def proc_figures(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k = line.split(":")[0]
            if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "Threads"):
                out[k] = int(line.split()[1])
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                m = re.match(r"(Rss|Pss|Anonymous|Private_Dirty|Shared_Clean):\s+(\d+)", line)
                if m:
                    out["rollup_" + m.group(1)] = int(m.group(2))
    except OSError:
        pass
    return out


def smaps_breakdown(pid):
    """Rss KiB by mapping: [heap] (the main arena), each file, and each anonymous mapping of
    1 MiB or more Rss on its own (another thread's malloc arena, a large malloc), the rest of
    the anonymous ones (thread stacks, small mmaps) together."""
    classes, anon = {}, []
    cur = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                cur = parts[5] if len(parts) > 5 else None
                size = (hi - lo) // 1024
                if cur and cur.startswith("/"):
                    cur = os.path.basename(cur)
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
                if cur is None:
                    anon.append((rss, size))
                else:
                    classes[cur] = classes.get(cur, 0) + rss
    for rss, size in sorted(anon, reverse=True):
        if rss >= 1024:
            classes["[anon %d KiB mapping]" % size] = classes.get(
                "[anon %d KiB mapping]" % size, 0) + rss
        else:
            classes["[anon, small]"] = classes.get("[anon, small]", 0) + rss
    return dict(sorted(classes.items(), key=lambda kv: -kv[1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--shard", type=int, default=1)
    ap.add_argument("--autos", type=int, default=2, help="automations per shard")
    ap.add_argument("--owner-none", action="store_true", help="the shard owns no automation")
    ap.add_argument("--wrap", default="", help="a command the replica runs under")
    ap.add_argument("--api-dir", help="use the fixture of an earlier --serve-only")
    ap.add_argument("--serve-only", action="store_true")
    ap.add_argument("--smaps", help="write smaps' breakdown (JSON) here")
    ap.add_argument("--passes", type=int, default=1, help="wait for this many passes")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--tags", type=int, default=20, help="tags of every repository")
    ap.add_argument("--no-git", action="store_true",
                    help="automations' Git URLs refuse at once (no markers read, no scan)")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="imageguard-shardmem.")
    api = None
    rep = None
    procs = []
    try:
        if a.api_dir:
            kubeconfig = os.path.join(a.api_dir, "kubeconfig")
            names = json.load(open(os.path.join(a.api_dir, "names.json")))
        else:
            objs = os.path.join(tmp, "objects.jsonl")
            if a.no_git:
                git_url = lambda n: "http://%s/%s.git" % (DEAD, n)  # noqa: E731
                names = pick(tmp, a.autos, git_url, a.shard if a.owner_none else None)
            else:
                port = free_port()
                git_url = lambda n: "http://127.0.0.1:%d/%s.git" % (port, n)  # noqa: E731
                names = pick(tmp, a.autos, git_url, a.shard if a.owner_none else None)
                rport = free_port()
                procs.append(subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), "serve-registry", str(rport),
                     str(a.tags)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
                host = "127.0.0.1:%d" % rport
                root = seed_remotes(tmp, a.pairs, names, host, "1.%d.0" % (a.tags - 1))
                procs.append(subprocess.Popen(
                    [sys.executable, GIT_HTTP, str(port), root, "git", "bench-s3cret"],
                    stdout=open(os.path.join(tmp, "git_http.log"), "w"),
                    stderr=subprocess.STDOUT))
            objects(objs, a.pairs, names, git_url, DEAD if a.no_git else host)
            api, kubeconfig = start_api(tmp, objs)
            json.dump(names, open(os.path.join(tmp, "api", "names.json"), "w"))
        if a.serve_only:
            print(os.path.join(tmp, "api"), flush=True)
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            api.wait()
            return
        owned = sum(1 for v in names.values() if v == a.shard)
        log = os.path.join(tmp, "run.log")
        argv = (a.wrap.split() if a.wrap else []) + [
            IMAGEGUARD if not a.wrap else IMAGEGUARD + "-full", "run", "--kube",
            "--kubeconfig", kubeconfig, "--state-dir", os.path.join(tmp, "state"),
            "--log-format", "json", "--shards", str(SHARDS), "--shard-index", str(a.shard),
            "--kube-sync-timeout", "300s"]
        t0 = time.monotonic()
        rep = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                               env=dict(os.environ, POD_NAME="m", POD_NAMESPACE="default"))
        seen, passes = 0, 0
        while passes < a.passes:
            if rep.poll() is not None:
                raise RuntimeError("replica exited %d:\n%s" % (rep.returncode,
                                                             open(log).read()[-3000:]))
            with open(log, "rb") as f:
                f.seek(seen)
                data = f.read()
            end = data.rfind(b"\n") + 1
            seen += end
            passes += len(re.findall(rb'"event":\s*"reconcile.pass"', data[:end]))
            if passes < a.passes:
                time.sleep(0.05)
        t1 = time.monotonic()
        pid = rep.pid
        if a.wrap:  # the wrapper's child is the process: valgrind runs it in its own pid
            pass
        fig = proc_figures(pid)
        if a.smaps:
            with open(a.smaps, "w") as f:
                json.dump(smaps_breakdown(pid), f, indent=1)
        passlines, kept = [], ""
        for line in open(log, errors="replace"):
            if '"reconcile.pass"' in line:
                passlines.append(json.loads(line).get("msg", ""))
            elif '"kube.shard"' in line:  # the last: what the shard keeps now
                kept = json.loads(line).get("msg", "")
        print(json.dumps(dict(pairs=a.pairs, shard=a.shard, owned=owned,
                              seconds=round(t1 - t0, 2), passes=passlines, keeps=kept, **fig)),
              flush=True)
    finally:
        if rep and rep.poll() is None:
            rep.send_signal(signal.SIGTERM)
            try:
                rep.wait(60)
            except subprocess.TimeoutExpired:
                rep.kill()
                rep.wait()
        if api and api.poll() is None:
            api.terminate()
            try:
                api.wait(15)
            except subprocess.TimeoutExpired:
                api.kill()
                api.wait()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait()
        if a.keep or a.serve_only:
            print("# kept %s" % tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve-registry":
        serve_registry(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
