#!/usr/bin/python3
"""The chaos suite's world (issue 17): everything the scenarios of test/chaos/run act on.

  - N bare Git remotes (core.logAllRefUpdates=always, so the checker can read every ref
    update) served by `git http-backend` (test/fixtures/git_http.py: hooks run there, unlike
    over libgit2's file://), each with a pre-receive hook that holds the push while the file
    ROOT/hold exists (and touches ROOT/held.NAME when it does), so a push can be caught in flight
  - a real docker-registry where a pusher thread adds tags over time (team/app by semver,
    team/num numerically)
  - the Kubernetes API fixture over a real etcd (test/fixtures/kubeapi_etcd.py) holding Flux's
    objects: two ImageRepositories, two ImagePolicies, N GitRepositories and N
    ImageUpdateAutomations, one per remote, and the Git Secret
  - replicas of `imageguard run --kube`, each with its own state dir, audit log, --listen port
    and its own TCP proxy to the API (Proxy: its API access can be blackholed while its Git
    access, direct, stays up); start, kill -9, SIGTERM
  - a human writer thread moving markers by hand (forward to the newest tag, from a fresh fetch,
    retried on a moved remote), committing unrelated files, and rolling a policy back through
    CONTRACT §7's annotations (backward moves are only ever annotated rollbacks)
Everything random draws from one random.Random(seed)."""
import base64
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "test", "fixtures"))
import kubeapi_etcd  # noqa: E402
import registry  # noqa: E402

IMAGEGUARD = os.environ.get("IMAGEGUARD") or os.path.join(SRC, "build", "imageguard")
GIT_HTTP = os.path.join(SRC, "test", "fixtures", "git_http.py")
IMG = "image.toolkit.fluxcd.io"
GITENV = dict(os.environ, GIT_AUTHOR_NAME="human", GIT_AUTHOR_EMAIL="human@test",
              GIT_COMMITTER_NAME="human", GIT_COMMITTER_EMAIL="human@test")
HOOK = """#!/bin/sh
# chaos: hold a push over HTTP (imageguard's; the human pushes locally) while %(root)s/hold
# exists (at most 30 s)
cat >/dev/null
if [ -n "$REMOTE_USER" ] && [ -f %(root)s/hold ]; then
	touch %(root)s/held.%(name)s
	i=0
	while [ -f %(root)s/hold ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
fi
exit 0
"""
MARKED = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %(name)s\nspec:\n"
          "  template:\n    spec:\n      containers:\n"
          "        - name: app\n          image: %(host)s/team/app:%(app)s"
          " # {\"$imagepolicy\": \"default:app\"}\n"
          "        - name: num\n          image: %(host)s/team/num:%(num)s"
          " # {\"$imagepolicy\": \"default:num\"}\n")
MARK = re.compile(r'(\S+):(\S+) # \{"\$imagepolicy": "default:(\w+)"\}')


def git(*args, cwd=None, check=True):
    r = subprocess.run(["git"] + list(args), cwd=cwd, capture_output=True, text=True, env=GITENV)
    if check and r.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(cond, timeout, step=0.1):
    """cond()'s first true value within timeout seconds, else None."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


class Proxy:
    """A TCP proxy 127.0.0.1:port -> upstream (TLS passes through untouched). blackhole(True)
    stops forwarding in both directions and leaves new connections unanswered, as a dropped
    route does; blackhole(False) closes the held connections and forwards again."""

    def __init__(self, upstream_port):
        self.up = upstream_port
        self.holed = False
        self.conns = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(c)
            threading.Thread(target=self._pump, args=(c,), daemon=True).start()

    def _pump(self, c):
        while self.holed and not self.closed:
            time.sleep(0.05)
        try:
            u = socket.create_connection(("127.0.0.1", self.up), 5)
        except OSError:
            c.close()
            return
        with self.lock:
            self.conns.append(u)
        try:
            while not self.closed:
                r, _, _ = select.select([c, u], [], [], 0.1)
                if self.holed:
                    continue
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    (u if s is c else c).sendall(data)
        except (OSError, ValueError):
            pass  # a side closed (blackhole(False) closes held connections)
        finally:
            c.close()
            u.close()

    def blackhole(self, on):
        self.holed = on
        if not on:
            with self.lock:
                conns, self.conns = self.conns, []
            for s in conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.closed = True
        self.sock.close()
        self.blackhole(False)


class Replica:
    """One `imageguard run --kube` process; its API access through its own Proxy."""

    def __init__(self, world, name, extra):
        self.world, self.name, self.extra = world, name, list(extra)
        self.dir = os.path.join(world.dir, "replicas", name)
        os.makedirs(self.dir, exist_ok=True)
        self.state = os.path.join(self.dir, "state")
        self.audit = os.path.join(self.dir, "audit.log")
        self.log = os.path.join(self.dir, "run.log")
        self.proxy = Proxy(world.api.port)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        world.api.kubeconfig(self.kubeconfig)
        with open(self.kubeconfig) as f:
            text = f.read().replace(world.api.url, "https://127.0.0.1:%d" % self.proxy.port)
        with open(self.kubeconfig, "w") as f:
            f.write(text)
        self.port = free_port()
        self.p = None
        self.rc = None

    def start(self):
        self.rc = None
        out = open(self.log, "a")
        env = dict(os.environ, POD_NAME=self.name, POD_NAMESPACE="default", HOSTNAME=self.name)
        self.p = subprocess.Popen(
            [IMAGEGUARD, "run", "--kube", "--kubeconfig", self.kubeconfig, "--state-dir",
             self.state, "--audit-log", self.audit, "--log-format", "json", "--listen",
             "127.0.0.1:%d" % self.port] + self.extra, stdout=out, stderr=subprocess.STDOUT,
            env=env)
        out.close()
        self.started = time.time()
        return self

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def kill9(self):
        self.p.send_signal(signal.SIGKILL)
        self.rc = self.p.wait()

    def term(self, timeout=30):
        """SIGTERM; (exit status, seconds taken); None for the status when it had to be killed."""
        t0 = time.monotonic()
        self.p.send_signal(signal.SIGTERM)
        try:
            self.rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            self.rc = None
        return self.rc, time.monotonic() - t0

    def stop(self):
        if self.alive():
            self.term(15)

    def stacks(self):
        """Every thread's backtrace of the live process (gdb), for a failure's detail."""
        if not self.alive() or not shutil.which("gdb"):
            return ""
        r = subprocess.run(["gdb", "-batch", "-p", str(self.p.pid), "-ex",
                            "thread apply all bt 12"], capture_output=True, text=True,
                           timeout=60)
        return "\n".join(l for l in r.stdout.splitlines() if l.startswith(("#", "Thread")))

    def metrics(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port,
                                        timeout=2) as r:
                return r.read().decode()
        except (OSError, ValueError):
            return ""

    def leader(self):
        """True/False from the imageguard_leader gauge, None when /metrics does not say."""
        m = re.search(r"^imageguard_leader(?:\{[^}]*\})? (\d+)", self.metrics(), re.M)
        return None if not m else m.group(1) == "1"

    def passes(self):
        m = re.search(r"^imageguard_reconcile_duration_seconds_count (\d+)", self.metrics(), re.M)
        return int(m.group(1)) if m else -1

    def ready(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.port,
                                        timeout=2) as r:
                return r.status == 200
        except (OSError, ValueError):
            return False

    def text(self, tail=4000):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-tail:]
        except OSError:
            return ""

    def audit_commits(self):
        """[(time string, commit)] of the commits this replica's audit log reports."""
        out = []
        try:
            with open(self.audit, errors="replace") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("commit"):
                        out.append((rec.get("time", ""), rec["commit"]))
        except OSError:
            pass
        return out


class World:
    def __init__(self, seed, remotes=30, log=print):
        self.rnd = random.Random(seed)
        self.log = log
        self.dir = tempfile.mkdtemp(prefix="imageguard-chaos.")
        self.root = os.path.join(self.dir, "git")
        self.names = ["r%02d" % i for i in range(remotes)]
        self.replicas = []
        self.reg = self.api = self.http = None
        self.ver = [1, 0, 0]
        self.num = 100
        self.tags = {"app": [], "num": []}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []
        self.human_log = []
        self.rollback = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # --- setup ---
    def _start(self):
        os.makedirs(self.root)
        self.reg = registry.start_registry(os.path.join(self.dir, "registry"))
        self.host = self.reg.host
        for policy in ("app", "num", "app", "num"):
            self.push_tag(policy)  # the seed is at the first: the first pass moves forward
        self.http_port = free_port()
        self.http_log = open(os.path.join(self.dir, "git_http.log"), "w")
        self.http = subprocess.Popen(["/usr/bin/python3", GIT_HTTP, str(self.http_port),
                                      self.root, "git", "chaos-s3cret"],
                                     stdout=subprocess.DEVNULL, stderr=self.http_log)
        registry.wait_for_port(self.http_port, self.http)
        for name in self.names:
            self._remote(name)
        self.api = kubeapi_etcd.start(preferred={IMG: "v1beta2"})
        self._objects()

    def _remote(self, name):
        bare = self.bare(name)
        git("init", "-q", "--bare", "-b", "main", bare)
        git("--git-dir", bare, "config", "core.logAllRefUpdates", "always")
        git("--git-dir", bare, "config", "gc.auto", "0")
        hook = os.path.join(bare, "hooks", "pre-receive")
        with open(hook, "w") as f:
            f.write(HOOK % {"root": self.root, "name": name})
        os.chmod(hook, 0o755)
        work = self.work(name)
        git("init", "-q", "-b", "main", work)
        os.makedirs(os.path.join(work, "apps"))
        with open(os.path.join(work, "apps", "app.yaml"), "w") as f:
            f.write(MARKED % {"name": name, "host": self.host, "app": self.tags["app"][0],
                              "num": self.tags["num"][0]})
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "seed " + name, cwd=work)
        git("remote", "add", "origin", bare, cwd=work)
        git("push", "-q", "origin", "main", cwd=work)

    def bare(self, name):
        return os.path.join(self.root, name + ".git")

    def work(self, name):
        return os.path.join(self.dir, "human", name)

    def remotes(self):
        return [self.bare(n) for n in self.names]

    def _objects(self):
        api = self.api
        api.create_object({"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "git-auth", "namespace": "default"}, "type": "Opaque", "data": {
            "username": base64.b64encode(b"git").decode(),
            "password": base64.b64encode(b"chaos-s3cret").decode()}})
        for name, spec in (("app", {"semver": {"range": ">=1.0.0"}}),
                           ("num", {"numerical": {"order": "asc"}})):
            api.create_object({"apiVersion": IMG + "/v1beta2", "kind": "ImageRepository",
                               "metadata": {"name": name, "namespace": "default"},
                               "spec": {"image": "%s/team/%s" % (self.host, name),
                                        "interval": "1s", "insecure": True}})
            api.create_object({"apiVersion": IMG + "/v1beta2", "kind": "ImagePolicy",
                               "metadata": {"name": name, "namespace": "default"},
                               "spec": {"imageRepositoryRef": {"name": name}, "policy": spec}})
        for name in self.names:
            api.create_object({"apiVersion": "source.toolkit.fluxcd.io/v1",
                               "kind": "GitRepository",
                               "metadata": {"name": "git-" + name, "namespace": "default"},
                               "spec": {"interval": "1m", "ref": {"branch": "main"},
                                        "url": "http://127.0.0.1:%d/%s.git" % (
                                            self.http_port, name),
                                        "secretRef": {"name": "git-auth"}}})
            api.create_object({"apiVersion": IMG + "/v1beta2", "kind": "ImageUpdateAutomation",
                               "metadata": {"name": name, "namespace": "default"},
                               "spec": {"interval": "2s",
                                        "sourceRef": {"kind": "GitRepository",
                                                      "name": "git-" + name},
                                        "git": {"checkout": {"ref": {"branch": "main"}},
                                                "commit": {"author": {
                                                    "name": "imageguard",
                                                    "email": "imageguard@test"}},
                                                "push": {"branch": "main"}},
                                        "update": {"path": "./", "strategy": "Setters"}}})

    # --- replicas ---
    def replica(self, name, *extra):
        r = Replica(self, name, extra)
        self.replicas.append(r)
        return r

    def audit_logs(self):
        return [r.audit for r in self.replicas]

    def leases(self):
        return self.api.objects("coordination.k8s.io", "leases")

    # --- registry ---
    def push_tag(self, policy):
        with self.lock:
            if policy == "app":
                i = self.rnd.choice([1, 2])
                self.ver[i] += 1
                if i == 1:
                    self.ver[2] = 0
                tag = "%d.%d.%d" % tuple(self.ver)
            else:
                self.num += self.rnd.randint(1, 9)
                tag = str(self.num)
        registry.push_image(self.reg.url, "team/" + policy, [tag])
        with self.lock:
            self.tags[policy].append(tag)
        return tag

    def newest(self, policy):
        with self.lock:
            return self.tags[policy][-1]

    def _pusher(self, period):
        while not self.stopping.wait(self.rnd.uniform(0.5, 1.5) * period):
            try:
                self.push_tag(self.rnd.choice(["app", "num"]))
            except (OSError, RuntimeError) as e:
                self.log("# pusher: %s" % e)

    # --- the human writer ---
    def marked(self, name, rev="main"):
        """{policy: tag} in a remote's apps/app.yaml."""
        r = git("--git-dir", self.bare(name), "show", "%s:apps/app.yaml" % rev, check=False)
        return {m.group(3): m.group(2) for m in MARK.finditer(r.stdout)}

    def human_commit(self, name, edit, message):
        """Fetch, edit the fresh head, commit, push; again on a moved remote (at most 5)."""
        work = self.work(name)
        for _ in range(5):
            git("fetch", "-q", "origin", cwd=work)
            git("reset", "-q", "--hard", "origin/main", cwd=work)
            if not edit(work):
                return None
            git("commit", "-q", "-am", message, cwd=work)
            if git("push", "-q", "origin", "main", cwd=work, check=False).returncode == 0:
                sha = git("rev-parse", "HEAD", cwd=work).stdout.strip()
                self.human_log.append((name, sha, message))
                return sha
            time.sleep(0.2)
        return None

    def human_forward(self, name):
        """Moves the app marker by hand to the newest tag, when that is forward."""
        newest = self.newest("app")

        def edit(work):
            path = os.path.join(work, "apps", "app.yaml")
            with open(path) as f:
                text = f.read()
            m = [x for x in MARK.finditer(text) if x.group(3) == "app"][0]
            cur = tuple(int(x) for x in m.group(2).split("."))
            if cur >= tuple(int(x) for x in newest.split(".")):
                return False
            with open(path, "w") as f:
                f.write(text[:m.start(2)] + newest + text[m.end(2):])
            return True
        return self.human_commit(name, edit, "human: app to %s by hand" % newest)

    def human_note(self, name):
        def edit(work):
            with open(os.path.join(work, "NOTES"), "a") as f:
                f.write("note %08x\n" % self.rnd.getrandbits(32))
            git("add", "NOTES", cwd=work)
            return True
        return self.human_commit(name, edit, "human: a note")

    def mutate(self, kind):
        """A breach on purpose, to show that the suite fails on one (CHAOS_MUTATE): 'backward'
        moves the app marker of r00 back by hand without an annotation, 'forcepush' replaces
        r01's head with a non-fast-forward push, 'lease' commits on r02's head a trailer of the
        head's Lease one generation lower. None: not possible yet (try again later)."""
        if kind == "backward":
            first = self.tags["app"][0]
            if self.marked(self.names[0]).get("app") in (None, first):
                return None  # not moved forward yet: later

            def edit(work):
                path = os.path.join(work, "apps", "app.yaml")
                with open(path) as f:
                    text = f.read()
                m = [x for x in MARK.finditer(text) if x.group(3) == "app"][0]
                if m.group(2) == first:
                    return False
                with open(path, "w") as f:
                    f.write(text[:m.start(2)] + first + text[m.end(2):])
                return True
            return self.human_commit(self.names[0], edit, "human: app back to %s" % first)
        if kind == "forcepush":
            work = self.work(self.names[1])
            if git("--git-dir", self.bare(self.names[1]), "rev-list", "--count",
                   "main").stdout.strip() in ("0", "1"):
                return None
            git("fetch", "-q", "origin", cwd=work)
            git("reset", "-q", "--hard", "origin/main~1", cwd=work)
            git("commit", "-q", "--allow-empty", "-m", "human: history rewritten", cwd=work)
            git("push", "-q", "--force", "origin", "main", cwd=work)
            return True
        if kind == "lease":
            name = self.names[2]
            body = git("--git-dir", self.bare(name), "log", "-1", "--format=%B", "main").stdout
            m = re.search(r"^Imageguard-Lease: (\S+)/(\d+)$", body, re.M)
            if not m or m.group(2) == "0":
                return None  # no generation above 0 on the head yet

            def edit(work):
                with open(os.path.join(work, "NOTES"), "a") as f:
                    f.write("stale writer\n")
                git("add", "NOTES", cwd=work)
                return True
            return self.human_commit(name, edit, "a stale writer\n\nImageguard-Lease: %s/%d"
                                     % (m.group(1), int(m.group(2)) - 1))
        raise ValueError("CHAOS_MUTATE: backward, forcepush or lease, not %r" % kind)

    def rollback_start(self, policy="num"):
        """Annotates the policy back to its first tag (CONTRACT §7)."""
        with self.lock:
            tag = self.tags[policy][0]
        self.api.patch(IMG, "imagepolicies", "default", policy, {"metadata": {"annotations": {
            "imageguard.io/rollback-to": tag,
            "imageguard.io/rollback-reason": "chaos: a human rolls %s back" % policy}}})
        self.rollback = (policy, tag)
        return tag

    def rollback_end(self):
        if not self.rollback:
            return
        policy, _ = self.rollback
        self.api.patch(IMG, "imagepolicies", "default", policy, {"metadata": {"annotations": {
            "imageguard.io/rollback-to": None, "imageguard.io/rollback-reason": None}}})
        self.rollback = None

    def _human(self, period, rollback_at):
        """Human actions every ~period s; one annotated rollback of num from rollback_at s
        after the start (None: none), lifted once committed somewhere and 4 s old, else when the
        activity stops (a takeover on a loaded machine can take longer than any fixed wait)."""
        t0, rolled_at, base = time.monotonic(), None, 0
        mutation = os.environ.get("CHAOS_MUTATE")
        while not self.stopping.wait(self.rnd.uniform(0.5, 1.5) * period):
            try:
                now = time.monotonic()
                if mutation and now - t0 > 3 and self.mutate(mutation):
                    self.log("CHAOS_MUTATE=%s done" % mutation)
                    mutation = None
                elif rolled_at and now - rolled_at > 4 and self.rollbacks_committed() > base:
                    self.rollback_end()
                    rolled_at = None
                elif rollback_at is not None and now - t0 >= rollback_at:
                    base = self.rollbacks_committed()
                    self.rollback_start()
                    rolled_at, rollback_at = now, None
                elif self.rnd.random() < 0.5:
                    self.human_forward(self.rnd.choice(self.names))
                else:
                    self.human_note(self.rnd.choice(self.names))
            except (OSError, RuntimeError) as e:
                self.log("# human: %s" % str(e).splitlines()[0][:200])

    def rollbacks_committed(self):
        """How many commits of all remotes say rollback/override."""
        n = 0
        for b in self.remotes():
            n += git("--git-dir", b, "log", "--format=%B", "main").stdout.count(
                "Imageguard-Decision: rollback/override")
        return n

    def start_activity(self, rollback_at=None, tag_period=1.5, human_period=1.0):
        self.stopping.clear()
        self.threads = [threading.Thread(target=self._pusher, args=(tag_period,), daemon=True),
                        threading.Thread(target=self._human, args=(human_period, rollback_at),
                                         daemon=True)]
        for t in self.threads:
            t.start()

    def stop_activity(self):
        self.stopping.set()
        for t in self.threads:
            t.join(30)
        self.threads = []
        self.rollback_end()

    # --- holding pushes ---
    def hold(self, on):
        path = os.path.join(self.root, "hold")
        if on:
            for f in os.listdir(self.root):
                if f.startswith("held."):
                    os.unlink(os.path.join(self.root, f))
            open(path, "w").close()
        elif os.path.exists(path):
            os.unlink(path)

    def held(self):
        return [f[5:] for f in os.listdir(self.root) if f.startswith("held.")]

    # --- settling ---
    def settled(self):
        """Remotes whose markers are not yet at the newest tags."""
        want = {"app": self.newest("app"), "num": self.newest("num")}
        return [n for n in self.names if self.marked(n) != want]

    def close(self):
        self.stopping.set()
        for r in self.replicas:
            try:
                r.stop()
            except OSError:
                pass
            r.proxy.close()
        if self.api:
            self.api.stop()
        if self.http:
            self.http.terminate()
            try:
                self.http.wait(10)
            except subprocess.TimeoutExpired:
                self.http.kill()
                self.http.wait()
        if self.reg:
            self.reg.stop()
        if os.environ.get("CHAOS_KEEP"):
            print("# kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
