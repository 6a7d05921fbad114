/* Sigstore bundles (media types application/vnd.dev.sigstore.bundle.v0.3+json and
 * application/vnd.dev.sigstore.bundle+json;version=0.1/0.2/0.3): the verification material (a
 * public key hint, a certificate, or a certificate chain), the transparency log entries, and
 * the content (a message signature over the artifact, or a DSSE envelope whose in-toto
 * statement names the artifact). For an image the artifact is its manifest: the message digest,
 * or a statement subject, must be the candidate's digest. RFC 3161 timestamps are not read. */
#ifndef IMAGEGUARD_BUNDLE_H
#define IMAGEGUARD_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>

#include "imageguard/sigstore/rekor.h"
#include "imageguard/util/buf.h"

struct error;
struct sigverify_policy;
struct sigverify_result;

#define BUNDLE_MAX (4u << 20) /* a bundle document */
#define BUNDLE_MAX_TLOGS 4    /* log entries read */
#define BUNDLE_MAX_SIG 2048   /* a signature */

struct bundle {
	int minor;              /* 1, 2 or 3: the media type's version 0.N */
	X509 *cert;             /* the signing certificate, or NULL (a public key bundle) */
	STACK_OF(X509) * chain; /* the rest of an x509CertificateChain, or NULL */
	char key_hint[256];     /* publicKey.hint, "" when none */
	struct rekor_entry tlogs[BUNDLE_MAX_TLOGS];
	size_t n_tlogs;
	bool is_dsse;
	unsigned char message_digest[32]; /* messageSignature: SHA2_256 of the artifact */
	char payload_type[128];           /* dsseEnvelope.payloadType */
	struct buf payload;               /* dsseEnvelope.payload, decoded */
	struct buf sig;                   /* the signature, decoded */
};

/* Parses a bundle strictly (duplicate keys refused, exactly one kind of verification material
 * and of content, one DSSE signature, SHA2_256 message digests). Returns 0 with out owning
 * what it holds (bundle_release, also after a failure), IG_EINVALID or IG_ETOOBIG with the
 * reason in err. */
int bundle_parse(struct bundle *out, const char *data, size_t len, struct error *err);
void bundle_release(struct bundle *b);

/* Judges the bundle data[0..len) as a signature of the image with digest ("sha256:<hex>") under
 * policy p: out gets the verdict (never an error: a bundle that does not parse is
 * SIGVERIFY_BAD_SIGNATURE), its detail prefixed with where. */
void bundle_verify(struct sigverify_result *out, const struct sigverify_policy *p,
                   const char *digest, const char *data, size_t len, const char *where);

/* True when media_type names a Sigstore bundle this module reads. */
bool bundle_is_media_type(const char *media_type);

#endif
