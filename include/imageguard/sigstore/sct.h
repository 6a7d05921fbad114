/* Signed certificate timestamps (RFC 6962) embedded in a Fulcio certificate: the promise of a
 * certificate transparency log that it logged the precertificate. Checked when the trust root
 * holds CT log keys (ctfe*.pub, ctlog*.pub, or trusted_root.json's ctlogs). */
#ifndef IMAGEGUARD_SCT_H
#define IMAGEGUARD_SCT_H

#include <stddef.h>

#include <openssl/x509.h>

struct trustroot;

#define SCT_MAX 8 /* SCTs of one certificate looked at */

/* Verifies that leaf (issued by issuer) embeds an SCT signed by a CT log key of tr that was
 * valid at the SCT's time: the signature over the precertificate entry (the leaf's TBS without
 * its SCT list, and the issuer's key hash). Returns 0, or IG_EINVALID with the reason in why. */
int sct_verify(X509 *leaf, X509 *issuer, const struct trustroot *tr, char *why, size_t n);

#endif
