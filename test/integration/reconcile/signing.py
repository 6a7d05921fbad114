#!/usr/bin/python3
"""Signed commits end to end against a real docker-registry and a bare Git remote: with
spec.git.commit.signingKey.secretRef naming a Secret folder whose git.asc is a key made here by
gpg (with a passphrase), the pushed head passes real `git verify-commit` against the public key,
and the unsigned seed commit fails the same check (so the check can fail). A passphrase that does
not unlock the key is an error/git decision naming the Secret, and nothing is pushed."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import IMAGEGUARD, Env, Checks, Result, marker_file, by_file  # noqa: E402

t = Checks()


def gpg(home, *args, **kw):
    return subprocess.run(["gpg", "--batch", "--pinentry-mode", "loopback"] + list(args),
                          env=dict(os.environ, GNUPGHOME=home), capture_output=True,
                          check=True, **kw).stdout


def make_key(env):
    """The Secret gpg-key (git.asc, passphrase) and a GNUPGHOME holding only the public key."""
    keys, verify = os.path.join(env.dir, "keys"), os.path.join(env.dir, "verify")
    sec = os.path.join(env.secrets, "gpg-key")
    for d in (keys, verify, sec):
        os.makedirs(d, mode=0o700)
    gpg(keys, "--passphrase", "pass phrase", "--quick-gen-key", "Bot <bot@example.com>",
        "ed25519", "sign", "never")
    with open(os.path.join(sec, "git.asc"), "wb") as f:
        f.write(gpg(keys, "--passphrase", "pass phrase", "--armor", "--export-secret-keys",
                    "bot@example.com"))
    with open(os.path.join(sec, "passphrase"), "w") as f:
        f.write("pass phrase\n")
    gpg(verify, "--import", input=gpg(keys, "--armor", "--export", "bot@example.com"))
    for home in (keys, verify):
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=dict(os.environ, GNUPGHOME=home),
                       capture_output=True)
    return verify, sec


def verify_commit(env, home, rev):
    r = subprocess.run(["git", "--git-dir", env.remote, "verify-commit", rev],
                       env=dict(os.environ, GNUPGHOME=home), capture_output=True, text=True)
    return r.returncode == 0


def signed(env):
    return env.automation().replace(
        "        email: imageguard@test\n",
        "        email: imageguard@test\n      signingKey:\n        secretRef:\n"
        "          name: gpg-key\n")


def signing(env):
    verify, sec = make_key(env)
    env.push("team/app", ["1.0.0", "1.1.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    seed = env.remote_head()
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + signed(env))
    r = env.imageguard("reconcile", "-o", "json")
    t.check(r.rc == 0 and env.remote_head() != seed, "the signed pass commits and pushes", r)
    t.check(env.remote_file("app.yaml") == marker_file(env.image("team/app") + ":1.1.0", "app"),
            "the marker moved", r)
    t.check(verify_commit(env, verify, "main"),
            "git verify-commit passes on the pushed head with the public key", r)
    t.check(not verify_commit(env, verify, seed),
            "git verify-commit fails on the unsigned seed commit (the check can fail)")
    t.check(not any(n.startswith("gnupg-") for n in
                    os.listdir(os.path.join(env.state, "gnupg"))),
            "the throwaway GNUPGHOME is removed after the pass",
            os.listdir(os.path.join(env.state, "gnupg")))

    # a passphrase that does not unlock the key: error/git naming the Secret, nothing pushed
    with open(os.path.join(sec, "passphrase"), "w") as f:
        f.write("wrong\n")
    env.push("team/app", ["1.2.0"])
    head = env.remote_head()
    r = env.imageguard("reconcile", "-o", "json")
    item = by_file(r.json()).get(("default/app", "app.yaml"), {}) if r.out.strip() else {}
    t.check(r.rc != 0 and item.get("decision") == "error" and item.get("reason") == "git"
            and "signing key secret 'gpg-key'" in item.get("message", "")
            and "wrong" not in r.out + r.err,
            "a key the passphrase does not unlock is an error/git decision naming the Secret",
            r)
    t.check(env.remote_head() == head, "nothing is pushed when signing fails", r)


def missing_key(env):
    os.makedirs(os.path.join(env.secrets, "gpg-key"))
    env.push("team/app", ["1.0.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    env.config(env.repository("app", "team/app") + env.policy("app", "app", semver=">=1.0.0")
               + signed(env))
    r = Result(subprocess.run([IMAGEGUARD, "check-config", "--config", env.config_dir,
                               "--secrets-dir", env.secrets], capture_output=True, text=True,
                              timeout=60))
    t.check(r.rc == 2 and "'spec.git.commit.signingKey.secretRef': secret 'gpg-key'" in r.err
            and "no 'git.asc'" in r.err, "check-config names a signing Secret without git.asc", r)


for scenario in (signing, missing_key):
    with Env() as env:
        try:
            scenario(env)
        except Exception as e:  # a crash is a failure of this scenario, not of the others
            t.check(False, "%s raised %r" % (scenario.__name__, e))
sys.exit(t.done())
