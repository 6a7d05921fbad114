/* Merkle inclusion proofs (RFC 9162 §2.1.3.2): the inner part of the path follows the bits of
 * the index, the border part climbs the right edge of the tree. */
#include <openssl/evp.h>
#include <string.h>

#include "imageguard/sigstore/merkle.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/util/error.h"

int merkle_leaf_hash(unsigned char out[32], const void *leaf, size_t len)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int n = 0;
	int ok;

	if (!ctx)
		return IG_EFAIL;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	     EVP_DigestUpdate(ctx, "\0", 1) == 1 && EVP_DigestUpdate(ctx, leaf, len) == 1 &&
	     EVP_DigestFinal_ex(ctx, out, &n) == 1 && n == 32;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : IG_EFAIL;
}

/* out = SHA-256(0x01 || left || right); out may alias either input. */
static bool hash_children(unsigned char out[32], const unsigned char *left,
                          const unsigned char *right)
{
	unsigned char in[65];

	in[0] = 0x01;
	memcpy(in + 1, left, 32);
	memcpy(in + 33, right, 32);
	return sigcrypto_sha256(out, in, sizeof(in)) == 0;
}

static unsigned bit_length(uint64_t v)
{
	unsigned n = 0;

	for (; v; v >>= 1)
		n++;
	return n;
}

static unsigned ones(uint64_t v)
{
	unsigned n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

bool merkle_verify_inclusion(const unsigned char leaf_hash[32], uint64_t index, uint64_t tree_size,
                             const unsigned char (*proof)[32], size_t n,
                             const unsigned char root[32])
{
	unsigned char h[32];
	unsigned inner, border;

	if (index >= tree_size || n > MERKLE_MAX_PROOF)
		return false;
	inner = bit_length(index ^ (tree_size - 1));
	border = ones(index >> inner);
	if (n != (size_t)inner + border)
		return false;
	memcpy(h, leaf_hash, 32);
	for (unsigned i = 0; i < inner; i++) {
		bool right = (index >> i) & 1;

		if (!hash_children(h, right ? proof[i] : h, right ? h : proof[i]))
			return false;
	}
	for (unsigned i = inner; i < n; i++)
		if (!hash_children(h, proof[i], h))
			return false;
	return sigcrypto_equal(h, root, 32);
}
