/* Shared by the dispatcher (sigverify.c), its format backends (cosign.c, referrers.c with
 * bundle.c) and their shared helpers (sigtrust.c): the policy's insides, the backend table
 * entry, and the one check every format ends in (is this signature by someone trusted?). */
#ifndef IMAGEGUARD_SIGSTORE_PRIVATE_H
#define IMAGEGUARD_SIGSTORE_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>

#include "imageguard/sigstore/sigverify.h"

struct oidcmatch;
struct rekor_entry;
struct trustroot;

#define SIGSTORE_MAX_FORMATS 2

struct sigverify_backend;

struct sigverify_policy {
	struct trustroot *tr;    /* owned */
	struct oidcmatch *match; /* owned; NULL without keyless trust */
	bool require_tlog;
	const struct sigverify_backend *formats[SIGSTORE_MAX_FORMATS];
	size_t n_formats;
	char fingerprint[72];
};

/* One check as a backend sees it. Borrowed. */
struct sigverify_job {
	const struct sigverify_policy *policy;
	const char *digest; /* "sha256:<hex>", validated */
	const struct sigverify_source *src;
	unsigned *requests; /* incremented once per source call */
};

/* A format. check() looks for the format's signature artifacts of job->digest and leaves its
 * verdict in out (SIGVERIFY_UNSIGNED when it finds none); it returns 0, or a negative code for
 * an I/O failure that leaves no verdict. Backends never call the dispatcher. */
struct sigverify_backend {
	const char *name;
	int (*check)(struct sigverify_result *out, const struct sigverify_job *job,
	             struct error *err);
};

extern const struct sigverify_backend sigverify_backend_cosign;
extern const struct sigverify_backend sigverify_backend_bundle;

/* ---- sigtrust.c: the helpers every backend shares ---- */

/* One signature to judge. Borrowed. */
struct sigtrust_input {
	const unsigned char *msg; /* the signed bytes (a payload, a DSSE PAE); NULL: prehashed */
	size_t msg_len;
	const unsigned char *msg_sha256;     /* SHA-256 of the signed message (32 bytes) */
	const unsigned char *payload_sha256; /* DSSE: SHA-256 of the payload; else NULL */
	const unsigned char *sig;
	size_t sig_len;
	X509 *cert;             /* the signing certificate, NULL for a bare key signature */
	STACK_OF(X509) * chain; /* certificates carried with it (untrusted), or NULL */
	const struct rekor_entry *tlogs;
	size_t n_tlogs;
};

/* Judges one signature by the policy: under a trusted key, or under a certificate that is
 * logged (SET or inclusion proof against the Rekor key), chains to the Fulcio trust root at
 * the logged time and matches an identity rule. out gets the status, the signer (OK) or the
 * reason in detail, prefixed with where. Never fails otherwise. */
void sigtrust_check(struct sigverify_result *out, const struct sigverify_policy *p,
                    const struct sigtrust_input *in, const char *where);

/* Sets out's status and its detail (printf-style, one line), keeping requests. Returns 0, so
 * that a verdict can end a function: `return sigtrust_result(...)`. */
int sigtrust_result(struct sigverify_result *out, enum sigverify_status status, const char *fmt,
                    ...) __attribute__((format(printf, 3, 4)));
/* Keeps in best whichever of best and r got further (OK beats every failure). */
void sigtrust_keep_best(struct sigverify_result *best, const struct sigverify_result *r);

/* A source callback's failure as a verdict or an error: IG_EINVALID and IG_ETOOBIG (the
 * registry served something malformed or oversized) become SIGVERIFY_BAD_SIGNATURE in out
 * and 0; every other code stays an error. */
int sigtrust_fetch_failed(struct sigverify_result *out, int code, const struct error *why,
                          const char *what);

#endif
