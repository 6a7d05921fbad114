#!/usr/bin/python3
"""The signature gate (CONTRACT §12) end to end against Debian's docker-registry (through the
fault proxy, which records every request) and a bare Git remote, key-based, with cosign's
legacy layout (`sha256-<hex>.sig`: a simple-signing payload signed with OpenSSL, the scheme
test/integration/cli/sigstore_crosscheck.py checks against cosign's recorded signatures):
an unsigned candidate, one signed by another key and a payload changed after signing are
hold/unverified with `unsigned` / `bad-signature` and never committed; a signature that appears on a later pass lets the update
through, committed with `Imageguard-Verified:`; a valid signature replayed from another digest
is `digest-mismatch`; an unsigned rollback target is held; a pass with nothing to write asks
nothing of the signature tags; a Secret without a key is a config error naming it."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
import cosignsig  # noqa: E402
from cosignsig import keypair  # noqa: E402
from guard_env import Env, Checks, marker_file  # noqa: E402

t = Checks()


def push_sig(env, repo, image, digest, key, d, for_digest=None, tamper=False):
    cosignsig.push_sig(env.reg.url, repo, image, digest, key, d, for_digest, tamper)


def one(env, *args):
    r = env.imageguard(*args, "-o", "json")
    try:
        return r, r.json()[0]
    except (ValueError, IndexError):
        return r, {}


def sig_requests(fault):
    return cosignsig.sig_requests(fault.requests())


with Env() as env:
    fault = env.fault()
    image = env.image("team/app", fault.host)
    keys = os.path.join(env.dir, "keys")
    os.makedirs(keys)
    key, pub = keypair(keys, "trusted")
    other, _ = keypair(keys, "other")
    secret = os.path.join(env.secrets, "cosign-keys")
    os.makedirs(secret)
    with open(pub) as src, open(os.path.join(secret, "cosign.pub"), "w") as dst:
        dst.write(src.read())
    verify = {"imageguard.io/verify-provider": "cosign",
              "imageguard.io/verify-secret": "cosign-keys"}

    def configure(annotations):
        env.config(env.repository("app", "team/app", host=fault.host)
                   + env.policy("app", "app", semver=">=1.0.0", annotations=annotations)
                   + env.automation())

    env.push("team/app", ["1.0.0"])
    env.seed({"app.yaml": marker_file(image + ":1.0.0", "app")})
    configure(verify)
    log_len = len(env.remote_log())

    # unsigned: held, never committed, in the audit log with its reason
    d11 = env.push("team/app", ["1.1.0"], created="2026-01-02T00:00:00Z")
    audit = os.path.join(env.dir, "audit.log")
    r, it = one(env, "reconcile", "--audit-log", audit)
    t.check(r.rc == 0 and it.get("decision") == "hold" and it.get("reason") == "unverified"
            and "unsigned" in it.get("warnings", []) and d11 in it.get("message", ""),
            "an unsigned candidate is hold/unverified (unsigned)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for an unsigned candidate")
    with open(audit) as f:
        rec = json.loads(f.readline())
    t.check(rec.get("decision") == "hold" and rec.get("reason") == "unverified"
            and rec.get("warnings") == ["unsigned"] and rec.get("digest") == d11
            and "not verified: unsigned" in (rec.get("message") or ""),
            "the audit record: hold/unverified, unsigned, the digest and why", rec)
    r, it = one(env, "plan")
    t.check(it.get("reason") == "unverified", "plan decides the same", r)

    # signed by another key
    push_sig(env, "team/app", image, d11, other, keys)
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "unverified" and "bad-signature" in it.get("warnings", []),
            "signed by another key: hold/unverified (bad-signature)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for another key's signature")

    # the right signature appears on a later pass: the update goes through, with the trailer
    push_sig(env, "team/app", image, d11, key, keys)
    r, it = one(env, "reconcile")
    t.check(r.rc == 0 and it.get("decision") == "update" and it.get("commit"),
            "signed by the trusted key: committed", r)
    log = env.remote_log()
    t.check(len(log) == log_len + 1 and "Imageguard-Verified: key cosign.pub (sha256:"
            in log[0][1], "the commit carries Imageguard-Verified", log[:1])
    t.check(":1.1.0 #" in env.remote_file("app.yaml"), "the remote holds 1.1.0")
    log_len += 1

    # up to date: no decision writes, so no signature is asked for
    fault.clear()
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "up-to-date", "second pass: up to date", r)
    t.check(sig_requests(fault) == [], "an up-to-date pass asks nothing of the signature tags",
            sig_requests(fault))

    # a valid signature of 1.1.0 replayed onto 1.2.0's signature tag
    d12 = env.push("team/app", ["1.2.0"], created="2026-01-03T00:00:00Z")
    push_sig(env, "team/app", image, d11, key, keys, for_digest=d12)
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "unverified" and "digest-mismatch" in it.get("warnings", []),
            "a replayed signature: hold/unverified (digest-mismatch)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for a replayed signature")

    # a payload changed after it was signed (the trusted key's signature kept)
    d13 = env.push("team/app", ["1.3.0"], created="2026-01-04T00:00:00Z")
    push_sig(env, "team/app", image, d13, key, keys, tamper=True)
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "unverified" and "bad-signature" in it.get("warnings", [])
            and d13 in it.get("message", ""),
            "a tampered payload: hold/unverified (bad-signature)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for a tampered payload")

    # a rollback to an unsigned tag is held like any candidate
    env.push("team/app", ["0.9.0-unsigned", "1.0.1"], created="2026-01-01T12:00:00Z")
    configure(dict(verify, **{"imageguard.io/rollback-to": "1.0.1",
                              "imageguard.io/rollback-reason": "INC-1"}))
    r, it = one(env, "reconcile")
    t.check(it.get("reason") == "unverified" and "unsigned" in it.get("warnings", []),
            "a rollback to an unsigned tag: hold/unverified", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for the rollback")

    # a Secret without a key: a config error naming the Secret
    os.remove(os.path.join(secret, "cosign.pub"))
    configure(verify)
    args = env.args("check-config")
    del args[4:6]  # check-config has no --state-dir
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    t.check(p.returncode == 2 and "secret 'cosign-keys'" in p.stderr
            and "no public key" in p.stderr, "check-config names the Secret", p.stderr)
    r, it = one(env, "reconcile")
    t.check(it.get("decision") == "error" and it.get("reason") == "config"
            and "cosign-keys" in it.get("message", ""), "reconcile: the policy is error/config", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed with the Secret broken")

sys.exit(t.done())
