/* The cryptography every Sigstore format shares, over OpenSSL's libcrypto: strict base64,
 * SHA-2 digests in hex, PEM public keys, and signature checks for ECDSA (P-256, P-384, P-521),
 * Ed25519 and RSA (PKCS#1 v1.5 and PSS), as cosign and the Sigstore clients make them. */
#ifndef IMAGEGUARD_SIGCRYPTO_H
#define IMAGEGUARD_SIGCRYPTO_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>

struct buf;
struct error;

/* Decodes base64 (standard or URL-safe alphabet, padding optional, line breaks skipped as Go's
 * decoder skips them) into out
 * (replacing its content; out->max is the cap). Returns 0, IG_EINVALID (not base64) or
 * IG_ETOOBIG. */
int sigcrypto_b64decode(struct buf *out, const char *in, size_t len);
/* Appends the standard base64 (with padding) of data to out. Returns 0 or a buf_* code. */
int sigcrypto_b64encode(struct buf *out, const unsigned char *data, size_t len);

/* out[32] = SHA-256 of data. Returns 0 or IG_EFAIL. */
int sigcrypto_sha256(unsigned char out[32], const void *data, size_t len);
/* Lower-case hex of n bytes into out (2n+1 bytes). */
void sigcrypto_hex(char *out, const unsigned char *md, size_t n);
/* Reads 2n hex digits (either case) into out; false when s is not exactly that. */
bool sigcrypto_unhex(unsigned char *out, size_t n, const char *s, size_t len);
/* True when a and b hold the same n bytes, in time independent of where they differ. */
bool sigcrypto_equal(const void *a, const void *b, size_t n);

/* A public key from PEM ("PUBLIC KEY") or DER SubjectPublicKeyInfo bytes.
 * Only ECDSA on P-256/P-384/P-521, Ed25519 and RSA of 2048 bits or more are accepted. Returns
 * 0 with *out owned by the caller (EVP_PKEY_free), IG_EINVALID with a short reason in err. */
int sigcrypto_key_parse(EVP_PKEY **out, const unsigned char *data, size_t len, struct error *err);
/* The SHA-256 of the key's DER SubjectPublicKeyInfo (Rekor's log ID, the key's identity).
 * Returns 0 or IG_EFAIL. */
int sigcrypto_key_id(unsigned char out[32], EVP_PKEY *key);
/* A short name of the key type ("ecdsa-p256", "ed25519", "rsa-3072"), static or in buf. */
const char *sigcrypto_key_type(char *buf, size_t n, EVP_PKEY *key);

/* True when sig is a valid signature of msg by key: ECDSA (DER) over SHA-256, or over the
 * curve's own hash for P-384/P-521; Ed25519 over msg itself; RSA PKCS#1 v1.5 or PSS over
 * SHA-256. Every failure is false (OpenSSL's error queue is cleared). */
bool sigcrypto_verify(EVP_PKEY *key, const void *msg, size_t len, const unsigned char *sig,
                      size_t sig_len);
/* The same for a signature whose message is known only by its SHA-256 digest (a Sigstore
 * message signature over an artifact that is not at hand). Ed25519 cannot be checked this way
 * (it hashes inside): false. */
bool sigcrypto_verify_prehashed(EVP_PKEY *key, const unsigned char digest[32],
                                const unsigned char *sig, size_t sig_len);

#endif
