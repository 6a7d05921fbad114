#!/usr/bin/python3
"""`.gitattributes` never changes what is written (CONTRACT §5): against a real docker-registry
and a bare Git remote whose tree asks for every content conversion Git knows (`text eol=lf`,
`eol=crlf`, `text=auto`, `working-tree-encoding=UTF-16`, `ident`, an unknown `filter=x`
driver), each committed blob is the old blob with only the value's bytes replaced: CRLF,
lone LF, `$Id: ... $` and every other byte kept. The clone's work tree holds the blobs'
bytes too (markers are read from there), and a cache checked out under the tree's attributes
by an older imageguard is recloned."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, git  # noqa: E402

t = Checks()

ATTRIBUTES = (b"lf/** text eol=lf\n"
              b"crlf/** eol=crlf\n"
              b"auto/** text=auto\n"
              b"utf16/** working-tree-encoding=UTF-16\n"
              b"ident/** ident\n"
              b"filter/** filter=x\n")
DIRS = ("lf", "crlf", "auto", "utf16", "ident", "filter")


def doc(image, eol):
    """A marked Deployment with the given line ending, an ident keyword and a mixed line."""
    lines = [b"apiVersion: apps/v1", b"kind: Deployment  # $Id: 0123456789abcdef $",
             b"spec:", b"  template:", b"    spec:", b"      containers:",
             b"        - name: app",
             b"          image: " + image + b" # {\"$imagepolicy\": \"default:app\"}"]
    return eol.join(lines) + b"\nlast: line with a lone LF above\r\n"


def blob(env, rev, path):
    return subprocess.run(["git", "--git-dir", env.remote, "cat-file", "blob",
                           "%s:%s" % (rev, path)], capture_output=True, check=True).stdout


def seed_raw(env, files):
    """Commits files (path -> bytes) as blobs of exactly those bytes (no attribute or config
    of the seeding clone applies: hash-object --no-filters), then pushes."""
    for path, data in files.items():
        oid = subprocess.run(["git", "hash-object", "-w", "--no-filters", "--stdin"],
                             input=data, cwd=env.work, capture_output=True,
                             check=True).stdout.decode().strip()
        git("update-index", "--add", "--cacheinfo", "100644,%s,%s" % (oid, path), cwd=env.work)
    git("commit", "-q", "-m", "seed raw files", cwd=env.work)
    git("push", "-q", "origin", "main", cwd=env.work)


def cache_workdir(env):
    root = os.path.join(env.state, "git")
    dirs = [d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))]
    return os.path.join(root, dirs[0]) if len(dirs) == 1 else None


def files_for(image):
    files = {".gitattributes": ATTRIBUTES}
    for d in DIRS:
        files[d + "/crlf.yaml"] = doc(image, b"\r\n")
        files[d + "/lf.yaml"] = doc(image, b"\n")
    return files


def byte_exact(env):
    env.push("team/app", ["1.0.0", "1.0.1"])
    old = env.image("team/app").encode() + b":1.0.0"
    new = env.image("team/app").encode() + b":1.0.1"
    files = files_for(old)
    seed_raw(env, files)
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation())
    r = env.imageguard("reconcile")
    t.check(r.rc == 0, "reconcile exits 0", r)
    for path, data in sorted(files.items()):
        want = data.replace(old, new)
        got = blob(env, "main", path)
        t.check(got == want, "%s: the old blob with only the value replaced" % path,
                (got, want))
    work = cache_workdir(env)
    t.check(work is not None, "one cached clone", os.listdir(os.path.join(env.state, "git")))
    for path in sorted(files) if work else []:
        with open(os.path.join(work, path), "rb") as f:
            got = f.read()
        t.check(got == blob(env, "main", path), "%s: the work tree holds the blob's bytes" % path,
                got)
    return work, files, old, new


def old_cache_recloned(env):
    """A cache whose attributes file is not imageguard's (an older version's checkout, whose
    files may be converted) is cloned again before use."""
    work, files, old, new = byte_exact(env)
    if not work:
        return
    attrs = os.path.join(work, ".git", "info", "attributes")
    os.unlink(attrs)
    target = os.path.join(work, "crlf", "crlf.yaml")
    with open(target, "wb") as f:  # what a converting checkout left
        f.write(files["crlf/crlf.yaml"].replace(old, new).replace(b"\r\n", b"\n"))
    env.push("team/app", ["1.0.2"])
    r = env.imageguard("reconcile")
    t.check(r.rc == 0 and "recloning" in r.err, "the stale cache is recloned", r)
    want = files["crlf/crlf.yaml"].replace(old, env.image("team/app").encode() + b":1.0.2")
    t.check(blob(env, "main", "crlf/crlf.yaml") == want, "and the commit is byte exact",
            blob(env, "main", "crlf/crlf.yaml"))
    t.check(os.path.exists(attrs), "the new clone's attributes are pinned")


for scenario in (byte_exact, old_cache_recloned):
    with Env() as env:
        try:
            scenario(env)
        except Exception:  # a crash is a failure of this scenario, not of the others
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
