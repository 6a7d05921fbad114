/* Keyless identity rules as Flux's OCIRepository `spec.verify.matchOIDCIdentity` states them:
 * a list of {issuer, subject} regular expressions; a certificate matches when, for one rule,
 * the issuer regex matches its OIDC issuer and the subject regex matches one of its SANs. The
 * expressions match as Go's regexp.MatchString does, that is unanchored: "^...$" anchors are
 * the writer's to add (cosign's CheckCertificatePolicy, which Flux calls). Compiled with
 * PCRE2 (UTF-8), with match and depth limits. Immutable once made: safe to share. */
#ifndef IMAGEGUARD_OIDCMATCH_H
#define IMAGEGUARD_OIDCMATCH_H

#include <stdbool.h>
#include <stddef.h>

struct error;
struct fulcio_identity;

#define OIDCMATCH_MAX_RULES 16
#define OIDCMATCH_MAX_PATTERN 1024

struct oidcmatch_rule {
	const char *issuer;  /* a regex; "" or NULL matches any issuer */
	const char *subject; /* a regex; "" or NULL matches any SAN */
};

struct oidcmatch;

/* Compiles n rules (1 <= n <= OIDCMATCH_MAX_RULES). IG_EINVALID names the pattern and where it
 * fails to compile; IG_ETOOBIG for too many rules or a pattern over OIDCMATCH_MAX_PATTERN. */
int oidcmatch_new(struct oidcmatch **out, const struct oidcmatch_rule *rules, size_t n,
                  struct error *err);
void oidcmatch_free(struct oidcmatch *m);

/* True when one rule matches id. Thread-safe (match data per call). */
bool oidcmatch_test(const struct oidcmatch *m, const struct fulcio_identity *id);

/* The rules as one line ("issuer=RE subject=RE; ..."), for the policy fingerprint. Borrowed. */
const char *oidcmatch_text(const struct oidcmatch *m);

#endif
