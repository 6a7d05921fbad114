/* Unit tests for the listing memo kept between `run` passes: a packed listing comes back as
 * an identical packed copy, keys separate URL from body, entries unused for a whole pass go,
 * and the byte cap and unpacked listings keep nothing. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/listmemo.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/util/error.h"

/* A packed listing of the n strings in bytes (total bytes, NUL-separated). */
static void packed(struct strvec *tags, struct tagarena *a, const char *bytes, size_t total,
                   size_t n)
{
	*tags = (struct strvec)STRVEC_INIT;
	*a = (struct tagarena)TAGARENA_INIT;
	ck_assert_int_eq(tagarena_load_packed(a, tags, bytes, total, n), 0);
	ck_assert(tagarena_is_packed(a, tags));
}

static void drop(struct strvec *tags, struct tagarena *a)
{
	free(tags->items);
	*tags = (struct strvec)STRVEC_INIT;
	tagarena_release(a);
}

static void key_of(unsigned char k[LISTMEMO_KEY_LEN], const char *url, const char *body)
{
	listmemo_key(k, url, body, strlen(body));
}

START_TEST(round_trip)
{
	static const char bytes[] = "1.0.0\0001.1.0\0latest";
	struct listmemo *m;
	struct strvec tags, got = STRVEC_INIT;
	struct tagarena a, ga = TAGARENA_INIT;
	unsigned char k[LISTMEMO_KEY_LEN];

	ck_assert_int_eq(listmemo_new(&m), 0);
	key_of(k, "http://r/v2/a/tags/list?n=1000", "{\"tags\":[\"latest\",\"1.1.0\",\"1.0.0\"]}");
	ck_assert_int_eq(listmemo_get(m, k, &got, &ga), 0);
	packed(&tags, &a, bytes, sizeof(bytes), 3);
	listmemo_put(m, k, &a, &tags);
	ck_assert_uint_eq(listmemo_len(m, NULL), 1);
	drop(&tags, &a);
	ck_assert_int_eq(listmemo_get(m, k, &got, &ga), 1);
	ck_assert_uint_eq(got.len, 3);
	ck_assert_str_eq(got.items[0], "1.0.0");
	ck_assert_str_eq(got.items[1], "1.1.0");
	ck_assert_str_eq(got.items[2], "latest");
	ck_assert_ptr_null(got.items[3]);
	ck_assert(tagarena_is_packed(&ga, &got)); /* what a pass packs and unpacks */
	drop(&got, &ga);
	listmemo_free(m);
}
END_TEST

START_TEST(keys_separate_url_and_body)
{
	unsigned char a[LISTMEMO_KEY_LEN], b[LISTMEMO_KEY_LEN], c[LISTMEMO_KEY_LEN],
	    zero[LISTMEMO_KEY_LEN] = {0};

	key_of(a, "http://r/v2/ab", "c");
	key_of(b, "http://r/v2/a", "bc");
	key_of(c, "http://r/v2/ab", "c");
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
	ck_assert(memcmp(a, c, sizeof(a)) == 0);
	ck_assert(memcmp(a, zero, sizeof(a)) != 0);
	key_of(b, "http://r/v2/ab", "d");
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
}
END_TEST

START_TEST(unused_entries_go_after_a_pass)
{
	static const char bytes[] = "a\0b";
	struct listmemo *m;
	struct strvec tags, got = STRVEC_INIT;
	struct tagarena a, ga = TAGARENA_INIT;
	unsigned char k1[LISTMEMO_KEY_LEN], k2[LISTMEMO_KEY_LEN];

	ck_assert_int_eq(listmemo_new(&m), 0);
	key_of(k1, "u1", "b1");
	key_of(k2, "u2", "b2");
	packed(&tags, &a, bytes, sizeof(bytes), 2);
	listmemo_put(m, k1, &a, &tags);
	listmemo_put(m, k2, &a, &tags);
	listmemo_put(m, k2, &a, &tags); /* again: still one entry */
	drop(&tags, &a);
	ck_assert_uint_eq(listmemo_len(m, NULL), 2);
	listmemo_next_pass(m); /* pass 1: both were used in pass 0 */
	ck_assert_uint_eq(listmemo_len(m, NULL), 2);
	ck_assert_int_eq(listmemo_get(m, k1, &got, &ga), 1);
	drop(&got, &ga);
	listmemo_next_pass(m); /* pass 2: k2 was not listed in pass 1 */
	ck_assert_uint_eq(listmemo_len(m, NULL), 1);
	ck_assert_int_eq(listmemo_get(m, k2, &got, &ga), 0);
	ck_assert_int_eq(listmemo_get(m, k1, &got, &ga), 1);
	drop(&got, &ga);
	listmemo_next_pass(m);
	listmemo_next_pass(m);
	ck_assert_uint_eq(listmemo_len(m, NULL), 0);
	listmemo_free(m);
}
END_TEST

START_TEST(many_entries_grow_the_table)
{
	static const char bytes[] = "v1";
	struct listmemo *m;
	struct strvec tags, got = STRVEC_INIT;
	struct tagarena a, ga = TAGARENA_INIT;
	unsigned char k[LISTMEMO_KEY_LEN];
	char url[32];

	ck_assert_int_eq(listmemo_new(&m), 0);
	packed(&tags, &a, bytes, sizeof(bytes), 1);
	for (int i = 0; i < 1000; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		key_of(k, url, "{}");
		listmemo_put(m, k, &a, &tags);
	}
	drop(&tags, &a);
	ck_assert_uint_eq(listmemo_len(m, NULL), 1000);
	for (int i = 0; i < 1000; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		key_of(k, url, "{}");
		ck_assert_int_eq(listmemo_get(m, k, &got, &ga), 1);
		ck_assert_str_eq(got.items[0], "v1");
		drop(&got, &ga);
	}
	listmemo_free(m);
}
END_TEST

START_TEST(byte_cap_and_unpacked_keep_nothing)
{
	size_t big = (size_t)1 << 20, bytes = 0, n = 0;
	char *block = malloc(big);
	struct listmemo *m;
	struct strvec tags, loose = STRVEC_INIT;
	struct tagarena a, la = TAGARENA_INIT;
	unsigned char k[LISTMEMO_KEY_LEN];
	char url[32];

	ck_assert_ptr_nonnull(block);
	memset(block, 'x', big - 1);
	block[big - 1] = '\0';
	ck_assert_int_eq(listmemo_new(&m), 0);
	packed(&tags, &a, block, big, 1);
	for (int i = 0; i < 40; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		key_of(k, url, "{}");
		listmemo_put(m, k, &a, &tags);
	}
	n = listmemo_len(m, &bytes);
	ck_assert_uint_le(bytes, LISTMEMO_BYTES_MAX);
	ck_assert_uint_eq(n, LISTMEMO_BYTES_MAX / big);
	drop(&tags, &a);
	/* a listing whose strings are not one packed block is never kept */
	ck_assert_int_eq(strvec_push(&loose, "a"), 0);
	key_of(k, "loose", "{}");
	listmemo_put(m, k, &la, &loose);
	ck_assert_uint_eq(listmemo_len(m, NULL), n);
	strvec_release(&loose);
	/* nor is anything under the all-zero key (what a failed digest leaves) */
	memset(k, 0, sizeof(k));
	packed(&tags, &a, "v", 2, 1);
	listmemo_put(m, k, &a, &tags);
	drop(&tags, &a);
	ck_assert_uint_eq(listmemo_len(m, NULL), n);
	free(block);
	listmemo_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("listmemo");
	TCase *tc = tcase_create("listmemo");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, keys_separate_url_and_body);
	tcase_add_test(tc, unused_entries_go_after_a_pass);
	tcase_add_test(tc, many_entries_grow_the_table);
	tcase_add_test(tc, byte_cap_and_unpacked_keep_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
