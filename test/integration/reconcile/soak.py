#!/usr/bin/python3
"""A seeded, bounded soak of the invariants: SOAK_PASSES (default 100) reconcile passes against
the real registry behind the fault proxy. Five policies:
  a  numerical over `release-<sha>-<ts>` (two files);
  b  semver >=1.0.0, tags x.y.z, sometimes also (or only) spelled vx.y.z;
  c  Flux's digest pattern: filter `^latest$`, alphabetical, digestReflectionPolicy: Always;
  d  imageguard's policy.digest.tag `stable` (whole-image and `:digest` markers);
  e  a date-like semver >=2025.1.1 over `2025.7.3` tags listed beside their zero-padded
     spelling `2025.07.03`, which is never a candidate.
Each pass draws new tags, builds that re-point `latest`/`stable` at newer builds, older builds,
builds without `created` or with the epoch, and back at earlier builds; stale, partial, empty,
phantom (listed, no manifest) and unreachable listings; other writers committing pushed tags,
looser spellings (`v2`, `2.1`, `v1.3.0`, `01.02.03`, `2025.7`) ahead of or behind the pick, and
old digests; annotated rollbacks coming and going; and ImageRepository renames of b and c to a
lagging mirror (`mirror/b`, `mirror/c`: byte-for-byte copies) and back.

Afterwards the checker walks every first-parent commit on main and fails on any imageguard
commit that
  - moves a value backward: under the policy's order; under a person's reading of a looser
    spelling (numbers compared part by part, missing parts zero); for digest-tracked markers,
    to a build whose `created` is older than the replaced one's, or, when `created` cannot order
    them (missing, epoch, equal), to a digest the marker's policy held in that file before and a
    later commit replaced -- except annotated rollbacks to the rollback-to value in force;
  - only respells a version (`1.3.0` -> `v1.3.0`, same name and digest);
  - writes a name other than the policy's ImageRepository image of that pass, or a name:tag
    not pushed to that repository by that pass, or a digest the tag did not point at then (a
    rollback's digest: not pushed there by then);
and then runs three quiet passes: the last two must not commit (no commit loop).
SOAK_SEED (default 20261201) makes a failing run reproducible; the seed is printed."""
import datetime
import json
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, git, serve_tags  # noqa: E402
import faultserver  # noqa: E402

t = Checks()
SEED = int(os.environ.get("SOAK_SEED", "20261201"))
DEFAULT_PASSES = 100
PASSES = int(os.environ.get("SOAK_PASSES", str(DEFAULT_PASSES)))
rnd = random.Random(SEED)
print("# seed %d, %d passes (SOAK_SEED=%d SOAK_PASSES=%d to repeat)" % (SEED, PASSES, SEED, PASSES))
MARK = re.compile(r'(\w+): (\S+) # \{"\$imagepolicy": "default:(\w+)(?::(tag|digest|name))?"\}')
PATTERN = r"^release-(?P<sha>[0-9a-f]+)-(?P<ts>[0-9]+)$"
FILES = ["staging/a.yaml", "prod/a.yaml", "b.yaml", "c.yaml", "d.yaml", "e.yaml"]
PRIMARY = {p: "team/" + p for p in "abcde"}
MIRROR = {"b": "mirror/b", "c": "mirror/c"}
TRACKED = {"c": "latest", "d": "stable"}
EPOCH = "1970-01-01T00:00:00Z"
REASON = "soak "


# --- readings of values ---

def split_ref(value):
    """name, tag, digest of a whole-image value (tag, digest None when absent)."""
    digest = None
    if "@" in value:
        value, digest = value.split("@", 1)
    slash, colon = value.rfind("/"), value.rfind(":")
    if colon > slash:
        return value[:colon], value[colon + 1:], digest
    return value, None, digest


def ts_key(tag):
    m = re.match(r"^release-[0-9a-f]+-([0-9]+)$", tag or "")
    return int(m.group(1)) if m else None


def strict_key(tag):
    """The policy's reading (CONTRACT §6: StrictNewVersion after an optional `v`: three
    numbers, none zero-padded)."""
    m = re.match(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$", tag or "")
    return tuple(int(x) for x in m.groups()) if m else None


def loose_key(tag):
    """A person's reading: `v` dropped, parts compared as numbers, missing parts zero."""
    m = re.match(r"^[vV]?(\d+(?:\.\d+)*)$", tag or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def loose_cmp(a, b):
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def created_time(created):
    """A build time that can order builds, or None (missing, epoch, unparseable)."""
    if not created or created == EPOCH:
        return None
    return datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ")


def iso(secs):
    return datetime.datetime.fromtimestamp(secs, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def spell_version(v):
    """A looser (or other) spelling of version v = (x, y, z) a person might commit."""
    x, y, z = v
    return rnd.choice(["%d.%d.%d" % v, "v%d.%d.%d" % v, "%02d.%02d.%02d" % v, "v%d" % x,
                       "%d.%d" % (x, y), "v%d.%d" % (x, y), "%d.%d.%d.1" % v, "%d" % x])


def spell_date(v):
    y, m, d = v
    return rnd.choice(["%d.%02d.%02d" % v, "%d.%d.%d" % v, "v%d.%02d.%02d" % v, "%d.%02d" % (y, m),
                       "%d.%d" % (y, m), "v%d" % y, "%d.%02d.%02d.1" % v])


# --- files ---

def markers(text):
    """[(key, value, policy, part)] in file order."""
    return [(k, v, p, part or "image") for k, v, p, part in MARK.findall(text)]


def container(value, policy, extra=""):
    return ("spec:\n  containers:\n    - name: x\n"
            "      image: %s # {\"$imagepolicy\": \"default:%s\"}\n" % (value, policy)) + extra


def file_for(f, ref, tag=None, digest=None):
    """The content of file f whose markers hold ref (whole image), tag and digest."""
    policy = f.split("/")[-1][0]
    extra = ""
    if policy in "be":
        extra = "      tag: %s # {\"$imagepolicy\": \"default:%s:tag\"}\n" % (tag, policy)
    if policy == "d":
        extra = "      digest: %s # {\"$imagepolicy\": \"default:d:digest\"}\n" % digest
    return container(ref, policy, extra)


class World:
    def __init__(self, env):
        self.env = env
        self.fault = env.fault()
        self.port = self.fault.port
        self.host = self.fault.host
        self.ts = 1764000000
        self.clock = 1767225600           # build times of c and d
        self.ver = [1, 0, 0]
        self.day = datetime.date(2025, 1, 1)
        self.reg = {}                     # path -> {tag: digest} as the registry has it now
        self.order = {}                   # path -> tags in the order first pushed
        self.digests = {}                 # path -> every digest pushed there
        self.created = {}                 # digest -> created (None: no field)
        self.builds = {"c": [], "d": []}  # (build id, created, digest) of the tracked tag
        self.image = dict(PRIMARY)        # policy -> its ImageRepository's spec.image path
        self.rollback = {}                # policy -> value while an override is configured
        self.passes = []                  # per pass: (reg, image, rollback) snapshots
        self.stats = {}
        self.reconcile_time = 0.0

    def count(self, what):
        self.stats[what] = self.stats.get(what, 0) + 1

    # registry

    def record(self, path, tag, digest):
        tags = self.reg.setdefault(path, {})
        if tag not in tags:
            self.order.setdefault(path, []).append(tag)
        tags[tag] = digest
        self.digests.setdefault(path, set()).add(digest)

    def push(self, path, tags, created):
        digest = self.env.push(path, tags, created=created)
        self.created[digest] = created
        for tag in tags:
            self.record(path, tag, digest)
        return digest

    def mirror(self, p, tag):
        src = self.reg.get(PRIMARY[p], {})
        if tag in src and self.reg.get(MIRROR[p], {}).get(tag) != src[tag]:
            self.record(MIRROR[p], tag, self.env.copy(PRIMARY[p], MIRROR[p], tag))

    def sync_mirrors(self, everything=False, skip=()):
        """The mirrors lag: each pass copies a few of what they miss (or everything)."""
        for p in MIRROR:
            if p in skip:
                continue
            src, dst = self.reg.get(PRIMARY[p], {}), self.reg.get(MIRROR[p], {})
            missing = [tag for tag in self.order.get(PRIMARY[p], []) if dst.get(tag) != src[tag]]
            if not everything and missing:
                missing = rnd.sample(missing, rnd.randint(0, min(3, len(missing))))
            if not everything and p == "c":  # c's mirror mostly copies `latest` alone
                missing = [tag for tag in missing if tag == "latest" or rnd.random() < 0.2]
            for tag in missing:
                self.mirror(p, tag)

    def new_tag(self, p):
        path = PRIMARY[p]
        created = "2026-01-01T00:00:%02dZ" % rnd.randint(0, 59)
        if p == "a":
            self.ts += rnd.randint(1, 5000)
            self.push(path, ["release-%06x-%d" % (rnd.getrandbits(24), self.ts)], created)
        elif p == "b":
            i = rnd.choice([0, 1, 2, 2, 2])
            self.ver[i] += 1
            for j in range(i + 1, 3):
                self.ver[j] = 0
            tag = "%d.%d.%d" % tuple(self.ver)
            r = rnd.random()  # both spellings of one version listed, or only the `v` one
            self.push(path, [tag, "v" + tag] if r < 0.25 else ["v" + tag] if r < 0.35 else [tag],
                      created)
        elif p == "e":
            self.day += datetime.timedelta(days=rnd.randint(1, 40))
            day = (self.day.year, self.day.month, self.day.day)
            # the zero-padded spelling is no candidate (CONTRACT §6); the plain one is
            self.push(path, sorted({"%d.%02d.%02d" % day, "%d.%d.%d" % day}), created)
        else:
            self.new_build(p)

    def new_build(self, p):
        """Re-points the tracked tag: at a newer build, an older one, one without `created`,
        one with the epoch, or back at an earlier build."""
        kind = rnd.choice(["newer"] * 4 + ["older", "missing", "epoch", "back", "back"])
        self.count("build-" + kind)
        if kind == "back" and len(self.builds[p]) > 1:
            k, created, _ = rnd.choice(self.builds[p][-5:-1])
        else:
            if kind == "newer" or not self.builds[p]:
                self.clock += rnd.randint(1, 10000)
                created = iso(self.clock)
            elif kind == "older":
                created = iso(self.clock - rnd.randint(1, 50000))
            else:
                created = None if kind == "missing" else EPOCH
            k = len(self.builds[p])
        digest = self.push(PRIMARY[p], ["build-%s-%d" % (p, k), TRACKED[p]], created)
        if kind != "back" or len(self.builds[p]) <= 1:
            self.builds[p].append((k, created, digest))

    # configuration

    def configure(self):
        e, h = self.env, self.host
        repos = "".join(e.repository(p, self.image[p], host=h) for p in "abcde")
        pols = (e.policy("a", "a", numerical="asc", pattern=PATTERN, extract="$ts",
                         annotations=self.annotations("a"))
                + e.policy("b", "b", semver=">=1.0.0", annotations=self.annotations("b"))
                + e.policy("c", "c", alphabetical="asc", pattern="^latest$", reflect="Always")
                + self.digest_policy()
                + e.policy("e", "e", semver=">=2025.1.1", annotations=self.annotations("e")))
        e.config(repos + pols + e.automation())

    def digest_policy(self):
        meta = "metadata:\n  name: d\n  namespace: default\n"
        ann = self.annotations("d")
        if ann:
            meta += "  annotations:\n" + "".join(
                "    %s: %s\n" % (k, json.dumps(v)) for k, v in ann.items())
        return ("---\napiVersion: imageguard.io/v1alpha1\nkind: ImagePolicy\n" + meta +
                "spec:\n  imageRepositoryRef:\n    name: d\n  policy:\n    digest:\n"
                "      tag: stable\n")

    def annotations(self, p):
        value = self.rollback.get(p)
        if not value:
            return None
        return {"imageguard.io/rollback-to": value, "imageguard.io/rollback-reason": REASON + value}

    def toggle_rollback(self):
        p = rnd.choice("abde")
        if p in self.rollback:
            del self.rollback[p]
        elif p == "d":
            self.rollback[p] = rnd.choice(self.builds["d"])[2]
        else:
            self.rollback[p] = rnd.choice(self.order[PRIMARY[p]])
        self.count("rollback-toggle")

    def toggle_image(self):
        p = rnd.choice(sorted(MIRROR))
        self.image[p] = MIRROR[p] if self.image[p] == PRIMARY[p] else PRIMARY[p]
        self.count("rename")

    # listings

    def listing(self, p):
        path = self.image[p]
        tags = list(self.order.get(path, []))
        mode = rnd.random()
        if mode < 0.5 or len(tags) < 2:
            serve_tags(self.fault, path, None)
        elif mode < 0.65:   # stale: an old prefix of history
            serve_tags(self.fault, path, tags[:rnd.randint(1, len(tags) - 1)])
        elif mode < 0.78:   # partial: a random subset, in random order
            serve_tags(self.fault, path, rnd.sample(tags, rnd.randint(1, len(tags))))
        elif mode < 0.85:
            serve_tags(self.fault, path, [])
        else:               # phantom: listed without a manifest (a mirror lists its source's)
            phantom = {"a": "release-dead00-%d" % (self.ts + 10 ** 6),
                       "b": "%d.0.0" % (self.ver[0] + 50), "c": "latest", "d": "stable",
                       "e": "2099.01.01"}[p]
            listed = self.order.get(PRIMARY[p], []) if path != PRIMARY[p] else tags
            serve_tags(self.fault, path, sorted(set(listed + [phantom])))

    # other writers

    def other_writer(self):
        """Someone else commits a value (any direction: people may), a looser spelling of a
        version, or an old digest."""
        f = rnd.choices(FILES, weights=[1, 1, 3, 1.5, 1.5, 2])[0]
        p = f.split("/")[-1][0]
        path = rnd.choice([PRIMARY[p], self.image[p]])
        name = "%s/%s" % (self.host, path)
        if p == "a":
            content = file_for(f, "%s:%s" % (name, rnd.choice(self.order[PRIMARY[p]])))
        elif p in "be" and rnd.random() < 0.4:
            content = file_for(f, *self.respelling(f))
        elif p in "be":
            content = file_for(f, *self.spelling(p, name))
        else:
            digest = rnd.choice(self.builds[p])[2]
            if path != PRIMARY[p] or rnd.random() < 0.1:
                digest = None if rnd.random() < 0.5 else self.reg.get(path, {}).get(TRACKED[p])
            ref = "%s:%s" % (name, TRACKED[p]) + ("@" + digest if digest else "")
            if p == "d" and not digest:
                digest = self.builds[p][-1][2]
            content = file_for(f, ref, digest=digest)
            self.count("human-digest")
        self.env.seed({f: content}, message="human edit")

    def respelling(self, f):
        """The committed version spelled another way (`1.3.0` as `v1.3.0` or `01.03.00`, and
        back): what a person's respelling or another tool's commit looks like."""
        _, value, _, _ = markers(self.env.remote_file(f))[0]
        name, tag, _ = split_ref(value)
        v = strict_key(tag) or loose_key(tag) + (0, 0)
        x, y, z = v[:3]
        spellings = ["%d.%d.%d" % (x, y, z), "v%d.%d.%d" % (x, y, z), "%02d.%02d.%02d" % (x, y, z)]
        tag = rnd.choice([sp for sp in spellings if sp != tag])
        self.count("human-respelling")
        return "%s:%s" % (name, tag), tag

    def spelling(self, p, name):
        """A spelling of a pushed version, of the newest one (the pick, unless listings lag),
        or of one ahead of every push."""
        versions = [k for k in map(strict_key, self.order[PRIMARY[p]]) if k is not None]
        if p == "b":
            ahead = (self.ver[0] + rnd.randint(0, 1), self.ver[1] + rnd.randint(0, 2), 0)
        else:
            ahead = (self.day.year, self.day.month, min(28, self.day.day + rnd.randint(1, 20)))
        v = rnd.choices([rnd.choice(versions), max(versions), ahead], weights=[2, 2, 1])[0]
        tag = spell_version(v) if p == "b" else spell_date(v)
        if strict_key(tag) != tuple(v) or not tag[0].isdigit():
            self.count("human-loose")
        else:
            self.count("human-exact")
        return "%s:%s" % (name, tag), tag

    # scripted: what the draws might miss, at fixed passes (no draws, so seeds stay as they were)

    def scripted(self, n):
        """At a third of the run, a person commits a looser spelling ahead of every push to b
        and e; at a half, c moves to a newer build its mirror lacks (the mirror's `latest` is an
        older build the marker never held), and the pass after renames c to the mirror."""
        k, h = PASSES // 2, self.host
        if n == PASSES // 3:
            tag = "v%d" % (self.ver[0] + 1)
            self.env.seed({"b.yaml": file_for("b.yaml", "%s/%s:%s" % (h, self.image["b"], tag),
                                              tag)}, message="human edit: ahead, loosely")
            tag = "%d.%d" % (self.day.year + 1, self.day.month)
            self.env.seed({"e.yaml": file_for("e.yaml", "%s/team/e:%s" % (h, tag), tag)},
                          message="human edit: ahead, loosely")
            self.count("scripted")
        elif n == k and self.reg.get(MIRROR["c"], {}).get("latest"):
            if self.image["c"] != PRIMARY["c"]:
                self.image["c"] = PRIMARY["c"]
                self.configure()
            for step in range(2):  # the mirror copies the first build, the marker gets the second
                self.clock += 1000
                k_new = len(self.builds["c"])
                digest = self.push(PRIMARY["c"], ["build-c-%d" % k_new, "latest"],
                                   iso(self.clock))
                self.builds["c"].append((k_new, iso(self.clock), digest))
                if step == 0:
                    self.mirror("c", "latest")
            serve_tags(self.fault, PRIMARY["c"], None)
            self.count("scripted")
        elif n == k + 1 and self.reg.get(MIRROR["c"], {}).get("latest"):
            self.image["c"] = MIRROR["c"]
            self.configure()
            serve_tags(self.fault, MIRROR["c"], None)
            self.count("scripted")

    # faults

    def down(self):
        self.fault.stop()

    def up(self):
        self.fault = faultserver.start(upstream=self.env.reg.url, port=self.port)
        self.env._faults[0] = self.fault

    def snapshot(self):
        self.passes.append(({path: dict(tags) for path, tags in self.reg.items()},
                            dict(self.image), dict(self.rollback),
                            {path: set(d) for path, d in self.digests.items()}))


# --- the checker ---

class History:
    """The first-parent history of main with the pass each imageguard commit was made in."""

    def __init__(self, env, pass_of):
        out = git("--git-dir", env.remote, "log", "--reverse", "--first-parent",
                  "--format=%H%x00%an%x00%B%x01", "main")
        self.commits = [e.strip("\n").split("\0") for e in out.split("\x01") if e.strip()]
        self.env, self.pass_of = env, pass_of

    def files(self, sha):
        out = {}
        for f in FILES:
            out[f] = markers(git("--git-dir", self.env.remote, "show", "%s:%s" % (sha, f),
                                 check=False))
        return out


class Checker:
    def __init__(self, world, history):
        self.w, self.h = world, history
        self.failures = {"backward": [], "respell": [], "unpushed": [], "shape": []}
        self.moves = {}

    def fail(self, kind, sha, f, what):
        self.failures[kind].append("%s %s: %s" % (sha[:8], f, what))

    def move(self, what):
        self.moves[what] = self.moves.get(what, 0) + 1

    def run(self):
        seen = {}          # (file, policy) -> digests held by its markers in any commit so far
        prev = None
        for i, (sha, author, message) in enumerate(self.h.commits):
            cur = self.h.files(sha)
            if prev is not None and author == "imageguard":
                n = self.h.pass_of.get(sha)
                if n is None:
                    self.fail("shape", sha, "-", "an imageguard commit outside any pass")
                else:
                    for f in FILES:
                        self.commit_file(sha, message, self.w.passes[n], f, prev[f], cur[f],
                                         seen)
            for f in FILES:
                for _, value, p, part in cur[f]:
                    d = {"digest": value, "image": split_ref(value)[2]}.get(part)
                    if d:
                        seen.setdefault((f, p), set()).add(d)
            prev = cur

    def commit_file(self, sha, message, state, f, before, after, seen):
        if [(k, p, part) for k, _, p, part in before] != [(k, p, part) for k, _, p, part in after]:
            self.fail("shape", sha, f, "the markers changed shape: %s -> %s" % (before, after))
            return
        held_at_parent = {d for _, v, _, part in before
                          for d in [v if part == "digest" else split_ref(v)[2]] if d}
        for (_, old, p, part), (_, new, _, _) in zip(before, after):
            if old != new:
                self.change(sha, message, state, f, p, part, old, new,
                            seen.get((f, p), set()) - held_at_parent)

    def change(self, sha, message, state, f, p, part, old, new, replaced):
        reg, image, rollback, digests = state
        path = image[p]
        tags = reg.get(path, {})
        rb = rollback.get(p)
        if part == "image":
            (oname, otag, odig), (name, tag, dig) = split_ref(old), split_ref(new)
        elif part == "tag":
            (oname, otag, odig), (name, tag, dig) = (None, old, None), (None, new, None)
        else:
            (oname, otag, odig), (name, tag, dig) = (None, None, old), (None, None, new)
        what = "%s -> %s (pass %s)" % (old, new, self.h.pass_of.get(sha))
        # invariant 2: exactly what was pushed to the policy's repository of that pass
        ref_tag = tag if tag is not None else TRACKED.get(p)
        if name is not None and name != "%s/%s" % (self.w.host, path):
            self.fail("unpushed", sha, f, "wrote name %s, the policy's image is %s: %s"
                      % (name, path, what))
        if ref_tag is None or ref_tag not in tags:
            self.fail("unpushed", sha, f, "%s:%s was not pushed: %s" % (path, ref_tag, what))
        elif dig is not None:
            if p == "d" and dig == rb and "rollback: " + REASON in message:
                if dig not in digests.get(path, set()):
                    self.fail("unpushed", sha, f, "rollback digest not in %s: %s" % (path, what))
            elif dig != tags[ref_tag]:
                self.fail("unpushed", sha, f, "%s:%s pointed at %s, not the written digest: %s"
                          % (path, ref_tag, tags[ref_tag], what))
        # invariant 1: nothing backward under any reading, but annotated rollbacks
        value = dig if p == "d" and part != "tag" else tag
        if rb is not None and value == rb and "rollback: " + REASON + rb in message:
            self.move("rollback")
            return
        if p == "a":
            ko, kn = ts_key(otag), ts_key(tag)
            if ko is not None and kn is not None and kn < ko:
                self.fail("backward", sha, f, "older under the policy's order: " + what)
            self.move("a")
        elif p in "be":
            self.version_change(sha, f, oname, otag, odig, name, tag, dig, what)
        else:
            self.digest_change(sha, f, odig, dig, replaced, what)

    def version_change(self, sha, f, oname, otag, odig, name, tag, dig, what):
        lo, ln = loose_key(otag), loose_key(tag)
        if lo is not None and ln is not None and loose_cmp(ln, lo) < 0:
            self.fail("backward", sha, f, "a person reads %s as newer than %s: %s"
                      % (otag, tag, what))
        so, sn = strict_key(otag), strict_key(tag)
        if so is not None and sn is not None and so == sn and otag != tag and oname == name \
                and odig == dig:
            self.fail("respell", sha, f, "only respells %s as %s: %s" % (otag, tag, what))
        if oname != name:
            self.move("rename")
        elif so is None and lo is not None:
            self.move("from-loose")
        else:
            self.move("version")

    def digest_change(self, sha, f, odig, dig, replaced, what):
        if not odig or not dig or odig == dig:
            self.move("digest-pin" if dig and not odig else "rename")
            return
        co, cn = created_time(self.w.created.get(odig)), created_time(self.w.created.get(dig))
        if co is not None and cn is not None and co != cn:
            if cn < co:
                self.fail("backward", sha, f, "a build created %s replaced one created %s: %s"
                          % (cn, co, what))
            self.move("digest-by-created")
        else:
            if dig in replaced:
                self.fail("backward", sha, f, "a digest held here before and replaced since "
                          "came back (build times cannot order them): " + what)
            self.move("digest-by-history")


def reconcile(env, w, n):
    """One pass; its JSON items (None when the report is missing)."""
    t0 = time.monotonic()
    r = env.imageguard("reconcile", "-o", "json")
    w.reconcile_time += time.monotonic() - t0
    if r.rc not in (0, 1) or not r.out.startswith("["):
        print("# pass %d: rc %d %s" % (n, r.rc, r.err[-500:]))
        return None
    for i in r.json():
        key = "%s %s/%s" % (i["policy"][-1], i["decision"], i["reason"])
        w.count(key)
        for warning in i.get("warnings", []):
            w.count("%s warn %s" % (i["policy"][-1], warning))
        cur, cand = i.get("current") or "", i.get("candidate") or ""
        if i["policy"][-1] in "be" and i["decision"] in ("hold", "none") and cur != cand:
            if strict_key(cur) is None and i["reason"] == "downgrade-blocked":
                w.count("loose ahead held")
            elif strict_key(cur) is not None and strict_key(cur) == strict_key(cand):
                w.count("respelling up to date")
    return r


def soak(env):
    w = World(env)
    for p in "abcde":
        w.new_tag(p)
    w.sync_mirrors(everything=True)
    h = w.host
    a0 = "%s/team/a:%s" % (h, w.order["team/a"][0])
    env.seed({"staging/a.yaml": file_for("staging/a.yaml", a0),
              "prod/a.yaml": file_for("prod/a.yaml", a0),
              "b.yaml": file_for("b.yaml", "%s/team/b:%s" % (h, w.order["team/b"][0]),
                                 w.order["team/b"][0]),
              "c.yaml": file_for("c.yaml", "%s/team/c:latest" % h),
              "d.yaml": file_for("d.yaml", "%s/team/d:stable@%s" % (h, w.builds["d"][0][2]),
                                 digest=w.builds["d"][0][2]),
              "e.yaml": file_for("e.yaml", "%s/team/e:%s" % (h, w.order["team/e"][0]),
                                 w.order["team/e"][0])})
    w.configure()
    pass_of = {}
    head = env.remote_head()
    errors = 0

    def run_pass(n):
        nonlocal head, errors
        w.snapshot()
        down = rnd.random() < 0.04 if n < PASSES else False
        if down:
            w.down()
        if reconcile(env, w, n) is None:
            errors += 1
        if down:
            w.up()
        new = env.remote_head()
        made = [c for c in git("--git-dir", env.remote, "rev-list", "--first-parent",
                               "%s..%s" % (head, new)).split() if c]
        for c in made:
            pass_of[c] = n
        head = new
        return len(made)

    for n in range(PASSES):
        for p, rate in (("a", 0.3), ("b", 0.3), ("c", 0.25), ("d", 0.25), ("e", 0.2)):
            if rnd.random() < rate:
                w.new_tag(p)
        w.sync_mirrors(skip="c" if n in (PASSES // 2, PASSES // 2 + 1) else ())
        changed = False
        if rnd.random() < 0.03:
            w.toggle_rollback()
            changed = True
        if rnd.random() < 0.05:
            w.toggle_image()
            changed = True
        if changed:
            w.configure()
        for p in "abcde":
            w.listing(p)
        if rnd.random() < 0.2:
            w.other_writer()
        w.scripted(n)
        run_pass(n)
    t.check(errors == 0, "every pass completed with a report (exit 0 or 1)")
    # quiet passes: true listings, nothing new; the second and third must not commit
    for p in "abcde":
        serve_tags(w.fault, w.image[p], None)
    quiet = [run_pass(PASSES + k) for k in range(3)]
    t.check(quiet[1] == 0 and quiet[2] == 0,
            "no commit loop: quiet passes after the first commit nothing (%s)" % quiet)
    t0 = time.monotonic()
    check_history(env, w, pass_of)
    print("# %.1f s in reconcile, %.1f s checking the history" % (w.reconcile_time,
                                                                  time.monotonic() - t0))


def check_history(env, w, pass_of):
    hist = History(env, pass_of)
    c = Checker(w, hist)
    c.run()
    mine = sum(1 for _, a, _ in hist.commits if a == "imageguard")
    print("# %d commits (%d by imageguard); moves %s" % (len(hist.commits), mine,
                                                        json.dumps(c.moves, sort_keys=True)))
    print("# world %s" % json.dumps(w.stats, sort_keys=True))
    f = c.failures
    t.check(not f["shape"], "every imageguard commit was made in a pass and kept markers' shape",
            "\n".join(f["shape"][:20]))
    t.check(not f["backward"], "no imageguard commit moved a value backward under any reading "
            "(except annotated rollbacks)", "\n".join(f["backward"][:20]))
    t.check(not f["respell"], "no imageguard commit only respelled a version",
            "\n".join(f["respell"][:20]))
    t.check(not f["unpushed"], "every name, tag and digest written was the policy's and pushed "
            "by that pass", "\n".join(f["unpushed"][:20]))
    if PASSES < DEFAULT_PASSES:
        print("# fewer passes than the default: the exercise checks are informational")
        return
    s, m = w.stats, c.moves

    def exercised(what, n):
        t.check(n > 0, "the soak exercised %s (%d)" % (what, n))

    exercised("forward moves of a", m.get("a", 0))
    exercised("version moves of b and e", m.get("version", 0))
    exercised("moves from a looser spelling", m.get("from-loose", 0))
    exercised("renames to and from a mirror", m.get("rename", 0))
    exercised("digest moves ordered by created", m.get("digest-by-created", 0))
    exercised("digest moves created cannot order", m.get("digest-by-history", 0))
    exercised("annotated rollbacks", m.get("rollback", 0))
    exercised("looser spellings ahead of the pick held", s.get("loose ahead held", 0))
    exercised("same-version respellings left alone", s.get("respelling up to date", 0))
    exercised("re-points to older builds held", s.get("c hold/downgrade-blocked", 0)
              + s.get("d hold/downgrade-blocked", 0))
    exercised("digest-replaced holds", s.get("c warn digest-replaced", 0)
              + s.get("d warn digest-replaced", 0))
    exercised("created-unknown moves", s.get("c warn created-unknown", 0)
              + s.get("d warn created-unknown", 0))
    exercised("name-changed decisions", s.get("b warn name-changed", 0)
              + s.get("c warn name-changed", 0))


with Env() as env:
    try:
        soak(env)
    except Exception:
        import traceback
        t.check(False, "soak raised", traceback.format_exc())
sys.exit(t.done())
