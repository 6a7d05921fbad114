/* RFC 6962 / RFC 9162 Merkle tree inclusion proofs, as transparency logs (Rekor) publish them:
 * leaves hashed SHA-256(0x00 || leaf), nodes SHA-256(0x01 || left || right). */
#ifndef IMAGEGUARD_MERKLE_H
#define IMAGEGUARD_MERKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MERKLE_MAX_PROOF 64 /* hashes of one proof: a tree of 2^63 leaves needs 63 */

/* out = SHA-256(0x00 || leaf). Returns 0 or IG_EFAIL. */
int merkle_leaf_hash(unsigned char out[32], const void *leaf, size_t len);

/* True when the proof (n hashes of 32 bytes) proves that the leaf with hash leaf_hash is at
 * index of a tree of tree_size leaves whose root is root (RFC 9162 §2.1.3.2). False for an
 * index outside the tree, a proof of the wrong length or longer than MERKLE_MAX_PROOF. */
bool merkle_verify_inclusion(const unsigned char leaf_hash[32], uint64_t index, uint64_t tree_size,
                             const unsigned char (*proof)[32], size_t n,
                             const unsigned char root[32]);

#endif
