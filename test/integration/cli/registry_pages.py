#!/usr/bin/python3
"""Pagination against Debian's real docker-registry (2.8.2+ds1), not the python fixture.

What it really does, found by asking it (issue 14): for /v2/NAME/tags/list it ignores `n` and
`last` altogether (any value, also 0, -1 or garbage) and answers 200 with every tag in one
body, in storage order (not sorted), and no Link header. Only /v2/_catalog paginates. So the
real registry always gives imageguard one page, however many tags, and more tags than the
page size imageguard asks for (n=1000). Checked here: that observation itself (when a newer
registry starts paginating, this test says so and the paged path must be tested against it),
and that imageguard takes such an oversized single page whole: every tag, pages == 1, the
sha256 of the sorted list, and the newest tag even when it is past the first 1000 in the
registry's order."""
import hashlib
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
import harness  # noqa: E402
import registry  # noqa: E402
from harness import check, run, test  # noqa: E402

N = 1500  # more than the n=1000 imageguard asks for
TAGS = ["1.0.%d" % i for i in range(N)]


def setup():
    s = {}
    try:
        s["reg"] = registry.start_registry()
        registry.push_image(s["reg"].url, "team/many", TAGS, connections=8)
    except BaseException:
        teardown(s)
        raise
    return s


def teardown(s):
    for r in (s or {}).values():
        if isinstance(r, registry.Registry):
            r.stop()


def raw(s, query):
    url = s["reg"].url + "/v2/team/many/tags/list" + query
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.headers.get("Link"), json.load(resp)["tags"]


@test
def the_real_registry_ignores_n_and_last(s):
    for query in ("?n=2", "?n=2&last=1.0.5", "?last=1.0.5", "?n=0", "?n=1000"):
        status, link, tags = raw(s, query)
        check(status == 200 and link is None and len(tags) == N and sorted(tags) == sorted(TAGS),
              "%s: 200, all %d tags in one body, no Link header" % (query, N),
              status, link, len(tags))


@test
def imageguard_takes_the_oversized_page_whole(s):
    r = run("tags", s["reg"].host + "/team/many", "--insecure", "-o", "json")
    check(r.rc == 0, "exit 0", r)
    j = json.loads(r.out)
    want = sorted(TAGS)
    check(j["tags"] == want and j["count"] == N and j["pages"] == 1,
          "every tag, byte-wise sorted, count %d, one page" % N, j["count"], j["pages"])
    check(j["sha256"] == hashlib.sha256("\n".join(want).encode()).hexdigest(),
          "sha256 of the sorted list")


@test
def newest_tag_past_the_first_thousand(s):
    r = run("tags", s["reg"].host + "/team/many", "--insecure", "--semver", ">=1.0.0")
    lines = r.out.splitlines()
    check(r.rc == 0 and len(lines) == N and lines[0] == "1.0.%d" % (N - 1),
          "policy order: 1.0.%d first, all %d candidates" % (N - 1, N), r.rc, lines[:3])


if __name__ == "__main__":
    harness.main(setup, teardown)
