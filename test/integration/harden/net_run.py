#!/usr/bin/python3
"""Bounded work and prompt shutdown (issue 12 item 4, CONTRACT §1 "every network wait has a
deadline, and SIGTERM ends it within 2 s"). One config, two automations on one Git remote:
`good` uses a real docker-registry, `bad` uses a fault-server registry that misbehaves:

  stall      accepts the tag-list request and never answers (spec.timeout 2s);
  slowpage   an endless listing, each page just in time (0.8 s, spec.timeout 2s: each page
             is within it, only a deadline on the whole listing ends it);
  passdeadline  the same endless listing with no spec.timeout (the listing's own default is
             5m), ended by `run --pass-timeout 3s`;
  linkloop   page 1 links to page 2 and page 2 back to page 1;
  huge       a 3 MiB listing under `run --memory-budget 4Mi` (listing cap 2 MiB): an error for
             `bad` alone.

For each: `good` commits its forward update while `bad` misbehaves (within a bound, so the
bad registry cannot hold the pass), `bad` gets no commit, and SIGTERM sent while the bad
registry holds a request of a later pass ends `run` with exit 0 within 5 s (a generous bound:
the contract's is 2 s; this is a hang check). stall is also run with a long spec.timeout
(120s), where only cancellation can end the request in time, and where `good` commits while
the bad listing is still held: decisions proceed per repository as its listing completes."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
import faultserver  # noqa: E402
from guard_env import Env, Checks, git, marker_file, wait_for  # noqa: E402

t = Checks()
COMMIT_BOUND = 25  # seconds for the good automation's commit
STOP_BOUND = 5     # seconds from SIGTERM to exit


def bad_requests(fault, kind):
    return [r for r in fault.requests() if r["path"].startswith("/v2/%s/" % kind)]


def config(env, fault, kind, timeout):
    """good and bad on two remotes (two GitRepositories: two automations on one GitRepository
    wait on each other's clone-cache lock within one pass, a separate gitstore issue)."""
    extra = "  timeout: %s\n" % timeout if timeout else ""
    other = os.path.join(env.dir, "remote-bad.git")
    git("clone", "-q", "--bare", env.remote, other)
    two = env.automation(name="good", interval="1s", path="./good")
    two += ("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
            "metadata:\n  name: gitops-bad\n  namespace: default\nspec:\n  interval: 1m\n"
            "  url: file://%s\n  ref:\n    branch: main\n" % other)
    two += ("---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageUpdateAutomation\n"
            "metadata:\n  name: bad\n  namespace: default\nspec:\n  interval: 1s\n"
            "  sourceRef:\n    kind: GitRepository\n    name: gitops-bad\n"
            "  git:\n    checkout:\n      ref:\n        branch: main\n"
            "    commit:\n      author:\n        name: imageguard\n"
            "        email: imageguard@test\n    push:\n      branch: main\n"
            "  update:\n    path: ./bad\n    strategy: Setters\n")
    env.config(env.repository("good", "team/app", interval="1s")
               + env.policy("good", "good", semver=">=1.0.0")
               + env.repository("bad", "%s/app" % kind, interval="1s", host=fault.host,
                                extra=extra)
               + env.policy("bad", "bad", semver=">=1.0.0")
               + two)


def scenario(kind, timeout=None, run_args=(), commit=True, log_needle=None):
    name = kind + (" (spec.timeout %s)" % timeout if timeout else "") + \
        (" " + " ".join(run_args) if run_args else "")
    fault = faultserver.start()
    try:
        with Env() as env:
            env.push("team/app", ["v1.0.0", "v1.1.0"])
            env.seed({"good/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "good"),
                      "bad/app.yaml": marker_file(fault.host + "/%s/app:1.0.0" % kind, "bad")})
            base = env.remote_head()
            config(env, fault, kind, timeout)
            errpath = os.path.join(env.dir, "run.log")
            with open(errpath, "w+") as errlog:
                proc = subprocess.Popen(env.args("run", *run_args), stdout=subprocess.DEVNULL,
                                        stderr=errlog)
                rc, took = None, None
                try:
                    started = time.time()
                    if commit:
                        committed = wait_for(
                            lambda: "v1.1.0" in env.remote_file("good/app.yaml"), COMMIT_BOUND)
                        t.check(committed, "%s: the unaffected automation commits (%.1f s)"
                                % (name, time.time() - started), open(errpath).read()[-3000:])
                    # a (later) pass is waiting on the bad registry
                    seen = len(bad_requests(fault, kind)) if commit else 0
                    wait_for(lambda: len(bad_requests(fault, kind)) > seen, 15, 0.05)
                    if kind not in ("linkloop", "huge"):
                        time.sleep(0.5)  # well inside the stalled or slow request
                    sent = time.time()
                    proc.send_signal(signal.SIGTERM)
                    try:
                        rc = proc.wait(60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        rc = proc.wait()
                    took = time.time() - sent
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
            log = open(errpath).read()
            t.check(rc == 0 and took is not None and took < STOP_BOUND,
                    "%s: SIGTERM mid-listing exits 0 within %d s (rc %s, %.1f s)"
                    % (name, STOP_BOUND, rc, took or -1), log[-3000:])
            other = os.path.join(env.dir, "remote-bad.git")
            bad_head = git("--git-dir", other, "rev-parse", "main").strip()
            t.check(bad_head == base, "%s: no commit from the failed listing" % name,
                    git("--git-dir", other, "log", "--oneline", "main"))
            history = env.remote_log()
            t.check(not commit or (len(history) == 3 and history[1][0] == base),
                    "%s: the good remote has exactly the one forward commit" % name,
                    history[:3])
            t.check("repository 'default/bad'" in log,
                    "%s: the bad listing's failure is logged" % name, log[-2000:])
            if log_needle:
                t.check(log_needle in log, "%s: logged '%s'" % (name, log_needle), log[-2000:])
    finally:
        fault.stop()


# stall with spec.timeout 120s: the bad listing holds its request for two minutes, yet `good`
# commits within COMMIT_BOUND, because each automation is decided as soon as the repositories
# it needs are listed (one slow registry delays only the policies that use it).
for args in (("stall", "2s"), ("stall", "120s"), ("slowpage", "2s"),
             ("linkloop", None)):
    try:
        scenario(*args)
    except Exception:
        import traceback
        t.check(False, "%s raised" % (args,), traceback.format_exc())
try:
    scenario("slowpage", None, ("--pass-timeout", "3s"))
except Exception:
    import traceback
    t.check(False, "passdeadline raised", traceback.format_exc())
# the memory budget reaches run's client: a 3 MiB listing is over the cap of a 4Mi budget
try:
    scenario("huge", None, ("--memory-budget", "4Mi"),
             log_needle="tag list larger than 2097152 bytes")
except Exception:
    import traceback
    t.check(False, "huge raised", traceback.format_exc())
sys.exit(t.done())
