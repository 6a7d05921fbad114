#!/usr/bin/python3
"""`imageguard tags` against Debian's real docker-registry: plain HTTP listing, JSON fields,
missing repository, TLS with a test CA + htpasswd Basic auth (good and bad password), the
token flow (auth: token with an ES256 issuer), and no secret in any output."""
import base64
import hashlib
import json
import os
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
import harness  # noqa: E402
import registry  # noqa: E402
from harness import check, run, test  # noqa: E402

PASSWORD = "Wond3rland-pw"
TAGS = ["v1.0.0", "v1.10.0", "v1.2.0", "latest", "1.0", "multi"]


def docker_config(entries):
    d = harness.tempdir()
    path = os.path.join(d, "config.json")
    with open(path, "w") as f:
        json.dump({"auths": entries}, f)
    return path


def setup():
    s = {}
    try:
        s["plain"] = registry.start_registry()
        s["tls"] = registry.start_registry(tls=True, htpasswd=("alice", PASSWORD))
        s["token"] = registry.start_registry(token=("bob", PASSWORD))
        for t in TAGS:
            multi = t == "multi"
            s["digest:" + t] = registry.push_image(s["plain"].url, "team/app", t, multi_arch=multi)
        registry.push_image(s["tls"].url, "team/app", ["v1", "v2"], auth=s["tls"].auth,
                            ca_file=s["tls"].ca_file)
        registry.push_image(s["token"].url, "team/app", ["v3", "v4"], auth=s["token"].auth)
    except BaseException:
        teardown(s)
        raise
    return s


def teardown(s):
    for r in (s or {}).values():
        if isinstance(r, registry.Registry):
            r.stop()


@test
def lists_sorted_bytewise(s):
    r = run("tags", s["plain"].host + "/team/app", "--insecure")
    check(r.rc == 0, "exit 0", r)
    check(r.out == "".join(t + "\n" for t in sorted(TAGS)), "byte-wise sorted tags", r)


@test
def json_fields(s):
    r = run("tags", s["plain"].host + "/team/app", "--insecure", "-o", "json")
    check(r.rc == 0, "exit 0", r)
    j = json.loads(r.out)
    want = sorted(TAGS)
    check(j["image"] == s["plain"].host + "/team/app", "image", j)
    check(j["tags"] == want and j["count"] == len(want) and j["pages"] == 1, "tags/count/pages", j)
    check(j["sha256"] == hashlib.sha256("\n".join(want).encode()).hexdigest(), "sha256", j)


@test
def multi_arch_index_digest_served(s):
    # The listing side is covered here; the digest side (HEAD returns the index digest, never a
    # child's) is asserted by test_registry's head_digests against the same fixture.
    req = urllib.request.Request(s["plain"].url + "/v2/team/app/manifests/multi", method="HEAD",
                                 headers={"Accept": registry.OCI_INDEX})
    with urllib.request.urlopen(req) as resp:
        check(resp.headers["Docker-Content-Digest"] == s["digest:multi"], "index digest")


@test
def missing_repository(s):
    r = run("tags", s["plain"].host + "/team/none", "--insecure")
    check(r.rc == 1, "exit 1", r)
    check(r.err == "imageguard: registry '%s/team/none': 404 NAME_UNKNOWN: repository name not "
                   "known to registry\n" % s["plain"].host, "one-line error naming registry and status", r)
    check(r.out == "", "no partial output", r)


@test
def plain_http_without_insecure(s):
    """A TLS error against a registry that speaks plain HTTP points at spec.insecure."""
    r = run("tags", s["plain"].host + "/team/app")
    check(r.rc == 1 and r.err.count("\n") == 1, "one-line error, exit 1", r)
    check("set spec.insecure: true on its ImageRepository" in r.err, "it suggests spec.insecure", r)


@test
def usage_errors(s):
    host = s["plain"].host
    for args, needle in ((["tags"], "IMAGE is required"),
                         (["tags", host + "/team/app:v1", "--insecure"], "a tag is not allowed"),
                         (["tags", host + "/team/app", "-o", "yaml"], "expected text or json"),
                         (["tags", host + "/Team/App"], "invalid repository path"),
                         (["tags", host + "/team/app", "--bogus"], "unknown"),
                         (["tags", host + "/team/app", "--timeout", "soon"], "bad duration"),
                         (["tags", host + "/team/app", "--max-pages", "-1"], "positive number"),
                         (["tags", "a", "b"], "one IMAGE only")):
        r = run(*args)
        check(r.rc == 2 and needle in r.err and r.err.startswith("imageguard: ") and
              r.err.count("\n") == 1, "usage error %r" % args, r)
    r = run("tags", "--help")
    check(r.rc == 0 and r.out.startswith("usage: imageguard tags IMAGE"), "--help", r)


@test
def policy_order(s):
    image = s["plain"].host + "/team/app"
    r = run("tags", image, "--insecure", "--pattern", "^v", "--semver", ">=1.0.0")
    check(r.rc == 0 and r.out == "v1.10.0\nv1.2.0\nv1.0.0\n", "candidates best first", r)
    r = run("tags", image, "--insecure", "--pattern", "^v", "--semver", ">=1.0.0",
            "--exclude", "^v1[.]10", "-o", "json")
    j = json.loads(r.out)
    check(r.rc == 0 and j["tags"] == ["v1.2.0", "v1.0.0"] and j["count"] == 2, "exclude", r)
    check(j["sha256"] == hashlib.sha256("\n".join(sorted(TAGS)).encode()).hexdigest(),
          "sha256 identifies the whole listing", j)
    for bad in (["--semver", "not a range"], ["--pattern", "(", "--alphabetical", "asc"],
                ["--pattern", "^v"], ["--numerical", "up"]):
        r = run("tags", image, "--insecure", *bad)
        check(r.rc == 2 and r.out == "" and r.err.startswith("imageguard: ") and
              r.err.count("\n") == 1, "bad policy flags %r" % bad, r)


@test
def tls_basic_auth(s):
    reg = s["tls"]
    cfg = docker_config({"https://%s/v2/" % reg.host: {"username": "alice", "password": PASSWORD}})
    r = run("tags", reg.host + "/team/app", "--ca-file", reg.ca_file, "--docker-config", cfg,
            "--log-level", "debug")
    check(r.rc == 0 and r.out == "v1\nv2\n", "listing over TLS with Basic auth", r)
    check(PASSWORD not in r.err and PASSWORD not in r.out, "no secret in output", r)
    # the `auth` base64 form, keyed by bare host
    auth = base64.b64encode(("alice:" + PASSWORD).encode()).decode()
    cfg = docker_config({reg.host: {"auth": auth}})
    r = run("tags", reg.host + "/team/app", "--ca-file", reg.ca_file, "--docker-config", cfg)
    check(r.rc == 0 and r.out == "v1\nv2\n", "auth base64 form", r)


@test
def tls_bad_password(s):
    reg = s["tls"]
    bad = "Not-" + PASSWORD
    cfg = docker_config({reg.host: {"username": "alice", "password": bad}})
    r = run("tags", reg.host + "/team/app", "--ca-file", reg.ca_file, "--docker-config", cfg,
            "--log-level", "debug")
    check(r.rc == 1 and "registry '%s/team/app': 401" % reg.host in r.err, "401 named", r)
    check(bad not in r.err and auth_b64("alice", bad) not in r.err, "no secret in error", r)
    r = run("tags", reg.host + "/team/app", "--ca-file", reg.ca_file)
    check(r.rc == 1 and "401" in r.err and "credentials required" in r.err, "anonymous refused", r)


def auth_b64(user, password):
    return base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


@test
def tls_needs_the_ca(s):
    reg = s["tls"]
    r = run("tags", reg.host + "/team/app")
    check(r.rc == 1 and "registry '%s/team/app'" % reg.host in r.err and
          ("certificate" in r.err.lower() or "ssl" in r.err.lower()), "untrusted CA refused", r)


@test
def token_flow(s):
    reg = s["token"]
    cfg = docker_config({reg.host: {"auth": auth_b64("bob", PASSWORD)}})
    r = run("tags", reg.host + "/team/app", "--insecure", "--docker-config", cfg,
            "--log-level", "debug")
    check(r.rc == 0 and r.out == "v3\nv4\n", "listing with a token from the issuer", r)
    check(PASSWORD not in r.err, "no secret in logs", r)
    with urllib.request.urlopen(reg.token_url.replace("/token", "/_requests")) as resp:
        seen = json.load(resp)
    pulls = [e for e in seen
             if urllib.parse.unquote(e["path"]).endswith("scope=repository:team/app:pull")]
    check(pulls and all(e["authorized"] for e in pulls), "token asked for pull scope with creds", seen)
    # anonymous: the issuer gives a token without access, the registry refuses it
    r = run("tags", reg.host + "/team/app", "--insecure")
    check(r.rc == 1 and "401" in r.err and "registry '%s/team/app'" % reg.host in r.err,
          "anonymous token refused", r)
    # wrong password: the issuer refuses
    cfg = docker_config({reg.host: {"auth": auth_b64("bob", "wrong")}})
    r = run("tags", reg.host + "/team/app", "--insecure", "--docker-config", cfg)
    check(r.rc == 1 and "token request to '127.0.0.1:" in r.err and "401" in r.err and
          "credentials refused" in r.err, "token refused", r)


if __name__ == "__main__":
    harness.main(setup, teardown)
