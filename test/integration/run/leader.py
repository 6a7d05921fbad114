#!/usr/bin/python3
"""`run --kube --enable-leader-election`: two replicas against the Kubernetes API fixture
(kubeapi_etcd.py: Leases in a real etcd, resourceVersion = mod_revision, compare-and-swap
updates, Status bodies for 404/409), a real docker-registry and a bare Git remote, with short
timings (3s / 2s / 500ms). One leads and commits with the Imageguard-Lease trailer, the other is
a ready standby with imageguard_leader 0 that keeps its own Git cache warm (a clone, no push)
and so clones nothing after taking over; kubectl reads the Lease and its stale replace is a
409; SIGTERM of the leader releases it and the standby takes over at once (leaseTransitions +1);
a head written under a newer generation of the lease is not pushed on, also under a person's
commit; a pass longer than the lease keeps it (renewal has its own thread); a leader that
cannot renew exits 1 without writing; with --leader-election-release-on-cancel=false SIGTERM leaves
the holder in place and the standby takes over only after the lease duration; a lease lost in
the middle of the status writes stops them at the next automation, with one log line."""
import json
import os
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
import harness  # noqa: E402
import kubeapi_etcd  # noqa: E402
from guard_env import Env, git, marker_file  # noqa: E402
import kuberun  # noqa: E402
from kuberun import Background, kubectl, kubectl_process, wait  # noqa: E402

LEASE = "imageguard-leader-election"
COORD = "coordination.k8s.io"
TIMING = ["--leader-election-lease-duration", "3s", "--leader-election-renew-deadline", "2s",
          "--leader-election-retry-period", "500ms"]


def stamp(event):
    """A log line's time in seconds (its "time": 2026-12-01T10:21:03.123Z)."""
    t = event["time"]
    return int(t[11:13]) * 3600 + int(t[14:16]) * 60 + float(t[17:-1])


def lease(st):
    return st["api"].get(COORD, "leases", "default", LEASE)


class Run(Background):
    """One replica: its own state dir (its own pod), its log in a file."""

    def __init__(self, st, name, *extra, timing=TIMING):
        self.name = name
        super().__init__(
            os.path.join(st["env"].dir, "run-%s-%d.log" % (name, time.time_ns())),
            [harness.IMAGEGUARD, "run", "--kube", "--kubeconfig", st["kubeconfig"],
             "--state-dir", os.path.join(st["env"].dir, "state-" + name), "--log-format",
             "json", "--listen", "127.0.0.1:0", "--enable-leader-election"] + timing +
            list(extra))

    def identity(self):
        e = self.events("leader.start")
        return e and e[0]["msg"].split("identity '", 1)[1].split("'", 1)[0]

    def port(self):
        e = wait(lambda: self.events("httpd.listen"), "listening", 10, self.text)
        return int(e[0]["msg"].rsplit(" ", 1)[1])

    def get(self, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port(), path),
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def leader_gauge(self):
        for line in self.get("/metrics")[1].splitlines():
            if line.startswith("imageguard_leader "):
                return float(line.split()[1])
        return None

    def stop(self, sig_kill=False):
        return super().stop(sig_kill, 15)


def setup():
    env = Env()
    try:
        api = kubeapi_etcd.start()
    except BaseException:
        env.close()
        raise
    st = {"env": env, "api": api, "runs": []}
    st["kubeconfig"] = api.kubeconfig(os.path.join(env.dir, "kubeconfig"))
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
    kubectl(st, "apply", "-f", "-", stdin=env.repository("app", "team/app", interval="1s") +
            env.policy("app", "app", semver=">=1.0.0") + env.automation(interval="1s"))
    return st


def teardown(st):
    kuberun.teardown(st, sig_kill=True)


def start(st, name, *extra, timing=TIMING):
    r = Run(st, name, *extra, timing=timing)
    st["runs"].append(r)
    return r


def leader_and_standby(st):
    a, b = st["a"], st["b"]
    holder = wait(lambda: (lease(st) or {}).get("spec", {}).get("holderIdentity"),
                  "a holder", 20, a.text, b.text)
    wait(lambda: a.identity() and b.identity(), "identities", 10)
    harness.check(holder in (a.identity(), b.identity()), "holder is a replica", holder)
    return (a, b) if holder == a.identity() else (b, a)


@harness.test
def one_leads_and_commits_with_the_trailer_the_other_stands_by(st):
    env = st["env"]
    st["a"] = start(st, "a")
    wait(lambda: lease(st), "the Lease created", 20, st["a"].text)
    st["b"] = start(st, "b")
    leader, standby = leader_and_standby(st)
    wait(lambda: "v1.1.0" in env.remote_file("apps/app.yaml"), "the leader's commit", 30,
         leader.text)
    msg = env.remote_log()[0][1]
    harness.check("Imageguard-Lease: %s/0" % LEASE in msg.splitlines(), "trailer", msg)
    # the standby: ready, not leading, no pass, nothing written
    harness.check(standby.get("/healthz")[0] == 200, "standby /healthz")
    harness.check(standby.get("/readyz")[0] == 200, "standby /readyz", standby.get("/readyz"))
    harness.check(standby.leader_gauge() == 0, "standby imageguard_leader 0",
                  standby.get("/metrics"))
    wait(lambda: leader.leader_gauge() == 1, "leader imageguard_leader 1", 5)
    time.sleep(1.5)
    harness.check(not standby.events("reconcile.pass") and
                  not standby.events("git.commit") and not standby.events("git.push"),
                  "the standby ran no pass", standby.text()[-2000:])
    # ... but keeps its own Git cache warm for a takeover: cloned once, in its state dir
    warmed = wait(lambda: standby.events("run.standby"), "the standby's warm round", 10,
                  standby.text)
    harness.check("Git caches of 1 of 1 automations warmed" in warmed[0]["msg"] and
                  len(standby.events("git.clone")) == 1 and
                  os.listdir(os.path.join(env.dir, "state-" + standby.name, "git")),
                  "the standby cloned into its own cache", warmed, standby.text()[-2000:])
    harness.check(leader.events("reconcile.pass"), "the leader runs passes")
    st["leader"], st["standby"] = leader, standby


@harness.test
def kubectl_reads_the_lease(st):
    out = json.loads(kubectl(st, "get", "lease", LEASE, "-o", "json"))
    spec = out["spec"]
    harness.check(spec["holderIdentity"] == st["leader"].identity() and
                  spec["leaseDurationSeconds"] == 3 and spec["leaseTransitions"] == 0, "spec",
                  spec)
    harness.check(spec["holderIdentity"].startswith(os.uname().nodename + "_"),
                  "identity is hostname_uuid", spec)
    for k in ("acquireTime", "renewTime"):
        v = spec[k]  # MicroTime: 2026-12-01T10:21:03.123456Z
        harness.check(len(v) == 27 and v[10] == "T" and v[19] == "." and v.endswith("Z"), k, v)
    # renewals move renewTime and resourceVersion, acquireTime stays
    rv = out["metadata"]["resourceVersion"]
    later = wait(lambda: (lease(st)["metadata"]["resourceVersion"] != rv) and lease(st),
                 "a renewal", 5)["spec"]
    harness.check(later["acquireTime"] == spec["acquireTime"] and
                  later["renewTime"] > spec["renewTime"], "renewed", spec, later)


@harness.test
def kubectl_replace_with_a_stale_resource_version_is_a_conflict(st):
    old = kubectl(st, "get", "lease", LEASE, "-o", "json")
    rv = json.loads(old)["metadata"]["resourceVersion"]
    wait(lambda: lease(st)["metadata"]["resourceVersion"] != rv, "a renewal", 5)
    p = kubectl_process(st, "replace", "-f", "-", stdin=old)
    harness.check(p.returncode != 0 and ("Conflict" in p.stderr or
                                         "has been modified" in p.stderr),
                  "409 from kubectl replace", p.stderr)
    harness.check(lease(st)["spec"]["holderIdentity"] == st["leader"].identity(),
                  "lease unchanged")


@harness.test
def sigterm_releases_and_the_standby_takes_over(st):
    env = st["env"]
    leader, standby = st["leader"], st["standby"]
    rc = leader.stop()
    harness.check(rc == 0, "leader exits 0 on SIGTERM", rc, leader.text()[-2000:])
    harness.check(leader.events("leader.release"), "released", leader.text()[-2000:])
    spec = wait(lambda: lease(st)["spec"].get("holderIdentity") == standby.identity() and
                lease(st)["spec"], "standby takes over", 5, lambda: lease(st))
    # measured between the two logs: SIGTERM seen (run.stop) to the standby's election;
    # without the release it would wait the full 3s lease duration after the last renewal
    elected = wait(lambda: standby.events("leader.elected"), "leader.elected", 5, standby.text)
    took = stamp(elected[-1]) - stamp(leader.events("run.stop")[-1])
    harness.check(took < 2.0, "takeover after release took %.2fs" % took,
                  leader.text()[-1500:], standby.text()[-3000:])
    print("# takeover after the leader's SIGTERM: %.2fs" % took)
    # its first pass starts from the cache it kept warm: no clone after the election
    harness.check(standby.events("git.clone") and
                  all(stamp(e) < stamp(elected[-1]) for e in standby.events("git.clone")),
                  "no clone after the takeover", standby.text()[-3000:])
    harness.check(spec["leaseTransitions"] == 1, "transitions +1", spec)
    wait(lambda: standby.leader_gauge() == 1, "new leader gauge 1", 5)
    env.push("team/app", ["v1.2.0"])
    wait(lambda: "v1.2.0" in env.remote_file("apps/app.yaml"), "the new leader's commit", 30,
         standby.text)
    msg = env.remote_log()[0][1]
    harness.check("Imageguard-Lease: %s/1" % LEASE in msg.splitlines(), "generation 1", msg)
    st["leader"] = standby


@harness.test
def a_head_written_under_a_newer_generation_is_not_pushed_on(st):
    env = st["env"]
    leader = st["leader"]
    # a commit made under generation 7 of the same lease (a newer leader) lands on the remote
    git("pull", "-q", "--rebase", "origin", "main", cwd=env.work)
    git("commit", "-q", "--allow-empty", "-m",
        "newer leader\n\nImageguard-Lease: %s/7" % LEASE, cwd=env.work)
    # a person's commit on top (no trailer) does not hide it: the check reads the last commit
    # on the first-parent line that carries a trailer
    git("commit", "-q", "--allow-empty", "-m", "docs: a person's commit", cwd=env.work)
    git("push", "-q", "origin", "main", cwd=env.work)
    head = env.remote_head()
    env.push("team/app", ["v1.3.0"])
    wait(lambda: any("a newer leader exists" in e["msg"] for e in leader.events("git.push")),
         "refused", 20, leader.text)
    harness.check(env.remote_head() == head, "nothing pushed on the newer head")
    # a different lease (another shard's, before a re-shard) is not compared
    git("commit", "-q", "--allow-empty", "-m",
        "other shard\n\nImageguard-Lease: %s-0badc0de/9" % LEASE, cwd=env.work)
    git("push", "-q", "origin", "main", cwd=env.work)
    wait(lambda: "v1.3.0" in env.remote_file("apps/app.yaml"), "pushed over another lease", 20,
         leader.text)


@harness.test
def a_leader_that_cannot_renew_stops_writing_and_exits_1(st):
    env = st["env"]
    api = st["api"]
    # a replica whose gate closes long before it steps down: 10s lease, 8s renew deadline,
    # 500ms retry, so the push timeout is 8s - 2 x 500ms = 7s and the gate closes 1s after
    # the last renewal while the replica still leads for 7s more
    harness.check(st["leader"].stop() == 0, "the previous leader hands over")
    c = start(st, "c", timing=["--leader-election-lease-duration", "10s",
                               "--leader-election-renew-deadline", "8s",
                               "--leader-election-retry-period", "500ms"])
    wait(lambda: c.identity() and (lease(st) or {}).get("spec", {}).get("holderIdentity") ==
         c.identity(), "c leads", 20, c.text)
    wait(lambda: c.events("reconcile.pass"), "c runs passes", 20, c.text)
    api.fail_with = 503  # the API server goes away for imageguard (Git stays up)
    try:
        time.sleep(1.2)  # the last renewal was at most 500ms ago: the gate is closed now
        env.push("team/app", ["v1.4.0"])
        wait(lambda: [e for e in c.events("git.push") if "read-only" in e["msg"]],
             "a pass refused read-only while still leading", 10, c.text)
        harness.check(c.p.poll() is None and not c.events("leader.lost"),
                      "refused before stepping down", c.text()[-2000:])
        rc = wait(lambda: c.p.poll(), "exit after the renew deadline", 15, c.text)
    finally:
        api.fail_with = 0
    harness.check(rc == 1, "exit 1", rc, c.text()[-2000:])
    lost = c.events("leader.lost") + c.events("run.stop")
    harness.check(len(lost) == 2 and all("\n" not in e["msg"] for e in lost) and
                  "lost" in lost[1]["msg"], "one-line logs", lost)
    harness.check("v1.4.0" not in env.remote_file("apps/app.yaml"),
                  "nothing written after the gate closed", c.text()[-3000:])
    d = [e for e in c.events("decision") if "v1.4.0" in e["msg"]]
    harness.check(d and all("error/git" in e["msg"] and "read-only" in e["msg"] for e in d),
                  "the writes became error/git", d)


@harness.test
def without_release_on_cancel_the_standby_waits_out_the_lease(st):
    d = start(st, "d", "--leader-election-release-on-cancel=false")
    wait(lambda: d.identity() and (lease(st) or {}).get("spec", {}).get("holderIdentity") ==
         d.identity(), "d leads", 20, d.text)
    e = start(st, "e")
    wait(lambda: e.identity(), "e stands by", 10, e.text)
    rc = d.stop()
    harness.check(rc == 0, "d exits 0 on SIGTERM", rc, d.text()[-2000:])
    spec = lease(st)["spec"]
    harness.check(not d.events("leader.release") and spec["holderIdentity"] == d.identity(),
                  "the lease is not released: its holder stays", spec, d.text()[-2000:])
    spec = wait(lambda: lease(st)["spec"].get("holderIdentity") == e.identity() and
                lease(st)["spec"], "the standby takes over after the lease duration", 15,
                lambda: lease(st), e.text)
    # d's last renewal was at most one retry period (0.5s) before its SIGTERM, and a standby
    # takes over a record unchanged for the 3s lease duration: at least 2.5s after it
    elected = wait(lambda: e.events("leader.elected"), "e's leader.elected", 5, e.text)
    took = stamp(elected[-1]) - stamp(d.events("run.stop")[-1])
    harness.check(took >= 2.4, "takeover without release took %.2fs" % took,
                  d.text()[-1500:], e.text()[-3000:])
    print("# takeover after SIGTERM without release: %.2fs" % took)
    harness.check(e.stop() == 0, "e exits 0", e.text()[-2000:])


@harness.test
def a_lease_lost_mid_publish_stops_the_status_writes_there(st):
    env, api = st["env"], st["api"]
    names = ["auto"] + ["auto%d" % k for k in range(1, 6)]
    kubectl(st, "apply", "-f", "-", stdin="".join(env.automation(name=n, interval="1s")
                                                  for n in names[1:]))
    f = start(st, "f")
    wait(lambda: f.identity() and (lease(st) or {}).get("spec", {}).get("holderIdentity") ==
         f.identity(), "f leads", 20, f.text)
    wait(lambda: all((api.get("image.toolkit.fluxcd.io", "imageupdateautomations", "default",
                              n) or {}).get("status") for n in names) and
         f.events("reconcile.pass"), "f writes every automation's status", 20, f.text)

    def status_writes(since):
        return [q for q in api.requests[since:] if q["method"] in ("PUT", "PATCH") and
                q["path"].endswith("/status")]
    api.status_delay = 0.4  # a publish of six automations now takes 2.4s
    try:
        n = len(api.requests)
        wait(lambda: status_writes(n), "a publish begins", 10, f.text)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        api.patch(COORD, "leases", "default", LEASE,
                  {"spec": {"holderIdentity": "intruder", "renewTime": now}})
        rc = wait(lambda: f.p.poll() is not None and [f.p.returncode], "f exits", 15,
                  f.text)[0]
    finally:
        api.status_delay = 0
    harness.check(rc == 1 and f.events("leader.lost"), "f loses the lease and exits 1", rc,
                  f.text()[-3000:])
    lost_at = stamp(f.events("leader.lost")[0])
    after = [e for e in f.events("kube.status") + f.events("kube.event")
             if stamp(e) >= lost_at]
    stopped = [e for e in after if "the new leader writes them" in e["msg"]]
    failed = [e for e in after if e not in stopped]
    harness.check(len(stopped) == 1 and "lease '%s' lost" % LEASE in stopped[0]["msg"],
                  "one line says where the publish stopped", after)
    # at most the automation in flight fails (its status write and its Events); without the
    # check each of the others would log its own failures
    harness.check(len([e for e in failed if e["event"] == "kube.status"]) <= 1 and
                  len(failed) <= 3, "no line per automation after the loss", failed)
    print("# after the loss: %s; %d failure line(s)" % (stopped[0]["msg"], len(failed)))
    kubectl(st, "delete", "imageupdateautomations", *names[1:])


@harness.test
def a_pass_longer_than_the_lease_keeps_it(st):
    """Renewal runs on its own thread: a pass that waits 8s for a listing (a registry that
    answers after 20s, the repository's timeout 8s), more than twice the 3s lease, neither
    loses the lease nor lets a standby take it."""
    env = st["env"]
    fault = env.fault()
    env.seed({"apps/slow.yaml": marker_file(env.image("slow/x", fault.host) + ":t000", "slow")})
    slow = (env.repository("slow", "slow/x", host=fault.host, interval="1s",
                           extra="  timeout: 8s\n") +
            env.policy("slow", "slow", alphabetical="asc"))
    kubectl(st, "apply", "-f", "-", stdin=slow)
    g = start(st, "g")
    wait(lambda: g.identity() and (lease(st) or {}).get("spec", {}).get("holderIdentity") ==
         g.identity(), "g leads", 20, g.text)
    h = start(st, "h")
    wait(lambda: h.identity(), "h stands by", 10, h.text)
    transitions = lease(st)["spec"].get("leaseTransitions", 0)
    renewals, holders = set(), set()
    wait(lambda: len(g.events("reconcile.pass")) >= 2, "two slow passes", 40, g.text)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 9:  # longer than one slow pass
        spec = lease(st)["spec"]
        renewals.add(spec.get("renewTime"))
        holders.add(spec.get("holderIdentity"))
        time.sleep(0.25)
    passes = [stamp(e) for e in g.events("reconcile.pass")]
    gaps = [b - a for a, b in zip(passes, passes[1:])]
    harness.check(gaps and min(gaps) >= 7, "each pass waited for the slow listing", gaps)
    harness.check(holders == {g.identity()}, "g held the lease throughout", holders)
    harness.check(lease(st)["spec"].get("leaseTransitions", 0) == transitions,
                  "no takeover", lease(st)["spec"])
    harness.check(len(renewals) >= 8, "renewed every retry period during the pass",
                  sorted(renewals))
    harness.check(not g.events("leader.lost") and not h.events("leader.elected"),
                  "g never lost it, h never led", g.text()[-1500:], h.text()[-1500:])
    harness.check(g.stop() == 0 and h.stop() == 0, "both exit 0")
    kubectl(st, "delete", "imagerepositories,imagepolicies", "slow")


@harness.test
def flags_are_checked(st):
    r = harness.run("run", "--config", "x", "--enable-leader-election")
    harness.check(r.rc == 2 and "needs --kube or --kubeconfig" in r.err and
                  r.err.count("imageguard:") == 1, "needs the API", r)
    r = harness.run("run", "--kube", "--enable-leader-election",
                    "--leader-election-renew-deadline", "40s")
    harness.check(r.rc == 2 and "leaseDuration must be greater than renewDeadline" in r.err,
                  "lease > renew", r)
    r = harness.run("run", "--kube", "--enable-leader-election",
                    "--leader-election-retry-period", "25s")
    harness.check(r.rc == 2 and "renewDeadline must be greater than retryPeriod*JitterFactor"
                  in r.err, "renew > 1.2 x retry", r)
    r = harness.run("run", "--kube", "--leader-election-release-on-cancel=maybe")
    harness.check(r.rc == 2 and "expected true or false" in r.err, "bool", r)
    r = harness.run("run", "--help")
    for f in ("--enable-leader-election", "--leader-election-lease-duration",
              "--leader-election-renew-deadline", "--leader-election-retry-period",
              "--leader-election-release-on-cancel", "Imageguard-Lease"):
        harness.check(f in r.out, "help names " + f, r.out[-3000:])


if __name__ == "__main__":
    harness.main(setup, teardown)
