/* Rekor transparency log entries as signatures carry them (a Sigstore bundle's tlogEntries, a
 * cosign `dev.sigstore.cosign/bundle` annotation) and their proofs: the signed entry timestamp
 * (SET), the inclusion proof with its signed checkpoint, and the entry body's agreement with
 * the signature it logs. Rekor v1 entry kinds: hashedrekord 0.0.1, dsse 0.0.1, intoto 0.0.2. */
#ifndef IMAGEGUARD_REKOR_H
#define IMAGEGUARD_REKOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imageguard/sigstore/merkle.h"

struct error;
struct json_t;
struct trustroot;

#define REKOR_MAX_BODY (256 * 1024)  /* a canonicalized body */
#define REKOR_MAX_CHECKPOINT 8192    /* a checkpoint's signed note */
#define REKOR_MAX_SIGNATURE 1024     /* a SET or a checkpoint signature */
#define REKOR_MAX_NOTE_SIGNATURES 8  /* signature lines of one checkpoint looked at */
#define REKOR_MAX_ANNOTATION 1048576 /* a cosign bundle annotation */

struct rekor_entry {
	int64_t log_index;
	unsigned char log_id[32]; /* SHA-256 of the log's public key */
	char kind[32], version[16];
	int64_t integrated_time; /* Unix seconds, as the SET signs it */
	bool has_set;
	unsigned char set[REKOR_MAX_SIGNATURE];
	size_t set_len;
	bool has_proof;
	int64_t proof_index, tree_size;
	unsigned char root[32];
	unsigned char hashes[MERKLE_MAX_PROOF][32];
	size_t n_hashes;
	char *checkpoint;    /* the signed note (owned), NULL without one */
	unsigned char *body; /* the canonicalized body (owned) */
	size_t body_len;
};

/* Reads one bundle tlogEntry object (protobuf JSON: int64 as strings or numbers, bytes as
 * base64). kindVersion, logIndex, logId, canonicalizedBody required; integratedTime,
 * inclusionPromise and inclusionProof (logIndex, rootHash, treeSize, hashes at most
 * MERKLE_MAX_PROOF, checkpoint.envelope) optional. Returns 0 with out owning its copies
 * (rekor_entry_release), IG_EINVALID or IG_ETOOBIG with the reason in err. */
int rekor_entry_from_json(struct rekor_entry *out, const struct json_t *entry, struct error *err);
/* Reads cosign's bundle annotation {"SignedEntryTimestamp", "Payload": {"body",
 * "integratedTime", "logIndex", "logID"}}; kind and version come from the body. */
int rekor_entry_from_cosign(struct rekor_entry *out, const char *data, size_t len,
                            struct error *err);
void rekor_entry_release(struct rekor_entry *e);

/* True when the SET is a signature, by the Rekor key of the trust root whose id is the entry's
 * log ID and that was valid at the integrated time, over the canonical JSON
 * {"body","integratedTime","logID","logIndex"}. */
bool rekor_verify_set(const struct rekor_entry *e, const struct trustroot *tr);

/* Verifies the inclusion proof: the checkpoint is signed by a Rekor key of the trust root
 * (the signature's 4-byte key hint is the key's ID prefix), names the proof's tree size and
 * root hash, and the proof leads from the body's leaf hash to that root. Returns 0, or
 * IG_EINVALID with the reason in why (n bytes). */
int rekor_verify_proof(const struct rekor_entry *e, const struct trustroot *tr, char *why,
                       size_t n);

/* What a log entry must commit to: the signature, and the SHA-256 of what was signed
 * (hashedrekord: the signed message, or the artifact digest of a message signature) or of
 * the DSSE payload (dsse, intoto). */
struct rekor_claim {
	const unsigned char *sig;
	size_t sig_len;
	const unsigned char *message_digest; /* 32 bytes, hashedrekord */
	const unsigned char *payload_digest; /* 32 bytes, dsse and intoto; NULL: not DSSE */
};

/* Checks that the entry's body is of the entry's kind and version and logs exactly claim.
 * Returns 0, or IG_EINVALID with the reason in why. */
int rekor_check_body(const struct rekor_entry *e, const struct rekor_claim *claim, char *why,
                     size_t n);

/* A checkpoint (signed note): origin, tree size, root hash, then the signature lines. */
struct rekor_checkpoint {
	char origin[256];
	uint64_t size;
	unsigned char root[32];
	size_t note_len; /* bytes of the envelope that the signatures cover */
};

/* Parses a checkpoint envelope. Returns 0, IG_EINVALID or IG_ETOOBIG with the reason in err. */
int rekor_checkpoint_parse(struct rekor_checkpoint *out, const char *env, size_t len,
                           struct error *err);

#endif
