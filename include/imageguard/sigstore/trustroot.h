/* The trust material of a verification policy, read from a Secret folder (one file per key, as
 * Kubernetes mounts a Secret). Key names, so that `kubectl create secret generic NAME
 * --from-file=...` makes one:
 *   *.pub                 a signer's public key (PEM: ECDSA P-256/P-384/P-521, Ed25519, RSA)
 *   rekor*.pub            a Rekor (transparency log) public key, not a signer
 *   ctfe*.pub, ctlog*.pub a certificate transparency log key, not a signer
 *   fulcio*.crt.pem       Fulcio CA certificates (PEM, any number: root and intermediates)
 *   trusted_root.json     a Sigstore trusted root (Flux's trustedRootSecretRef key): Fulcio CAs,
 *                         Rekor and CT log keys with their validity windows
 * Other names and dot files (a mounted Secret's `..data`) are ignored. Immutable once loaded:
 * safe to share between threads. */
#ifndef IMAGEGUARD_TRUSTROOT_H
#define IMAGEGUARD_TRUSTROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

struct error;

#define TRUSTROOT_MAX_FILES 64     /* files of a Secret looked at */
#define TRUSTROOT_MAX_ITEMS 32     /* keys of one kind, or CA certificates */
#define TRUSTROOT_MAX_FILE 65536   /* one PEM key or certificate file */
#define TRUSTROOT_MAX_JSON 1048576 /* trusted_root.json */

enum trustroot_kind {
	TRUSTROOT_SIGNER, /* keys that sign images */
	TRUSTROOT_REKOR,  /* transparency log keys (SETs, checkpoints) */
	TRUSTROOT_CTLOG,  /* certificate transparency log keys (SCTs) */
};

/* One public key. Borrowed from the trust root that holds it. */
struct trustkey {
	char name[96];        /* the Secret key it came from ("cosign.pub") */
	EVP_PKEY *pkey;       /* owned by the trust root */
	unsigned char id[32]; /* SHA-256 of the DER SubjectPublicKeyInfo (a log's ID) */
	int64_t not_before;   /* Unix seconds the key is valid from; INT64_MIN: always */
	int64_t not_after;    /* valid until (inclusive); INT64_MAX: no end */
};

/* One Fulcio CA certificate with the window in which it may issue (trusted_root.json's
 * validFor, else open). */
struct trustcert {
	X509 *cert; /* owned by the trust root */
	int64_t not_before, not_after;
};

struct trustroot;

/* An empty trust root for the Secret `secret` (its name, for messages). IG_EFAIL on OOM. */
int trustroot_new(struct trustroot **out, const char *secret, struct error *err);
/* Adds the content of the Secret key `key` (classified by its name as above; an unknown name
 * is ignored). Returns 0, or IG_EINVALID/IG_ETOOBIG with a one-line message
 * "secret 'NAME' key 'KEY': REASON". */
int trustroot_add(struct trustroot *tr, const char *key, const unsigned char *data, size_t len,
                  struct error *err);
/* Seals the trust root: it must hold a signer key or a Fulcio CA with a Rekor key (else
 * IG_EINVALID "secret 'NAME': no public key (*.pub) and no Fulcio and Rekor trust root"), and
 * computes the fingerprint. */
int trustroot_finish(struct trustroot *tr, struct error *err);
/* new + add of every regular file (links followed: a mounted Secret is links) of the folder
 * dir + finish. IG_ENOTFOUND when dir does not exist; every other failure as above. */
int trustroot_load(struct trustroot **out, const char *dir, const char *secret, struct error *err);
void trustroot_free(struct trustroot *tr);

/* The Secret's name (borrowed). */
const char *trustroot_secret(const struct trustroot *tr);
/* "sha256:<hex>" over the canonical material (every key's SubjectPublicKeyInfo and certificate
 * in DER with its kind and window, sorted), not over file names or PEM layout: the result cache
 * key. Borrowed; "" before trustroot_finish. */
const char *trustroot_fingerprint(const struct trustroot *tr);

size_t trustroot_count(const struct trustroot *tr, enum trustroot_kind kind);
/* The i-th key of kind (i < trustroot_count), borrowed. */
const struct trustkey *trustroot_key(const struct trustroot *tr, enum trustroot_kind kind,
                                     size_t i);
/* The key of kind whose id is id, or NULL. */
const struct trustkey *trustroot_find(const struct trustroot *tr, enum trustroot_kind kind,
                                      const unsigned char id[32]);
size_t trustroot_ca_count(const struct trustroot *tr);
/* The i-th Fulcio CA certificate, borrowed. */
const struct trustcert *trustroot_ca(const struct trustroot *tr, size_t i);
/* True when keyless signatures can be checked: a Fulcio CA and a Rekor key. */
bool trustroot_has_keyless(const struct trustroot *tr);

#endif
