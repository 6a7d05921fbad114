/* Transparency log proofs (merkle, rekor): inclusion proofs against RFC 6962's own definitions
 * of the tree hash and the audit path, for every leaf of every tree up to 40 leaves, each proof
 * refused once any hash, the index or the size changes; checkpoint notes; log entries read
 * strictly with their caps. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/sigstore/merkle.h"
#include "imageguard/sigstore/rekor.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/util/error.h"

#define MAX_LEAVES 40

static unsigned char leaves[MAX_LEAVES][32];

static void node(unsigned char out[32], const unsigned char l[32], const unsigned char r[32])
{
	unsigned char in[65];

	in[0] = 1;
	memcpy(in + 1, l, 32);
	memcpy(in + 33, r, 32);
	sigcrypto_sha256(out, in, sizeof(in));
}

static size_t split(size_t n) /* the largest power of two below n */
{
	size_t k = 1;

	while (k * 2 < n)
		k *= 2;
	return k;
}

/* RFC 6962 §2.1: MTH(D[lo:hi]). */
static void mth(unsigned char out[32], size_t lo, size_t hi)
{
	unsigned char l[32], r[32];
	size_t k;

	if (hi - lo == 1) {
		memcpy(out, leaves[lo], 32);
		return;
	}
	k = split(hi - lo);
	mth(l, lo, lo + k);
	mth(r, lo + k, hi);
	node(out, l, r);
}

/* RFC 6962 §2.1.1: PATH(m, D[lo:hi]), appended to path. */
static void audit_path(unsigned char (*path)[32], size_t *n, size_t m, size_t lo, size_t hi)
{
	size_t k;

	if (hi - lo == 1)
		return;
	k = split(hi - lo);
	if (m < k) {
		audit_path(path, n, m, lo, lo + k);
		mth(path[(*n)++], lo + k, hi);
	} else {
		audit_path(path, n, m - k, lo + k, hi);
		mth(path[(*n)++], lo, lo + k);
	}
}

START_TEST(every_proof_of_small_trees)
{
	unsigned char root[32], bigger[32], path[MERKLE_MAX_PROOF][32];
	char leaf[32];

	for (size_t i = 0; i < MAX_LEAVES; i++) {
		snprintf(leaf, sizeof(leaf), "leaf %zu", i);
		ck_assert_int_eq(merkle_leaf_hash(leaves[i], leaf, strlen(leaf)), 0);
	}
	for (size_t size = 1; size <= MAX_LEAVES; size++) {
		mth(root, 0, size);
		for (size_t m = 0; m < size; m++) {
			size_t n = 0;

			audit_path(path, &n, m, 0, size);
			ck_assert_msg(merkle_verify_inclusion(leaves[m], m, size,
			                                      (const unsigned char(*)[32])path, n,
			                                      root),
			              "leaf %zu of %zu", m, size);
			ck_assert(!merkle_verify_inclusion(leaves[m], m + 1, size,
			                                   (const unsigned char(*)[32])path, n,
			                                   root) ||
			          m + 1 >= size);
			/* the proof does not bind the size (the checkpoint does), but a bigger
			 * tree's root is another hash */
			if (size < MAX_LEAVES) {
				mth(bigger, 0, size + 1);
				ck_assert(!merkle_verify_inclusion(leaves[m], m, size + 1,
				                                   (const unsigned char(*)[32])path,
				                                   n, bigger));
			}
			ck_assert(!merkle_verify_inclusion(leaves[(m + 1) % MAX_LEAVES], m, size,
			                                   (const unsigned char(*)[32])path, n,
			                                   root));
			for (size_t k = 0; k < n; k++) {
				path[k][k % 32] ^= 0x80;
				ck_assert(!merkle_verify_inclusion(
				    leaves[m], m, size, (const unsigned char(*)[32])path, n, root));
				path[k][k % 32] ^= 0x80;
			}
			if (n)
				ck_assert(!merkle_verify_inclusion(leaves[m], m, size,
				                                   (const unsigned char(*)[32])path,
				                                   n - 1, root));
		}
	}
}
END_TEST

START_TEST(out_of_range_proofs)
{
	unsigned char h[32] = {0}, root[32], proof[MERKLE_MAX_PROOF + 1][32];

	memset(proof, 0, sizeof(proof));
	ck_assert(!merkle_verify_inclusion(h, 0, 0, NULL, 0, h));
	ck_assert(!merkle_verify_inclusion(h, 5, 5, NULL, 0, h));
	ck_assert(!merkle_verify_inclusion(h, 0, UINT64_MAX, (const unsigned char(*)[32])proof,
	                                   MERKLE_MAX_PROOF + 1, h));
	/* a one-leaf tree: the leaf hash is the root, no proof */
	ck_assert(merkle_verify_inclusion(h, 0, 1, NULL, 0, h));
	/* an index at the tree size is past the last leaf, even with a proof that the walk would
	 * hash to the root (index 2 of 2: left of proof[0], then right of proof[1]) */
	memset(proof[0], 0xaa, 32);
	memset(proof[1], 0xbb, 32);
	node(root, h, proof[0]);
	node(root, proof[1], root);
	ck_assert(!merkle_verify_inclusion(h, 2, 2, (const unsigned char(*)[32])proof, 2, root));
}
END_TEST

struct cp_case {
	const char *text;
	int code;
	uint64_t size;
};

static const struct cp_case checkpoints[] = {
    {"rekor.sigstore.dev - 1193050959916656506\n53604735\n"
     "nd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\n\n\xe2\x80\x94 rekor.sigstore.dev x\n",
     0, 53604735},
    {"origin\n1\nnd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\nTimestamp: 1\n\nsig\n", 0, 1},
    {"origin\n1\nnd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\n", IG_EINVALID, 0},
    {"origin\n-1\nnd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\n\nx\n", IG_EINVALID, 0},
    {"origin\n1x\nnd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\n\nx\n", IG_EINVALID, 0},
    {"origin\n1\nshort\n\nx\n", IG_EINVALID, 0},
    {"\n1\nnd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\n\nx\n", IG_EINVALID, 0},
    {"origin\n99999999999999999999999\nnd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\n\nx\n",
     IG_EINVALID, 0},
};

START_TEST(checkpoint_notes)
{
	const struct cp_case *c = &checkpoints[_i];
	struct rekor_checkpoint cp;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(rekor_checkpoint_parse(&cp, c->text, strlen(c->text), &err), c->code);
	if (c->code == 0) {
		ck_assert_uint_eq(cp.size, c->size);
		ck_assert_uint_eq(cp.root[0], 0x9d);
		ck_assert_int_eq(c->text[cp.note_len], '\n'); /* the note ends before the blank */
	}
}
END_TEST

static const char *const entries[] = {
    /* 0: unknown member */
    "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
    "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},"
    "\"canonicalizedBody\":\"e30=\",\"extra\":1}",
    /* 1: log id of 31 bytes */
    "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgA==\"},"
    "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},"
    "\"canonicalizedBody\":\"e30=\"}",
    /* 2: negative index */
    "{\"logIndex\":\"-1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
    "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},"
    "\"canonicalizedBody\":\"e30=\"}",
    /* 3: a proof hash that is not 32 bytes */
    "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
    "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},"
    "\"canonicalizedBody\":\"e30=\",\"inclusionProof\":{\"treeSize\":\"2\",\"rootHash\":"
    "\"nd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\",\"hashes\":[\"AA==\"]}}",
};

START_TEST(entries_read_strictly)
{
	json_t *j = json_loads(entries[_i], 0, NULL);
	struct rekor_entry e;
	struct error err = ERROR_INIT;

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(rekor_entry_from_json(&e, j, &err), IG_EINVALID);
	ck_assert_ptr_null(e.body);
	json_decref(j);
}
END_TEST

/* Zeros and empty lists are left out by protobuf JSON: a one-leaf proof at index 0. */
START_TEST(entry_defaults_and_proof_cap)
{
	json_t *j = json_loads(
	    "{\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
	    "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},"
	    "\"canonicalizedBody\":\"e30=\",\"integratedTime\":null,\"inclusionProof\":"
	    "{\"treeSize\":\"1\",\"rootHash\":\"nd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY=\","
	    "\"checkpoint\":{\"envelope\":\"x\"}}}",
	    0, NULL);
	json_t *hashes = json_array();
	struct rekor_entry e;
	struct error err = ERROR_INIT;

	ck_assert_msg(rekor_entry_from_json(&e, j, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(e.log_index, 0);
	ck_assert_int_eq(e.proof_index, 0);
	ck_assert_uint_eq(e.n_hashes, 0);
	ck_assert_int_eq(e.integrated_time, -1);
	ck_assert_uint_eq(e.body_len, 2);
	rekor_entry_release(&e);
	for (int i = 0; i <= MERKLE_MAX_PROOF; i++)
		json_array_append_new(hashes,
		                      json_string("nd/V1IEweXlu0reIQGaGK1d51xW4Rj8fUyTrmcUkrMY="));
	json_object_set_new(json_object_get(j, "inclusionProof"), "hashes", hashes);
	ck_assert_int_eq(rekor_entry_from_json(&e, j, &err), IG_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "64"));
	json_decref(j);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rekor");
	TCase *tc = tcase_create("proofs");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_proof_of_small_trees);
	tcase_add_test(tc, out_of_range_proofs);
	tcase_add_loop_test(tc, checkpoint_notes, 0, sizeof(checkpoints) / sizeof(checkpoints[0]));
	tcase_add_loop_test(tc, entries_read_strictly, 0, sizeof(entries) / sizeof(entries[0]));
	tcase_add_test(tc, entry_defaults_and_proof_cap);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
