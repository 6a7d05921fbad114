#!/usr/bin/python3
"""Sharding end to end against a real docker-registry and several bare Git remotes (CONTRACT
§10, issue 17). By hash: with --shards 3, check-config names each automation's owner, and that
owner is FNV-1a 64 + fmix64 of the normalised (Git URL, push branch) pair mod 3 computed here
independently; `reconcile --shards 3 --shard-index i` for i = 0..2 pushes each pair from exactly
its owner (two automations spelling one remote's URL differently land together), the union
covers every pair, plan --shards says `shard I/N`, and `--shard-index auto` reads the
hostname's StatefulSet ordinal (in a UTS namespace of its own). By label, in file mode, as Flux's
--watch-label-selector: `sharding.fluxcd.io/key=shard1` writes only the labelled objects' remote,
`!sharding.fluxcd.io/key` only the others'. Usage errors are one line, exit 2. An automation
with push.branch and a push.refspec to another branch is a configuration error under --shards 2
(check-config names its line; no shard pushes the second branch), and fine without."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, Result, IMAGEGUARD, git, marker_file  # noqa: E402

t = Checks()
REMOTES = 6


def fnv1a64(data):
    """FNV-1a 64, then MurmurHash3's fmix64 (shard.h's shard_hash)."""
    m = 1 << 64
    h = 14695981039346656037
    for b in data.encode():
        h = ((h ^ b) * 1099511628211) % m
    h ^= h >> 33
    h = (h * 0xff51afd7ed558ccd) % m
    h ^= h >> 33
    h = (h * 0xc4ceb9fe1a85ec53) % m
    return h ^ (h >> 33)


def normalised_file_url(path):
    """shard.h's rule for file:// URLs: "file://" + "/" + the path without trailing '/' or
    one '.git', '/' runs folded."""
    p = re.sub("/+", "/", path).strip("/")
    if p.endswith(".git"):
        p = p[:-4]
    return "file:///" + p.rstrip("/")


def bare_remote(env, name, files):
    """A bare remote seeded with files on main; returns its path."""
    return env.bare_remote(name, files)[0]


def check_config(env, *args):
    """check-config takes no --state-dir: Env.imageguard's arguments do not fit it."""
    return Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir]
                                 + list(args), capture_output=True, text=True, timeout=60))


def head(remote, branch="main"):
    return git("--git-dir", remote, "rev-parse", "--verify", "-q", "refs/heads/" + branch,
               check=False).strip()


def automation(name, url, labels="", push=None, path="./", checkout="main"):
    push_branch = push or checkout
    return ("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
            "metadata:\n  name: %s\n  namespace: default\n%sspec:\n  interval: 1m\n"
            "  url: %s\n  ref:\n    branch: main\n"
            "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: %s\n  namespace: default\n%sspec:\n  interval: 1m\n"
            "  sourceRef:\n    kind: GitRepository\n    name: %s\n"
            "  git:\n    checkout:\n      ref:\n        branch: %s\n"
            "    commit:\n      author:\n        name: imageguard\n"
            "        email: imageguard@test\n    push:\n      branch: %s\n"
            "  update:\n    path: %s\n    strategy: Setters\n"
            % (name, labels, url, name, labels, name, checkout, push_branch, path))


def by_hash(env):
    img = env.image("team/app")
    env.push("team/app", ["1.0.0", "1.1.0"])
    remotes, autos = [], []
    for k in range(REMOTES):
        files = {"app-r%d.yaml" % k: marker_file(img + ":1.0.0", "app")}
        remotes.append(bare_remote(env, "r%d" % k, files))
    # r0 twice, spelled differently, one pair (r0, main); r1 also pushes a second branch,
    # review, from its own checkout branch base (so that main's update does not empty it)
    git("--git-dir", remotes[1], "branch", "base", "main")
    autos.append(("a0", "file://" + remotes[0], "main", 0))
    autos.append(("a0-again", "file://" + remotes[0] + "/", "main", 0))
    autos.append(("a1-review", "file://" + remotes[1], "review", 1))
    for k in range(1, REMOTES):
        autos.append(("a%d" % k, "file://" + remotes[k], "main", k))
    text = env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
    for name, url, branch, _ in autos:
        text += automation(name, url, push=branch if branch != "main" else None,
                           checkout="base" if branch == "review" else "main")
    env.config(text)

    want = {name: fnv1a64(normalised_file_url(remotes[k]) + "\n" + branch) % 3
            for name, _, branch, k in autos}
    r = check_config(env, "--shards", "3")
    got = dict(re.findall(r"^ImageUpdateAutomation 'default/([^']+)': shard (\d)/3 ", r.out, re.M))
    t.check(r.rc == 0 and r.out.endswith("configuration OK\n") and len(got) == len(autos),
            "check-config --shards 3 names the owner of every automation", r)
    t.check({k: int(v) for k, v in got.items()} == want,
            "each owner is FNV-1a 64 + fmix64 of the normalised (URL, push branch) mod 3", (got, want))
    t.check(want["a0"] == want["a0-again"], "two spellings of one remote's URL share a shard",
            want)
    r = check_config(env)
    t.check(r.rc == 0 and r.out == "configuration OK\n", "without --shards nothing changes", r)

    r = env.imageguard("plan", "--shards", "3", "-o", "json")
    items = r.json() if r.out.strip() else []
    marked = [i for i in items if i.get("file")]
    t.check(r.rc == 0 and marked and all(i.get("shards") == 3 and i.get("shard") in (0, 1, 2)
                                         for i in marked),
            "plan --shards 3 -o json gives each automation's item its shard", items)
    r = env.imageguard("plan", "--shards", "3")
    t.check(r.rc == 0 and re.search(r" shard [0-2]/3", r.out),
            "plan --shards 3 text lines say `shard I/3`", r)
    r = env.imageguard("plan")
    t.check(r.rc == 0 and "shard" not in r.out, "plan without --shards is unchanged", r)

    pairs = {}  # (remote index, branch) -> owner
    for name, _, branch, k in autos:
        pairs[(k, branch)] = want[name]
    pushed_by = {p: [] for p in pairs}
    for i in range(3):
        before = {p: head(remotes[p[0]], p[1]) for p in pairs}
        r = env.imageguard("reconcile", "--shards", "3", "--shard-index", str(i), "-o", "json")
        items = r.json() if r.out.strip() else []
        files = {it["file"] for it in items if it.get("file")}
        own = {"app-r%d.yaml" % p[0] for p, o in pairs.items() if o == i}
        t.check(r.rc == 0, "reconcile --shards 3 --shard-index %d exits 0" % i, r)
        t.check(files == own, "shard %d reads only the markers of the pairs it owns" % i,
                (files, own))
        for p in pairs:
            if head(remotes[p[0]], p[1]) != before[p]:
                pushed_by[p].append(i)
    t.check(all(v == [pairs[p]] for p, v in pushed_by.items()),
            "every (remote, branch) pair is pushed by exactly its owner", (pushed_by, pairs))
    t.check(all(marker_file(img + ":1.1.0", "app") in
                git("--git-dir", remotes[p[0]], "show", "%s:app-r%d.yaml" % (p[1], p[0]))
                for p in pairs), "the union of the shards covers every pair", pushed_by)
    # again, every shard: up to date on main; the review branch is rebuilt from base, as
    # Flux's review flow does, by its owner only
    for i in range(3):
        before = {p: head(remotes[p[0]], p[1]) for p in pairs}
        r = env.imageguard("reconcile", "--shards", "3", "--shard-index", str(i))
        moved = {p for p in pairs if head(remotes[p[0]], p[1]) != before[p]}
        t.check(r.rc == 0 and moved <= {p for p in pairs if p[1] == "review" and pairs[p] == i},
                "second pass of shard %d: main is up to date, nothing of another shard moves"
                % i, (r, moved))


def labelled(text, labels):
    return text.replace("  namespace: default\n", "  namespace: default\n" + labels)


def by_label(env):
    img = env.image("team/app")
    env.push("team/app", ["1.0.0", "1.1.0"])
    r0 = bare_remote(env, "main-shard", {"app.yaml": marker_file(img + ":1.0.0", "app0")})
    r1 = bare_remote(env, "shard1", {"app.yaml": marker_file(img + ":1.0.0", "app1")})
    key = "  labels:\n    sharding.fluxcd.io/key: shard1\n"
    env.config(env.repository("app0", "team/app")
               + env.policy("app0", "app0", semver=">=1.0.0")
               + automation("a0", "file://" + r0)
               + labelled(env.repository("app1", "team/app"), key)
               + labelled(env.policy("app1", "app1", semver=">=1.0.0"), key)
               + automation("a1", "file://" + r1, labels=key))
    h0, h1 = head(r0), head(r1)
    r = check_config(env, "--watch-label-selector", "sharding.fluxcd.io/key=shard1")
    t.check(r.rc == 0, "check-config takes --watch-label-selector", r)
    r = env.imageguard("reconcile", "--watch-label-selector", "sharding.fluxcd.io/key=shard1",
                       "-o", "json")
    pols = {i["policy"] for i in (r.json() if r.out.strip() else [])}
    t.check(r.rc == 0 and head(r1) != h1 and head(r0) == h0,
            "sharding.fluxcd.io/key=shard1 writes only the labelled objects' remote", r)
    t.check(pols == {"default/app1"}, "the other objects are left out as the API would", pols)
    r = env.imageguard("reconcile", "--watch-label-selector", "!sharding.fluxcd.io/key",
                       "-o", "json")
    pols = {i["policy"] for i in (r.json() if r.out.strip() else [])}
    t.check(r.rc == 0 and head(r0) != h0 and pols == {"default/app0"},
            "!sharding.fluxcd.io/key (the main instance) writes only the unlabelled", (r, pols))
    r = env.imageguard("reconcile", "--watch-label-selector", "sharding.fluxcd.io/key in (x)")
    t.check(r.rc == 0 and r.out == "", "a selector that matches nothing is an empty pass", r)
    r = env.imageguard("plan", "--watch-label-selector",
                       "sharding.fluxcd.io/key in (shard1),app notin (x)", "-o", "json")
    t.check(r.rc == 0 and {i["policy"] for i in r.json()} == {"default/app1"},
            "set-based requirements joined by ',' select as the API server does", r)


def usage(env):
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation())
    cases = [
        (["reconcile", "--shards", "0", "--shard-index", "0"], "option '--shards'"),
        (["reconcile", "--shards", "3"], "option '--shards': needs --shard-index"),
        (["reconcile", "--shard-index", "1"], "option '--shard-index': needs --shards"),
        (["reconcile", "--shards", "3", "--shard-index", "3"], "is not below --shards 3"),
        (["run", "--shards", "2", "--shard-index", "x"], "option '--shard-index'"),
        (["reconcile", "--watch-label-selector", "x==a==b"],
         "option '--watch-label-selector': label selector 'x==a==b': found '=='"),
        (["check-config", "--watch-label-selector", "!x=a"], "label selector '!x=a'"),
        (["check-config", "--shards", "0"], "option '--shards'"),
    ]
    # --shard-index auto: the hostname's -N, in a UTS namespace of its own (root: unshare)
    for host, shards, rc, want in (("imageguard-2", "2", 2, "2 is not below --shards 2"),
                                   ("imageguard-2", "3", 0, ""),
                                   ("vm", "3", 2, "auto needs a hostname ending in -N")):
        p = subprocess.run(["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host]
                           + env.args("plan", "--shards", shards, "--shard-index", "auto"),
                           capture_output=True, text=True, timeout=60)
        t.check(p.returncode == rc and want in (p.stderr.splitlines() or [""])[0],
                "--shard-index auto on host %s with --shards %s" % (host, shards), Result(p))
    for args, want in cases:
        r = check_config(env, *args[1:]) if args[0] == "check-config" else env.imageguard(*args)
        first = r.err.splitlines()[0] if r.err else ""
        t.check(r.rc == 2 and want in first, "%s: exit 2, one line naming it" % " ".join(args),
                r)


def two_branches(env):
    """push.branch plus a push.refspec to another branch writes two (URL, branch) pairs: under
    --shards N > 1 that automation is a configuration error (another shard may own the second
    pair), the others run; without --shards it is Flux's documented double push."""
    remote = bare_remote(env, "two", {"app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    url = "file://" + remote
    two = automation("two", url, push="auto").replace(
        "      branch: auto\n  update:",
        "      branch: auto\n      refspec: refs/heads/auto:refs/heads/release\n  update:")
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + two + automation("one", url, push="auto2"))
    r = check_config(env, "--shards", "2")
    lines = r.err.splitlines()
    t.check(r.rc == 2 and len(lines) == 2 and
            re.match(r"^imageguard: \S+/config\.yaml:\d+: ImageUpdateAutomation 'default/two': "
                     r"'spec\.git\.push\.refspec': 'refs/heads/auto:refs/heads/release' pushes "
                     r"to a second branch beside spec\.git\.push\.branch 'auto'", lines[0]),
            "check-config --shards 2: a line naming the file, line and second branch", r)
    r = check_config(env, "--shards", "1")
    t.check(r.rc == 0, "one shard: nothing to collide with", r)
    r = check_config(env)
    t.check(r.rc == 0 and r.out == "configuration OK\n", "without --shards: Flux's double push", r)
    env.push("team/app", ["v1.1.0"])
    pushed = 0
    for i in range(2):
        env.imageguard("reconcile", "--shards", "2", "--shard-index", str(i))
        pushed += head(remote, "release") != ""
    t.check(pushed == 0, "no shard pushes the second branch", head(remote, "release"))
    t.check(head(remote, "auto2") != "", "the other automation ran on its shard")


for scenario in (by_hash, by_label, usage, two_branches):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (scenario.__name__, e))
sys.exit(t.done())
