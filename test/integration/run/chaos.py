#!/usr/bin/python3
"""Chaos against the whole loop (issue 7). Phase 1: `imageguard run` for CHAOS_SECONDS (default
60) against the real registry behind the fault proxy, with repositories that always answer 429,
5xx, stall past the timeout, reset, truncate or send garbage, while the test randomly serves
stale lists, restarts the registry, takes the Git remote away, pushes from another writer,
storms SIGHUP and replaces the config with garbage. Asserted: the process never exits,
/healthz keeps answering, passes keep completing, RSS and file descriptors do not grow without
bound (a generous bound: RSS flatness within 10% is a benchmark target, bench/chaos.sh), it
exits 0 on SIGTERM. Phase 2: `kill -9` at random points of CHAOS_KILLS (default 8) runs, then
one `reconcile` must recover the state dir and the clone and finish the work. Across the whole
Git history: no marker moved backward, every tag written was pushed, no other writer's commit
was lost, and the planted secrets appear in no log, audit record or commit.
CHAOS_SEED (default 20261201) makes a failing run reproducible."""
import base64
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, git, serve_tags, IMAGEGUARD  # noqa: E402
import registry  # noqa: E402

t = Checks()
SEED = int(os.environ.get("CHAOS_SEED", "20261201"))
DURATION = float(os.environ.get("CHAOS_SECONDS", "60"))
KILLS = int(os.environ.get("CHAOS_KILLS", "8"))
rnd = random.Random(SEED)
print("# seed %d, %.0f s of chaos, %d kills" % (SEED, DURATION, KILLS))

PLANTED_USER = "chaos-user-%08x" % rnd.getrandbits(32)
PLANTED_PASS = "PLANTED-%032x" % rnd.getrandbits(128)
SECRETS = [PLANTED_PASS, "wonderland",
           base64.b64encode(("%s:%s" % (PLANTED_USER, PLANTED_PASS)).encode()).decode(),
           base64.b64encode(b"alice:wonderland").decode()]
# Repositories of the fault server that fail on every request, each in its own way.
FAULTY = ["r429", "e500", "slow", "stall-body", "truncated", "short-body", "invalid", "notags"]
MARK = re.compile(r'image: (\S+) # \{"\$imagepolicy": "default:(\w+)"\}')
ASAN = b"__asan_init" in open(IMAGEGUARD, "rb").read()


def get(port, path, timeout=5):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def proc_figures(pid):
    """(RSS in kB, open file descriptors) of a live process."""
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))
    return rss, len(os.listdir("/proc/%d/fd" % pid))


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0


def semver_key(tag):
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)$", tag)
    return tuple(int(x) for x in m.groups()) if m else None


def num_key(tag):
    return int(tag) if re.match(r"^\d+$", tag) else None


class World:
    def __init__(self, env):
        self.env = env
        self.fault = env.fault()
        self.pushed = {"app": [], "num": []}
        self.ver = [1, 0, 0]
        self.num = 100
        self.other_commits = []
        self.uid = "%08x" % rnd.getrandbits(32)

    # --- registry ---
    def new_tag(self, policy):
        if policy == "app":
            self.ver[rnd.choice([1, 2])] += 1
            tag = "%d.%d.%d" % tuple(self.ver)
        else:
            self.num += rnd.randint(1, 50)
            tag = str(self.num)
        self.env.push("team/" + policy, [tag])
        self.pushed[policy].append(tag)

    def restart_registry(self):
        reg = self.env.reg
        old = reg.procs[-1]
        old.terminate()
        old.wait(10)
        time.sleep(rnd.uniform(0.5, 2.0))
        log = open(os.path.join(reg.dir, "registry.log"), "ab")
        p = subprocess.Popen([registry.REGISTRY_BIN, "serve", os.path.join(reg.dir, "config.yml")],
                             stdout=subprocess.DEVNULL, stderr=log)
        reg.procs[-1] = p
        registry.wait_for_port(int(reg.host.rsplit(":", 1)[1]), p)

    def stale_list(self):
        tags = self.pushed["app"][:max(1, len(self.pushed["app"]) // 2)]
        serve_tags(self.fault, "team/app", tags)

    # --- Git ---
    def other_writer(self):
        """Someone else commits an unrelated file (pull --rebase, retry on a moved remote)."""
        for _ in range(5):
            try:
                self.env.seed({"notes/other.txt": "note %d\n" % rnd.getrandbits(32)},
                              message="other writer %s" % self.uid)
                self.other_commits.append(git("rev-parse", "HEAD", cwd=self.env.work).strip())
                return
            except RuntimeError:
                time.sleep(0.3)

    def remote_away(self, seconds):
        away = self.env.remote + ".away"
        os.rename(self.env.remote, away)
        try:
            time.sleep(seconds)
        finally:
            os.rename(away, self.env.remote)

    # --- config ---
    def config_text(self, faulty=True):
        env, host = self.env, self.fault.host
        text = (env.repository("app", "team/app", interval="1s", host=host,
                               extra="  secretRef:\n    name: planted\n")
                + env.policy("app", "app", semver=">=1.0.0")
                + env.repository("num", "team/num", interval="1s")
                + env.policy("num", "num", numerical="asc"))
        if faulty:
            for kind in FAULTY:
                name = kind.replace("-", "")
                text += (env.repository(name, "%s/%s" % (kind, self.uid), interval="1s", host=host,
                                        extra="  timeout: 2s\n")
                         + env.policy(name, name, alphabetical="asc"))
            text += (env.repository("redirect", "redirect/%s" % self.uid, interval="1s", host=host,
                                    extra="  timeout: 2s\n  secretRef:\n    name: alice\n")
                     + env.policy("redirect", "redirect", alphabetical="asc"))
        return text + env.automation(interval="1s")

    def files(self, faulty=True):
        host = self.fault.host
        out = {"app.yaml": marker_yaml("%s/team/app:%s" % (host, self.pushed["app"][0]), "app"),
               "num.yaml": marker_yaml("%s/team/num:%s" % (self.env.host, self.pushed["num"][0]),
                                       "num")}
        if faulty:
            body = "".join(marker_yaml("%s/%s/%s:t000" % (host, k, self.uid), k.replace("-", ""))
                           for k in FAULTY + ["redirect"])
            out["faulty.yaml"] = body
        return out


def marker_yaml(image, policy):
    return "---\nkind: Pod\nspec:\n  containers:\n    - name: x\n      image: %s # {\"$imagepolicy\": \"default:%s\"}\n" % (image, policy)


def write_secret(env, name, user, password):
    d = os.path.join(env.secrets, name)
    os.makedirs(d, exist_ok=True)
    for k, v in (("username", user), ("password", password)):
        with open(os.path.join(d, k), "w") as f:
            f.write(v)


def stop(proc, timeout=60):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def passes_done(port):
    m = re.search(r"^imageguard_reconcile_duration_seconds_count (\d+)", get(port, "/metrics")[1], re.M)
    return int(m.group(1)) if m else -1


def phase_run(env, w):
    port = registry.free_port()
    audit = os.path.join(env.dir, "audit.log")
    errlog = open(os.path.join(env.dir, "run.log"), "w+")
    proc = subprocess.Popen(env.args("run", "--listen", "127.0.0.1:%d" % port, "--audit-log", audit,
                                     "--log-level", "debug"),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    samples, health_fail, exited, stuck = [], 0, None, []
    events = {}
    try:
        registry.wait_for_port(port, proc)
        start = time.time()
        last_pass, last_pass_at = passes_done(port), start
        actions = ["stale", "fresh", "restart", "remote", "writer", "sighup", "garbage", "push",
                   "push"]
        while time.time() - start < DURATION:
            a = rnd.choice(actions)
            events[a] = events.get(a, 0) + 1
            if a == "stale":
                w.stale_list()
            elif a == "fresh":
                serve_tags(w.fault, "team/app", None)
            elif a == "restart":
                w.restart_registry()
            elif a == "remote":
                w.remote_away(rnd.uniform(1, 4))
            elif a == "writer":
                w.other_writer()
            elif a == "sighup":
                for _ in range(rnd.randint(10, 50)):
                    proc.send_signal(signal.SIGHUP)
                    time.sleep(rnd.uniform(0, 0.02))
            elif a == "garbage":
                path = os.path.join(env.config_dir, "config.yaml")
                good = open(path).read()
                with open(path, "wb") as f:
                    f.write(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4000))))
                proc.send_signal(signal.SIGHUP)
                time.sleep(rnd.uniform(1, 3))
                with open(path, "w") as f:
                    f.write(good)
            elif a == "push":
                w.new_tag(rnd.choice(["app", "num"]))
            time.sleep(rnd.uniform(0.2, 1.5))
            if proc.poll() is not None:
                exited = proc.returncode
                break
            code, _ = get(port, "/healthz")
            health_fail += code != 200
            now = time.time()
            done = passes_done(port)
            if done > last_pass:
                last_pass, last_pass_at = done, now
            elif now - last_pass_at > 45:
                stuck.append("no pass completed for %.0f s" % (now - last_pass_at))
                last_pass_at = now
            samples.append((now - start,) + proc_figures(proc.pid))
        serve_tags(w.fault, "team/app", None)
        w.new_tag("app")
        w.new_tag("num")
        final = (w.pushed["app"][-1], w.pushed["num"][-1])
        caught_up = wait_until(lambda: final[0] in env.remote_file("app.yaml") and
                               final[1] in env.remote_file("num.yaml"), 60)
        print("# %d passes, events: %s" % (last_pass, ", ".join("%s %d" % kv for kv in sorted(events.items()))))
    finally:
        alive = proc.poll() is None
        rc = stop(proc)
        errlog.close()
    log = open(os.path.join(env.dir, "run.log")).read()
    t.check(exited is None and alive, "run never exited during the chaos", "exit %s\n%s" % (exited, log[-3000:]))
    t.check(health_fail == 0, "/healthz answered 200 at every probe (%d probes)" % len(samples),
            "%d failures" % health_fail)
    t.check(not stuck and last_pass >= DURATION / 10, "passes kept completing (%d)" % last_pass, stuck)
    missed = [k for k in FAULTY if "%s/%s" % (k, w.uid) not in log]
    t.check(not missed, "every faulty repository was reached and its failure reported", missed)
    t.check(caught_up, "after the chaos the loop catches up with the newest tags")
    t.check(rc == 0, "SIGTERM after the chaos: exit 0", log[-3000:])
    early = [s for s in samples if DURATION * 0.25 <= s[0] <= DURATION * 0.45]
    late = [s for s in samples if s[0] >= DURATION * 0.8]
    rss0, rss1 = median([s[1] for s in early]), median([s[1] for s in late])
    fd0, fd1 = median([s[2] for s in early]), median([s[2] for s in late])
    print("# RSS after warm-up %d kB, at the end %d kB; fds %d -> %d" % (rss0, rss1, fd0, fd1))
    # Growth without bound, not flatness: the bound is generous (a leak of a few kB per pass
    # over the run stays under it; a leak of a listing per pass does not). ASan's quarantine
    # holds up to 256 MiB of freed memory by design, so its bound adds that. The flatness
    # figure (target: within 10%) is bench/chaos.sh's, outside make check.
    slack = (256 + 64) * 1024 if ASAN else 64 * 1024
    t.check(early and late and rss1 <= rss0 * 2 + slack,
            "RSS does not grow without bound (%d -> %d kB, bound %d kB)" % (rss0, rss1, rss0 * 2 + slack))
    t.check(early and late and fd1 <= fd0 + 4, "file descriptors do not grow (%d -> %d)" % (fd0, fd1))
    return log, open(audit).read() if os.path.exists(audit) else ""


def wait_until(cond, timeout, step=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if cond():
                return True
        except RuntimeError:
            pass
        time.sleep(step)
    return False


def phase_kill(env, w):
    """kill -9 at random points of passes that have work to do, then one reconcile recovers."""
    env.config(w.config_text(faulty=False))
    logs = []
    for i in range(KILLS):
        w.new_tag(rnd.choice(["app", "num"]))
        if rnd.random() < 0.5:
            w.other_writer()
        errlog = open(os.path.join(env.dir, "kill-%d.log" % i), "w+")
        proc = subprocess.Popen(env.args("run"), stdout=subprocess.DEVNULL, stderr=errlog)
        time.sleep(rnd.uniform(0.05, 2.5))
        proc.kill()
        proc.wait()
        errlog.seek(0)
        logs.append(errlog.read())
        errlog.close()
    w.new_tag("app")
    w.new_tag("num")
    r = env.imageguard("reconcile", "--audit-log", os.path.join(env.dir, "audit-kill.log"))
    t.check(r.rc == 0, "reconcile after %d kill -9: exit 0 (state dir and clone recovered)" % KILLS, r)
    t.check(w.pushed["app"][-1] in env.remote_file("app.yaml") and
            w.pushed["num"][-1] in env.remote_file("num.yaml"),
            "the recovered reconcile wrote the newest tags", env.remote_file("app.yaml"))
    fsck = subprocess.run(["git", "--git-dir", env.remote, "fsck", "--strict"], capture_output=True, text=True)
    t.check(fsck.returncode == 0, "the remote passes git fsck", fsck.stderr)
    return "\n".join(logs) + r.err + r.out


def check_history(env, w):
    out = git("--git-dir", env.remote, "log", "--reverse", "--first-parent",
              "--format=%H%x00%an", "main")
    commits = [l.split("\0") for l in out.splitlines()]
    keys = {"app": semver_key, "num": num_key}
    pushed = {p: set(v) for p, v in w.pushed.items()}
    backward, unpushed, forward = [], [], 0
    for i, (sha, author) in enumerate(commits):
        if author != "imageguard" or i == 0:
            continue
        parent = commits[i - 1][0]
        for f in ("app.yaml", "num.yaml"):
            before = MARK.findall(git("--git-dir", env.remote, "show", "%s:%s" % (parent, f), check=False))
            after = MARK.findall(git("--git-dir", env.remote, "show", "%s:%s" % (sha, f), check=False))
            for (old, p), (new, _) in zip(before, after):
                old_tag, new_tag = old.rsplit(":", 1)[1], new.rsplit(":", 1)[1]
                if old_tag == new_tag:
                    continue
                forward += 1
                if new_tag not in pushed[p]:
                    unpushed.append("%s %s: %s" % (sha[:8], f, new_tag))
                ko, kn = keys[p](old_tag), keys[p](new_tag)
                if ko is None or kn is None or kn < ko:
                    backward.append("%s %s: %s -> %s" % (sha[:8], f, old_tag, new_tag))
    print("# %d commits on main, %d marker moves by imageguard" % (len(commits), forward))
    t.check(not backward, "no imageguard commit moved a marker backward", backward)
    t.check(not unpushed, "every tag imageguard wrote had been pushed", unpushed)
    t.check(forward >= 2, "the chaos run committed forward moves (%d)" % forward)
    lost = [c for c in w.other_commits
            if subprocess.run(["git", "--git-dir", env.remote, "merge-base", "--is-ancestor", c, "main"]).returncode != 0]
    t.check(not lost, "no other writer's commit was lost (%d commits)" % len(w.other_commits), lost)


def check_secrets(env, texts):
    history = git("--git-dir", env.remote, "log", "-p", "--all", "--format=%H%n%an%n%B")
    leaks = []
    for name, text in list(texts.items()) + [("git history", history)]:
        for s in SECRETS:
            if s in text:
                leaks.append("%s contains %s..." % (name, s[:6]))
    t.check(not leaks, "planted secrets appear in no log, audit record or commit", leaks)


def main():
    with Env() as env:
        w = World(env)
        write_secret(env, "planted", PLANTED_USER, PLANTED_PASS)
        write_secret(env, "alice", "alice", "wonderland")
        for p in ("app", "num"):
            w.new_tag(p)
        env.seed(w.files())
        env.config(w.config_text())
        try:
            run_log, audit = phase_run(env, w)
            kill_logs = phase_kill(env, w)
            check_history(env, w)
            audits = audit + "".join(open(os.path.join(env.dir, f)).read()
                                     for f in os.listdir(env.dir) if f.startswith("audit-"))
            check_secrets(env, {"run log": run_log, "audit log": audits, "kill-run logs": kill_logs})
        except Exception:
            import traceback
            t.check(False, "chaos scenario raised", traceback.format_exc())
    return t.done()


sys.exit(main())
