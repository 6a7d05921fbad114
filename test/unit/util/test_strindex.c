/* strindex: positions found by key (whole or as a + sep + b), duplicates reported with the
 * first position, growth past many keys, nothing found in an empty index. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/strindex.h"

#define N 5000

static char keys[N][32];

static const char *key_at(const void *ctx, size_t i)
{
	return ((const char(*)[32])ctx)[i];
}

START_TEST(find_split_and_whole)
{
	struct strindex ix = STRINDEX_INIT;
	size_t dup;

	ck_assert_uint_eq(strindex_find(&ix, "ns", "/", "a", key_at, keys), STRINDEX_NONE);
	for (size_t i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "ns%zu/app-%zu", i % 7, i);
		ck_assert_int_eq(strindex_add(&ix, i, key_at, keys, &dup), 0);
		ck_assert_uint_eq(dup, STRINDEX_NONE);
	}
	for (size_t i = 0; i < N; i++) {
		char ns[16], name[16];

		snprintf(ns, sizeof(ns), "ns%zu", i % 7);
		snprintf(name, sizeof(name), "app-%zu", i);
		ck_assert_uint_eq(strindex_find(&ix, ns, "/", name, key_at, keys), i);
		ck_assert_uint_eq(strindex_find(&ix, keys[i], NULL, NULL, key_at, keys), i);
	}
	/* near misses are not found */
	ck_assert_uint_eq(strindex_find(&ix, "ns0", "/", "app-1", key_at, keys), STRINDEX_NONE);
	ck_assert_uint_eq(strindex_find(&ix, "ns0/app", "-", "0", key_at, keys), 0);
	ck_assert_uint_eq(strindex_find(&ix, "ns0/app-0", "/", "", key_at, keys), STRINDEX_NONE);
	ck_assert_uint_eq(strindex_find(&ix, "ns0/app-", NULL, NULL, key_at, keys), STRINDEX_NONE);
	ck_assert_uint_eq(ix.len, N);
	strindex_release(&ix);
	ck_assert_uint_eq(ix.cap, 0);
}
END_TEST

START_TEST(duplicates_keep_the_first)
{
	struct strindex ix = STRINDEX_INIT;
	size_t dup;

	snprintf(keys[0], sizeof(keys[0]), "apps/web");
	snprintf(keys[1], sizeof(keys[1]), "apps/api");
	snprintf(keys[2], sizeof(keys[2]), "apps/web");
	ck_assert_int_eq(strindex_add(&ix, 0, key_at, keys, &dup), 0);
	ck_assert_int_eq(strindex_add(&ix, 1, key_at, keys, &dup), 0);
	ck_assert_int_eq(strindex_add(&ix, 2, key_at, keys, &dup), 0);
	ck_assert_uint_eq(dup, 0);
	ck_assert_uint_eq(ix.len, 2);
	ck_assert_uint_eq(strindex_find(&ix, "apps", "/", "web", key_at, keys), 0);
	strindex_release(&ix);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strindex");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, find_split_and_whole);
	tcase_add_test(tc, duplicates_keep_the_first);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
