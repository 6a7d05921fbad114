#!/usr/bin/python3
"""`imageguard tags` against the fault server: every pagination style, clamped and rejected
page sizes, 429 + Retry-After, 500 then success, 500 forever, timeouts, truncated/invalid JSON
(an error, never a shorter list), tags: null, cross-host next links and redirects, caps — and
the requests actually made (credentials only where they belong)."""
import base64
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
import faultserver  # noqa: E402
import harness  # noqa: E402
from harness import check, run, test  # noqa: E402

SECRET = "wonderland"


def tags(n):
    return ["t%03d" % i for i in range(n)]


def lines(names):
    return "".join(t + "\n" for t in names)


def docker_config(host, user, password):
    d = harness.tempdir()
    path = os.path.join(d, "config.json")
    with open(path, "w") as f:
        json.dump({"auths": {host: {"auth": base64.b64encode(
            ("%s:%s" % (user, password)).encode()).decode()}}}, f)
    return path


def requests_for(srv, repo):
    return [r for r in srv.requests() if "/%s/" % repo in r["path"]]


def tags_cmd(srv, repo, *args, **kw):
    return run("tags", "%s/%s" % (srv.host, repo), "--insecure", *args, **kw)


def unique(kind):
    return "%s/%s" % (kind, uuid.uuid4().hex[:12])


@test
def pagination_styles(srv):
    for style in ("absolute", "relative", "query", "unquoted", "multi"):
        repo = unique("pages-" + style)
        r = tags_cmd(srv, repo, "-o", "json")
        check(r.rc == 0, style, r)
        j = json.loads(r.out)
        check(j["tags"] == tags(25) and j["pages"] == 3, style + ": 25 tags in 3 pages", j)
        seen = [q["path"] for q in requests_for(srv, repo)]
        check(len(seen) == 3 and seen[0].endswith("/tags/list?n=1000") and
              all(p.startswith("/v2/%s/tags/list" % repo) for p in seen) and
              seen[1].endswith("last=t009") and seen[2].endswith("last=t019"),
              style + ": next links followed verbatim", seen)


@test
def clamped_page_size(srv):
    repo = unique("clamp")
    r = tags_cmd(srv, repo, "-o", "json")
    j = json.loads(r.out)
    check(r.rc == 0 and j["count"] == 250 and j["pages"] == 3, "clamped to 100 per page", r)


@test
def page_size_rejected_then_smaller(srv):
    repo = unique("ecr")
    r = tags_cmd(srv, repo, "--page-size", "5000", "-o", "json")
    check(r.rc == 0, "exit 0", r)
    j = json.loads(r.out)
    check(j["count"] == 2500 and j["tags"] == sorted(tags(2500)) and j["pages"] == 3, "all 2500 tags", j)
    seen = [q["path"] for q in requests_for(srv, repo)]
    check(seen[0].endswith("?n=5000") and seen[1].endswith("?n=1000") and len(seen) == 4,
          "400 for n=5000, then n=1000", seen)


@test
def retry_after_429(srv):
    repo = unique("r429")
    start = time.monotonic()
    r = tags_cmd(srv, repo)
    took = time.monotonic() - start
    check(r.rc == 0 and r.out == lines(tags(3)), "listed after the 429", r)
    check(took >= 0.95, "waited Retry-After: 1 (%.2fs)" % took)
    check(len(requests_for(srv, repo)) == 2, "one retry", requests_for(srv, repo))


@test
def server_error_once_then_success(srv):
    repo = unique("e500once")
    r = tags_cmd(srv, repo)
    check(r.rc == 0 and r.out == lines(tags(3)), "listed after one 500", r)
    check(len(requests_for(srv, repo)) == 2, "one retry", requests_for(srv, repo))


@test
def server_error_forever(srv):
    repo = unique("e500")
    r = tags_cmd(srv, repo)
    check(r.rc == 1 and r.out == "" and
          r.err == "imageguard: registry '%s/%s': 500 internal server error\n" % (srv.host, repo),
          "500 after the retries is an error", r)
    check(len(requests_for(srv, repo)) == 5, "1 try + 4 retries", requests_for(srv, repo))


@test
def timeouts(srv):
    for kind in ("slow", "stall-body"):
        repo = unique(kind)
        start = time.monotonic()
        r = tags_cmd(srv, repo, "--timeout", "1s")
        took = time.monotonic() - start
        check(r.rc == 1 and r.out == "" and "timed out" in r.err and
              r.err.startswith("imageguard: registry '%s/%s': " % (srv.host, repo)), kind, r)
        # Bounded by the tries, not by the clock: each try ends at --timeout and there are
        # exactly 1 + 4 of them (about 8 s in all). The clock bound only catches a hang.
        seen = requests_for(srv, repo)
        check(len(seen) == 5, "%s: 1 try + 4 retries, each cut at the timeout" % kind, seen)
        check(took < 120, "%s: no hang (%.1fs, bound 120 s)" % (kind, took))


@test
def broken_bodies_are_errors(srv):
    for kind, needle in (("truncated", "not valid JSON"), ("invalid", "not valid JSON"),
                         ("notags", 'no "tags" array'), ("short-body", "partial"),
                         ("selflink", "points to itself")):
        r = tags_cmd(srv, unique(kind))
        check(r.rc == 1 and r.out == "" and needle in r.err and r.err.count("\n") == 1,
              kind + ": an error, never a shorter list", r)


@test
def null_tags_is_empty(srv):
    r = tags_cmd(srv, unique("null"), "-o", "json")
    j = json.loads(r.out)
    check(r.rc == 0 and j["tags"] == [] and j["count"] == 0, "tags: null", r)
    check(j["sha256"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
          "sha256 of nothing", j)


@test
def duplicates_and_order(srv):
    r = tags_cmd(srv, unique("dups"))
    check(r.rc == 0 and r.out == "a\nb\nc\n", "deduplicated, sorted, invalid tag dropped", r)


@test
def cross_host_next_link_refused(srv):
    repo = unique("crosshost")
    r = tags_cmd(srv, repo)
    port = srv.port
    check(r.rc == 1 and r.out == "" and "refusing a next link to 'localhost:%d'" % port in r.err,
          "cross-host next link", r)
    check(not [q for q in srv.requests() if q["host"].startswith("localhost")
               and repo in q["path"]], "nothing sent to the other host")


@test
def size_caps(srv):
    r = tags_cmd(srv, unique("huge"), "--max-bytes", "1000000")
    check(r.rc == 1 and r.out == "" and "larger than 1000000 bytes" in r.err, "byte cap", r)
    r = tags_cmd(srv, unique("huge"), "-o", "json")
    check(r.rc == 0 and json.loads(r.out)["count"] == 60000, "under the default cap", r.rc, r.err)
    r = tags_cmd(srv, unique("clamp"), "--max-pages", "2")
    check(r.rc == 1 and r.out == "" and "more than 2 pages" in r.err, "page cap", r)


@test
def basic_auth_ecr_style(srv):
    repo = unique("basic-ecr")
    cfg = docker_config(srv.host, "AWS", "ecr-secret")
    r = tags_cmd(srv, repo, "--docker-config", cfg, "--log-level", "debug")
    check(r.rc == 0 and r.out == lines(tags(4)), "Basic with ECR's parameters", r)
    check("ecr-secret" not in r.err, "no secret in logs", r)
    r = tags_cmd(srv, unique("basic-ecr"))
    check(r.rc == 1 and "401" in r.err and "credentials required" in r.err, "no creds", r)


@test
def bearer_token_flow(srv):
    for kind in ("bearer", "bearer-access"):
        repo = unique(kind)
        cfg = docker_config(srv.host, "alice", SECRET)
        r = tags_cmd(srv, repo, "--docker-config", cfg)
        check(r.rc == 0 and r.out == lines(tags(5)), kind, r)
        reqs = srv.requests()
        mine = requests_for(srv, repo)
        check([q["headers"].get("authorization") for q in mine][-1].startswith("Bearer tok-"),
              kind + ": bearer sent to the registry", mine)
        check(not any(q["headers"].get("authorization", "").startswith("Basic") for q in mine),
              kind + ": the password never goes to the registry itself", mine)
        token_reqs = [q for q in reqs if q["path"].startswith("/_token?kind=%s&" % kind)]
        check(token_reqs and token_reqs[-1]["headers"].get("authorization", "").startswith("Basic "),
              kind + ": credentials sent to the realm", token_reqs)


@test
def no_authorization_across_redirect(srv):
    repo = unique("redirect")
    cfg = docker_config(srv.host, "alice", SECRET)
    r = tags_cmd(srv, repo, "--docker-config", cfg)
    check(r.rc == 0 and r.out == lines(tags(2)), "followed the redirect", r)
    name = repo.split("/", 1)[1]
    hops = [q for q in srv.requests() if name in q["path"]]
    first = [q for q in hops if q["host"].startswith("127.0.0.1")]
    other = [q for q in hops if q["host"].startswith("localhost")]
    check(first and first[-1]["headers"].get("authorization", "").startswith("Basic "),
          "credentials to the registry", hops)
    check(other and not any("authorization" in q["headers"] for q in other),
          "no Authorization to the other host", other)


@test
def proxy_mode_overrides_tag_list(srv):
    # A second fault server proxies to the first; an override replaces one repository's list.
    with faultserver.start(upstream=srv.url) as proxy:
        import urllib.request
        repo = unique("null")
        body = json.dumps(["v0.1.0", "v0.0.9"]).encode()
        req = urllib.request.Request("%s/_fault/%s/tags" % (proxy.url, repo), data=body,
                                     method="POST")
        urllib.request.urlopen(req).read()
        r = run("tags", "%s/%s" % (proxy.host, repo), "--insecure")
        check(r.rc == 0 and r.out == "v0.0.9\nv0.1.0\n", "override served", r)
        r = run("tags", "%s/%s" % (proxy.host, unique("dups")), "--insecure")
        check(r.rc == 0 and r.out == "a\nb\nc\n", "everything else forwarded", r)


def setup():
    return faultserver.start()


def teardown(srv):
    if srv:
        srv.stop()


if __name__ == "__main__":
    harness.main(setup, teardown)
