#!/usr/bin/python3
"""The signature gate against real peers, and against the reference verifier.

- Real cosign `.sig` signatures (test/data/sigstore, recorded by containers/image) served from
  Debian's docker-registry under the digests they sign, verified through registry/sigfetch.c
  by test/sigstore/sigcheck (build/test/sigcheck), with the requests each costs.
- Tampered `.sig` signatures made here in cosign's layout with OpenSSL's command line, after the
  OpenSSL procedure is shown to verify the recorded real signature.
- Sigstore bundles made by @sigstore/sign (a local P-256 key, or keyless against
  @sigstore/mock's Fulcio and Rekor on loopback), attached by @sigstore/oci to docker-registry
  (no referrers API there: the sha256-<hex> tag fallback), verified by imageguard and by
  @sigstore/verify (test/sigstore/sigstore.js): every bundle imageguard accepts, the reference
  accepts; every tampered one both refuse.
"""
import base64
import copy
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
import harness  # noqa: E402
import registry  # noqa: E402
from harness import check, test  # noqa: E402

SRC = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
BUILD = os.environ.get("IMAGEGUARD_BUILD") or os.path.join(SRC, "build")
SIGCHECK = os.path.join(BUILD, "test", "sigcheck")
NODE_TOOL = os.path.join(SRC, "test", "sigstore", "sigstore.js")
DATA = os.path.join(SRC, "test", "data", "sigstore")
SIMPLESIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
ISSUER = "https://token.actions.example"
SUBJECT = "https://github.com/acme/app/.github/workflows/release.yml@refs/heads/main"
ISSUER_RE = r"^https://token\.actions\.example$"
SUBJECT_RE = r"^https://github\.com/acme/app/"


class Verdict:
    def __init__(self, p):
        self.rc, self.out, self.err = p.returncode, p.stdout.strip(), p.stderr.strip()
        self.status = self.out.split(" ", 1)[0] if self.out else ""
        fields = dict(f.split("=", 1) for f in self.out.split(" ")[1:4] if "=" in f)
        self.requests = int(fields.get("requests", -1))
        self.http = int(fields.get("http", -1))
        self.format = fields.get("format", "")

    def __repr__(self):
        return "rc=%d out=%r err=%r" % (self.rc, self.out, self.err)


def sigcheck(*args):
    p = subprocess.run([SIGCHECK] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=60)
    v = Verdict(p)
    check(v.rc in (0, 1), "sigcheck reached a verdict", v)
    return v


def node(*args, ok_codes=(0,)):
    p = subprocess.run(["node", NODE_TOOL] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode in ok_codes, "sigstore.js %s" % args[0], p.stdout, p.stderr)
    return p


def reference(bundle, trust, digest, artifact=None, issuer=None, subject=None):
    """@sigstore/verify's verdict: True accepted, False refused."""
    args = ["verify", "--bundle", bundle, "--trust", trust, "--digest", digest]
    args += ["--artifact", artifact] if artifact else []
    args += ["--issuer", issuer] if issuer else []
    args += ["--subject", subject] if subject else []
    return node(*args, ok_codes=(0, 1)).returncode == 0


def ours(bundle, trust, digest, issuer=None, subject=None):
    args = ["bundle", bundle, "--digest", digest, "--trust", trust]
    args += ["--issuer", issuer, "--subject", subject] if issuer or subject else []
    return sigcheck(*args)


def trust_dir(files):
    """A Secret folder: {key name: source path}."""
    d = harness.tempdir()
    for name, src in files.items():
        shutil.copy(src, os.path.join(d, name))
    return d


def keys(name):
    return os.path.join(DATA, "cimage-keys", name)


# ---- cosign's legacy layout ----

def recorded(folder):
    """(payload bytes, annotations, signed digest) of a containers/image signature file."""
    raw = open(os.path.join(DATA, folder, "signature-1"), "rb").read()
    sig = json.loads(raw[raw.index(b"{"):])
    manifest = open(os.path.join(DATA, folder, "manifest.json"), "rb").read()
    return (base64.b64decode(sig["payload"]), sig["annotations"],
            "sha256:" + hashlib.sha256(manifest).hexdigest())


def push_sig(s, repo, for_digest, payload, annotations):
    """cosign's `sha256-<hex>.sig` manifest: one simple-signing layer with the annotations."""
    c = registry.Client(s["reg"].url)
    scope = "repository:%s:pull,push" % repo
    config = b"{}"
    manifest = {"schemaVersion": 2, "mediaType": registry.OCI_MANIFEST,
                "config": {"mediaType": registry.OCI_CONFIG, "size": len(config),
                           "digest": registry._blob(c, repo, config, scope)},
                "layers": [{"mediaType": SIMPLESIGNING, "size": len(payload),
                            "digest": registry._blob(c, repo, payload, scope),
                            "annotations": annotations}]}
    tag = for_digest.replace(":", "-") + ".sig"
    registry.put_manifest(c, repo, tag, json.dumps(manifest).encode(), registry.OCI_MANIFEST)


def registry_check(s, repo, digest, trust, *extra):
    return sigcheck("registry", "%s/%s" % (s["reg"].host, repo), "--digest", digest, "--trust",
                    trust, "--insecure", *extra)


def openssl_sign(key, data):
    d = harness.tempdir()
    path = os.path.join(d, "payload")
    open(path, "wb").write(data)
    p = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key, path], capture_output=True,
                       timeout=30)
    check(p.returncode == 0, "openssl dgst -sign", p.stderr)
    return base64.b64encode(p.stdout).decode()


def openssl_verifies(pub, data, sig_b64):
    d = harness.tempdir()
    open(os.path.join(d, "payload"), "wb").write(data)
    open(os.path.join(d, "sig"), "wb").write(base64.b64decode(sig_b64))
    p = subprocess.run(["openssl", "dgst", "-sha256", "-verify", pub, "-signature",
                        os.path.join(d, "sig"), os.path.join(d, "payload")],
                       capture_output=True, timeout=30)
    return p.returncode == 0


# ---- bundles ----

def image_manifest(s, repo, digest):
    c = registry.Client(s["reg"].url)
    resp, body = c.request("GET", "/v2/%s/manifests/%s" % (repo, digest),
                           headers={"Accept": registry.OCI_MANIFEST})
    check(resp.status == 200, "manifest GET", resp.status)
    path = os.path.join(harness.tempdir(), "manifest.json")
    open(path, "wb").write(body)
    return path


def sign_bundle(s, mode, fmt, digest, artifact, trust, *extra):
    out = os.path.join(harness.tempdir(), "%s-%s.sigstore.json" % (mode, fmt))
    args = ["sign", "--mode", mode, "--format", fmt, "--digest", digest, "--artifact", artifact,
            "--out", out, "--trust", trust, "--keys", s["keys"]]
    if fmt == "dsse":  # @sigstore/mock logs the proposed entry as it is: intoto agrees with it
        args += ["--entry-type", "intoto"]
    if mode == "keyless":
        args += ["--issuer", ISSUER, "--subject", SUBJECT]
    node(*(args + list(extra)))
    return out


def setup():
    s = {}
    try:
        check(os.access(SIGCHECK, os.X_OK), "%s is built (make %s)" % (SIGCHECK, SIGCHECK))
        check(os.path.isdir(os.path.join(SRC, "test", "sigstore", "node_modules", "@sigstore")),
              "test/sigstore/node_modules is installed (make deps)")
        s["reg"] = registry.start_registry()
        s["keys"] = harness.tempdir()
        s["bundles"] = {}
        for mode in ("key", "keyless"):
            for fmt in ("message", "dsse"):
                repo = "team/%s-%s" % (mode, fmt)
                digest = registry.push_image(s["reg"].url, repo, "v1")
                artifact = image_manifest(s, repo, digest)
                trust = harness.tempdir()
                bundle = sign_bundle(s, mode, fmt, digest, artifact, trust)
                node("attach", "--image", "%s/%s" % (s["reg"].host, repo), "--digest", digest,
                     "--bundle", bundle)
                s["bundles"][(mode, fmt)] = (repo, digest, artifact, trust, bundle)
    except BaseException:
        teardown(s)
        raise
    return s


def teardown(s):
    if s and s.get("reg"):
        s["reg"].stop()


def rules(mode):
    return (ISSUER_RE, SUBJECT_RE) if mode == "keyless" else (None, None)


# ---- legacy tests ----

@test
def recorded_key_signature_from_the_registry(s):
    payload, ann, digest = recorded("cimage-cosign-valid")
    push_sig(s, "legacy/key", digest, payload, ann)
    trust = trust_dir({"cosign.pub": keys("cosign.pub")})
    v = registry_check(s, "legacy/key", digest, trust, "--listing", "--no-referrers-api")
    check(v.status == "ok" and v.format == "cosign", "recorded signature verifies", v)
    # the listing shows the .sig tag and no bundle tag, the registry is known to have no
    # referrers API: the manifest and the payload only
    check(v.requests == 2 and v.http == 2, "two requests in the pass's steady state", v)
    v = registry_check(s, "legacy/key", digest, trust, "--listing")
    check(v.status == "ok" and v.requests == 3, "first contact: the referrers API's 404 too", v)
    v = registry_check(s, "legacy/key", digest, trust)
    # without the listing: referrers API (404 on 2.8), the sha256-<hex> tag (404), manifest,
    # payload
    check(v.status == "ok" and v.requests == 4 and v.http == 4, "four without", v)
    other = trust_dir({"cosign.pub": keys("cosign2.pub")})
    v = registry_check(s, "legacy/key", digest, other, "--listing")
    check(v.status == "bad-signature", "another key: refused", v)


@test
def recorded_keyless_signature_from_the_registry(s):
    payload, ann, digest = recorded("cimage-cosign-fulcio-rekor-valid")
    push_sig(s, "legacy/keyless", digest, payload, ann)
    trust = trust_dir({"fulcio.crt.pem": keys("fulcio_v1.crt.pem"), "rekor.pub": keys("rekor.pub")})
    v = registry_check(s, "legacy/keyless", digest, trust, "--listing", "--no-referrers-api",
                       "--issuer", r"^https://github\.com/login/oauth$", "--subject",
                       r"^mitr@redhat\.com$")
    check(v.status == "ok" and v.requests == 2, "keyless recorded signature verifies", v)
    check('signer="mitr@redhat.com (https://github.com/login/oauth)"' in v.out, "signer", v)
    v = registry_check(s, "legacy/keyless", digest, trust, "--listing", "--issuer",
                       "github", "--subject", r"^mallory@")
    check(v.status == "identity-mismatch", "another subject: refused", v)


@test
def replayed_signature_is_a_digest_mismatch(s):
    payload, ann, _ = recorded("cimage-cosign-valid")
    victim = registry.push_image(s["reg"].url, "legacy/replay", "v2")
    push_sig(s, "legacy/replay", victim, payload, ann)
    trust = trust_dir({"cosign.pub": keys("cosign.pub")})
    v = registry_check(s, "legacy/replay", victim, trust, "--listing")
    check(v.status == "digest-mismatch", "a valid signature of another digest", v)


@test
def unsigned_costs_nothing_with_the_listing(s):
    digest = registry.push_image(s["reg"].url, "legacy/unsigned", "v1")
    trust = trust_dir({"cosign.pub": keys("cosign.pub")})
    v = registry_check(s, "legacy/unsigned", digest, trust, "--listing", "--no-referrers-api")
    check(v.status == "unsigned" and v.requests == 0 and v.http == 0, "unsigned, no request", v)
    v = registry_check(s, "legacy/unsigned", digest, trust)
    check(v.status == "unsigned" and v.requests == 3, "unsigned: three 404s without", v)


@test
def openssl_layout_matches_cosign_then_tampers_fail(s):
    payload, ann, digest = recorded("cimage-cosign-valid")
    # the OpenSSL procedure verifies cosign's own signature: it is cosign's scheme
    check(openssl_verifies(keys("cosign.pub"), payload,
                           ann["dev.cosignproject.cosign/signature"]),
          "openssl dgst verifies the recorded signature")
    d = harness.tempdir()
    key, pub = os.path.join(d, "ours.key"), os.path.join(d, "cosign.pub")
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out",
                    key], check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", key, "-pubout", "-out", pub], check=True,
                   capture_output=True)
    trust = trust_dir({"cosign.pub": pub})
    good = {"dev.cosignproject.cosign/signature": openssl_sign(key, payload)}
    push_sig(s, "legacy/openssl", digest, payload, good)
    check(registry_check(s, "legacy/openssl", digest, trust, "--listing").status == "ok",
          "our OpenSSL signature in cosign's layout verifies")
    cases = []
    tampered = payload.replace(digest[7:17].encode(), b"0123456789")
    cases.append(("payload changed after signing", tampered, good, "bad-signature"))
    cases.append(("signed by another key", payload, ann, "bad-signature"))
    other = registry.push_image(s["reg"].url, "legacy/openssl", "other")
    for i, (what, body, a, want) in enumerate(cases):
        push_sig(s, "legacy/openssl", digest, body, a)
        v = registry_check(s, "legacy/openssl", digest, trust, "--listing")
        check(v.status == want, what, v)
    push_sig(s, "legacy/openssl", other, payload, good)
    v = registry_check(s, "legacy/openssl", other, trust, "--listing")
    check(v.status == "digest-mismatch", "our valid signature replayed", v)


# ---- bundles: imageguard and @sigstore/verify ----

@test
def bundles_verify_in_both(s):
    for (mode, fmt), (repo, digest, artifact, trust, bundle) in s["bundles"].items():
        issuer, subject = rules(mode)
        v = ours(bundle, trust, digest, issuer, subject)
        check(v.status == "ok", "imageguard accepts %s %s" % (mode, fmt), v)
        check(reference(bundle, trust, digest, artifact, issuer, subject),
              "@sigstore/verify accepts %s %s" % (mode, fmt))


@test
def bundles_from_the_registry_tag_fallback(s):
    for (mode, fmt), (repo, digest, artifact, trust, bundle) in s["bundles"].items():
        issuer, subject = rules(mode)
        extra = ["--issuer", issuer, "--subject", subject] if issuer else []
        v = registry_check(s, repo, digest, trust, "--listing", *extra)
        # the listed sha256-<hex> index (the referrers API is not asked), the bundle's
        # manifest, its blob
        check(v.status == "ok" and v.format == "bundle" and v.requests == 3 and v.http == 3,
              "%s %s through the tag fallback" % (mode, fmt), v)
        v = registry_check(s, repo, digest, trust, *extra)
        check(v.status == "ok" and v.requests == 4, "with the referrers API asked first", v)


def tampers(b):
    """(what, tampered bundle JSON) pairs: each must be refused by both verifiers."""
    def flip_b64(value, at=10):
        raw = bytearray(base64.b64decode(value))
        raw[at % len(raw)] ^= 0x01
        return base64.b64encode(bytes(raw)).decode()

    out = []

    def case(what, fn):
        t = copy.deepcopy(b)
        fn(t)
        out.append((what, t))

    entry = lambda t: t["verificationMaterial"]["tlogEntries"][0]  # noqa: E731
    if "messageSignature" in b:
        case("signature", lambda t: t["messageSignature"].__setitem__(
            "signature", flip_b64(t["messageSignature"]["signature"])))
        case("message digest", lambda t: t["messageSignature"]["messageDigest"].__setitem__(
            "digest", flip_b64(t["messageSignature"]["messageDigest"]["digest"], 3)))
    else:
        env = lambda t: t["dsseEnvelope"]  # noqa: E731
        case("envelope signature", lambda t: env(t)["signatures"][0].__setitem__(
            "sig", flip_b64(env(t)["signatures"][0]["sig"])))
        case("statement", lambda t: env(t).__setitem__("payload", base64.b64encode(
            base64.b64decode(env(t)["payload"]).replace(b"sha256", b"sha257")).decode()))
    case("log body", lambda t: entry(t).__setitem__(
        "canonicalizedBody", flip_b64(entry(t)["canonicalizedBody"], 40)))
    case("integrated time", lambda t: entry(t).__setitem__(
        "integratedTime", str(int(entry(t)["integratedTime"]) + 1)))
    case("log index", lambda t: entry(t).__setitem__(
        "logIndex", str(int(entry(t).get("logIndex", "0")) + 1)))
    case("signed entry timestamp", lambda t: entry(t)["inclusionPromise"].__setitem__(
        "signedEntryTimestamp", flip_b64(entry(t)["inclusionPromise"]["signedEntryTimestamp"])))
    case("inclusion proof root", lambda t: entry(t)["inclusionProof"].__setitem__(
        "rootHash", flip_b64(entry(t)["inclusionProof"]["rootHash"], 0)))
    case("checkpoint", lambda t: entry(t)["inclusionProof"]["checkpoint"].__setitem__(
        "envelope", entry(t)["inclusionProof"]["checkpoint"]["envelope"].replace("\n1\n", "\n2\n", 1)))
    return out


@test
def tampered_bundles_refused_by_both(s):
    d = harness.tempdir()
    for (mode, fmt), (repo, digest, artifact, trust, bundle) in s["bundles"].items():
        issuer, subject = rules(mode)
        for what, t in tampers(json.load(open(bundle))):
            path = os.path.join(d, "t.json")
            json.dump(t, open(path, "w"))
            v = ours(path, trust, digest, issuer, subject)
            check(v.status != "ok", "imageguard refuses %s %s: %s" % (mode, fmt, what), v)
            check(not reference(path, trust, digest, artifact, issuer, subject),
                  "@sigstore/verify refuses %s %s: %s" % (mode, fmt, what))


@test
def random_bit_flips_never_accepted(s):
    rnd = random.Random(36)
    d = harness.tempdir()
    for (mode, fmt), (repo, digest, artifact, trust, bundle) in s["bundles"].items():
        issuer, subject = rules(mode)
        raw = bytearray(open(bundle, "rb").read())
        for _ in range(40):
            at = rnd.randrange(len(raw))
            raw[at] ^= 1 << rnd.randrange(7)
            path = os.path.join(d, "f.json")
            open(path, "wb").write(raw)
            v = ours(path, trust, digest, issuer, subject)
            if v.status == "ok":  # then the reference must accept it too
                check(reference(path, trust, digest, artifact, issuer, subject),
                      "%s %s: flip at %d accepted by imageguard only" % (mode, fmt, at), v)
            raw = bytearray(open(bundle, "rb").read())


@test
def keyless_identity_and_trust_refused_by_both(s):
    repo, digest, artifact, trust, bundle = s["bundles"][("keyless", "message")]
    for issuer, subject in ((ISSUER_RE, r"^https://github\.com/evil/"),
                            (r"^https://accounts\.google\.com$", SUBJECT_RE)):
        v = ours(bundle, trust, digest, issuer, subject)
        check(v.status == "identity-mismatch", "imageguard: identity refused", v)
        check(not reference(bundle, trust, digest, artifact, issuer, subject),
              "@sigstore/verify: identity refused")
    # a CA the trust root does not hold
    other_keys = harness.tempdir()
    other = harness.tempdir()
    node("sign", "--mode", "keyless", "--format", "message", "--digest", digest, "--artifact",
         artifact, "--out", os.path.join(other, "unused.json"), "--trust", other, "--keys",
         other_keys, "--issuer", ISSUER, "--subject", SUBJECT)
    shutil.copy(os.path.join(trust, "rekor.pub"), os.path.join(other, "rekor.pub"))
    v = ours(bundle, other, digest, ISSUER_RE, SUBJECT_RE)
    check(v.status == "untrusted-signer", "imageguard: another CA", v)
    check(not reference(bundle, other, digest, artifact, ISSUER_RE, SUBJECT_RE),
          "@sigstore/verify: another CA")


@test
def certificate_expired_at_the_logged_time_refused_by_both(s):
    repo, digest, artifact, _, _ = s["bundles"][("keyless", "dsse")]
    trust = harness.tempdir()
    # the CA's clock an hour behind Rekor's: the ten-minute certificate has expired when logged
    bundle = sign_bundle(s, "keyless", "dsse", digest, artifact, trust, "--ca-clock-offset",
                         "-3600")
    v = ours(bundle, trust, digest, ISSUER_RE, SUBJECT_RE)
    check(v.status == "untrusted-signer" and "expired" in v.out, "imageguard refuses", v)
    check(not reference(bundle, trust, digest, None, ISSUER_RE, SUBJECT_RE),
          "@sigstore/verify refuses")


@test
def malformed_sct_list_refused_by_both(s):
    # @sigstore/mock's CT log (0.11.0) writes its SCT list without the SCT's own length: with
    # a CT log key in the trust root, neither verifier can read an SCT, so both refuse
    repo, digest, artifact, _, _ = s["bundles"][("keyless", "message")]
    trust = harness.tempdir()
    bundle = sign_bundle(s, "keyless", "message", digest, artifact, trust, "--ctlog")
    check(os.path.exists(os.path.join(trust, "ctfe.pub")), "ctfe.pub written")
    v = ours(bundle, trust, digest, ISSUER_RE, SUBJECT_RE)
    check(v.status == "untrusted-signer" and "SCT" in v.out, "imageguard refuses", v)
    check(not reference(bundle, trust, digest, artifact, ISSUER_RE, SUBJECT_RE),
          "@sigstore/verify refuses")
    os.unlink(os.path.join(trust, "ctfe.pub"))
    check(ours(bundle, trust, digest, ISSUER_RE, SUBJECT_RE).status == "ok",
          "without a CT log key, SCTs are not asked for")


@test
def recorded_bundles_agree_with_the_reference(s):
    cases = [("cosign-oci-attestation/oci-attestation.sigstore.json",
              "sha256:732112270d7e59418a8c080b134b24cabd67d250d0d0147a97ed95ba5c280aa4",
              "github", "cody@soyland"),
             ("sgo-provenance/bundle-provenance.json",
              "sha512:76176ffa33808b54602c7c35de5c6e9a4deb96066dba6533f50ac234f4f1f4c6b3527515dc17c0"
              "6fbe2860030f410eee69ea20079bd3a2c6f3dcf3b329b10751",
              "token.actions", "sigstore-js")]
    for rel, digest, issuer, subject in cases:
        bundle = os.path.join(DATA, rel)
        trust = trust_dir({"trusted_root.json": os.path.join(os.path.dirname(bundle),
                                                             "trusted_root.json")})
        v = ours(bundle, trust, digest, issuer, subject)
        check(v.status == "ok", "imageguard accepts %s" % rel, v)
        check(reference(bundle, trust, digest, None, issuer, subject),
              "@sigstore/verify accepts %s" % rel)


if __name__ == "__main__":
    harness.main(setup, teardown)
