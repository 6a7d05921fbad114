#!/usr/bin/python3
"""End to end with `provider: aws` (IRSA through the cloud fixture's STS and ECR, in front of
docker-registry with token auth): `reconcile` lists through the ECR credential and commits the
update; `run` serves /metrics after a pass; no token, key, signature or web identity token in
stdout, stderr, the audit log or /metrics. An ImageRepository whose provider lacks its
environment fails alone, with one line naming the provider, while the other automates; under
`run` that failure is one `registry.credentials` log line naming the repository and provider,
and counted in the pass's report. The pod's own identity under `run`: a revoked credential (the
fixture's /_fixture/revoke: the ECR password and the registry bearer tokens issued for it) is
refreshed once (one STS AssumeRoleWithWebIdentity, one ECR token) and the update goes on; refused
again after its refresh, it is the repository's error, with no second refresh."""
import os
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
import cloud_fixture as cf  # noqa: E402
import registry  # noqa: E402
from guard_env import Env, Checks, marker_file, by_file  # noqa: E402
from kuberun import Background, wait  # noqa: E402

t = Checks()


def secrets_of(c, token_file):
    st = c.state
    out = [st.static_key[1], open(token_file).read()]
    for _, (secret, token, _) in st.aws_keys.items():
        out += [secret] + ([token] if token else [])
    out += [p for (_, p) in st.minted]
    return [s for s in out if s]


def no_secret(c, token_file, what, *texts):
    leaked = [s[:10] for s in secrets_of(c, token_file) for text in texts if s in text]
    t.check(not leaked, "no secret in " + what, leaked)
    t.check(not any("Signature=" in x or "AWS4-HMAC" in x for x in texts),
            "no signature in " + what)


def stat(c, name):
    return cf.control(c.url, "/_fixture/stats").get(name, 0)


def next_pass(c, run, tag):
    """Pushes tag, asks for a pass (SIGHUP) and waits until it is over."""
    n = len(run.events("reconcile.pass"))
    registry.push_image("http://" + c.upstream, "team/app", [tag], auth=cf.PUSH_USER)
    run.p.send_signal(signal.SIGHUP)
    wait(lambda: len(run.events("reconcile.pass")) > n, "the pass after SIGHUP", 60, run.text)


def pod_identity_revoked(c, env, token_file):
    """`run` with the pod's own identity (IRSA): revoked, refreshed once; refused after the
    refresh, the repository's error. Passes come on SIGHUP (intervals of 10m)."""
    env.config(env.repository("app", "team/app", interval="10m", extra="  provider: aws\n")
               + env.policy("app", "app", semver=">=1.0.0") + env.automation(interval="10m"))
    run = Background(os.path.join(env.dir, "run-revoke.log"),
                     env.args("run", "--log-format", "json", "--listen", "127.0.0.1:0"))
    try:
        wait(lambda: run.events("reconcile.pass"), "the first pass", 60, run.text)
        sts, ecr = stat(c, "sts"), stat(c, "ecr")
        bearer = stat(c, "registry-revoked-bearer")
        cf.control(c.url, "/_fixture/revoke", {})
        next_pass(c, run, "v1.2.0")
        t.check("v1.2.0" in env.remote_file("apps/app.yaml"), "updated after the refresh",
                run.text()[-3000:])
        t.check(stat(c, "registry-revoked-bearer") > bearer, "the cached bearer was refused")
        t.check((stat(c, "sts") - sts, stat(c, "ecr") - ecr) == (1, 1),
                "refreshed once: one STS AssumeRoleWithWebIdentity, one ECR token",
                (stat(c, "sts") - sts, stat(c, "ecr") - ecr))
        t.check(len(run.events("cloudauth.refused")) == 1, "one refresh logged",
                run.events("cloudauth.refused"))
        cf.control(c.url, "/_fixture/config", {"refuse": ["registry"]})
        cf.control(c.url, "/_fixture/revoke", {})
        try:
            next_pass(c, run, "v1.3.0")
        finally:
            cf.control(c.url, "/_fixture/config", {"refuse": []})
        failed = [e for e in run.events("registry.list") if e.get("level") == "warn" and
                  "default/app" in e["msg"]]
        t.check(len(failed) == 1 and ("401" in failed[0]["msg"] or
                                      "unauthorized" in failed[0]["msg"].lower()),
                "refused after its refresh: the repository's error", failed)
        t.check((stat(c, "sts") - sts, stat(c, "ecr") - ecr) == (2, 2),
                "one refresh, no more", (stat(c, "sts") - sts, stat(c, "ecr") - ecr))
        t.check(len(run.events("cloudauth.refused")) == 2, "one more refresh logged",
                run.events("cloudauth.refused"))
        t.check("v1.2.0" in env.remote_file("apps/app.yaml"), "not updated to v1.3.0")
    finally:
        rc = run.stop()
    t.check(rc == 0, "run exits 0 on SIGTERM", rc)
    no_secret(c, token_file, "the revocation run's log", run.text())


def main():
    d = os.path.join(os.environ.get("TMPDIR", "/tmp"), "imageguard-cloudrun.%d" % os.getpid())
    c = cf.start(d)
    env = None
    try:
        registry.push_image("http://" + c.upstream, "team/app", ["v1.0.0", "v1.1.0"],
                            auth=cf.PUSH_USER)
        token_file = c.write("token-aws", c.state.sa_token("sts.amazonaws.com"))
        os.environ.update(AWS_WEB_IDENTITY_TOKEN_FILE=token_file, AWS_ROLE_ARN=cf.ROLE_ARN,
                          AWS_REGION="us-west-2", AWS_ENDPOINT_URL_STS=c.url,
                          AWS_ENDPOINT_URL_ECR=c.url)
        env = Env(registry_host=c.host("ecr"), start_registry=False)
        env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
                  "apps/gcp.yaml": marker_file(c.host("gcp") + "/team/app:v1.0.0", "gcp")})
        env.config(env.repository("app", "team/app", extra="  provider: aws\n")
                   + env.repository("gcp", "team/app", host=c.host("gcp"),
                                    extra="  provider: gcp\n")
                   + env.policy("app", "app", semver=">=1.0.0")
                   + env.policy("gcp", "gcp", semver=">=1.0.0")
                   + env.automation())
        audit = os.path.join(env.dir, "audit.jsonl")
        r = env.imageguard("reconcile", "-o", "json", "--audit-log", audit, "--log-level",
                           "debug")
        items = by_file(r.json())
        app = items[("default/app", "apps/app.yaml")]
        t.check(app["decision"] == "update" and app["candidate"] == "v1.1.0", "ECR update", app)
        t.check(env.remote_file("apps/app.yaml") ==
                marker_file(env.image("team/app") + ":v1.1.0", "app"), "committed")
        gcp_lines = [l for l in (r.out + r.err).splitlines() if "provider 'gcp'" in l]
        t.check(gcp_lines and "metadata server" in gcp_lines[0], "gcp fails alone, one line",
                r.out[-3000:])
        with open(audit) as f:
            audit_text = f.read()
        t.check("v1.1.0" in audit_text, "audit written", audit_text[:500])
        no_secret(c, token_file, "reconcile output", r.out, r.err, audit_text)

        port = registry.free_port()
        p = subprocess.Popen(env.args("run", "--listen", "127.0.0.1:%d" % port, "--audit-log",
                                      audit, "--log-level", "debug"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        metrics = ""
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port) as resp:
                        if resp.status == 200:
                            break
                except OSError:
                    pass
                time.sleep(0.2)
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port) as resp:
                metrics = resp.read().decode()
        finally:
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=60)
        t.check("imageguard_" in metrics, "metrics served", metrics[:300])
        # run: the credential failure is one log line naming the repository, the provider and
        # what is missing; the pass's report records it for gcp alone, and app went on
        cred = [l for l in (out + err).splitlines() if "registry.credentials" in l]
        t.check(len(cred) >= 1 and all("repository 'default/gcp'" in l and "provider 'gcp'" in l
                                       and "metadata server" in l for l in cred),
                "one credentials line per failed scan, naming repository and provider",
                (out + err)[-3000:])
        t.check(not any("default/app" in l for l in cred), "app has no credential failure")
        passes = [l for l in (out + err).splitlines() if "reconcile.pass" in l]
        t.check(passes and " 1 error" in passes[0], "the pass counts the failure", passes)
        with open(audit) as f:
            audit_text = f.read()
        no_secret(c, token_file, "run output, audit and /metrics", out, err, audit_text,
                  metrics)
        pod_identity_revoked(c, env, token_file)
    finally:
        if env:
            env.close()
        c.stop()
        subprocess.run(["rm", "-rf", d])
    return t.done()


sys.exit(main())
