#!/usr/bin/python3
"""The body of bench/shards.sh (issue 38, item 4): N policies over 10 hash shards of
`imageguard run --kube --enable-leader-election --shards 10`, against the etcd-backed
Kubernetes API fixture, one docker-registry (repositories as symlinks to one stored repository,
as reconcile_bench.py's scale_layout) and bare remotes behind `git http-backend`.

`shards_bench.py serve-api DIR OBJECTS` is the API fixture's process: it loads the objects of
the JSON-lines file OBJECTS straight into etcd (in the shape the fixture's create stores, 128
puts a transaction), then serves; see serve_api for the one change to how it reads etcd."""
import collections
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

SRC = os.environ.get("IMAGEGUARD_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(SRC, "test", "fixtures"))
import kubeapi_etcd  # noqa: E402
import registry  # noqa: E402

IMAGEGUARD = os.environ.get("IMAGEGUARD") or os.path.join(SRC, "build", "imageguard")
GIT_HTTP = os.path.join(SRC, "test", "fixtures", "git_http.py")
IMG = "image.toolkit.fluxcd.io"
N = int(os.environ.get("BENCH_SHARD_POLICIES", "50000"))
SHARDS = 10
STANDBYS = (0, 1)  # the shards that get a second replica
# 10 x 8 bare remotes: 625 markers an automation at 50,000. With 2 (2,500 markers) the one commit
# moving them all needs more than gitstore's 256 KiB message cap: "commit message: too long",
# every pass (docs/performance.md, 50,000 policies over 10 shards)
REMOTES_PER_SHARD = int(os.environ.get("BENCH_SHARD_REMOTES", "8"))
TAGS = int(os.environ.get("BENCH_SHARD_TAGS", "20"))
PASSES = int(os.environ.get("BENCH_SHARD_PASSES", "3"))
PER_FILE = 50  # markers (containers) per Deployment file
LEASE, RENEW, RETRY = 6, 4, 1  # seconds: short, so that a takeover is measured in seconds
CONNS = 4  # imageguard's connections to one registry host (SCAN_PER_HOST_MAX)
BUDGET_KIB = 32 * 1024
TIMEOUT = float(os.environ.get("BENCH_SHARD_TIMEOUT", "1800"))
GITENV = dict(os.environ, GIT_AUTHOR_NAME="human", GIT_AUTHOR_EMAIL="human@test",
              GIT_COMMITTER_NAME="human", GIT_COMMITTER_EMAIL="human@test")


def verdict(ok):
    return "met" if ok else "MISSED"


def git(*args, cwd=None):
    r = subprocess.run(["git"] + list(args), cwd=cwd, capture_output=True, text=True, env=GITENV)
    if r.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def wait_for(cond, timeout, step=0.2, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise RuntimeError("timed out after %.0fs waiting for %s" % (timeout, what))
        time.sleep(step)


# --- the API fixture's process ---

def serve_api(directory, objects):
    """The fixture, its objects loaded: each passes through the fixture's own create (dry run:
    schema check, uid, generation) before its put."""
    api = kubeapi_etcd.start(directory=directory, preferred={IMG: "v1beta2"})
    puts = []
    with open(objects) as f:
        for line in f:
            obj = json.loads(line)
            group, _, version = obj["apiVersion"].rpartition("/")
            plural = [p for p, v in kubeapi_etcd.GROUPS[group][2].items()
                      if v[0] == obj["kind"]][0]
            req = api._req(group, plural, obj["metadata"]["namespace"], version=version)
            code, out = api.create(req, obj, dry_run=True)
            if code != 201:
                raise RuntimeError("%s: %s" % (obj["metadata"]["name"], out))
            puts.append({"request_put": {"key": kubeapi_etcd.b64(
                req.key(name=obj["metadata"]["name"])), "value": kubeapi_etcd.b64(
                json.dumps(obj))}})
            if len(puts) == 128:
                api.etcd.call("/v3/kv/txn", {"success": puts})
                puts = []
    if puts:
        api.etcd.call("/v3/kv/txn", {"success": puts})
    api.kubeconfig(os.path.join(directory, "kubeconfig"))
    with open(os.path.join(directory, "port.tmp"), "w") as f:
        f.write("%d\n" % api.port)
    os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        signal.pause()
    finally:
        api.stop()


# --- the world ---

class Replica:
    """One `imageguard run --kube --shards 10 --shard-index I --enable-leader-election`."""

    def __init__(self, world, shard, name):
        self.w, self.shard, self.name = world, shard, name
        self.dir = os.path.join(world.dir, "replicas", name)
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "run.log")
        self.port = registry.free_port()
        self.p = None
        self.seen = 0  # bytes of the log already read
        self.passes = []  # (wall time seen, decisions, commits, errors, seconds, access lines)
        self.finding = []  # the passes that only found which policies the markers name
        self.hwm = 0

    def start(self):
        env = dict(os.environ, POD_NAME=self.name, POD_NAMESPACE="default", HOSTNAME=self.name)
        with open(self.log, "a") as out:
            self.p = subprocess.Popen(
                [IMAGEGUARD, "run", "--kube", "--kubeconfig", self.w.kubeconfig, "--state-dir",
                 os.path.join(self.dir, "state"), "--audit-log",
                 os.path.join(self.dir, "audit.log"), "--log-format", "json", "--listen",
                 "127.0.0.1:%d" % self.port, "--shards", str(SHARDS), "--shard-index",
                 str(self.shard), "--kube-sync-timeout", "300s", "--enable-leader-election",
                 "--leader-election-lease-duration", "%ds" % LEASE,
                 "--leader-election-renew-deadline", "%ds" % RENEW,
                 "--leader-election-retry-period", "%ds" % RETRY],
                stdout=out, stderr=subprocess.STDOUT, env=env)
        self.t_start = time.time()
        return self

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def poll(self):
        """Reads new reconcile.pass lines; samples VmHWM."""
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.hwm = max(self.hwm, int(line.split()[1]))
        except OSError:
            pass
        with open(self.log, "rb") as f:
            f.seek(self.seen)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.seen += end
        access = self.w.access_lines()
        for line in data[:end].decode(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            ev = json.loads(line)
            if (ev.get("event") == "config.reload" and self.passes
                    and "policies named by new markers" in ev.get("msg", "")):
                # that pass found which policies its markers name (a shard other than 0 of a
                # shared namespace) and decided none of them: the pass made at once after
                # this reload is its first that decides
                self.finding.append(self.passes.pop())
                continue
            if ev.get("event") != "reconcile.pass":
                continue
            m = re.match(r"(\d+) decisions, (\d+) commits, (\d+) errors in ([0-9.]+)s",
                         ev.get("msg", ""))
            if m:
                self.passes.append((time.time(), int(m.group(1)), int(m.group(2)),
                                    int(m.group(3)), float(m.group(4)), access))
        return self.passes

    def leader(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port,
                                        timeout=2) as r:
                text = r.read().decode()
        except (OSError, ValueError):
            return None
        m = re.search(r"^imageguard_leader(?:\{[^}]*\})? (\d+)", text, re.M)
        return None if not m else m.group(1) == "1"

    def stop(self, sig=signal.SIGTERM):
        if self.alive():
            self.p.send_signal(sig)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    def tail(self, n=3000):
        with open(self.log, errors="replace") as f:
            return f.read()[-n:]


class World:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="imageguard-shards.")
        self.procs, self.replicas = [], []
        self.git_root = os.path.join(self.dir, "git")
        os.makedirs(self.git_root)

    def spawn(self, argv, log, **kw):
        p = subprocess.Popen(argv, stdout=open(os.path.join(self.dir, log), "w"),
                             stderr=subprocess.STDOUT, **kw)
        self.procs.append(p)
        return p

    # registry: the fixture's configuration with its access log on (docker-registry writes it
    # to stdout), so every request is counted
    def start_registry(self):
        d = os.path.join(self.dir, "registry")
        os.makedirs(d)
        port = registry.free_port()
        cfg = registry._config(d, port, None, None, None)
        with open(cfg) as f:
            text = f.read().replace("    disabled: true", "    disabled: false")
        with open(cfg, "w") as f:
            f.write(text)
        self.access = os.path.join(self.dir, "registry-access.log")
        p = self.spawn([registry.REGISTRY_BIN, "serve", cfg], "registry-access.log")
        registry.wait_for_port(port, p)
        self.reg_url, self.host = "http://127.0.0.1:%d" % port, "127.0.0.1:%d" % port
        self.reg_dir = d
        self._access_n, self._access_off = [0, 0], 0

    def access_lines(self):
        """(GET .../tags/list, every /v2/ request) the registry logged so far."""
        with open(self.access, "rb") as f:
            f.seek(self._access_off)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self._access_off += end
        self._access_n[0] += len(re.findall(rb'"GET /v2/bench/s\d+/tags/list', data[:end]))
        self._access_n[1] += len(re.findall(rb'"[A-Z]+ /v2/', data[:end]))
        return tuple(self._access_n)

    def layout(self):
        """bench/s0 with TAGS tags (1.0.0 .. 1.(TAGS-1).0); s1..s(N-1) symlinks to it."""
        self.tags = ["1.%d.0" % k for k in range(TAGS)]
        registry.push_image(self.reg_url, "bench/s0", self.tags[:1])
        root = os.path.join(self.reg_dir, "data", "docker", "registry", "v2", "repositories",
                            "bench")
        self.tag_dir = os.path.join(root, "s0", "_manifests", "tags")
        for t in self.tags[1:]:
            self.add_tag(t)
        for i in range(1, N):
            os.symlink("s0", os.path.join(root, "s%d" % i))

    def add_tag(self, tag):
        tmp = os.path.join(self.tag_dir, ".tmp-" + tag)
        shutil.copytree(os.path.join(self.tag_dir, "1.0.0"), tmp)
        os.rename(tmp, os.path.join(self.tag_dir, tag))

    # remotes
    def start_git(self):
        self.git_port = registry.free_port()
        p = self.spawn(["/usr/bin/python3", GIT_HTTP, str(self.git_port), self.git_root, "git",
                        "bench-s3cret"], "git_http.log")
        registry.wait_for_port(self.git_port, p)

    def url(self, name):
        return "http://127.0.0.1:%d/%s.git" % (self.git_port, name)

    def bare(self, name):
        return os.path.join(self.git_root, name + ".git")

    def pick_remotes(self):
        """REMOTES_PER_SHARD remote names per shard, found by asking `check-config --shards`
        which shard owns each candidate (imageguard's own hash, nothing re-implemented)."""
        d = os.path.join(self.dir, "pick")
        os.makedirs(d)
        cands = ["app%03d" % i for i in range(SHARDS * REMOTES_PER_SHARD * 8)]
        with open(os.path.join(d, "config.yaml"), "w") as f:
            for c in cands:
                f.write(git_repository(c, self.url(c)) + automation(c))
        r = subprocess.run([IMAGEGUARD, "check-config", "--config", d, "--shards", str(SHARDS)],
                           capture_output=True, text=True)
        owner = {m.group(1): int(m.group(2)) for m in re.finditer(
            r"ImageUpdateAutomation 'default/(\S+)': shard (\d+)/%d" % SHARDS, r.stdout)}
        if len(owner) != len(cands):
            raise RuntimeError("check-config --shards: %d of %d automations placed:\n%s%s"
                               % (len(owner), len(cands), r.stdout[-1000:], r.stderr[-1000:]))
        self.owner, self.names = {}, []
        for c in cands:
            if sum(1 for v in self.owner.values() if v == owner[c]) < REMOTES_PER_SHARD:
                self.owner[c] = owner[c]
                self.names.append(c)
        if len(self.names) != SHARDS * REMOTES_PER_SHARD:
            raise RuntimeError("%d candidates did not fill every shard" % len(cands))
        # policy i is referenced from remote names[i % len(names)]
        self.remote_of = lambda i: self.names[i % len(self.names)]
        self.owned = collections.Counter()
        for i in range(N):
            self.owned[self.owner[self.remote_of(i)]] += 1

    def seed_remotes(self):
        tag = self.tags[-1]
        for r, name in enumerate(self.names):
            bare = self.bare(name)
            git("init", "-q", "--bare", "-b", "main", bare)
            git("--git-dir", bare, "config", "core.logAllRefUpdates", "always")
            git("--git-dir", bare, "config", "gc.auto", "0")
            git("--git-dir", bare, "config", "http.receivepack", "true")
            work = os.path.join(self.dir, "human", name)
            os.makedirs(os.path.join(work, "apps"))
            mine = list(range(r, N, len(self.names)))
            for k in range(0, len(mine), PER_FILE):
                with open(os.path.join(work, "apps", "d%05d.yaml" % (k // PER_FILE)), "w") as f:
                    f.write(deployment(self.host, "d%d" % k, mine[k:k + PER_FILE], tag))
            git("init", "-q", "-b", "main", cwd=work)
            git("add", "-A", cwd=work)
            git("commit", "-q", "-m", "seed " + name, cwd=work)
            git("push", "-q", bare, "main", cwd=work)

    def start_api(self):
        objs = os.path.join(self.dir, "objects.jsonl")
        with open(objs, "w") as f:
            f.write(json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {
                "name": "git-auth", "namespace": "default"}, "type": "Opaque",
                "data": {"username": "Z2l0", "password": "YmVuY2gtczNjcmV0"}}) + "\n")
            for i in range(N):
                f.write(json.dumps({"apiVersion": IMG + "/v1beta2", "kind": "ImageRepository",
                                    "metadata": {"name": "s%d" % i, "namespace": "default"},
                                    "spec": {"image": "%s/bench/s%d" % (self.host, i),
                                             "interval": "1s", "insecure": True}}) + "\n")
                f.write(json.dumps({"apiVersion": IMG + "/v1beta2", "kind": "ImagePolicy",
                                    "metadata": {"name": "p%d" % i, "namespace": "default"},
                                    "spec": {"imageRepositoryRef": {"name": "s%d" % i},
                                             "policy": {"semver": {"range": ">=1.0.0"}}}})
                        + "\n")
            for name in self.names:
                f.write(json.dumps({
                    "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                    "metadata": {"name": "git-" + name, "namespace": "default"},
                    "spec": {"interval": "1m", "ref": {"branch": "main"}, "url": self.url(name),
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
        d = os.path.join(self.dir, "api")
        os.makedirs(d)
        p = self.spawn(["/usr/bin/python3", os.path.abspath(__file__), "serve-api", d, objs],
                       "api.log")
        wait_for(lambda: os.path.exists(os.path.join(d, "port")) or p.poll() is not None,
                 TIMEOUT, what="the API fixture's load")
        if p.poll() is not None:
            with open(os.path.join(self.dir, "api.log")) as f:
                raise RuntimeError("API fixture: %s" % f.read()[-2000:])
        self.kubeconfig = os.path.join(d, "kubeconfig")

    def replica(self, shard, name):
        r = Replica(self, shard, name)
        self.replicas.append(r)
        return r

    def close(self):
        for r in self.replicas:
            try:
                r.stop()
            except OSError:
                pass
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if os.environ.get("BENCH_SHARD_KEEP"):
            print("# kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def git_repository(name, url):
    return ("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"
            "  name: git-%s\n  namespace: default\nspec:\n  interval: 1m\n  url: %s\n"
            "  ref:\n    branch: main\n" % (name, url))


def automation(name):
    return ("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: %s\n  namespace: default\nspec:\n  interval: 1s\n"
            "  sourceRef:\n    kind: GitRepository\n    name: git-%s\n"
            "  git:\n    checkout:\n      ref:\n        branch: main\n"
            "    commit:\n      author:\n        name: imageguard\n"
            "        email: imageguard@test\n    push:\n      branch: main\n"
            "  update:\n    path: ./\n    strategy: Setters\n" % (name, name))


def deployment(host, name, policies, tag):
    out = ["apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  template:\n"
           "    spec:\n      containers:\n" % name]
    for i in policies:
        out.append("        - name: c%d\n          image: %s/bench/s%d:%s"
                   " # {\"$imagepolicy\": \"default:p%d\"}\n" % (i, host, i, tag, i))
    return "".join(out)


# --- the measurements ---

def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_until(reps, cond, what, timeout=TIMEOUT):
    """Polls the replicas until cond() is true; a replica that exits is an error."""
    deadline = time.monotonic() + timeout
    while True:
        for r in reps:
            r.poll()
            if r.p.poll() is not None and not getattr(r, "killed", False):
                raise RuntimeError("%s exited %s while waiting for %s:\n%s"
                                   % (r.name, r.p.returncode, what, r.tail()))
        if cond():
            return
        if time.monotonic() > deadline:
            raise RuntimeError("timed out after %.0fs waiting for %s" % (timeout, what))
        time.sleep(0.2)


def check_pass(w, r, p, commits=0):
    if p[1] != w.owned[r.shard] or p[3] != 0 or (commits is not None and p[2] != commits):
        raise RuntimeError("%s: a pass of %d decisions, %d commits, %d errors; shard %d owns "
                           "%d policies" % (r.name, p[1], p[2], p[3], r.shard, w.owned[r.shard]))


def sequential(w):
    """Each shard alone, one after the other (2 cores cannot run 10 at once and time them):
    PASSES steady passes after the first, their wall time, registry requests and the
    process's peak RSS."""
    rows = []
    for s in range(SHARDS):
        r = w.replica(s, "seq-%d" % s).start()
        run_until([r], lambda: len(r.passes) > PASSES, "shard %d's %d passes" % (s, PASSES + 1))
        start = r.passes[0][0] - r.t_start - r.passes[0][4]  # list, watch, configuration
        r.stop()
        shard_floor = curl_lists(w, [i for i in range(N) if w.owner[w.remote_of(i)] == s],
                                 "urls-%d" % s)
        steady = r.passes[1:PASSES + 1]
        for p in steady:
            check_pass(w, r, p)
        lists = steady[-1][5][0] - r.passes[0][5][0]
        reqs = steady[-1][5][1] - r.passes[0][5][1]
        rows.append({"shard": s, "policies": w.owned[s], "pass": statistics.median(
            p[4] for p in steady), "lists": lists, "reqs": reqs, "hwm": r.hwm,
            "first": r.passes[0][4], "start": start, "curl": shard_floor})
        print("shard %d alone: %5d policies, ready to pass after %.1fs, first pass %.2fs, "
              "steady pass median %.3fs (curl on its lists %.3fs), %.3f tag lists and %.3f "
              "registry requests per policy per pass, peak RSS %.1f MiB (load %s)"
              % (s, w.owned[s], start, r.passes[0][4], rows[-1]["pass"], shard_floor,
                 lists / (w.owned[s] * PASSES), reqs / (w.owned[s] * PASSES), r.hwm / 1024.0,
                 load()))
    return rows


def curl_lists(w, policies, name, runs=1):
    """The median wall time of curl fetching the tag lists of these policies' repositories over
    CONNS connections: the floor, run right after each shard's passes, in the same load."""
    urls = os.path.join(w.dir, name)
    with open(urls, "w") as f:
        for i in policies:
            f.write('url = "%s/v2/bench/s%d/tags/list"\noutput = "/dev/null"\n' % (w.reg_url, i))
    walls = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run(["curl", "-sSf", "--no-progress-meter", "--parallel", "--parallel-max",
                        str(CONNS), "-K", urls], check=True, stdout=subprocess.DEVNULL)
        walls.append(time.monotonic() - t0)
    w.access_lines()
    return statistics.median(walls)


def commits_of(w, name):
    """[(sha, author, Imageguard-Lease trailer or None)] of a remote's main, newest first."""
    out = []
    for rec in git("--git-dir", w.bare(name), "log", "--format=%H%x00%an%x00%B%x01",
                   "main").split("\x01"):
        if not rec.strip():
            continue
        sha, author, body = rec.strip("\n").split("\x00", 2)
        m = re.search(r"^Imageguard-Lease: (\S+)/\d+$", body, re.M)
        out.append((sha, author, m.group(1) if m else None))
    return out


def pushes_of(w, name):
    """Ref updates of main in the remote's reflog (core.logAllRefUpdates=always)."""
    return len(git("--git-dir", w.bare(name), "reflog", "show", "--format=%H", "main")
               .split())


def at_tag(w, name, tag):
    r = subprocess.run(["git", "--git-dir", w.bare(name), "grep", "-c", ":%s #" % tag, "main"],
                       capture_output=True, text=True)
    return sum(int(l.rsplit(":", 1)[1]) for l in r.stdout.split())


def together(w, seq_rows):
    """All 12 replicas at once; kill -9 the leader of a shard with a standby, then a new tag
    lands for every policy: every remote gets exactly one commit, from its own shard."""
    # started one by one, each once the one before has its first lists (leader.start), as a
    # StatefulSet's OrderedReady start does: 12 at once overran the fixture (one Python
    # process) and a replica missed imageguard's 30 s first list; the standbys come last
    reps, every = {}, []
    t0 = time.monotonic()
    for s in list(range(SHARDS)) + list(STANDBYS):
        r = w.replica(s, "shard-%d-%s" % (s, "b" if s in reps else "a")).start()
        reps.setdefault(s, []).append(r)
        every.append(r)
        run_until(every, lambda: '"leader.start"' in r.tail(100000), "%s's first lists" % r.name)
    print("together: 12 replicas started one after the other in %.1fs" % (time.monotonic() - t0))

    def passed(k):
        return all(sum(len(r.passes) for r in reps[s]) >= k for s in range(SHARDS))
    run_until(every, lambda: passed(PASSES + 1), "every shard's %d passes together" % (PASSES + 1))
    print("together: 12 replicas, every shard %d passes in %.1fs (load %s)"
          % (PASSES + 1, time.monotonic() - t0, load()))
    partial = []
    for s in range(SHARDS):
        runners = [r for r in reps[s] if r.passes]
        if len(runners) != 1:
            raise RuntimeError("shard %d: %d replicas ran passes" % (s, len(runners)))
        for p in runners[0].passes:
            if p[1] != w.owned[s] or p[3]:
                partial.append("%s: %d decisions, %d errors" % (runners[0].name, p[1], p[3]))
    print("together: %d of %d passes decided all of their shard's policies, the others: %s "
          "(besides %d first passes that found which policies their markers name, then "
          "listed them)"
          % (sum(len(r.passes) for r in every) - len(partial),
             sum(len(r.passes) for r in every), "; ".join(partial) or "none",
             sum(len(r.finding) for r in every)))
    leaders = {s: [r for r in reps[s] if r.passes][0] for s in range(SHARDS)}
    steady = {s: statistics.median(p[4] for p in leaders[s].passes[1:]) for s in range(SHARDS)}
    victim = leaders[STANDBYS[0]]
    standby = [r for r in reps[STANDBYS[0]] if r is not victim][0]
    one_pass = steady[STANDBYS[0]]
    before = {s: len(leaders[s].passes) for s in range(SHARDS)}
    # kill, then a new tag for every policy
    t_kill = time.time()
    victim.killed = True
    victim.p.send_signal(signal.SIGKILL)
    victim.p.wait()
    new = "1.%d.0" % TAGS
    w.add_tag(new)
    run_until(every, lambda: standby.passes, "the standby's first pass", LEASE * 10 + 600)
    takeover = standby.passes[0][0] - t_kill
    acquired = None
    with open(standby.log) as f:
        for line in f:
            if '"leader.elected"' in line:
                stamp = json.loads(line)["time"]
                acquired = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=datetime.timezone.utc).timestamp() - t_kill
    print("failover: the standby acquired the lease %.2fs after the kill (client-go's bound: "
          "lease %ds + a jittered retry period %.1fs = %.1fs: %s)"
          % (acquired, LEASE, RETRY * 2.2, LEASE + RETRY * 2.2,
             verdict(acquired <= LEASE + RETRY * 2.2)))
    print("failover: kill -9 of %s's leader; its standby's first pass completed %.2fs later "
          "(a steady pass of that shard together %.2fs, the standby's first, with its clones and "
          "commits, %.2fs); target lease %ds + one pass %.2fs = %.2fs: %s"
          % ("shard %d" % STANDBYS[0], takeover, one_pass, standby.passes[0][4], LEASE,
             standby.passes[0][4], LEASE + standby.passes[0][4],
             verdict(takeover <= LEASE + standby.passes[0][4])))
    want = collections.Counter(w.remote_of(i) for i in range(N))
    try:
        run_until(every, lambda: all(at_tag(w, n, new) == want[n] for n in w.names),
                  "every marker at %s" % new, 600)
    except RuntimeError as e:
        if "timed out" not in str(e):
            raise
        print("commits: MISSED: after 600s %d of %d markers at %s"
              % (sum(at_tag(w, n, new) for n in w.names), N, new))
    # one more pass of every leader after the commits: nothing left to commit
    after = {s: len(leaders[s].passes) if s != STANDBYS[0] else 0 for s in range(SHARDS)}
    run_until(every, lambda: all(len((standby if s == STANDBYS[0] else leaders[s]).passes)
                                 > after[s] + 1 for s in range(SHARDS)), "a settled pass")
    hwm = max(r.hwm for r in every)
    print("together: peak RSS of each replica, MiB: %s"
          % ", ".join("%s %.1f" % (r.name, r.hwm / 1024.0) for r in every))
    for r in every:
        if r is not victim:
            r.stop()
    # every policy moved by exactly one imageguard commit (a tag that lands while a pass lists
    # splits a remote's move over two passes: two commits, each policy in one), every commit
    # pushed once (the reflog: the seed + one update per commit), from the lease of the shard
    # that owns the remote; one lease per shard, ten distinct
    bad, lease_of, moved, ncommits = [], collections.defaultdict(set), collections.Counter(), 0
    for n in w.names:
        mine = [c for c in commits_of(w, n) if c[1] == "imageguard"]
        ncommits += len(mine)
        for sha, _, lease in mine:
            lease_of[w.owner[n]].add(lease)
            body = git("--git-dir", w.bare(n), "log", "-1", "--format=%B", sha)
            for m in re.finditer(r"^default/p(\d+): \S+ -> \S+:%s " % re.escape(new), body, re.M):
                moved[int(m.group(1))] += 1
        if pushes_of(w, n) != len(mine) + 1:
            bad.append("%s: %d imageguard commits, %d ref updates" % (n, len(mine),
                                                                     pushes_of(w, n)))
    twice = [p for p, k in moved.items() if k > 1]
    lost = N - len(moved)
    if twice or lost:
        bad.append("%d policies moved twice, %d never" % (len(twice), lost))
    leases = [x for v in lease_of.values() for x in v]
    if any(len(v) != 1 for v in lease_of.values()) or len(set(leases)) != SHARDS:
        bad.append("leases per shard: %s" % dict(lease_of))
    print("commits: %d policies each moved to %s by exactly one commit (%d commits over %d "
          "remotes, each pushed once, each from the lease of the shard that owns its remote, "
          "%d distinct leases): %s" % (len(moved), new, ncommits, len(w.names), len(set(leases)),
                                       "met" if not bad else "MISSED: " + "; ".join(bad)))
    return steady, hwm, takeover, one_pass, not bad, before


def main():
    print("load before: %s" % load())
    w = World()
    try:
        t0 = time.monotonic()
        w.start_registry()
        w.layout()
        w.start_git()
        w.pick_remotes()
        w.seed_remotes()
        w.start_api()
        print("setup: %d policies and repositories of %d tags, %d remotes, %d shards "
              "(policies per shard %s), %.1fs"
              % (N, TAGS, len(w.names), SHARDS, "/".join(str(w.owned[s])
                                                       for s in range(SHARDS)),
                 time.monotonic() - t0))
        rows = sequential(w)
        floor = curl_lists(w, range(N), "urls", 3)
        agg = sum(r["pass"] for r in rows)
        shard_floors = sum(r["curl"] for r in rows)
        lists = sum(r["lists"] for r in rows)
        reqs = sum(r["reqs"] for r in rows)
        hwm = max(r["hwm"] for r in rows)
        print("sequential: every policy decided once per pass by its one shard (%d decisions "
              "over 10 shards each pass); registry requests per policy per pass %.3f (tag "
              "lists %.3f; target <= 1: %s)"
              % (sum(w.owned.values()), reqs / (N * PASSES), lists / (N * PASSES),
                 verdict(reqs <= N * PASSES)))
        print("aggregate pass time %.2fs (the 10 shards' steady pass medians summed) vs curl "
              "fetching each shard's lists over %d connections right after its passes, summed, "
              "%.2fs: %.2fx (target <= 1.2x: %s); curl fetching all %d lists at the end "
              "(median of 3) %.2fs: %.2fx (load %s)"
              % (agg, CONNS, shard_floors, agg / shard_floors,
                 verdict(agg <= 1.2 * shard_floors), N, floor, agg / floor, load()))
        print("peak RSS alone: largest shard %.1f MiB (target < 32 MiB: %s)"
              % (hwm / 1024.0, verdict(hwm < BUDGET_KIB)))
        steady, hwm2, takeover, one_pass, ok, _ = together(w, rows)
        print("together: steady pass medians %s s; peak RSS largest replica %.1f MiB "
              "(target < 32 MiB: %s) (load %s)"
              % ("/".join("%.2f" % steady[s] for s in range(SHARDS)), hwm2 / 1024.0,
                 verdict(hwm2 < BUDGET_KIB), load()))
    finally:
        w.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve-api":
        serve_api(sys.argv[2], sys.argv[3])
    else:
        main()
