#!/usr/bin/python3
"""`imageguard run --verify-interval`: the periodic verification inside the controller, against
a real docker-registry, a bare Git remote and the fixture Kubernetes API server
(test/fixtures/kubeapi.py: TLS with a test CA, bearer token, recorded Deployment/Pod JSON).
/metrics shows imageguard_running_drift{policy,workload} 0 while the pods run the digest Git
wants and 1 once a pod runs another one (with a verify.drift log line and an audit record),
promtool accepts /metrics, and an API server answering 500 is logged and counted while run
keeps reconciling, /healthz and /readyz stay 200 and the gauge keeps its last value. A rotated
token (kubeconfig tokenFile, and the in-cluster service account in a private mount namespace) is
read again; a bad flag or kubeconfig stops run at startup with exit 2."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import shutil
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, wait_for  # noqa: E402
import kubeapi  # noqa: E402
import registry  # noqa: E402

t = Checks()
TOKEN = "run-verify-token-5d21c0"
WEB = {"app.kubernetes.io/name": "web"}
SERIES = 'imageguard_running_drift{policy="default/web",workload="prod/Deployment/web"}'


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(port, name):
    """The value of one series (name with labels), or None when absent."""
    text = get(port, "/metrics")[1]
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def deployment_yaml(image):
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n"
            "spec:\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: web\n"
            "  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: web\n"
            "    spec:\n      containers:\n        - name: web\n"
            "          image: %s # {\"$imagepolicy\": \"default:web\"}\n" % image)


def cluster(api, env, digests):
    """prod/web as applied from Git (tag v1.1.0) with one pod per running digest."""
    ref = env.image("team/web")
    api.clear()
    api.add(kubeapi.deployment("prod", "web", ref + ":v1.1.0", WEB))
    for i, d in enumerate(digests):
        api.add(kubeapi.pod("prod", "web-%d" % i, WEB,
                            [("web", ref + ":v1.1.0", "docker-pullable://%s@%s" % (ref, d))]))


def drift_records(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                o = json.loads(line)
                if o.get("event") == "drift":
                    out.append(o)
    except (OSError, ValueError):
        pass
    return out


def promtool(env, text):
    path = os.path.join(env.dir, "metrics.txt")
    with open(path, "w") as f:
        f.write(text)
    with open(path) as f:
        return subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True,
                              text=True)


def scenario(env, api, tmp):
    a = env.push("team/web", ["v1.0.0"], created="2026-10-01T00:00:00Z")
    b = env.push("team/web", ["v1.1.0"], created="2026-11-01T00:00:00Z")
    env.seed({"apps/web.yaml": deployment_yaml(env.image("team/web") + ":v1.1.0")})
    env.config(env.repository("web", "team/web", interval="1s")
               + env.policy("web", "web", semver=">=1.0.0") + env.automation(interval="1s"))
    # the token in a file, as a projected service account token is: rotated below
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    kc = kubeapi.kubeconfig(api, os.path.join(tmp, "kubeconfig"),
                            extra_user="    tokenFile: %s\n" % token_file)
    cluster(api, env, [b, b])
    port = registry.free_port()
    audit = os.path.join(env.dir, "audit.log")
    errpath = os.path.join(env.dir, "run.log")
    errlog = open(errpath, "w+")
    proc = subprocess.Popen(env.args("run", "--listen", "127.0.0.1:%d" % port, "--audit-log", audit,
                                     "--verify-interval", "1s", "--kubeconfig", kc),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    log = lambda: open(errpath).read()  # noqa: E731
    try:
        registry.wait_for_port(port, proc)
        t.check(wait_for(lambda: metric(port, SERIES) == 0.0),
                "pods on the digest Git wants: %s 0" % SERIES, log()[-3000:])
        t.check(get(port, "/readyz")[0] == 200, "/readyz is about reconcile: 200")
        t.check(metric(port, "imageguard_verify_errors_total") == 0.0
                and (metric(port, "imageguard_verify_last_success_timestamp_seconds") or 0)
                > time.time() - 120, "no verify errors, last success set", get(port, "/metrics")[1])
        t.check(all(q["auth"] == "token" for q in api.requests) and any(
            q["path"] == "/api/v1/namespaces/prod/pods" for q in api.requests),
            "run read the pods with the kubeconfig's token", api.requests[:5])
        t.check("verify.pass" in log() and "2 ok, 0 drift" in log(), "a verify.pass summary is logged",
                log()[-2000:])
        t.check(drift_records(audit) == [], "no drift record while nothing drifts")

        # a node serves yesterday's image under today's tag: pod web-1 runs digest a
        cluster(api, env, [b, a])
        t.check(wait_for(lambda: metric(port, SERIES) == 1.0), "a drifted pod flips the gauge to 1",
                get(port, "/metrics")[1])
        t.check(wait_for(lambda: drift_records(audit)), "the drift is in the audit log")
        recs = drift_records(audit)
        r = recs[0] if recs else {}
        t.check(r.get("policy") == "default/web" and r.get("workload") == "prod/Deployment/web"
                and r.get("container") == "web" and r.get("pod") == "web-1"
                and r.get("expected_digest") == b and r.get("running_digest") == a
                and r.get("expected_tag") == "v1.1.0" and r.get("file") == "apps/web.yaml"
                and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", r.get("time", ""))
                and "decision" not in r, "the audit record names policy, workload, container, "
                "expected and running digests", recs)
        t.check("verify.drift" in log() and "web-1" in log(), "the drift is logged (verify.drift)")
        code, text = get(port, "/metrics")
        pc = promtool(env, text)
        t.check(code == 200 and pc.returncode == 0, "promtool check metrics accepts /metrics",
                pc.stdout + pc.stderr)
        for name in ("# TYPE imageguard_running_drift gauge",
                     "# TYPE imageguard_verify_errors_total counter",
                     "imageguard_decisions_total{policy=\"default/web\",decision=\"none\""):
            t.check(name in text, "metrics expose " + name, text)

        # the API server fails: run keeps going, the gauge keeps its last value
        api.fail_with = 500
        t.check(wait_for(lambda: (metric(port, "imageguard_verify_errors_total") or 0) >= 2),
                "failed verifications are counted", get(port, "/metrics")[1])
        t.check("verify.error" in log() and "500" in log(), "the failure is logged", log()[-3000:])
        t.check(metric(port, SERIES) == 1.0, "the gauge keeps its last value while the API is down")
        t.check(proc.poll() is None and get(port, "/healthz")[0] == 200
                and get(port, "/readyz")[0] == 200, "run keeps going; /healthz and /readyz 200")
        env.push("team/web", ["v1.2.0"], created="2026-11-20T00:00:00Z")
        t.check(wait_for(lambda: "v1.2.0 #" in env.remote_file("apps/web.yaml")),
                "reconcile passes keep committing while verify fails")

        # the API is back: Git now wants v1.2.0 and every pod still runs v1.1.0
        api.fail_with = 0
        before = len(drift_records(audit))
        t.check(wait_for(lambda: len(drift_records(audit)) >= before + 2),
                "after recovery both pods on the old tag are audited as drift", drift_records(audit))
        t.check(metric(port, SERIES) == 1.0, "and the gauge stays 1")

        # the token rotates: the next verifications use the new one, without errors
        errors = metric(port, "imageguard_verify_errors_total")
        with open(token_file + ".new", "w") as f:
            f.write("rotated-" + TOKEN + "\n")
        api.token = "rotated-" + TOKEN
        os.rename(token_file + ".new", token_file)
        rotated = time.time()
        t.check(wait_for(lambda: (metric(port, "imageguard_verify_last_success_timestamp_seconds")
                                  or 0) > rotated + 1), "a rotated token file is read again",
                log()[-2000:])
        t.check(metric(port, "imageguard_verify_errors_total") <= errors + 1,
                "at most the verification racing the rotation failed")
    finally:
        start = time.time()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        errlog.close()
    t.check(rc == 0 and time.time() - start < 30, "SIGTERM: clean exit 0", log()[-3000:])


def in_cluster(env, api, tmp):
    """Without --kubeconfig: the service account as a pod sees it (KUBERNETES_SERVICE_HOST/PORT,
    token and ca.crt under /var/run/secrets/kubernetes.io/serviceaccount, bind-mounted in a
    private mount namespace so the host is untouched), and its token rotated in place."""
    sa = os.path.join(tmp, "sa")
    os.makedirs(sa)
    shutil.copy(api.ca_file, os.path.join(sa, "ca.crt"))
    with open(os.path.join(sa, "token"), "w") as f:
        f.write(TOKEN + "\n")
    with open(os.path.join(sa, "namespace"), "w") as f:
        f.write("imageguard")
    api.token = TOKEN
    script = ('mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && '
              'mount --bind "$0" /run/secrets/kubernetes.io/serviceaccount && exec "$@"')
    envv = dict(os.environ, KUBERNETES_SERVICE_HOST="127.0.0.1",
                KUBERNETES_SERVICE_PORT=str(api.port))
    envv.pop("KUBECONFIG", None)
    port = registry.free_port()
    errpath = os.path.join(env.dir, "run-in-cluster.log")
    errlog = open(errpath, "w+")
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, sa]
                            + env.args("run", "--listen", "127.0.0.1:%d" % port,
                                       "--verify-interval", "1s"),
                            stdout=subprocess.DEVNULL, stderr=errlog, env=envv)
    log = lambda: open(errpath).read()  # noqa: E731
    last = "imageguard_verify_last_success_timestamp_seconds"
    try:
        registry.wait_for_port(port, proc)
        t.check(wait_for(lambda: metric(port, SERIES) is not None and (metric(port, last) or 0) > 0),
                "in-cluster service account: verifications succeed", log()[-3000:])
        errors = metric(port, "imageguard_verify_errors_total")
        with open(os.path.join(sa, "token.new"), "w") as f:
            f.write("rotated-sa-" + TOKEN + "\n")
        api.token = "rotated-sa-" + TOKEN
        os.rename(os.path.join(sa, "token.new"), os.path.join(sa, "token"))
        rotated = time.time()
        t.check(wait_for(lambda: (metric(port, last) or 0) > rotated + 1),
                "a rotated service account token is read again", log()[-3000:])
        t.check(metric(port, "imageguard_verify_errors_total") <= errors + 1,
                "at most the verification racing the rotation failed")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        errlog.close()
    t.check(rc == 0, "in-cluster run: SIGTERM exit 0", log()[-3000:])


def command_line(env):
    """Usage errors and a broken kubeconfig stop run at startup with exit 2."""
    exe = env.args("run")[0]
    bad = os.path.join(env.dir, "bad-kubeconfig")
    with open(bad, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n")
    for args, msg in ((["--verify-interval", "5"], "option '--verify-interval': "),
                      (["--kubeconfig", bad], "option '--kubeconfig': only used with --verify-interval"),
                      (["--verify-interval", "1m", "--kubeconfig", bad], "kubeconfig '%s'" % bad),
                      (["--verify-interval", "1m", "--kubeconfig", os.path.join(env.dir, "none")],
                       "no such file")):
        envv = dict(os.environ)
        envv.pop("KUBERNETES_SERVICE_HOST", None)
        r = subprocess.run(env.args("run", *args), capture_output=True, text=True, timeout=30,
                           env=envv)
        t.check(r.returncode == 2 and r.stderr.startswith("imageguard: run: ") and msg in r.stderr,
                "exit 2: %s" % msg, r.stderr)
    envv = dict(os.environ)
    envv.pop("KUBERNETES_SERVICE_HOST", None)
    r = subprocess.run(env.args("run", "--verify-interval", "1m"), capture_output=True, text=True,
                       timeout=30, env=envv)
    t.check(r.returncode == 2 and "KUBERNETES_SERVICE_HOST" in r.stderr,
            "no --kubeconfig outside a pod: exit 2 saying so", r.stderr)
    r = subprocess.run([exe, "run", "--help"], capture_output=True, text=True, timeout=30)
    t.check(r.returncode == 0 and "--verify-interval DURATION" in r.stdout
            and "--kubeconfig FILE" in r.stdout, "run --help documents the flags", r.stdout)


def main():
    tmp = tempfile.mkdtemp(prefix="imageguard-run-verify.")
    api = None
    try:
        with Env() as env:
            api = kubeapi.start(token=TOKEN, page_size=1, directory=os.path.join(tmp, "api"))
            for case in (scenario, in_cluster):
                try:
                    case(env, api, tmp)
                except Exception:
                    import traceback
                    t.check(False, "%s raised" % case.__name__, traceback.format_exc())
            command_line(env)
    finally:
        if api:
            api.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


sys.exit(main())
