#!/usr/bin/python3
"""The container image, built and run here without a container engine daemon: `make image`
(scripts/build-image: buildah bud --isolation chroot on a debootstrap bookworm base), then the
image's own imageguard run inside its root filesystem with `buildah run`: `version`, every
library of its three binaries found by ldd, uid 65532, `tags` (the front binary execs
imageguard-tags) and one real `reconcile` pass (imageguard-full) against a loopback
docker-registry and a file:// Git remote mounted in. Slow (minutes): its own CI step, not part of
`make check` and never under sanitizers. Needs root."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "test", "fixtures"))
import harness  # noqa: E402
from guard_env import Env, marker_file  # noqa: E402

WORK = os.environ.get("IMAGE_WORK") or os.path.join(SRC, "build", "image")
TAG = "localhost/imageguard:dev"
STORE = ["--root", os.path.join(WORK, "storage"), "--runroot", os.path.join(WORK, "run"),
         "--storage-driver", "vfs"]


def buildah(*args, check=True, timeout=600):
    p = subprocess.run(["buildah"] + STORE + list(args), capture_output=True, text=True,
                       timeout=timeout)
    if check:
        harness.check(p.returncode == 0, "buildah %s" % " ".join(args[:3]), p.stderr[-3000:])
    return p


def setup():
    p = subprocess.run([os.path.join(SRC, "scripts", "build-image")], capture_output=True,
                       text=True, timeout=3600, env=dict(os.environ, IMAGE_WORK=WORK))
    if p.returncode != 0:
        raise RuntimeError("make image: " + p.stderr[-3000:])
    print("# " + p.stderr.strip().splitlines()[-1], flush=True)
    ctr = buildah("from", "--pull-never", TAG).stdout.strip()
    return {"ctr": ctr, "build": p.stderr}


def teardown(st):
    if st:
        buildah("rm", st["ctr"], check=False)


def run_in(st, *args, mounts=(), user=None):
    cmd = ["run", "--isolation", "chroot"]
    for m in mounts:
        cmd += ["-v", "%s:%s" % (m, m)]
    if user:
        cmd += ["--user", user]
    return buildah(*(cmd + [st["ctr"], "--"] + list(args)), check=False)


@harness.test
def version_runs(st):
    p = run_in(st, "/usr/local/bin/imageguard", "version")
    harness.check(p.returncode == 0 and p.stdout.startswith("imageguard "), "version", p.stdout,
                  p.stderr)


@harness.test
def runs_as_65532(st):
    cfg = json.loads(buildah("inspect", "--type", "image", TAG).stdout)
    harness.check(cfg["OCIv1"]["config"]["User"] == "65532:65532", "USER", cfg["OCIv1"]["config"])
    p = run_in(st, "/usr/bin/id", "-u")
    harness.check(p.stdout.strip() == "65532", "id -u", p.stdout, p.stderr)


# The image's binaries (src/main.c, Containerfile), each with a library it must load ("": none
# required) and the ones it must not.
BINARIES = (("/usr/local/bin/imageguard", "", ("libcurl", "libgit2")),
            ("/usr/local/libexec/imageguard/imageguard-tags", "libcurl",
             ("libgit2", "libgpgme", "libmicrohttpd")),
            ("/usr/local/libexec/imageguard/imageguard-full", "libgit2", ()))


@harness.test
def every_library_is_found(st):
    for b, needs, never in BINARIES:
        p = run_in(st, "/usr/bin/ldd", b, user="0:0")
        harness.check(p.returncode == 0 and "not found" not in p.stdout and needs in p.stdout
                      and not any(lib in p.stdout for lib in never), b, p.stdout)


@harness.test
def tags_against_loopback_registry(st):
    with Env() as env:
        env.push("team/app", ["v1.1.0", "v1.0.0"])
        p = run_in(st, "/usr/local/bin/imageguard", "tags", env.image("team/app"), "--insecure")
        harness.check(p.returncode == 0 and p.stdout == "v1.0.0\nv1.1.0\n", "tags in the image",
                      p.stdout, p.stderr)


@harness.test
def reconcile_against_loopback_peers(st):
    with Env() as env:
        env.push("team/app", ["v1.0.0", "v1.1.0"])
        env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
        env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
                   + env.automation())
        # the image's user owns what it writes (state dir, the bare remote it pushes to; libgit2
        # refuses a repository of another owner), as the Deployment's volumes are its own
        subprocess.run(["chown", "-R", "65532:65532", env.dir], check=True)
        try:
            p = run_in(st, "/usr/local/bin/imageguard", "reconcile", "--config", env.config_dir,
                       "--state-dir", env.state, "-o", "json", mounts=[env.dir])
        finally:
            subprocess.run(["chown", "-R", "0:0", env.dir], check=True)
        harness.check(p.returncode == 0, "reconcile in the image", p.stdout, p.stderr)
        items = json.loads(p.stdout)
        harness.check(items[0]["decision"] == "update" and items[0]["candidate"] == "v1.1.0",
                      "decision", items)
        harness.check("v1.1.0" in env.remote_file("apps/app.yaml"), "pushed from the image")


READ_ONLY = r"""
set -e
root=$1 env=$2; shift 2
mkdir -p /run/imageguard-ro && mount --bind "$root" /run/imageguard-ro
r=/run/imageguard-ro
mount -o remount,bind,ro "$r"
# only what the Deployment mounts is writable: /tmp and /var/lib/imageguard (emptyDirs), and
# the runtime's /dev/shm; /proc and /dev as a runtime gives them
mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
mount -t tmpfs -o uid=65532,gid=65532,mode=0750 tmpfs "$r/var/lib/imageguard"
mount -t proc proc "$r/proc"
mount --rbind /dev "$r/dev"
mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
mkdir -p "$r$env" 2>/dev/null || true
mount --bind "$env" "$r$env"
exec chroot --userspec=65532:65532 "$r" /usr/bin/env HOME=/tmp "$@"
"""


def run_read_only(st, env_dir, *args):
    """args in the image's root filesystem mounted read-only, as uid 65532, with only the
    Deployment's writable volumes (a private mount namespace: nothing leaks to the host)."""
    mnt = buildah("mount", st["ctr"]).stdout.strip()
    try:
        os.makedirs(mnt + env_dir, exist_ok=True)  # the mount point, made before ro
        return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               READ_ONLY, "sh", mnt, env_dir] + list(args),
                              capture_output=True, text=True, timeout=300)
    finally:
        buildah("umount", st["ctr"], check=False)


@harness.test
def read_only_root_with_the_deployments_volumes(st):
    with Env() as env:
        env.push("team/app", ["v1.0.0", "v1.2.0"])
        env.seed({"apps/app.yaml": marker_file(env.image("team/app") + ":v1.0.0", "app")})
        env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
                   + env.automation())
        subprocess.run(["chown", "-R", "65532:65532", env.dir], check=True)
        try:
            p = run_read_only(st, env.dir, "/bin/sh", "-c", "touch /x 2>/dev/null && echo "
                              "writable || echo read-only")
            harness.check(p.stdout.strip() == "read-only", "the root is read-only", p.stdout,
                          p.stderr)
            p = run_read_only(st, env.dir, "/usr/local/bin/imageguard", "reconcile", "--config",
                              env.config_dir, "--state-dir", "/var/lib/imageguard", "-o", "json")
        finally:
            subprocess.run(["chown", "-R", "0:0", env.dir], check=True)
        harness.check(p.returncode == 0, "reconcile on a read-only root", p.stdout, p.stderr)
        harness.check(json.loads(p.stdout)[0]["candidate"] == "v1.2.0", "decision", p.stdout)
        harness.check("v1.2.0" in env.remote_file("apps/app.yaml"), "pushed")


@harness.test
def oci_archive_is_written(st):
    a = os.path.join(WORK, "imageguard.oci.tar")
    harness.check(os.path.getsize(a) > 1 << 20, "archive", a)
    p = subprocess.run(["skopeo", "inspect", "oci-archive:" + a], capture_output=True,
                       text=True, timeout=120)
    harness.check(p.returncode == 0 and json.loads(p.stdout)["Architecture"] == "amd64",
                  "skopeo inspect", p.stdout, p.stderr)
    with Env() as env:  # pushed to the loopback registry, as a release pushes it
        p = subprocess.run(["skopeo", "copy", "-q", "--dest-tls-verify=false",
                            "oci-archive:" + a, "docker://%s/imageguard:dev" % env.host],
                           capture_output=True, text=True, timeout=600)
        harness.check(p.returncode == 0, "skopeo copy", p.stderr)
        r = harness.run("tags", env.image("imageguard"), "--insecure")
        harness.check(r.rc == 0 and r.out.split() == ["dev"], "listed", r)


if __name__ == "__main__":
    harness.main(setup, teardown)
