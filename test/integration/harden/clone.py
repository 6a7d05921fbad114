#!/usr/bin/python3
"""Issue 12 item 1, end to end against a real docker-registry and a bare Git remote: the clone
is hostile. Committed symlinks sit next to a marked file under every temporary name imageguard
has used or could be guessed to use, a marked-looking file is reachable only through a
symlinked parent directory, and another through a symlinked file. After reconcile no file
outside the clone has changed, the marked file is updated as a regular file, and every link
in the remote is still the same link."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, Result, IMAGEGUARD, marker_file, by_file, git  # noqa: E402

t = Checks()
TEMP_NAMES = ["app.yaml.imageguard-tmp", "app.yaml.tmp", ".app.yaml.tmp", "app.yaml~",
              ".app.yaml.swp", "app.yaml.new", ".app.yaml.imageguard-tmp"]


def snapshot(root):
    snap = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                snap[p] = (fh.read(), os.stat(p).st_mode)
    return snap


def tree_modes(env):
    """{path: (mode, object content)} of the remote main's tree."""
    out = {}
    for line in git("--git-dir", env.remote, "ls-tree", "-r", "main").splitlines():
        meta, path = line.split("\t", 1)
        mode, _, oid = meta.split()
        out[path] = (mode, git("--git-dir", env.remote, "cat-file", "-p", oid))
    return out


def hostile_tree(env):
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    outside = os.path.join(env.dir, "outside")
    os.makedirs(os.path.join(outside, "dir"))
    victim = marker_file(env.image("team/app") + ":v1.0.0", "app")
    with open(os.path.join(outside, "sentinel"), "w") as f:
        f.write("do not touch\n")
    with open(os.path.join(outside, "dir", "o.yaml"), "w") as f:
        f.write(victim)
    with open(os.path.join(outside, "o.yaml"), "w") as f:
        f.write(victim)
    before = snapshot(outside)

    env.seed({"apps/app.yaml": victim})
    w = env.work
    for name in TEMP_NAMES:
        os.symlink(os.path.join(outside, "sentinel"), os.path.join(w, "apps", name))
    os.symlink(os.path.join(outside, "dir"), os.path.join(w, "linked"))
    os.symlink(os.path.join(outside, "o.yaml"), os.path.join(w, "apps", "link.yaml"))
    os.symlink("../../outside/o.yaml", os.path.join(w, "apps", "Kustomization"))
    git("add", "-A", cwd=w)
    git("commit", "-q", "-m", "hostile links", cwd=w)
    git("push", "-q", "origin", "main", cwd=w)
    links_before = {p: v for p, v in tree_modes(env).items() if v[0] == "120000"}

    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation())
    r = env.imageguard("reconcile", "-o", "json")
    items = by_file(r.json()) if r.out.startswith("[") else {}
    t.check(r.rc == 0, "reconcile over a hostile tree exits 0", r)
    app = items.get(("default/app", "apps/app.yaml"), {})
    t.check(app.get("decision") == "update" and app.get("commit"),
            "the marked file is updated", items)
    t.check(set(f for _, f in items) == {"apps/app.yaml"},
            "no marker is read through a link", items)
    t.check(snapshot(outside) == before, "no file outside the clone changed")
    modes = tree_modes(env)
    t.check(modes.get("apps/app.yaml", ("",))[0] == "100644"
            and ":v1.1.0" in modes["apps/app.yaml"][1],
            "the remote holds the marked file as a regular file with the new value",
            modes.get("apps/app.yaml"))
    t.check({p: v for p, v in modes.items() if v[0] == "120000"} == links_before,
            "every committed link is unchanged", modes)

    # the tools that read a checkout follow no link either
    for cmd in (("markers", w, "-o", "json"), ("lint", w, "-o", "json")):
        proc = subprocess.run([IMAGEGUARD] + list(cmd), capture_output=True, text=True,
                              timeout=60)
        r = Result(proc)
        t.check("outside" not in r.out and "link.yaml" not in r.out
                and "linked/" not in r.out, "%s reads nothing through a link" % cmd[0], r)


def forged_lines(env):
    """Issue 12 item 8: a committed file name holding a newline and ESC cannot forge a line of
    plan's text output or of a text log line."""
    env.push("team/app", ["v1.0.0", "v1.1.0"])
    evil = "apps/x\n2026-01-01T00:00:00.000Z error forged.event: pwned\x1b[2J.yaml"
    # a marker naming no policy is logged with its file name (markers.problem)
    evil2 = "apps/y\n2026-01-01T00:00:00.000Z error forged.event: pwned.yaml"
    env.seed({evil: marker_file(env.image("team/app") + ":v1.0.0", "app"),
              evil2: marker_file(env.image("team/app") + ":v1.0.0", "nope")})
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + env.automation())
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn |info |debug) ")
    for args in (("plan",), ("reconcile",)):
        r = env.imageguard(*args, "--log-format", "text", "--log-level", "debug")
        out = r.out.splitlines()
        t.check(r.rc == 0 and len(out) == 1 and out[0].startswith("default/app apps/x\\n2026")
                and "apps/y\\n2026" in r.err,
                "%s: the file's decision is one escaped line" % args[0], r)
        t.check("\x1b" not in r.out + r.err, "%s: no ESC reaches the terminal" % args[0], r)
        bad = [l for l in r.err.splitlines() if not stamp.match(l) and not l.startswith("imageguard: ")]
        t.check(not bad and "forged.event" not in [l.split(" ")[2].rstrip(":") for l in
                                                   r.err.splitlines() if stamp.match(l)],
                "%s: every log line is imageguard's own" % args[0], bad or r.err)
    t.check(":v1.1.0" in env.remote_file(evil), "the oddly named file was still updated")


for scenario in (hostile_tree, forged_lines):
    with Env() as env:
        try:
            scenario(env)
        except Exception:  # a crash is a failure of this scenario, not of the others
            import traceback
            t.check(False, scenario.__name__ + " raised", traceback.format_exc())
sys.exit(t.done())
