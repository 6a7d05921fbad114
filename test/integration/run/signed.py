#!/usr/bin/python3
"""The signature gate inside `imageguard run` (CONTRACT §12: "an unchanged candidate costs no
request after its first pass"), against Debian's docker-registry behind the recording fault
proxy and a bare Git remote: an unsigned candidate is held on every pass, but only the first
pass asks the registry for its signature (the verdict is kept across passes while the listing
shows the same signature tags); a signature pushed later appears in the listing, so the next
pass verifies again and commits with `Imageguard-Verified:`; the passes after it, up to date,
ask nothing of the signature tags."""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
import cosignsig  # noqa: E402
from guard_env import Env, Checks, marker_file, wait_for  # noqa: E402

t = Checks()


def passes(log):
    with open(log) as f:
        return f.read().count("reconcile.pass")


with Env() as env:
    fault = env.fault()
    image = env.image("team/app", fault.host)
    keys = os.path.join(env.dir, "keys")
    os.makedirs(keys)
    key, pub = cosignsig.keypair(keys, "trusted")
    secret = os.path.join(env.secrets, "cosign-keys")
    os.makedirs(secret)
    with open(pub) as src, open(os.path.join(secret, "cosign.pub"), "w") as dst:
        dst.write(src.read())
    env.push("team/app", ["1.0.0"])
    env.seed({"app.yaml": marker_file(image + ":1.0.0", "app")})
    d11 = env.push("team/app", ["1.1.0"], created="2026-01-02T00:00:00Z")
    env.config(env.repository("app", "team/app", host=fault.host, interval="1s")
               + env.policy("app", "app", semver=">=1.0.0",
                            annotations={"imageguard.io/verify-provider": "cosign",
                                         "imageguard.io/verify-secret": "cosign-keys"})
               + env.automation(interval="1s"))
    log_len = len(env.remote_log())
    log = os.path.join(env.dir, "run.log")
    errlog = open(log, "w")
    proc = subprocess.Popen(env.args("run", "--log-format", "text"),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        t.check(wait_for(lambda: passes(log) >= 1), "the first pass ends")
        first = cosignsig.sig_requests(fault.requests())
        t.check(len(first) >= 1, "the first pass asks the registry for the signature", first)
        t.check(wait_for(lambda: passes(log) >= 4), "three more passes end")
        later = cosignsig.sig_requests(fault.requests())[len(first):]
        t.check(later == [], "the held candidate's later passes ask nothing of its signature",
                later)
        with open(log) as f:
            text = f.read()
        t.check(text.count("verify.unverified") >= 4 and "unsigned" in text,
                "every pass still holds it as unsigned", text[-2000:])
        t.check(len(env.remote_log()) == log_len, "nothing committed while unsigned")

        cosignsig.push_sig(env.reg.url, "team/app", image, d11, key, keys)
        t.check(wait_for(lambda: len(env.remote_log()) == log_len + 1, timeout=60),
                "a signature pushed later: the next pass commits")
        msg = env.remote_log()[0][1] if len(env.remote_log()) > log_len else ""
        t.check("Imageguard-Verified: key cosign.pub (sha256:" in msg,
                "the commit carries Imageguard-Verified", msg)
        t.check(":1.1.0 #" in env.remote_file("app.yaml"), "the remote holds 1.1.0")
        n = passes(log)
        asked = len(cosignsig.sig_requests(fault.requests()))
        t.check(wait_for(lambda: passes(log) >= n + 2), "two more passes end")
        t.check(len(cosignsig.sig_requests(fault.requests())) == asked,
                "up to date: the passes ask nothing of the signature tags")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        errlog.close()
    t.check(rc == 0, "SIGTERM: exit 0", rc)

sys.exit(t.done())
