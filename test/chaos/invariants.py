#!/usr/bin/python3
"""The chaos suite's invariant checker (issue 17), a reusable module: given bare Git remotes, the
order of each policy and the audit logs of every replica, it reports every breach of

  marker-forward       along the first-parent history of the branch, every step of a marked
                       value is forward under its policy's order, or the commit that makes it
                       carries `Imageguard-Decision: rollback/override` for that policy (an
                       annotated rollback, CONTRACT §7-§8)
  audit-in-history     every commit an audit log reports (its `commit` field) is in the final
                       history of some remote
  reflog-fast-forward  the remote's reflog of the branch (core.logAllRefUpdates=always, set
                       when the remote is created) shows only fast-forwards; a missing reflog
                       is itself a breach, so the check cannot pass vacuously
  lease-generation     no commit carrying `Imageguard-Lease: L/T` lands on a first-parent
                       history in which an earlier commit carries `L/T'` with T' > T (the
                       same lease at a higher generation); different leases are not compared

Python use:
    import invariants
    orders = {"default:app": invariants.semver_key}
    report = invariants.check(["/r/0.git", ...], "main", orders, ["/x/audit-0.log", ...])
    for name in invariants.NAMES: report[name]  # [str, ...] one line per breach
"""
import json
import os
import re
import subprocess

NAMES = ("marker-forward", "audit-in-history", "reflog-fast-forward", "lease-generation")
MARKER = re.compile(r'(\S+)\s*#\s*\{"\$imagepolicy":\s*"([^"]+)"\}')
TRAILER = re.compile(r"^(Imageguard-[A-Za-z0-9-]+):\s*(.*?)\s*$")
ZERO = "0" * 40


def semver_key(tag):
    """(major, minor, patch) of a plain semver tag, optional leading v; None otherwise."""
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)$", tag)
    return tuple(int(x) for x in m.groups()) if m else None


def num_key(tag):
    return int(tag) if re.match(r"^\d+$", tag) else None


def _git(gitdir, *args, stdin=None):
    r = subprocess.run(["git", "--git-dir", gitdir] + list(args), input=stdin,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("git %s in %s: %s" % (" ".join(args), gitdir, r.stderr.strip()))
    return r.stdout


def tag_of(value):
    """The tag of a marked image reference (name:tag, name:tag@digest); '' when none."""
    value = value.split("@", 1)[0]
    slash = value.rfind("/")
    colon = value.rfind(":")
    return value[colon + 1:] if colon > slash else ""


def markers_of(text):
    """{(policy, n): tag} for the n-th marker of each policy in a file's text."""
    out, seen = {}, {}
    for line in text.splitlines():
        m = MARKER.search(line)
        if not m:
            continue
        policy = m.group(2).split(":")
        policy = ":".join(policy[:2])  # "ns:name" of "ns:name:tag" setters
        n = seen.get(policy, 0)
        seen[policy] = n + 1
        out[(policy, n)] = tag_of(m.group(1))
    return out


def trailers_of(message):
    """[(key, value)] of the Imageguard-* trailers of a commit message, in order."""
    out = []
    for line in message.splitlines():
        m = TRAILER.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def rollback_policies(trailers):
    """Policies ("ns:name") whose trailer set in this message says rollback/override."""
    out, policy = set(), None
    for key, value in trailers:
        if key == "Imageguard-Policy":
            policy = value.replace("/", ":", 1)
        elif key == "Imageguard-Decision" and value == "rollback/override" and policy:
            out.add(policy)
    return out


def lease_of(trailers):
    """(lease, transitions) of an Imageguard-Lease trailer, or None."""
    for key, value in trailers:
        if key == "Imageguard-Lease":
            lease, _, gen = value.rpartition("/")
            if lease and gen.isdigit():
                return lease, int(gen)
            return value, -1  # malformed: reported by the caller
    return None


def first_parent_log(gitdir, branch):
    """[(sha, message)] oldest first along the first parent."""
    out = _git(gitdir, "log", "--first-parent", "--reverse", "--format=%H%x00%B%x01", branch)
    return [tuple(e.lstrip("\n").split("\0", 1)) for e in out.split("\x01") if e.strip()]


def yaml_paths(gitdir, branch):
    """Every .yaml/.yml path that any commit of the branch touched."""
    out = _git(gitdir, "log", "--format=", "--name-only", branch)
    return sorted({p for p in out.splitlines() if p.endswith((".yaml", ".yml"))})


def blobs(gitdir, specs):
    """{spec: text or None} for "sha:path" specs, through one `git cat-file --batch`."""
    p = subprocess.Popen(["git", "--git-dir", gitdir, "cat-file", "--batch"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    data, _ = p.communicate("".join(s + "\n" for s in specs).encode())
    out, pos = {}, 0
    for spec in specs:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].decode()
        pos = nl + 1
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            out[spec] = None
            continue
        size = int(header.rsplit(" ", 1)[1])
        out[spec] = data[pos:pos + size].decode("utf-8", "replace")
        pos += size + 1
    return out


def check_markers(name, gitdir, branch, log, orders):
    """marker-forward breaches along one remote's first-parent log."""
    bad = []
    paths = yaml_paths(gitdir, branch)
    texts = blobs(gitdir, ["%s:%s" % (sha, p) for sha, _ in log for p in paths])
    prev = {}
    for sha, message in log:
        cur = {}
        for p in paths:
            text = texts.get("%s:%s" % (sha, p))
            for (policy, n), tag in markers_of(text or "").items():
                cur[(p, policy, n)] = tag
        rolled = rollback_policies(trailers_of(message))
        for key, tag in sorted(cur.items()):
            old = prev.get(key)
            if old is None or old == tag:
                continue
            order = orders.get(key[1])
            if order is None:
                continue
            a, b = order(old), order(tag)
            if a is not None and b is not None and b > a:
                continue
            if key[1] in rolled:
                continue
            bad.append("%s %s: %s %s[%d] %s -> %s is not forward and not an annotated rollback"
                       % (name, sha[:12], key[0], key[1], key[2], old, tag))
        prev = cur
    return bad


def check_leases(name, log):
    """lease-generation breaches along one remote's first-parent log."""
    bad, highest = [], {}
    for sha, message in log:
        got = lease_of(trailers_of(message))
        if got is None:
            continue
        lease, gen = got
        if gen < 0:
            bad.append("%s %s: malformed Imageguard-Lease trailer %r" % (name, sha[:12], lease))
            continue
        top = highest.get(lease)
        if top is not None and top[0] > gen:
            bad.append("%s %s: written under %s/%d on a head already written under %s/%d (%s)"
                       % (name, sha[:12], lease, gen, lease, top[0], top[1][:12]))
        if top is None or gen > top[0]:
            highest[lease] = (gen, sha)
    return bad


def check_reflog(name, gitdir, branch):
    """reflog-fast-forward breaches of one remote's branch."""
    path = os.path.join(gitdir, "logs", "refs", "heads", branch)
    if not os.path.exists(path):
        return ["%s: no reflog for %s (core.logAllRefUpdates=always not set?)" % (name, branch)]
    bad = []
    with open(path) as f:
        entries = [line.split(" ", 2)[:2] for line in f if line.strip()]
    for old, new in entries:
        if old == ZERO or new == ZERO or old == new:
            continue
        r = subprocess.run(["git", "--git-dir", gitdir, "merge-base", "--is-ancestor", old, new],
                           capture_output=True)
        if r.returncode != 0:
            bad.append("%s: reflog %s -> %s is not a fast-forward" % (name, old[:12], new[:12]))
    if not entries:
        bad.append("%s: empty reflog for %s" % (name, branch))
    return bad


def audit_commits(paths):
    """{sha: "file:line"} of every commit that the audit logs report."""
    out = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            for i, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                sha = rec.get("commit") if isinstance(rec, dict) else None
                if sha:
                    out.setdefault(sha, "%s:%d" % (os.path.basename(path), i))
    return out


def check(remotes, branch, orders, audit_paths):
    """{invariant name: [breach, ...]} over every remote; also report["stats"]."""
    report = {n: [] for n in NAMES}
    history, commits, leased = set(), 0, 0
    for gitdir in remotes:
        name = os.path.basename(gitdir.rstrip("/"))
        log = first_parent_log(gitdir, branch)
        commits += len(log)
        leased += sum(1 for _, m in log if lease_of(trailers_of(m)))
        report["marker-forward"] += check_markers(name, gitdir, branch, log, orders)
        report["lease-generation"] += check_leases(name, log)
        report["reflog-fast-forward"] += check_reflog(name, gitdir, branch)
        history.update(_git(gitdir, "rev-list", branch).split())
    audited = audit_commits(audit_paths)
    for sha, where in sorted(audited.items()):
        if sha not in history:
            report["audit-in-history"].append("%s: pushed commit %s is in no final history"
                                              % (where, sha[:12]))
    report["stats"] = {"remotes": len(remotes), "commits": commits, "leased": leased,
                       "audited": len(audited)}
    return report
