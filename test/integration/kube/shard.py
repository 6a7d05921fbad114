#!/usr/bin/python3
"""`imageguard run --kube` sharded (issue 17): Flux's objects in the Kubernetes API fixture
(kubeapi_etcd.py, a real etcd), a real docker-registry and several bare Git remotes. With
--shards 2, shard 0 commits to and writes the status of its own automations only, the others
keep no status and no commit until shard 1 runs, and shard 1 then leaves shard 0's objects
untouched (their resourceVersion does not move). --watch-label-selector is the labelSelector of
every list and watch of the four kinds. With --enable-leader-election each hash shard elects on
its own Lease, named from its shard key "shards=N/index=I" (SHA-256, as Flux's GenerateID), logs one
startup line naming its shard and Lease, and exposes imageguard_shard_info{shard,shards} 1
(promtool check metrics accepts the exposition). In a namespace shared with another shard's
automations, shard 1 keeps only the policies that its own markers name."""
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
from guard_env import Env, git, marker_file  # noqa: E402
from kuberun import IMG, Background, kubectl, teardown, wait  # noqa: E402

SHARDS = 2


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


def owner(remote):
    """shard.h's owner of (file://remote, main): the path with '/' runs folded and no '.git'."""
    p = "/".join(x for x in remote.split("/") if x)
    p = p[:-4] if p.endswith(".git") else p
    return fnv1a64("file:///" + p + "\nmain") % SHARDS


def bare_remote(env, name, img):
    remote = os.path.join(env.dir, name + ".git")
    work = os.path.join(env.dir, name + "-seed")
    git("init", "-q", "--bare", "-b", "main", remote)
    git("init", "-q", "-b", "main", work)
    with open(os.path.join(work, "app.yaml"), "w") as f:
        f.write(marker_file(img + ":v1.0.0", "app"))
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "seed", cwd=work)
    git("push", "-q", remote, "main", cwd=work)
    return remote


def automation(name, url):
    return ("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
            "metadata:\n  name: %s\n  namespace: default\nspec:\n  interval: 1m\n"
            "  url: %s\n  ref:\n    branch: main\n"
            "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: %s\n  namespace: default\nspec:\n  interval: 10m\n"
            "  sourceRef:\n    kind: GitRepository\n    name: %s\n"
            "  git:\n    checkout:\n      ref:\n        branch: main\n"
            "    commit:\n      author:\n        name: imageguard\n"
            "        email: imageguard@test\n    push:\n      branch: main\n"
            "  update:\n    path: ./\n    strategy: Setters\n" % (name, url, name, name))


class Run(Background):
    """imageguard run --kube in the background with its own state dir and log file."""

    def __init__(self, st, name, *extra):
        super().__init__(
            os.path.join(st["env"].dir, "run-%s.log" % name),
            [harness.IMAGEGUARD, "run", "--kube", "--kubeconfig", st["kubeconfig"],
             "--state-dir", os.path.join(st["env"].dir, "state-" + name)] + list(extra))


def setup():
    env = Env()
    try:
        api = kubeapi_etcd.start()
    except BaseException:
        env.close()
        raise
    st = {"env": env, "api": api, "autos": {}}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
    img = env.image("team/app")
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    objects = env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
    # remotes until both shards own at least one (their paths are random: a few suffice)
    for k in range(16):
        remote = bare_remote(env, "r%d" % k, img)
        st["autos"]["auto-%d" % k] = (remote, owner(remote))
        objects += automation("auto-%d" % k, "file://" + remote)
        if k >= 2 and len({o for _, o in st["autos"].values()}) == SHARDS:
            break
    kubectl(st, "apply", "-f", "-", stdin=objects)
    return st


def moved(remote):
    return "v1.1.0" in git("--git-dir", remote, "show", "main:app.yaml")


def obj(st, name):
    return st["api"].get(IMG, "imageupdateautomations", "default", name) or {}


def owned(st, i):
    return [n for n, (_, o) in st["autos"].items() if o == i]


def pushed_status(st, name):
    remote = st["autos"][name][0]
    head = git("--git-dir", remote, "rev-parse", "main").strip()
    return (obj(st, name).get("status") or {}).get("lastPushCommit") == head


@harness.test
def each_shard_writes_its_own_only(st):
    mine, theirs = owned(st, 0), owned(st, 1)
    harness.check(mine and theirs, "both shards own an automation", st["autos"])
    run = Run(st, "shard0", "--shards", "2", "--shard-index", "0")
    try:
        wait(lambda: all(moved(st["autos"][n][0]) and pushed_status(st, n) for n in mine),
             "shard 0 commits and writes the status of its own", 30, run.text)
        time.sleep(1.5)  # its pass is over: nothing more comes for the others
        harness.check(not any(moved(st["autos"][n][0]) for n in theirs),
                      "shard 0 pushes nothing to shard 1's remotes", run.text())
        harness.check(not any(obj(st, n).get("status") for n in theirs),
                      "shard 0 writes no status on shard 1's automations",
                      [obj(st, n) for n in theirs])
    finally:
        harness.check(run.stop() == 0, "shard 0 exits 0 on SIGTERM")
    versions = {n: obj(st, n)["metadata"]["resourceVersion"] for n in mine}
    run = Run(st, "shard1", "--shards", "2", "--shard-index", "1")
    try:
        wait(lambda: all(moved(st["autos"][n][0]) and pushed_status(st, n) for n in theirs),
             "shard 1 commits and writes the status of its own", 30, run.text)
        time.sleep(1.5)
        harness.check({n: obj(st, n)["metadata"]["resourceVersion"] for n in mine} == versions,
                      "shard 1 leaves shard 0's automations untouched", versions)
    finally:
        harness.check(run.stop() == 0, "shard 1 exits 0 on SIGTERM")


@harness.test
def label_selector_is_the_api_selector(st):
    sel = "sharding.fluxcd.io/key=shard1"
    before = len(st["api"].requests)
    run = Run(st, "labels", "--watch-label-selector", sel)
    try:
        def lists():
            return {r["path"].rsplit("/", 1)[-1] for r in st["api"].requests[before:]
                    if r["method"] == "GET" and r["query"].get("labelSelector") == sel}
        got = wait(lambda: len(lists()) == 4 and lists(), "every kind listed with the selector",
                   20, run.text)
        harness.check(got == {"imagerepositories", "imagepolicies", "imageupdateautomations",
                              "gitrepositories"}, "the four kinds", got)
        # listed is not yet watched: the line comes once every first list is in
        wait(lambda: "kube.watch" in run.text(), "the watch log line", 20, run.text)
        harness.check(not [r for r in st["api"].requests[before:]
                           if r["path"].endswith(("imagepolicies", "imageupdateautomations"))
                           and r["method"] == "GET" and r["query"].get("labelSelector") != sel],
                      "no list or watch without it")
    finally:
        rc = run.stop()
        harness.check(rc == 0, "exits 0 on SIGTERM", rc, run.text()[-3000:])
    harness.check('"labels ' + sel in run.text() or "labels " + sel in run.text(),
                  "the watch log line names the selector", run.text())


def push_files(st, remote, files, message):
    work = os.path.join(st["env"].dir, "push-%d" % len(os.listdir(st["env"].dir)))
    git("clone", "-q", remote, work)
    for name, text in files.items():
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    git("push", "-q", "origin", "main", cwd=work)


def shard_lines(run):
    return [line for line in run.text().splitlines() if "kube.shard:" in line]


@harness.test
def a_shared_namespace_keeps_what_the_markers_name(st):
    """Every automation is in 'default', so shard 1 shares the namespace with shard 0: it keeps
    only the policies its own remotes' markers name (and their repositories). An invalid
    policy no marker names is not even held (no load logs it); a marker that comes to name
    another policy has it decided in the same round (the pass, a reload, a second pass); a
    marker naming an absent policy is warned about and does not start a second pass again."""
    env = st["env"]
    extra_img = env.image("team/extra")
    env.push("team/extra", ["v2.0.0", "v2.1.0"])
    kubectl(st, "apply", "-f", "-", stdin=(
        env.repository("extra", "team/extra") + env.policy("extra", "extra", semver=">=2.0.0")
        + env.policy("idle", "app", semver=">=1.0.0")
        + env.policy("broken", "no-such-repository", semver=">=1.0.0")))
    name = owned(st, 1)[0]
    remote = st["autos"][name][0]
    run = Run(st, "marked", "--shards", "2", "--shard-index", "1", "--log-level", "debug")
    try:
        wait(lambda: "policies named by new markers" in run.text()
             and "reconcile.pass:" in run.text().split("policies named by new markers")[-1],
             "the first pass finds its markers' policy, lists it and passes again", 30,
             run.text)
        last = shard_lines(run)[-1]
        harness.check("the 1 ImagePolicies that its markers name in 1 namespaces" in last
                      and "the 1 ImageRepositories" in last,
                      "it keeps the one policy its markers name, and its repository", last)
        harness.check("broken" not in run.text() and "'default/idle'" not in run.text(),
                      "an unmarked policy is not held: its load error is not logged here",
                      [line for line in run.text().splitlines() if "broken" in line][:3])
        push_files(st, remote, {
            "extra.yaml": marker_file(extra_img + ":v2.0.0", "extra"),
            "ghost.yaml": marker_file(extra_img + ":v2.0.0", "ghost")}, "mark two more")
        passes = run.text().count("reconcile.pass:")
        kubectl(st, "annotate", "--overwrite", "imageupdateautomation", name,
                "reconcile.fluxcd.io/requestedAt=marked-1")
        wait(lambda: "v2.1.0" in git("--git-dir", remote, "show", "main:extra.yaml"),
             "the newly marked policy is decided and committed in the round that found it",
             30, run.text)
        harness.check(run.text().count("policies named by new markers") == 2,
                      "one more reload for the new markers", run.text()[-4000:])
        harness.check("markers.not-kept" in run.text(),
                      "the pass that found them says they are listed for the next",
                      run.text()[-4000:])
        wait(lambda: "markers.unknown-policy" in run.text()
             and "'default/ghost'" in run.text().split("markers.unknown-policy")[-1],
             "the absent policy is warned about once it was listed", 20, run.text)
        harness.check(run.text().count("reconcile.pass:") >= passes + 2, "two passes")
        passes = run.text().count("reconcile.pass:")
        kubectl(st, "annotate", "--overwrite", "imageupdateautomation", name,
                "reconcile.fluxcd.io/requestedAt=marked-2")
        wait(lambda: run.text().count("reconcile.pass:") > passes, "the next pass", 20,
             run.text)
        time.sleep(1)
        harness.check(run.text().count("policies named by new markers") == 2,
                      "an absent policy does not start another round", run.text()[-4000:])
    finally:
        harness.check(run.stop() == 0, "shard 1 exits 0 on SIGTERM")
    restart_keeps_the_observed_policies(st, name)


def restart_keeps_the_observed_policies(st, name):
    """At a restart the finding pass decides nothing: it publishes no status, so the
    automation's observedPolicies never shows empty between it and the deciding pass."""
    path = os.path.join(st["env"].dir, "watch-%s.json" % name)
    with open(path, "w") as out:
        watch = subprocess.Popen(["kubectl", "--kubeconfig", st["kubeconfig"], "get", "-w",
                                  "-o", "json", "imageupdateautomation", name], stdout=out,
                                 stderr=subprocess.DEVNULL)
    run = Run(st, "marked", "--shards", "2", "--shard-index", "1")
    try:
        wait(lambda: "reconcile.pass:" in run.text().split("policies named by new markers")[-1]
             and "policies named by new markers" in run.text(),
             "the restart's finding and deciding passes", 30, run.text)
        time.sleep(1)
    finally:
        harness.check(run.stop() == 0, "shard 1 exits 0 on SIGTERM")
        watch.terminate()
        watch.wait(timeout=10)
    text, seen, dec = open(path).read(), [], json.JSONDecoder()
    at = 0
    while at < len(text.rstrip()):
        obj, at = dec.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
        seen.append(sorted(obj.get("status", {}).get("observedPolicies") or {}))
    harness.check(len(seen) >= 2 and all(seen), "every version of the status names the "
                  "observed policies (the deciding pass's write is watched too)", seen)


def lease_name(key):
    """Flux's GenerateID: the base, '-' and the first 8 hex digits of the key's SHA-256."""
    return "imageguard-leader-election-" + hashlib.sha256(key.encode()).hexdigest()[:8]


def metrics(run):
    """GET /metrics of a run (its port from the httpd.listen line)."""
    m = wait(lambda: re.search(r"/metrics on port (\d+)", run.text()), "listening", 10, run.text)
    with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % m.group(1), timeout=5) as r:
        return r.read().decode()


def promtool(st, text):
    path = os.path.join(st["env"].dir, "metrics.txt")
    with open(path, "w") as f:
        f.write(text)
    with open(path) as f:
        return subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True,
                              text=True)


@harness.test
def each_hash_shard_elects_on_its_own_lease(st):
    runs = [Run(st, "lead%d" % i, "--shards", "2", "--shard-index", str(i),
                "--enable-leader-election", "--leader-election-lease-duration", "3s",
                "--leader-election-renew-deadline", "2s", "--leader-election-retry-period",
                "500ms", "--listen", "127.0.0.1:0") for i in range(SHARDS)]
    try:
        names = [lease_name("shards=2/index=%d" % i) for i in range(SHARDS)]

        def held():
            return [((st["api"].get("coordination.k8s.io", "leases", "default", n) or {})
                     .get("spec") or {}).get("holderIdentity") for n in names]
        got = wait(lambda: all(held()) and held(), "both shards' leases held", 20,
                   runs[0].text, runs[1].text)
        harness.check(len(set(names)) == SHARDS and all(got),
                      "two shards, two Leases, both led", names, got)
        for i, r in enumerate(runs):
            line = "shard %d/2 (--shards 2 --shard-index %d), selector none, lease '%s'" % (
                i, i, names[i])
            harness.check(line in r.text(), "the startup line names the shard and its lease",
                          line, r.text()[:3000])
            text = metrics(r)
            harness.check('imageguard_shard_info{shard="%d",shards="2"} 1' % i in
                          text.splitlines(), "imageguard_shard_info", text[-3000:])
            harness.check(text.count("imageguard_shard_info{") == 1, "one series", text)
            pc = promtool(st, text)
            harness.check(pc.returncode == 0, "promtool check metrics", pc.stdout, pc.stderr)
    finally:
        for r in runs:
            harness.check(r.stop() == 0, "a shard's leader exits 0 on SIGTERM", r.text())


@harness.test
def a_standby_keeps_what_its_markers_name_before_it_leads(st):
    """A standby of shard 1 reads its automations' markers while it warms their Git caches, so
    the policies they name are listed before it leads: its first pass after the takeover
    decides them, with no pass that only finds them."""
    flags = ["--shards", "2", "--shard-index", "1", "--enable-leader-election",
             "--leader-election-lease-duration", "3s", "--leader-election-renew-deadline", "2s",
             "--leader-election-retry-period", "500ms", "--log-level", "debug"]
    name = lease_name("shards=2/index=1")

    def holder():
        return ((st["api"].get("coordination.k8s.io", "leases", "default", name) or {})
                .get("spec") or {}).get("holderIdentity")
    first = Run(st, "standby-a", *flags)
    second = None
    try:
        wait(lambda: "reconcile.pass:" in first.text(), "the first replica leads and passes", 30,
             first.text)
        second = Run(st, "standby-b", *flags)
        wait(lambda: "run.standby:" in second.text()
             and "ImagePolicies that its markers name" in second.text().split("run.standby:")[-1]
             and "config.reload: standby" in second.text(),
             "the standby warms, keeps what its markers name and reloads", 30, second.text)
        harness.check(not re.search(r"the 0 ImagePolicies that its markers name",
                                    second.text().split("run.standby:")[-1]),
                      "it keeps the policies its markers name", second.text()[-3000:])
        led_by = holder()
        first.p.kill()
        first.p.wait()
        wait(lambda: "reconcile.pass:" in second.text(), "the standby takes over and passes", 30,
             second.text)
        harness.check(holder() != led_by, "the lease changed hands", led_by, holder())
        passline = [line for line in second.text().splitlines() if "reconcile.pass:" in line][0]
        harness.check(not re.search(r"reconcile.pass: 0 decisions", passline),
                      "its first pass decides its markers", passline)
        harness.check("policies named by new markers" not in second.text()
                      and "markers.not-kept" not in second.text(),
                      "no pass only found them", second.text()[-4000:])
    finally:
        first.stop(sig_kill=True)
        if second:
            harness.check(second.stop() == 0, "the new leader exits 0 on SIGTERM")


if __name__ == "__main__":
    harness.main(setup, teardown)
