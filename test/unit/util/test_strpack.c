/* strpack: strings copied into one block, lengths given or measured, NULL kept or made "",
 * the size exact, an overflowing length refused. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/strpack.h"

START_TEST(measured_and_null)
{
	const char *v[] = {"policy", NULL, "", "ghcr.io/app"};
	char *out[4], *block;
	size_t bytes = strpack_size(v, NULL, 4, 0);

	ck_assert_uint_eq(bytes, 7 + 1 + 12);
	ck_assert_ptr_nonnull(block = malloc(bytes));
	ck_assert_ptr_eq(strpack_copy(block, v, NULL, 4, 0, out), block + bytes);
	ck_assert_str_eq(out[0], "policy");
	ck_assert_ptr_null(out[1]);
	ck_assert_str_eq(out[2], "");
	ck_assert_str_eq(out[3], "ghcr.io/app");
	ck_assert_ptr_eq(out[0], block);
	ck_assert_ptr_ne(out[3], v[3]);
	free(block);

	ck_assert_uint_eq(bytes = strpack_size(v, NULL, 4, STRPACK_NULL_EMPTY), 21);
	ck_assert_ptr_nonnull(block = malloc(bytes));
	ck_assert_ptr_eq(strpack_copy(block, v, NULL, 4, STRPACK_NULL_EMPTY, out), block + bytes);
	ck_assert_str_eq(out[1], "");
	ck_assert_str_eq(out[3], "ghcr.io/app");
	free(block);
	ck_assert_uint_eq(strpack_size(v, NULL, 0, 0), 0);
}
END_TEST

START_TEST(given_lengths)
{
	/* the lengths cut unterminated bytes, as the marker index's records are */
	const char raw[] = "v1.2.3web";
	const char *v[] = {raw, raw + 6, NULL};
	const size_t len[] = {6, 3, 99};
	char *out[3], block[16];

	ck_assert_uint_eq(strpack_size(v, len, 3, 0), 11);
	ck_assert_ptr_eq(strpack_copy(block, v, len, 3, 0, out), block + 11);
	ck_assert_str_eq(out[0], "v1.2.3");
	ck_assert_str_eq(out[1], "web");
	ck_assert_ptr_null(out[2]);
}
END_TEST

START_TEST(overflow)
{
	const char *v[] = {"a", "b"};
	const size_t huge[] = {SIZE_MAX - 3, 2}, max[] = {SIZE_MAX, 0};

	ck_assert_uint_eq(strpack_size(v, huge, 2, 0), SIZE_MAX);
	ck_assert_uint_eq(strpack_size(v, max, 1, 0), SIZE_MAX);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strpack");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, measured_and_null);
	tcase_add_test(tc, given_lengths);
	tcase_add_test(tc, overflow);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
