#!/usr/bin/python3
"""`imageguard run` as a controller: /healthz, /readyz flipping to 200 after the first complete
pass, /metrics accepted by `promtool check metrics`, reload on config file change, SIGHUP with a
broken config keeping the old one (it still commits), audit records per pass, SIGTERM exit 0."""
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, wait_for  # noqa: E402
import registry  # noqa: E402

t = Checks()


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scenario(env):
    fault = env.fault()
    env.push("team/good", ["1.0.0", "1.1.0"])
    env.seed({"good.yaml": marker_file(env.image("team/good") + ":1.0.0", "good"),
              "slow.yaml": marker_file(env.image("slow/x", fault.host) + ":t000", "slow")})
    good = env.repository("good", "team/good", interval="1s") + env.policy("good", "good", semver="*")
    slow = (env.repository("slow", "slow/x", host=fault.host, interval="1s",
                           extra="  timeout: 1s\n") + env.policy("slow", "slow", alphabetical="asc"))
    env.config(good + slow + env.automation(interval="1s"))
    port = registry.free_port()
    audit = os.path.join(env.dir, "audit.log")
    errlog = open(os.path.join(env.dir, "run.log"), "w+")
    proc = subprocess.Popen(env.args("run", "--listen", "127.0.0.1:%d" % port, "--audit-log", audit),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        registry.wait_for_port(port, proc)
        t.check(get(port, "/healthz")[0] == 200, "/healthz answers 200 at once")
        t.check(get(port, "/readyz")[0] == 503, "/readyz is 503 before the first pass completes")
        t.check(wait_for(lambda: get(port, "/readyz")[0] == 200), "/readyz flips to 200 after the first pass")
        t.check("1.1.0 #" in env.remote_file("good.yaml"), "the first pass committed the forward move")

        env.config(good + env.automation(interval="1s"))  # the slow repository goes away
        t.check(wait_for(lambda: "configuration changed: configuration reloaded" in
                         open(errlog.name).read()), "a config file change reloads it")
        t.check(wait_for(lambda: "imageguard_last_success_timestamp_seconds " in get(port, "/metrics")[1]),
                "a complete pass sets last_success")
        # A reload drops the tag gauges of images that may have gone; the next pass refills them.
        wait_for(lambda: "imageguard_registry_tags{" in get(port, "/metrics")[1])
        code, text = get(port, "/metrics")
        path = os.path.join(env.dir, "metrics.txt")
        with open(path, "w") as f:
            f.write(text)
        with open(path) as f:
            pc = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True, text=True)
        t.check(code == 200 and pc.returncode == 0, "promtool check metrics accepts /metrics", pc.stdout + pc.stderr)
        for name in ("imageguard_decisions_total{policy=\"default/good\",decision=\"update\",reason=\"forward\"} 1",
                     "imageguard_registry_requests_total{registry=\"%s\",code=\"200\"}" % env.host,
                     "imageguard_registry_tags{image=\"%s\"} 2" % env.image("team/good"),
                     "imageguard_reconcile_duration_seconds_count ",
                     "imageguard_commits_total 1",
                     "# TYPE imageguard_current_missing_total counter"):
            t.check(name in text, "metrics expose " + name.split("{")[0].split(" ")[0], text)

        with open(os.path.join(env.config_dir, "config.yaml"), "a") as f:
            f.write("---\nkind: ImagePolicy\napiVersion: image.toolkit.fluxcd.io/v1beta2\n"
                    "metadata: {name: broken}\nspec: [\n")
        proc.send_signal(signal.SIGHUP)
        # one broken object stops only itself: the rest runs on the new configuration
        t.check(wait_for(lambda: "invalid YAML" in open(errlog.name).read()
                         and "invalid object left out; the others run" in open(errlog.name).read()),
                "a broken object is reported and left out, the rest reloaded")
        env.push("team/good", ["1.2.0"])
        t.check(wait_for(lambda: "1.2.0 #" in env.remote_file("good.yaml")),
                "the old config keeps reconciling after the broken reload")
        t.check(proc.poll() is None and get(port, "/readyz")[0] == 200, "still running and ready")
        lines = open(audit).read().splitlines()
        t.check(len(lines) >= 3, "audit records appended pass after pass", len(lines))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        errlog.close()
    t.check(rc == 0, "SIGTERM: clean exit 0", open(os.path.join(env.dir, "run.log")).read()[-3000:])


with Env() as env:
    try:
        scenario(env)
    except Exception:
        import traceback
        t.check(False, "run scenario raised", traceback.format_exc())
sys.exit(t.done())
