#!/usr/bin/python3
"""The body of bench/tags_scale.sh: `imageguard tags` against curl (the floor) on one
repository each of 10,000, 100,000 and 1,000,000 tags on a real docker-registry. The tags are laid out
in the registry's filesystem storage (one image pushed through the API, then a link per tag),
which takes a second instead of the minutes 100,000 tag PUTs take. Wall time comes from
BENCH_RUNS rounds (default 30) of imageguard and the two curls interleaved (bench/interleave.py:
each round runs each once, the order reversed every other round); the target is judged on the
median of the per-round ratios imageguard / curl, which a burst of load from another process
moves far less than it moves the ratio of two medians taken one after the other. Peak RSS is
/usr/bin/time's, the median of 5. Targets (issue 17): 10k tags within 1.2x curl, 100k tags
within 1.5x curl, and the 100k peak RSS at most twice the listing plus the process's floor (a
3-tag listing); issue 38 adds 1,000,000 tags with the same two targets. The benchmark fails when a tool fails or imageguard's tags differ from curl's."""
import json
import os
import statistics
import subprocess
import sys
import re
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.environ["IMAGEGUARD_SRC"], "test", "fixtures"))
sys.path.insert(0, os.path.join(os.environ["IMAGEGUARD_SRC"], "bench"))
import registry  # noqa: E402
import interleave  # noqa: E402

IG = os.environ.get("IMAGEGUARD") or os.path.join(os.environ["IMAGEGUARD_SRC"], "build",
                                                  "imageguard")
RUNS = int(os.environ.get("BENCH_RUNS", "30"))
SIZES = [(int(n), float(t)) for n, t in
         (x.split(":") for x in os.environ.get("BENCH_TAG_SIZES", "10000:1.2,100000:1.5,1000000:1.5").split(","))]


def layout(reg, name, n, digest):
    """Repository `name` with tags t000000.. as links to the manifest pushed to bench/base."""
    root = os.path.join(reg.dir, "data", "docker", "registry", "v2", "repositories", "bench")
    base = os.path.join(root, "base")
    repo = os.path.join(root, name)
    os.makedirs(os.path.join(repo, "_manifests", "tags"))
    os.symlink(os.path.join(base, "_layers"), os.path.join(repo, "_layers"))
    os.symlink(os.path.join(base, "_manifests", "revisions"),
               os.path.join(repo, "_manifests", "revisions"))
    first = os.path.join(base, "_manifests", "tags", "seed")
    for i in range(n):
        os.symlink(first, os.path.join(repo, "_manifests", "tags", "t%06d" % i))


def page_urls(base, first):
    """The URLs of every page as a client following Link headers requests them."""
    urls, url = [], first
    while url:
        urls.append(url)
        with urllib.request.urlopen(url) as r:
            link = r.headers.get("Link") or ""
        m = re.match(r'\s*<([^>]+)>\s*;\s*rel="?next"?', link)
        url = urllib.parse.urljoin(base, m.group(1)) if m else None
    return urls


def rss_kib(argv):
    peaks = []
    for _ in range(5):
        r = subprocess.run(["/usr/bin/time", "-f", "%M", "--"] + argv, capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s" % (argv, r.stderr[-500:]))
        peaks.append(int(r.stderr.strip().splitlines()[-1]))
    return statistics.median(peaks)


def verdict(ok):
    return "met" if ok else "MISSED"


def main():
    d = tempfile.mkdtemp(prefix="imageguard-bench-tags.")
    reg = registry.start_registry(os.path.join(d, "registry"))
    try:
        digest = registry.push_image(reg.url, "bench/base", ["seed"])
        layout(reg, "small", 3, digest)
        floor = rss_kib([IG, "tags", reg.host + "/bench/small", "--insecure"])
        print("floor (3 tags): peak RSS %.1f MiB" % (floor / 1024.0))
        for n, target in SIZES:
            name = "t%d" % n
            layout(reg, name, n, digest)
            url = "%s/v2/bench/%s/tags/list?n=%d" % (reg.url, name, n)
            ig = [IG, "tags", "%s/bench/%s" % (reg.host, name), "--insecure"]
            # the floor: the same pages imageguard fetches (its default n=1000 and the Link
            # headers), one curl over one keep-alive connection; and the one-request listing
            pages = page_urls(reg.url, "%s/v2/bench/%s/tags/list?n=1000" % (reg.url, name))
            curl_pages = ["curl", "-sSf"] + sum((["-o", "/dev/null", u] for u in pages), [])
            curl = ["curl", "-sSf", url]
            got = subprocess.run(ig, capture_output=True, text=True, check=True).stdout.split()
            body = subprocess.run(curl, capture_output=True, check=True).stdout
            want = sorted(json.loads(body)["tags"])
            if got != want or len(got) != n:
                raise RuntimeError("%d tags: imageguard listed %d, curl %d, %d differ"
                                   % (n, len(got), len(want), len(set(got) ^ set(want))))
            got = interleave.run([("imageguard", ig), ("curl-pages", curl_pages),
                                  ("curl", curl)], RUNS, ref="curl-pages", thresholds=(target,))
            res, ratio = got["results"], got["ratios"]["imageguard"]
            igm, cpm, cum = (res[k]["median"] for k in ("imageguard", "curl-pages", "curl"))
            one = [a / b for a, b in zip(res["imageguard"]["wall"], res["curl"]["wall"])]
            rss = rss_kib(ig)
            print("%6d tags (%.1f MiB listing, %d pages of 1000), %d interleaved rounds: "
                  "imageguard median %.1f ms (user %.1f ms, sys %.1f ms); curl, the same pages: "
                  "%.1f ms (user %.1f ms, sys %.1f ms); curl, one request: %.1f ms; imageguard "
                  "peak RSS %.1f MiB"
                  % (n, len(body) / 1048576.0, len(pages), RUNS, igm * 1000,
                     res["imageguard"]["user"] * 1000, res["imageguard"]["sys"] * 1000,
                     cpm * 1000, res["curl-pages"]["user"] * 1000,
                     res["curl-pages"]["sys"] * 1000, cum * 1000, rss / 1024.0))
            print("%6d tags: imageguard / curl (the same pages), per round: median %.2fx "
                  "(quartiles %.2f-%.2fx, %.0f%% of rounds within %.1fx; target <= %.1fx: %s); "
                  "ratio of the medians %.2fx; against curl's one request: per-round median "
                  "%.2fx" % (n, ratio["median"], ratio["q1"], ratio["q3"],
                             100 * ratio["within"]["%g" % target], target, target,
                             verdict(ratio["median"] <= target), igm / cpm,
                             statistics.median(one)))
            if n >= 100000:
                above = (rss - floor) * 1024.0 / len(body)
                print("%6d tags: peak RSS above the floor %.2fx the listing (target <= 2x: %s); "
                      "the whole process %.2fx (the floor, %.1f MiB, is libcurl and its TLS "
                      "libraries, paid once)"
                      % (n, above, verdict(above <= 2), rss * 1024.0 / len(body), floor / 1024.0))
    finally:
        reg.stop()
        subprocess.run(["rm", "-rf", d])


main()
