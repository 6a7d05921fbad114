#!/usr/bin/python3
"""The body of bench/git_reconcile.sh (issue 38, item 3): one image update in a repository of
5,000 manifests, `imageguard reconcile` with a warm clone cache beside the peers' way (`git
clone --depth 1`, find the marked file, sed, commit, push), against a file:// remote and a
smart-HTTP one (`git http-backend`), on a quiet machine and on a busy one (two CPU-burning
loops), interleaved round by round; the verdict is on the median of the per-round ratios.

The setup, and why: every manifest is a realistic ~2 KB Deployment; one of them carries the
marker of the one configured ImagePolicy, whose repository on the loopback docker-registry has
one newer tag. Issue 38 times one update in a 5,000-manifest repository: with 5,000 policies
the figure would be 5,000 registry listings (bench/reconcile.sh measures that), and with 4,999
markers naming policies absent from the configuration it would be 4,999 warnings. The
automation's update.path is the whole repository, so the marker index covers all 5,000 files.

Before every timed run the remote gets one commit whose tree is the seed's (the marker back at
1.0.0), as another writer's commit would: imageguard's warm clone fetches a commit it has not
seen, and both sides start from the same remote content. After every run the tree pushed must
equal the one the other side pushed (same parent tree, same one-line change)."""
import calendar
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["IMAGEGUARD_SRC"], "test", "fixtures"))
sys.path.insert(0, os.path.join(os.environ["IMAGEGUARD_SRC"], "bench"))
from guard_env import Env, IMAGEGUARD, git  # noqa: E402
from interleave import run_once  # noqa: E402
import manifests  # noqa: E402

FILES = int(os.environ.get("FILES", "5000"))
ROUNDS = int(os.environ.get("ROUNDS", "15"))
WARMUP = int(os.environ.get("WARMUP", "2"))
TARGET = FILES // 2
POLICY = "app-%d" % TARGET
FIXTURES = os.path.join(os.environ["IMAGEGUARD_SRC"], "test", "fixtures")


# The peer, as cheaply as it honestly goes: a shallow single-branch clone without tags, `git
# grep` over the index for the marker (the files are already in the page cache), sed on that
# file, commit -a, push. One shell; the clone directory is removed before the timing starts.
PEER = r"""set -e
git clone -q --depth 1 --single-branch --no-tags "$1" "$2"
cd "$2"
f=$(git grep -l -F '{"$imagepolicy": "default:%s"}')
sed -i -E 's|(image: [^ ]+:)[^ ]+( # \{"\$imagepolicy": "default:%s"\})|\11.0.1\2|' "$f"
git -c user.name=peer -c user.email=peer@localhost commit -q -am "%s: 1.0.1"
git push -q origin main
""" % (POLICY, POLICY, POLICY)


def verdict(ok):
    return "met" if ok else "MISSED"


def write_seed(root, host):
    def image_marker(i):
        if i == TARGET:
            return "%s/apps/%s" % (host, POLICY), ' # {"$imagepolicy": "default:%s"}' % POLICY
        return "registry.example.com/team-%d/app-%d" % (i % 20, i), ""
    manifests.write(root, FILES, image_marker)


def config(env, url, secret):
    return (env.repository(POLICY, "apps/" + POLICY) + env.policy(POLICY, POLICY, semver=">=1.0.0")
            + env.automation(url=url, secret=secret))


class Remote:
    """One bare repository and how both sides reach it."""

    def __init__(self, env, name, seed):
        self.name = name
        self.root = os.path.join(env.dir, name)
        self.bare = os.path.join(self.root, "remote.git")
        os.makedirs(self.root)
        subprocess.run([os.path.join(FIXTURES, "gitpeers.sh"), "bare", self.bare, seed],
                       check=True, stdout=subprocess.DEVNULL)
        self.seed_tree = self.git("rev-parse", "main^{tree}")
        self.config_dir = os.path.join(env.dir, "config-" + name)
        self.state = os.path.join(env.dir, "state-" + name)
        self.peer_dir = os.path.join(env.dir, "peer-" + name)
        os.makedirs(self.config_dir)

    def git(self, *args):
        return git("--git-dir", self.bare, *args).strip()

    def restore(self):
        """Another writer's commit: the seed's tree on top of whatever main is."""
        head = self.git("rev-parse", "main")
        c = self.git("commit-tree", self.seed_tree, "-p", head, "-m", "restore 1.0.0")
        self.git("update-ref", "refs/heads/main", c, head)
        return c

    def pushed_tree(self, before):
        """The tree main points at, checking exactly one commit was added on top of before."""
        if self.git("rev-parse", "main^") != before:
            raise RuntimeError("%s: main is not one commit on top of %s" % (self.name, before))
        return self.git("rev-parse", "main^{tree}")


def expected_tree(remote):
    """The seed's tree with the marked line at 1.0.1, computed with plumbing (no work tree)."""
    path = "apps/app-%d/deployment.yaml" % TARGET
    text = remote.git("show", "%s:%s" % (remote.seed_tree, path)) + "\n"
    new = text.replace(":1.0.0 # {\"$imagepolicy\"", ":1.0.1 # {\"$imagepolicy\"")
    if new == text:
        raise RuntimeError("seed: no marked line in %s" % path)
    blob = subprocess.run(["git", "--git-dir", remote.bare, "hash-object", "-w", "--stdin"],
                          input=new, text=True, capture_output=True, check=True).stdout.strip()
    idx = os.path.join(remote.root, "expect.index")
    envi = dict(os.environ, GIT_INDEX_FILE=idx)
    run = lambda *a: subprocess.run(["git", "--git-dir", remote.bare] + list(a), env=envi,
                                    capture_output=True, text=True, check=True).stdout.strip()
    run("read-tree", remote.seed_tree)
    run("update-index", "--cacheinfo", "100644,%s,%s" % (blob, path))
    return run("write-tree")


def one_round(remote, sides, want_tree, order):
    """Each side once, in order; wall, user and sys seconds per side."""
    out = {}
    for name in order:
        before = remote.restore()
        if os.path.exists(remote.peer_dir):
            shutil.rmtree(remote.peer_dir)
        w, u, s = run_once(sides[name])
        got = remote.pushed_tree(before)
        if got != want_tree:
            raise RuntimeError("%s over %s pushed tree %s, want %s (the seed with the one "
                               "marked line at 1.0.1)" % (name, remote.name, got, want_tree))
        out[name] = (w, u, s)
    return out


def measure(remote, sides):
    want = expected_tree(remote)
    names = list(sides)
    walls = {n: [] for n in names}
    cpus = {n: [] for n in names}
    for r in range(WARMUP + ROUNDS):
        res = one_round(remote, sides, want, names if r % 2 == 0 else names[::-1])
        if r < WARMUP:
            continue
        for n in names:
            walls[n].append(res[n][0])
            cpus[n].append(res[n][1] + res[n][2])
    ratios = [p / i for i, p in zip(walls["imageguard"], walls["peer"])]
    q = statistics.quantiles(ratios, n=4, method="inclusive")
    return {"ig": statistics.median(walls["imageguard"]),
            "ig_cpu": statistics.median(cpus["imageguard"]),
            "peer": statistics.median(walls["peer"]),
            "peer_cpu": statistics.median(cpus["peer"]),
            "ratio": statistics.median(ratios), "q1": q[0], "q3": q[2]}


# The phases of one pass, between the debug events that end them (json log lines, millisecond
# timestamps), the first from the spawn and the last to the exit (wall clock both).
PHASES = [("process start (exec, both binaries, libraries)", "pass.start"),
          ("config load", "config.load"),
          ("clone-cache open, HEAD check, fetch", "git.fetch"),
          ("clean check, checkout, object check", "git.open"),
          ("marker index", "markers.scan"),
          ("registry listing", "registry.list"),
          ("decide, splice, stage, commit", "git.commit.write"),
          ("push", "git.push"),
          ("report, exit", None)]


def stamp(line):
    ev = json.loads(line)
    t = time.strptime(ev["time"][:19], "%Y-%m-%dT%H:%M:%S")
    return ev["event"], calendar.timegm(t) + int(ev["time"][20:23]) / 1e3


def breakdown(remote, argv, runs=7):
    """The median milliseconds of each phase over runs passes (not interleaved: a profile)."""
    got = {name: [] for name, _ in PHASES}
    want = expected_tree(remote)
    for _ in range(runs):
        before = remote.restore()
        t0 = time.time()
        r = subprocess.run(argv + ["--log-level", "debug", "--log-format", "json"],
                           capture_output=True, text=True)
        t1 = time.time()
        if r.returncode != 0 or remote.pushed_tree(before) != want:
            raise RuntimeError("breakdown pass over %s: %s" % (remote.name, r.stderr[-2000:]))
        seen = {}
        for line in r.stderr.splitlines():
            if line.startswith("{"):
                ev, t = stamp(line)
                seen.setdefault(ev, t)
        prev = t0
        for name, ev in PHASES:
            t = seen[ev] if ev else t1
            got[name].append(max(0.0, t - prev) * 1e3)
            prev = t
    return {name: statistics.median(v) for name, v in got.items()}


def burners(n):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


def main():
    with Env() as env:
        t0 = time.monotonic()
        env.push("apps/" + POLICY, ["1.0.0", "1.0.1"])
        seed = os.path.join(env.dir, "seed")
        write_seed(seed, env.host)
        plain = Remote(env, "file", seed)
        http = Remote(env, "http", seed)
        hdir = os.path.join(env.dir, "githttp")
        env._stops.append([os.path.join(FIXTURES, "gitpeers.sh"), "stop", hdir])
        with open(os.path.join(env.dir, "githttp.out"), "w+") as out:
            subprocess.run([os.path.join(FIXTURES, "gitpeers.sh"), "http", hdir, http.root,
                            "git", "s3cret"], check=True, stdout=out,
                           stderr=subprocess.DEVNULL)
            out.seek(0)
            port = out.read().strip()
        sec = os.path.join(env.secrets, "git-auth")
        os.makedirs(sec)
        for k, v in (("username", "git"), ("password", "s3cret")):
            with open(os.path.join(sec, k), "w") as f:
                f.write(v)
        urls = {"file": ("file://" + plain.bare, None, "file://" + plain.bare),
                "http": ("http://127.0.0.1:%s/remote.git" % port, "git-auth",
                         "http://git:s3cret@127.0.0.1:%s/remote.git" % port)}
        remotes = {"file": plain, "http": http}
        sides = {}
        for name, remote in remotes.items():
            url, secret, peer_url = urls[name]
            with open(os.path.join(remote.config_dir, "config.yaml"), "w") as f:
                f.write(config(env, url, secret))
            ig = [IMAGEGUARD, "reconcile", "--config", remote.config_dir, "--state-dir",
                  remote.state, "--secrets-dir", env.secrets]
            # the first pass clones into the cache (not timed); let the clone age past Git's
            # racy window (a work tree seconds old is read in full: bench/git.sh)
            remote.restore()
            r = subprocess.run(ig, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("first reconcile over %s: %s" % (name, r.stderr))
            sides[name] = {"imageguard": ig,
                           "peer": ["sh", "-c", PEER, "peer", peer_url, remote.peer_dir]}
        time.sleep(2)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(seed) for f in fs)
        print("repository: %d manifests, %d KiB, one marked (policy default:%s, one newer tag); "
              "setup %.1fs; %d rounds after %d warm-up, order reversed every other round"
              % (FILES, size // 1024, POLICY, time.monotonic() - t0, ROUNDS, WARMUP))
        rows = []
        for load in ("quiet", "busy"):
            procs = burners(2) if load == "busy" else []
            try:
                for name in ("file", "http"):
                    res = measure(remotes[name], sides[name])
                    res["load"] = os.getloadavg()[0]
                    rows.append((load, name, res))
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
        print("%-6s %-6s %10s %10s %10s %10s %8s %13s %8s  %s" % (
            "load", "remote", "ig ms", "ig cpu ms", "peer ms", "peer cpu", "ratio",
            "quartiles", "loadavg", "target >= 5x"))
        for load, name, r in rows:
            print("%-6s %-6s %10.1f %10.1f %10.1f %10.1f %7.2fx %6.2f-%5.2fx %8.2f  %s" % (
                load, name, r["ig"] * 1e3, r["ig_cpu"] * 1e3, r["peer"] * 1e3,
                r["peer_cpu"] * 1e3, r["ratio"], r["q1"], r["q3"], r["load"],
                verdict(r["ratio"] >= 5)))
        print("same tree: every run of both sides pushed the seed's tree with the one marked "
              "line at 1.0.1")
        print("load average: %s on %d cores" % (open("/proc/loadavg").read().split()[:3],
                                                os.cpu_count()))
        # where imageguard's time goes: quiet machine, median of 7 passes each
        prof = {name: breakdown(remotes[name], sides[name]["imageguard"]) for name in remotes}
        print("breakdown of one imageguard pass, ms (median of 7; from --log-level debug "
              "timestamps, 1 ms resolution):")
        print("  %-50s %8s %8s" % ("phase", "file", "http"))
        for name, _ in PHASES:
            print("  %-50s %8.0f %8.0f" % (name, prof["file"][name], prof["http"][name]))
        print("  %-50s %8.0f %8.0f" % ("total", sum(prof["file"].values()),
                                       sum(prof["http"].values())))


if __name__ == "__main__":
    main()
