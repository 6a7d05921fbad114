/* The signature gate (CONTRACT §12): is the image with manifest digest D signed by whom the
 * policy trusts? One entry point over the formats, each a backend behind a table: cosign's
 * legacy signature tag (`sha256-<hex>.sig`, simple-signing payload) and Sigstore bundles
 * attached through the OCI referrers API or its tag fallback (`sha256-<hex>`, an index).
 * The registry is reached only through struct sigverify_source, so the pass backs it with the
 * registry client (registry/sigfetch.h) and the unit tests with fixtures. Pure otherwise: no
 * network, no libcurl, no libgit2. */
#ifndef IMAGEGUARD_SIGVERIFY_H
#define IMAGEGUARD_SIGVERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "imageguard/sigstore/oidcmatch.h"

struct buf;
struct error;
struct trustroot;

/* A verdict. Failures are ordered by how far the best signature got: when several signatures
 * fail, the one that got furthest names the reason. */
enum sigverify_status {
	SIGVERIFY_OK = 0,
	/* no signature artifact for this digest in any format */
	SIGVERIFY_UNSIGNED,
	/* a signature that no trusted key verifies, or that fails under the key or certificate
	 * it names; an artifact that contradicts itself (payload not matching its descriptor,
	 * a log entry logging another signature) or does not parse */
	SIGVERIFY_BAD_SIGNATURE,
	/* a valid signature by a certificate that does not chain to the trust root at the
	 * logged signing time (also: expired or not yet valid then), or by a certificate when
	 * the Secret holds no Fulcio trust root */
	SIGVERIFY_UNTRUSTED_SIGNER,
	/* keyless without a log entry, or a log entry whose SET, inclusion proof or checkpoint
	 * does not verify against the Rekor key (key-based: only when the Secret holds a Rekor
	 * key or require_tlog is set) */
	SIGVERIFY_NO_TRANSPARENCY_PROOF,
	/* a trusted, logged certificate whose OIDC issuer and SANs match no rule */
	SIGVERIFY_IDENTITY_MISMATCH,
	/* a valid, trusted signature of another digest (a replayed signature) */
	SIGVERIFY_DIGEST_MISMATCH,
};

#define SIGVERIFY_SIGNER_MAX 320
#define SIGVERIFY_DETAIL_MAX 320

struct sigverify_result {
	enum sigverify_status status;
	char format[16]; /* "cosign" or "bundle": the format that decided; "" when unsigned */
	/* With SIGVERIFY_OK, who signed, for the `Imageguard-Verified:` trailer: "key NAME
	 * (sha256:<12 hex>)" or "SAN (ISSUER)". Taken from a certificate: escape it before it
	 * reaches a line-oriented sink. */
	char signer[SIGVERIFY_SIGNER_MAX];
	char detail[SIGVERIFY_DETAIL_MAX]; /* one line: what was found or why it failed */
	/* source calls this check made: registry requests, unless a callback answered from
	 * memory (sigfetch's no_referrers_api) */
	unsigned requests;
};

/* Where signatures come from: the candidate's repository. Each callback returns 0 or a
 * negative code; IG_ENOTFOUND means absent (404). Bodies are capped by body->max, which the
 * caller sets. Callbacks may be called from several threads at once for different checks. */
struct sigverify_source {
	/* GET the manifest `reference` (a tag or a digest) with the OCI/Docker manifest and
	 * index media types accepted; media_type (n bytes) receives the Content-Type, "" when
	 * none. */
	int (*get_manifest)(void *ctx, struct buf *body, char *media_type, size_t n,
	                    const char *reference, struct error *err);
	/* GET the blob `digest`; the body must hash to digest (else IG_EINVALID). */
	int (*get_blob)(void *ctx, struct buf *body, const char *digest, struct error *err);
	/* The referrers API's index for `digest`; IG_ENOTFOUND when the registry has none (the
	 * tag fallback is then read). NULL: go to the tag fallback directly. */
	int (*get_referrers)(void *ctx, struct buf *body, const char *digest, struct error *err);
	/* Whether the repository's tag listing (which the pass holds) has tag: 1 yes, 0 no, -1
	 * unknown. NULL: unknown. A tag known absent costs no request. */
	int (*has_tag)(void *ctx, const char *tag);
	void *ctx;
};

/* What the policy trusts. Immutable once made: safe to share between threads. */
struct sigverify_policy;

struct sigverify_options {
	/* keyless identity rules (matchOIDCIdentity); required when the trust root has a Fulcio
	 * CA, else unused */
	const struct oidcmatch_rule *identities;
	size_t n_identities;
	/* key-based signatures must carry a verified Rekor entry too (keyless always must) */
	bool require_tlog;
	/* formats tried, in order: "cosign", "bundle" (NULL: both, bundle first, as Flux) */
	const char *const *formats;
	size_t n_formats;
};

/* Makes a policy over tr, which it takes (freed with the policy, also on failure). Returns
 * 0, IG_EINVALID (a keyless trust root without identity rules, a regex that does not compile,
 * an unknown format) or IG_EFAIL. */
int sigverify_policy_new(struct sigverify_policy **out, struct trustroot *tr,
                         const struct sigverify_options *opts, struct error *err);
void sigverify_policy_free(struct sigverify_policy *p);
/* "sha256:<hex>" over the trust root's fingerprint, the identity rules, require_tlog and the
 * formats: with the digest, the key of a cached result. Borrowed. */
const char *sigverify_policy_fingerprint(const struct sigverify_policy *p);

/* Verifies the image whose manifest digest is `digest` ("sha256:<hex>": the digest that would
 * be written, the index digest for a multi-arch image). Formats are tried in the policy's
 * order; the first signature that verifies ends the check with SIGVERIFY_OK. Returns 0 with a
 * verdict in out (every status, OK or not), or a negative code when no verdict could be
 * reached (the registry failed or timed out: IG_EFAIL, IG_EAUTH, IG_ETIMEOUT; a digest that
 * is not one: IG_EINVALID), with err set. At most SIGVERIFY_MAX_ARTIFACTS signature artifacts
 * are looked at. */
int sigverify_check(struct sigverify_result *out, const struct sigverify_policy *p,
                    const char *digest, const struct sigverify_source *src, struct error *err);

#define SIGVERIFY_MAX_ARTIFACTS 8 /* layers of a .sig manifest, or bundles of an index */
#define SIGVERIFY_MAX_MANIFEST (4u << 20)
#define SIGVERIFY_MAX_BLOB (4u << 20) /* a bundle; a simple-signing payload has its own cap */

/* The contract's name of a status: "ok", "unsigned", "bad-signature", "digest-mismatch",
 * "untrusted-signer", "identity-mismatch", "no-transparency-proof". Static storage. */
const char *sigverify_status_name(enum sigverify_status s);

#endif
