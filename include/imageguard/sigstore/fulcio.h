/* Fulcio signing certificates over OpenSSL: reading them (PEM or DER), the chain to the trust
 * root's Fulcio CAs at the time the transparency log proves (a Fulcio certificate lives ten
 * minutes: never "now"), and the identity they carry (the OIDC issuer extension and the
 * subject alternative names). */
#ifndef IMAGEGUARD_FULCIO_H
#define IMAGEGUARD_FULCIO_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

struct error;
struct trustroot;

#define FULCIO_MAX_CHAIN 5         /* certificates of a chain, the leaf included */
#define FULCIO_MAX_PEM (64 * 1024) /* a certificate or chain annotation */
#define FULCIO_MAX_DER (16 * 1024) /* one DER certificate */
#define FULCIO_MAX_SANS 16         /* subject alternative names kept */
#define FULCIO_MAX_NAME 512        /* bytes of an issuer or a SAN */

/* OIDs of the issuer extensions: v1 holds the raw string, v2 a DER UTF8String. */
#define FULCIO_OID_ISSUER_V1 "1.3.6.1.4.1.57264.1.1"
#define FULCIO_OID_ISSUER_V2 "1.3.6.1.4.1.57264.1.8"
#define FULCIO_OID_USERNAME "1.3.6.1.4.1.57264.1.7" /* an otherName SAN */

struct fulcio_identity {
	char issuer[FULCIO_MAX_NAME]; /* "" when the certificate names none */
	char sans[FULCIO_MAX_SANS][FULCIO_MAX_NAME];
	size_t n_sans; /* DNS names, emails, URIs, then the username otherName, as Go lists them */
};

/* The certificates of a PEM text (at most max), in order, into a new stack (free it with
 * sk_X509_pop_free(s, X509_free)). Returns 0, IG_EINVALID (no certificate, or one that does
 * not parse) or IG_ETOOBIG (over max certificates or FULCIO_MAX_PEM bytes). */
int fulcio_parse_pem(STACK_OF(X509) * *out, const char *pem, size_t len, size_t max,
                     struct error *err);
/* One DER certificate; the bytes must be exactly one certificate. */
int fulcio_parse_der(X509 **out, const unsigned char *der, size_t len, struct error *err);

/* The identity of leaf: issuer from the v2 extension, else v1; SANs that hold a control byte
 * are left out (they cannot match and must not reach a log line). Returns 0, or IG_EINVALID
 * when an issuer extension is malformed. */
int fulcio_identity(struct fulcio_identity *out, X509 *leaf, struct error *err);

/* Verifies that leaf chains, through the untrusted certificates the signature carried (NULL:
 * none), to a Fulcio CA certificate of tr that was valid for issuing at `at` (Unix seconds),
 * every certificate of the chain valid at `at`, at most FULCIO_MAX_CHAIN long, and that leaf
 * is for code signing. Returns 0 with *issuer_out (when not NULL) the certificate that issued
 * leaf (a reference the caller X509_frees), or IG_EINVALID with the reason in why (n bytes). */
int fulcio_verify_chain(X509 **issuer_out, X509 *leaf, STACK_OF(X509) * untrusted,
                        const struct trustroot *tr, int64_t at, char *why, size_t n);

#endif
