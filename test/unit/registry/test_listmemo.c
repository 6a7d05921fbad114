/* Unit tests for the listing memo kept between `run` passes: a packed listing lends its block
 * and comes back from it, keys separate URL from body, entries unused for a whole pass go, and
 * the byte cap, unpacked or already lent listings and the zero key keep nothing. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/listmemo.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/util/error.h"

/* A listing as registry_list_tags leaves it: the tags of a page body, packed into one block. */
static void make(struct strvec *tags, struct tagarena *a, const char *body)
{
	struct error err = ERROR_INIT;
	struct taglist *t = NULL;

	*tags = (struct strvec)STRVEC_INIT;
	*a = (struct tagarena)TAGARENA_INIT;
	ck_assert_int_eq(taglist_new(&t, tags, "r.example/a", NULL, &err), 0);
	taglist_set_arena(t, a);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, body, strlen(body), &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	taglist_free(t);
	ck_assert_int_eq(tagarena_compact(a, tags, 65536), 0);
	ck_assert(tagarena_is_packed(a, tags));
}

static void drop(struct strvec *tags, struct tagarena *a)
{
	free(tags->items);
	*tags = (struct strvec)STRVEC_INIT;
	tagarena_release(a); /* a lent arena frees only its own array */
}

static void key_of(unsigned char k[LISTMEMO_KEY_LEN], const char *url, const char *body)
{
	ck_assert(listmemo_key(k, url, body, strlen(body)));
}

#define BODY "{\"tags\":[\"1.0.0\",\"1.1.0\",\"latest\"]}"

START_TEST(round_trip)
{
	struct listmemo *m;
	struct strvec tags, got = STRVEC_INIT;
	struct tagarena a, ga = TAGARENA_INIT;
	unsigned char k[LISTMEMO_KEY_LEN];

	ck_assert_int_eq(listmemo_new(&m), 0);
	key_of(k, "http://r/v2/a/tags/list?n=1000", BODY);
	ck_assert_int_eq(listmemo_get(m, k, &got, &ga), 0);
	make(&tags, &a, BODY);
	listmemo_put(m, k, &a, &tags);
	ck_assert_uint_eq(listmemo_len(m, NULL), 1);
	ck_assert(a.lent); /* the memo took the block; the listing still reads it */
	ck_assert_str_eq(tags.items[2], "latest");
	drop(&tags, &a);
	for (int round = 0; round < 2; round++) { /* each hit lends the same block */
		ck_assert_int_eq(listmemo_get(m, k, &got, &ga), 1);
		ck_assert_uint_eq(got.len, 3);
		ck_assert_str_eq(got.items[0], "1.0.0");
		ck_assert_str_eq(got.items[1], "1.1.0");
		ck_assert_str_eq(got.items[2], "latest");
		ck_assert_ptr_null(got.items[3]);
		ck_assert(tagarena_is_packed(&ga, &got) &&
		          ga.lent); /* what a pass packs and unpacks */
		drop(&got, &ga);
	}
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
	struct listmemo *m;
	struct strvec tags, got = STRVEC_INIT;
	struct tagarena a, ga = TAGARENA_INIT;
	unsigned char k1[LISTMEMO_KEY_LEN], k2[LISTMEMO_KEY_LEN];

	ck_assert_int_eq(listmemo_new(&m), 0);
	key_of(k1, "u1", "b1");
	key_of(k2, "u2", "b2");
	make(&tags, &a, BODY);
	listmemo_put(m, k1, &a, &tags);
	drop(&tags, &a);
	make(&tags, &a, BODY);
	listmemo_put(m, k2, &a, &tags);
	drop(&tags, &a);
	make(&tags, &a, BODY);
	listmemo_put(m, k2, &a, &tags); /* again: still one entry, this listing keeps its block */
	ck_assert(!a.lent);
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
	struct listmemo *m;
	struct strvec tags, got = STRVEC_INIT;
	struct tagarena a, ga = TAGARENA_INIT;
	unsigned char k[LISTMEMO_KEY_LEN];
	char url[32], body[64];

	ck_assert_int_eq(listmemo_new(&m), 0);
	for (int i = 0; i < 1000; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		snprintf(body, sizeof(body), "{\"tags\":[\"v%d\"]}", i);
		key_of(k, url, body);
		make(&tags, &a, body);
		listmemo_put(m, k, &a, &tags);
		drop(&tags, &a);
	}
	ck_assert_uint_eq(listmemo_len(m, NULL), 1000);
	for (int i = 0; i < 1000; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		snprintf(body, sizeof(body), "{\"tags\":[\"v%d\"]}", i);
		key_of(k, url, body);
		ck_assert_int_eq(listmemo_get(m, k, &got, &ga), 1);
		snprintf(body, sizeof(body), "v%d", i);
		ck_assert_str_eq(got.items[0], body);
		drop(&got, &ga);
	}
	listmemo_free(m);
}
END_TEST

START_TEST(caps_and_what_is_never_kept)
{
	struct listmemo *m;
	struct strvec tags, loose = STRVEC_INIT;
	struct tagarena a, la = TAGARENA_INIT;
	unsigned char k[LISTMEMO_KEY_LEN];
	size_t one, bytes = 0;
	char url[32];

	ck_assert_int_eq(listmemo_new(&m), 0);
	make(&tags, &a, BODY);
	one = a.used;
	drop(&tags, &a);
	listmemo_set_cap(m, 3 * one);
	for (int i = 0; i < 5; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		key_of(k, url, BODY);
		make(&tags, &a, BODY);
		listmemo_put(m, k, &a, &tags);
		ck_assert(a.lent == (i < 3));
		drop(&tags, &a);
	}
	ck_assert_uint_eq(listmemo_len(m, &bytes), 3);
	ck_assert_uint_eq(bytes, 3 * one);
	listmemo_set_cap(m, one); /* below what is held: nothing new */
	key_of(k, "lower", BODY);
	make(&tags, &a, BODY);
	listmemo_put(m, k, &a, &tags);
	ck_assert(!a.lent);
	drop(&tags, &a);
	listmemo_set_cap(m, LISTMEMO_BYTES_MAX);
	/* a listing whose strings are not one packed block */
	ck_assert_int_eq(strvec_push(&loose, "a"), 0);
	key_of(k, "loose", "{}");
	listmemo_put(m, k, &la, &loose);
	strvec_release(&loose);
	/* the all-zero key (what a failed digest leaves) */
	memset(k, 0, sizeof(k));
	make(&tags, &a, BODY);
	listmemo_put(m, k, &a, &tags);
	ck_assert(!a.lent);
	/* a lent listing under a second key */
	key_of(k, "first", BODY);
	listmemo_put(m, k, &a, &tags);
	ck_assert(a.lent);
	key_of(k, "second", BODY);
	listmemo_put(m, k, &a, &tags);
	drop(&tags, &a);
	ck_assert_uint_eq(listmemo_len(m, NULL), 4);
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
	tcase_add_test(tc, caps_and_what_is_never_kept);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
