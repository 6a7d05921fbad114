#!/usr/bin/python3
"""The signature gate (CONTRACT §12) keyless, end to end through `reconcile`, against Debian's
docker-registry and a bare Git remote. Sigstore bundles are made by @sigstore/sign against
@sigstore/mock's Fulcio and Rekor on loopback and attached by @sigstore/oci
(test/sigstore/sigstore.js; docker-registry has no referrers API: the sha256-<hex> tag
fallback); the policy's Secret folder holds the trust material the mock wrote (fulcio.crt.pem,
rekor.pub) and the policy names issuer and subject regexes in imageguard.io/verify-* annotations.

Checks: an unsigned candidate is hold/unverified (unsigned) and not committed; a message
bundle whose identity matches is committed with `Imageguard-Verified: <SAN> (<issuer>)`; a
bundle of another subject is identity-mismatch, one of another issuer too; a bundle whose
certificate comes from another mock CA (same Rekor key, so only the chain differs) is
untrusted-signer; a DSSE (in-toto statement) bundle is committed, and replayed onto another
digest is digest-mismatch; a bundle whose Rekor inclusion proof is tampered is
no-transparency-proof; a certificate expired at the logged time (the mock CA's clock an hour
behind) is untrusted-signer; the same through
imageguard.io/v1alpha1 spec.verify (secretRef, matchOIDCIdentity); a trust root without the
Fulcio CA is a config error naming the Secret. Nothing is committed for a held candidate."""
import base64
import json
import os
import shutil
import subprocess
import sys

SRC = os.environ.get("IMAGEGUARD_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "test", "fixtures"))
import registry  # noqa: E402
from guard_env import Env, Checks, marker_file  # noqa: E402

t = Checks()
NODE_TOOL = os.path.join(SRC, "test", "sigstore", "sigstore.js")
ISSUER = "https://token.actions.example"
SUBJECT = "https://github.com/acme/app/.github/workflows/release.yml@refs/heads/main"
ISSUER_RE = r"^https://token\.actions\.example$"
SUBJECT_RE = r"^https://github\.com/acme/app/"
SECRET = "sigstore-trust"


def node(*args):
    p = subprocess.run(["node", NODE_TOOL] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("sigstore.js %s: rc=%d\n%s%s" % (args[0], p.returncode, p.stdout,
                                                          p.stderr))
    return p.stdout


def manifest_file(env, repo, digest, d):
    """The image manifest's bytes (what a message signature signs: its SHA-256 is digest)."""
    c = registry.Client(env.reg.url)
    resp, body = c.request("GET", "/v2/%s/manifests/%s" % (repo, digest),
                           headers={"Accept": registry.OCI_MANIFEST})
    if resp.status != 200:
        raise RuntimeError("manifest GET %s@%s: %d" % (repo, digest, resp.status))
    path = os.path.join(d, digest.replace(":", "-") + ".manifest.json")
    with open(path, "wb") as f:
        f.write(body)
    return path


def sign(env, repo, digest, keys, trust, d, fmt="message", issuer=ISSUER, subject=SUBJECT):
    """A keyless bundle for digest from the mock CA and Rekor whose keys live in keys (made on
    first use, then reused; their public halves written into trust)."""
    out = os.path.join(d, "%s-%s.sigstore.json" % (digest[7:19], fmt))
    args = ["sign", "--mode", "keyless", "--format", fmt, "--digest", digest, "--artifact",
            manifest_file(env, repo, digest, d), "--out", out, "--trust", trust, "--keys", keys,
            "--issuer", issuer, "--subject", subject]
    if fmt == "dsse":  # @sigstore/mock logs the proposed entry as it is: intoto agrees with it
        args += ["--entry-type", "intoto"]
    node(*args)
    return out


def sign_and_attach(env, repo, digest, keys, trust, d, **kw):
    """sign(), the bundle attached to repo@digest by the tag fallback (an index tagged
    sha256-<hex>)."""
    out = sign(env, repo, digest, keys, trust, d, **kw)
    node("attach", "--image", env.image(repo), "--digest", digest, "--bundle", out)
    return out


def one(env, *args):
    r = env.imageguard(*args, "-o", "json")
    try:
        return r, r.json()[0]
    except (ValueError, IndexError, KeyError):
        return r, {}


def held(r, it, digest, warning):
    return (r.rc == 0 and it.get("decision") == "hold" and it.get("reason") == "unverified"
            and warning in it.get("warnings", []) and digest in (it.get("message") or ""))


with Env() as env:
    work = os.path.join(env.dir, "sigstore")
    keys, other_keys = os.path.join(work, "keys"), os.path.join(work, "other-keys")
    trust, other_trust = os.path.join(work, "trust"), os.path.join(work, "other-trust")
    for p in (keys, other_keys, trust, other_trust):
        os.makedirs(p)
    secret = os.path.join(env.secrets, SECRET)
    image = env.image("team/app")
    verify = {"imageguard.io/verify-provider": "cosign", "imageguard.io/verify-secret": SECRET,
              "imageguard.io/verify-issuer": ISSUER_RE, "imageguard.io/verify-subject": SUBJECT_RE}

    def configure(policy=None):
        env.config(env.repository("app", "team/app")
                   + (policy or env.policy("app", "app", semver=">=1.0.0", annotations=verify))
                   + env.automation())

    d10 = env.push("team/app", ["1.0.0"])
    env.seed({"app.yaml": marker_file(image + ":1.0.0", "app")})
    log_len = len(env.remote_log())

    # the mock's trust material, from a first signing (not attached): fulcio.crt.pem and
    # rekor.pub, no CT log key (@sigstore/mock's SCT list is malformed: with ctfe.pub every
    # bundle is refused, test/integration/cli/sigstore_crosscheck.py)
    sign(env, "team/app", d10, keys, trust, work)
    os.makedirs(secret)
    for name in sorted(os.listdir(trust)):
        shutil.copy(os.path.join(trust, name), os.path.join(secret, name))
    t.check(sorted(os.listdir(secret)) == ["fulcio.crt.pem", "rekor.pub"],
            "the Secret holds the mock's Fulcio CA and Rekor key", os.listdir(secret))
    configure()

    # unsigned: held
    d11 = env.push("team/app", ["1.1.0"], created="2026-01-02T00:00:00Z")
    audit = os.path.join(env.dir, "audit.log")
    r, it = one(env, "reconcile", "--audit-log", audit)
    t.check(held(r, it, d11, "unsigned"), "an unsigned candidate is hold/unverified (unsigned)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for an unsigned candidate")
    with open(audit) as f:
        rec = json.loads(f.readline())
    t.check(rec.get("reason") == "unverified" and rec.get("warnings") == ["unsigned"]
            and rec.get("digest") == d11, "the audit record: unverified, unsigned, the digest",
            rec)

    # a keyless message bundle, attached by the tag fallback, identity matching: committed
    sign_and_attach(env, "team/app", d11, keys, trust, work)
    r, it = one(env, "reconcile")
    t.check(r.rc == 0 and it.get("decision") == "update" and it.get("commit"),
            "a keyless bundle whose identity matches: committed", r)
    log = env.remote_log()
    trailer = "Imageguard-Verified: %s (%s)" % (SUBJECT, ISSUER)
    t.check(len(log) == log_len + 1 and trailer in log[0][1].splitlines(),
            "the commit carries %r" % trailer, log[:1])
    t.check(":1.1.0 #" in env.remote_file("app.yaml"), "the remote holds 1.1.0")
    log_len = len(log)

    # another subject: identity-mismatch
    d12 = env.push("team/app", ["1.2.0"], created="2026-01-03T00:00:00Z")
    evil = "https://github.com/evil/app/.github/workflows/release.yml@refs/heads/main"
    sign_and_attach(env, "team/app", d12, keys, trust, work, subject=evil)
    r, it = one(env, "reconcile")
    t.check(held(r, it, d12, "identity-mismatch"),
            "a bundle of another subject is hold/unverified (identity-mismatch)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for another subject")

    # another issuer, same subject: identity-mismatch
    d13 = env.push("team/app", ["1.3.0"], created="2026-01-04T00:00:00Z")
    sign_and_attach(env, "team/app", d13, keys, trust, work,
                    issuer="https://accounts.example")
    r, it = one(env, "reconcile")
    t.check(held(r, it, d13, "identity-mismatch"),
            "a bundle of another issuer is hold/unverified (identity-mismatch)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for another issuer")

    # another mock CA (the Rekor key shared, so only the certificate's chain differs)
    shutil.copy(os.path.join(keys, "rekor.key"), os.path.join(other_keys, "rekor.key"))
    d14 = env.push("team/app", ["1.4.0"], created="2026-01-05T00:00:00Z")
    sign_and_attach(env, "team/app", d14, other_keys, other_trust, work)
    with open(os.path.join(other_trust, "fulcio.crt.pem")) as a, \
            open(os.path.join(secret, "fulcio.crt.pem")) as b:
        t.check(a.read() != b.read(), "the other CA is another certificate")
    r, it = one(env, "reconcile")
    t.check(held(r, it, d14, "untrusted-signer") and "chain" in it.get("message", ""),
            "a bundle from an untrusted CA is hold/unverified (untrusted-signer)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for an untrusted CA")

    # a DSSE bundle (an in-toto statement naming the digest): committed
    d15 = env.push("team/app", ["1.5.0"], created="2026-01-06T00:00:00Z")
    bundle = sign_and_attach(env, "team/app", d15, keys, trust, work, fmt="dsse")
    with open(bundle) as f:
        t.check("dsseEnvelope" in json.load(f), "sigstore.js made a DSSE bundle")
    r, it = one(env, "reconcile")
    t.check(r.rc == 0 and it.get("decision") == "update" and it.get("commit")
            and it.get("candidate") == "1.5.0", "a keyless DSSE bundle: committed", r)
    log = env.remote_log()
    t.check(len(log) == log_len + 1 and trailer in log[0][1].splitlines(),
            "the DSSE commit carries the trailer", log[:1])
    t.check(":1.5.0 #" in env.remote_file("app.yaml"), "the remote holds 1.5.0")
    log_len = len(log)

    # 1.5.0's valid DSSE bundle replayed onto 1.5.1: its statement names another digest
    d151 = env.push("team/app", ["1.5.1"], created="2026-01-06T12:00:00Z")
    node("attach", "--image", image, "--digest", d151, "--bundle", bundle)
    r, it = one(env, "reconcile")
    t.check(held(r, it, d151, "digest-mismatch"),
            "a DSSE bundle replayed from another digest is hold/unverified (digest-mismatch)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for a replayed bundle")

    # a bad inclusion proof: the bundle's Rekor root hash flipped, attached as it is
    d152 = env.push("team/app", ["1.5.2"], created="2026-01-06T13:00:00Z")
    good = sign(env, "team/app", d152, keys, trust, work)
    with open(good) as f:
        b = json.load(f)
    proof = b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]
    raw = bytearray(base64.b64decode(proof["rootHash"]))
    raw[0] ^= 0x01
    proof["rootHash"] = base64.b64encode(bytes(raw)).decode()
    bad = os.path.join(work, "bad-proof.sigstore.json")
    with open(bad, "w") as f:
        json.dump(b, f)
    node("attach", "--image", image, "--digest", d152, "--bundle", bad)
    r, it = one(env, "reconcile")
    t.check(held(r, it, d152, "no-transparency-proof"),
            "a bad inclusion proof is hold/unverified (no-transparency-proof)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for a bad inclusion proof")

    # the certificate outside its validity at the logged time (the CA's clock an hour behind
    # Rekor's: the ten-minute certificate has expired when the entry is logged)
    d153 = env.push("team/app", ["1.5.3"], created="2026-01-06T14:00:00Z")
    out = os.path.join(work, "expired.sigstore.json")
    node("sign", "--mode", "keyless", "--format", "message", "--digest", d153, "--artifact",
         manifest_file(env, "team/app", d153, work), "--out", out, "--trust",
         os.path.join(work, "expired-trust"), "--keys", keys, "--issuer", ISSUER, "--subject",
         SUBJECT, "--ca-clock-offset", "-3600")
    node("attach", "--image", image, "--digest", d153, "--bundle", out)
    r, it = one(env, "reconcile")
    t.check(held(r, it, d153, "untrusted-signer") and "expired" in it.get("message", ""),
            "a certificate expired at the logged time is hold/unverified (untrusted-signer)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed for an expired certificate")

    # imageguard.io/v1alpha1: spec.verify {provider, secretRef, matchOIDCIdentity}
    def v1alpha1(subject_re):
        return ("---\napiVersion: imageguard.io/v1alpha1\nkind: ImagePolicy\n"
                "metadata:\n  name: app\n  namespace: default\nspec:\n"
                "  imageRepositoryRef:\n    name: app\n"
                "  policy:\n    semver:\n      range: '>=1.0.0'\n"
                "  verify:\n    provider: cosign\n    secretRef:\n      name: %s\n"
                "    matchOIDCIdentity:\n      - issuer: %s\n        subject: %s\n"
                % (SECRET, json.dumps(ISSUER_RE), json.dumps(subject_re)))

    d16 = env.push("team/app", ["1.6.0"], created="2026-01-07T00:00:00Z")
    sign_and_attach(env, "team/app", d16, keys, trust, work)
    configure(v1alpha1(r"^https://github\.com/other/"))
    r, it = one(env, "reconcile")
    t.check(held(r, it, d16, "identity-mismatch"),
            "v1alpha1 spec.verify: its matchOIDCIdentity rule is applied (identity-mismatch)", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed under the other rule")
    configure(v1alpha1(SUBJECT_RE))
    r, it = one(env, "reconcile")
    t.check(r.rc == 0 and it.get("decision") == "update" and it.get("candidate") == "1.6.0",
            "v1alpha1 spec.verify: a matching identity is committed", r)
    log = env.remote_log()
    t.check(len(log) == log_len + 1 and trailer in log[0][1].splitlines(),
            "the v1alpha1 commit carries the trailer", log[:1])
    log_len = len(log)

    # identity rules without the Fulcio CA: a config error naming the Secret, nothing asked
    d17 = env.push("team/app", ["1.7.0"], created="2026-01-08T00:00:00Z")
    sign_and_attach(env, "team/app", d17, keys, trust, work)
    os.remove(os.path.join(secret, "fulcio.crt.pem"))
    configure()
    r, it = one(env, "reconcile")
    t.check(it.get("decision") == "error" and it.get("reason") == "config"
            and SECRET in (it.get("message") or ""),
            "keyless rules and no Fulcio CA in the Secret: error/config naming it", r)
    t.check(len(env.remote_log()) == log_len, "nothing committed with the trust root broken")

sys.exit(t.done())
