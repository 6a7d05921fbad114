/* vec: room for one more, doubling from the minimum, and no size overflow. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "imageguard/util/vec.h"

START_TEST(grows_by_doubling)
{
	int *items = NULL, *p;
	size_t cap = 0, len = 0;

	for (int i = 0; i < 1000; i++) {
		ck_assert_ptr_nonnull(p = vec_reserve(items, &cap, len, sizeof(*items), 8));
		items = p;
		items[len++] = i;
		ck_assert_uint_gt(cap, len - 1);
	}
	ck_assert_uint_eq(cap, 1024);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(items[i], i);
	/* room already there: the same pointer, the same capacity */
	ck_assert_ptr_eq(vec_reserve(items, &cap, 5, sizeof(*items), 8), items);
	ck_assert_uint_eq(cap, 1024);
	free(items);
}
END_TEST

START_TEST(first_capacity)
{
	char *items = NULL;
	size_t cap = 0;

	ck_assert_ptr_nonnull(items = vec_reserve(items, &cap, 0, 1, 16));
	ck_assert_uint_eq(cap, 16);
	free(items);
	items = NULL;
	cap = 0;
	ck_assert_ptr_nonnull(items = vec_reserve(items, &cap, 0, 1, 0));
	ck_assert_uint_eq(cap, 1);
	free(items);
}
END_TEST

START_TEST(overflow_refused)
{
	size_t cap = SIZE_MAX / 4 + 1;
	char sentinel;

	/* elements * size would pass SIZE_MAX */
	ck_assert_ptr_null(vec_reserve(&sentinel, &cap, cap, 4, 8));
	ck_assert_uint_eq(cap, SIZE_MAX / 4 + 1);
	/* doubling the count would */
	cap = SIZE_MAX / 2 + 1;
	ck_assert_ptr_null(vec_reserve(&sentinel, &cap, cap, 1, 8));
	ck_assert_uint_eq(cap, SIZE_MAX / 2 + 1);
	cap = SIZE_MAX / 64;
	ck_assert_ptr_null(vec_reserve(&sentinel, &cap, cap, 64, 8));
	ck_assert_uint_eq(cap, SIZE_MAX / 64);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vec");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, grows_by_doubling);
	tcase_add_test(tc, first_capacity);
	tcase_add_test(tc, overflow_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
