#!/usr/bin/python3
"""`imageguard tags --provider aws|gcp|azure` against the cloud fixture (STS, ECR, EKS Pod
Identity, the GCE metadata server, Entra ID, ACR's exchange) in front of Debian's
docker-registry with token auth: the credential each provider gives really unlocks the tag
listing; caching until shortly before expiry; one refresh after a revocation, then an error;
bad environments (a missing, unreadable, non-regular or expired web identity token file, an
unassumable role, a skewed clock) give one-line errors naming the provider and what is wrong; with
the aws environment broken, a `plan` over two repositories still lists the other (gcp) one; no
token, key or signature in any output."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
import cloud_fixture as cf  # noqa: E402
import harness  # noqa: E402
import registry  # noqa: E402
from guard_env import Env, marker_file, by_file  # noqa: E402
from harness import check, test  # noqa: E402

TAGS = ["v1.0.0", "v1.1.0", "v2.0.0"]
PROVIDER_VARS = ["AWS_", "GCE_METADATA_HOST", "AZURE_"]


def setup():
    d = harness.tempdir()
    c = cf.start(d)
    try:
        registry.push_image("http://" + c.upstream, "team/app", TAGS, auth=cf.PUSH_USER)
        c.sa_aws = c.write("token-aws", c.state.sa_token("sts.amazonaws.com"))
        c.sa_azure = c.write("token-azure", c.state.sa_token("api://AzureADTokenExchange"))
        c.sa_expired = c.write("token-expired", c.state.sa_token("sts.amazonaws.com", 600,
                                                                 time.time() - 3600))
        c.agent = c.write("agent-token", next(iter(c.state.agent_tokens)))
    except BaseException:
        c.stop()
        raise
    return c


def teardown(c):
    if c:
        c.stop()


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not any(k.startswith(p) for p in PROVIDER_VARS)}
    env.update(extra)
    return env


def tags(c, kind, provider, env, *more):
    args = [harness.IMAGEGUARD, "tags", c.host(kind) + "/team/app", "--insecure", "--provider",
            provider, "--log-level", "debug"] + list(more)
    p = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    return harness.Result(p)


def secrets_of(c):
    st = c.state
    out = [st.static_key[1]] + list(st.agent_tokens)
    for k, (secret, token, _) in st.aws_keys.items():
        out += [secret] + ([token] if token else [])
    out += [p for (_, p) in st.minted] + list(st.entra_tokens) + list(st.github_tokens)
    out += [open(c.sa_aws).read(), open(c.sa_azure).read()]
    return [s for s in out if s]


def no_secret(c, r):
    for s in secrets_of(c):
        check(s not in r.out and s not in r.err, "no secret in the output", s[:12], r)
    check("Signature=" not in r.err and "AWS4-HMAC" not in r.err, "no signed request", r)


def stats(c):
    return cf.control(c.url, "/_fixture/stats")


def configure(c, **cfg):
    base = {"sts_expires_in": 3600, "ecr_expires_in": 43200, "gcp_expires_in": 3599,
            "entra_expires_in": 3599, "acr_expires_in": 10800, "skew": 0, "refuse": []}
    base.update(cfg)
    cf.control(c.url, "/_fixture/config", base)


def irsa_env(c, token_file=None):
    return clean_env(AWS_WEB_IDENTITY_TOKEN_FILE=token_file or c.sa_aws, AWS_ROLE_ARN=cf.ROLE_ARN,
                     AWS_REGION="us-west-2", AWS_ENDPOINT_URL_STS=c.url, AWS_ENDPOINT_URL_ECR=c.url)


@test
def sigv4_verifier_matches_the_suite(c):
    r = subprocess.run([sys.executable, os.path.join(os.path.dirname(cf.__file__),
                                                     "sigv4_verify.py"), "selftest"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "the fixture's verifier agrees with AWS's vectors", r.stdout)


@test
def aws_irsa_lists(c):
    configure(c)
    before = stats(c)
    r = tags(c, "ecr", "aws", irsa_env(c))
    check(r.rc == 0 and r.out.split() == TAGS, "ECR via IRSA lists", r)
    after = stats(c)
    check(after.get("sts", 0) == before.get("sts", 0) + 1, "one STS call", after)
    check(after.get("ecr", 0) == before.get("ecr", 0) + 1, "one signed ECR call", after)
    no_secret(c, r)


@test
def aws_pod_identity_lists(c):
    configure(c)
    env = clean_env(AWS_CONTAINER_CREDENTIALS_FULL_URI=c.url + "/pod-identity/credentials",
                    AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=c.agent, AWS_ENDPOINT_URL=c.url)
    before = stats(c)
    r = tags(c, "ecr", "aws", env)
    check(r.rc == 0 and r.out.split() == TAGS, "ECR via EKS Pod Identity lists", r)
    check(stats(c).get("pod-identity", 0) == before.get("pod-identity", 0) + 1, "agent asked")
    no_secret(c, r)


@test
def aws_static_keys_list(c):
    configure(c)
    env = clean_env(AWS_ACCESS_KEY_ID=c.state.static_key[0],
                    AWS_SECRET_ACCESS_KEY=c.state.static_key[1], AWS_ENDPOINT_URL_ECR=c.url)
    r = tags(c, "ecr", "aws", env)
    check(r.rc == 0 and r.out.split() == TAGS, "ECR via static keys lists", r)
    env["AWS_SECRET_ACCESS_KEY"] = "wrong" + c.state.static_key[1]
    r = tags(c, "ecr", "aws", env)
    check(r.rc == 1 and "InvalidSignatureException" in r.err, "a wrong secret: signature refused", r)
    check(len(r.err.strip().splitlines()[-1]) < 400, "one line", r)
    no_secret(c, r)


@test
def aws_clock_skew_is_refused(c):
    # ECR refuses a signature dated more than 15 minutes from its clock.
    env = clean_env(AWS_ACCESS_KEY_ID=c.state.static_key[0],
                    AWS_SECRET_ACCESS_KEY=c.state.static_key[1], AWS_ENDPOINT_URL_ECR=c.url)
    configure(c, skew=20 * 60)
    r = tags(c, "ecr", "aws", env)
    configure(c)
    check(r.rc == 1 and "InvalidSignatureException" in r.err, "skewed clock refused", r)
    check("provider 'aws'" in r.err, "names the provider", r)
    no_secret(c, r)
    # The web identity token looks expired to a service whose clock is an hour ahead.
    configure(c, skew=3600)
    r = tags(c, "ecr", "aws", irsa_env(c))
    configure(c)
    check(r.rc == 1 and "ExpiredTokenException" in r.err, "expired identity", r)


def one_line(r):
    """The error line of a failed command run without --log-level debug: stderr is exactly one
    line."""
    lines = r.err.strip().splitlines()
    return lines[0] if len(lines) == 1 else None


def fifo(c):
    """A FIFO nobody writes to: opening it for reading would block for ever."""
    path = os.path.join(c.dir, "token-fifo")
    if not os.path.exists(path):
        os.mkfifo(path)
    return path


@test
def aws_bad_environments(c):
    missing = os.path.join(c.dir, "missing-token")
    cases = [
        (clean_env(), "no credentials"),
        (clean_env(AWS_ROLE_ARN=cf.ROLE_ARN), "AWS_WEB_IDENTITY_TOKEN_FILE is not set"),
        (irsa_env(c, missing), "AWS_WEB_IDENTITY_TOKEN_FILE '%s': no such file" % missing),
        (irsa_env(c, c.dir), "AWS_WEB_IDENTITY_TOKEN_FILE '%s': not a regular file" % c.dir),
        (irsa_env(c, fifo(c)), "AWS_WEB_IDENTITY_TOKEN_FILE '%s': not a regular file" % fifo(c)),
        (irsa_env(c, c.sa_expired), "ExpiredTokenException"),
    ]
    for env, want in cases:
        r = tags(c, "ecr", "aws", env)
        last = r.err.strip().splitlines()[-1] if r.err.strip() else ""
        check(r.rc != 0 and want in last and "provider 'aws'" in last, "one line: " + want, r)
        no_secret(c, r)
    # an unassumable role: one line naming the provider and the role, never the token
    other = "arn:aws:iam::123456789012:role/other"
    env = irsa_env(c)
    env["AWS_ROLE_ARN"] = other
    r = harness.Result(subprocess.run([harness.IMAGEGUARD, "tags", c.host("ecr") + "/team/app",
                                       "--insecure", "--provider", "aws"],
                                      capture_output=True, text=True, timeout=120, env=env))
    line = one_line(r)
    check(r.rc == 1 and line is not None and "AccessDenied" in line and
          "provider 'aws'" in line and "role '%s'" % other in line, "an unassumable role", r)
    no_secret(c, r)
    r = tags(c, "plain", "aws", irsa_env(c))
    check(r.rc == 2 and "not an ECR host" in r.err, "a non-ECR host is a configuration error", r)


def as_unprivileged(c, args, env):
    """Runs imageguard with args where a 0600 file of another user is unreadable: as root, a
    copy of the binary (in a 0755 folder: the build tree may sit where nobody cannot reach it)
    run as nobody; otherwise as ourselves."""
    if os.geteuid() != 0:
        return harness.Result(subprocess.run([harness.IMAGEGUARD] + args, capture_output=True,
                                             text=True, timeout=120, env=env))
    d = harness.tempdir()
    os.chmod(d, 0o755)
    # the front binary runs its helpers (imageguard-tags, ...) from its own folder
    build = os.path.dirname(os.path.abspath(harness.IMAGEGUARD))
    for name in os.listdir(build):
        if name.startswith("imageguard") and os.access(os.path.join(build, name), os.X_OK) \
                and os.path.isfile(os.path.join(build, name)):
            shutil.copy(os.path.join(build, name), os.path.join(d, name))
            os.chmod(os.path.join(d, name), 0o755)
    binary = os.path.join(d, os.path.basename(harness.IMAGEGUARD))
    # a coverage build writes its counters at exit: as nobody, under the build tree it cannot,
    # and says so on stderr; GCOV_PREFIX puts them in a folder nobody can write
    gcov = os.path.join(d, "gcov")
    os.mkdir(gcov)
    os.chmod(gcov, 0o777)
    env = dict(env, HOME=d, XDG_STATE_HOME=d, GCOV_PREFIX=gcov)
    return harness.Result(subprocess.run([binary] + args, capture_output=True, text=True,
                                         timeout=120, env=env, user=65534, group=65534,
                                         extra_groups=[]))


@test
def aws_unreadable_token_file(c):
    configure(c)
    # the projected token as root writes it, readable by its owner only
    locked = c.write("token-locked", open(c.sa_aws).read())
    os.chmod(locked, 0o600 if os.geteuid() == 0 else 0)
    try:
        r = as_unprivileged(c, ["tags", c.host("ecr") + "/team/app", "--insecure", "--provider",
                                "aws"], irsa_env(c, locked))
    finally:
        os.chmod(locked, 0o600)
    line = one_line(r)
    check(r.rc == 2 and line is not None and "provider 'aws'" in line and
          "AWS_WEB_IDENTITY_TOKEN_FILE '%s': unreadable" % locked in line and
          "ermission denied" in line, "an unreadable token file: one line naming the file", r)
    no_secret(c, r)


@test
def aws_broken_environment_leaves_the_other_repositories(c):
    """Two repositories in one plan: provider aws with a broken environment, provider gcp with a
    working one. The aws repository's policy is an error naming the provider and what is wrong;
    the gcp one lists and is decided as usual."""
    configure(c)
    env = Env(registry_host=c.host("ecr"), start_registry=False)
    try:
        env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app"),
                  "apps/gcp.yaml": marker_file(c.host("gcp") + "/team/app:v1.0.0", "gcp")})
        env.config(env.repository("app", "team/app", extra="  provider: aws\n")
                   + env.repository("gcp", "team/app", host=c.host("gcp"),
                                    extra="  provider: gcp\n")
                   + env.policy("app", "app", semver=">=1.0.0")
                   + env.policy("gcp", "gcp", semver=">=1.0.0")
                   + env.automation())
        missing = os.path.join(c.dir, "missing-token")
        other = "arn:aws:iam::123456789012:role/other"
        cases = [
            ("a missing token file", irsa_env(c, missing),
             "AWS_WEB_IDENTITY_TOKEN_FILE '%s': no such file" % missing),
            ("a token file that is a FIFO", irsa_env(c, fifo(c)), "not a regular file"),
            ("an expired web identity token", irsa_env(c, c.sa_expired), "ExpiredTokenException"),
            ("an unassumable role", dict(irsa_env(c), AWS_ROLE_ARN=other), "role '%s'" % other),
            ("no credentials at all", clean_env(), "no credentials"),
        ]
        for what, aws_env, want in cases:
            run_env = dict(aws_env, GCE_METADATA_HOST="127.0.0.1:%d" % c.port)
            r = harness.Result(subprocess.run(env.args("plan", "-o", "json"), capture_output=True,
                                              text=True, timeout=120, env=run_env))
            check(r.rc == 1, what + ": plan exits 1 (one policy in error)", r)
            items = by_file(json.loads(r.out))
            app = items.get(("default/app", "apps/app.yaml"), {})
            gcp = items.get(("default/gcp", "apps/gcp.yaml"), {})
            msg = app.get("message") or ""
            check(app.get("decision") == "error" and "provider 'aws'" in msg and want in msg
                  and "\n" not in msg, what + ": the aws policy is one error line", app)
            check(gcp.get("decision") == "update" and gcp.get("candidate") == TAGS[-1],
                  what + ": the gcp repository still lists and is decided", gcp)
            no_secret(c, r)
    finally:
        env.close()


@test
def gcp_metadata_lists(c):
    configure(c)
    env = clean_env(GCE_METADATA_HOST="127.0.0.1:%d" % c.port)
    r = tags(c, "gcp", "gcp", env)
    check(r.rc == 0 and r.out.split() == TAGS, "Artifact Registry via the metadata server", r)
    no_secret(c, r)
    configure(c, refuse=["gcp"])
    r = tags(c, "gcp", "gcp", env)
    configure(c)
    check(r.rc == 1 and "provider 'gcp'" in r.err and "404" in r.err, "a refusal, one line", r)


@test
def azure_workload_identity_lists(c):
    configure(c)
    env = clean_env(AZURE_FEDERATED_TOKEN_FILE=c.sa_azure, AZURE_CLIENT_ID=cf.CLIENT_ID,
                    AZURE_TENANT_ID=cf.TENANT, AZURE_AUTHORITY_HOST=c.url + "/")
    before = stats(c)
    r = tags(c, "acr", "azure", env)
    check(r.rc == 0 and r.out.split() == TAGS, "ACR via workload identity lists", r)
    after = stats(c)
    check(after.get("entra", 0) == before.get("entra", 0) + 1 and
          after.get("acr-exchange", 0) == before.get("acr-exchange", 0) + 1, "entra + exchange",
          after)
    no_secret(c, r)
    del env["AZURE_CLIENT_ID"]
    r = tags(c, "acr", "azure", env)
    check(r.rc == 2 and "provider 'azure': AZURE_CLIENT_ID is not set" in r.err, "missing id", r)
    env["AZURE_CLIENT_ID"] = "someone-else"
    r = tags(c, "acr", "azure", env)
    check(r.rc == 1 and "invalid_client" in r.err, "a wrong client is refused", r)
    no_secret(c, r)


harness.main(setup, teardown)
