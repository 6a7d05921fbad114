/* Unit tests for capped buffers and the error struct. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

START_TEST(append_and_cap)
{
	struct buf b = BUF_INIT_MAX(8);

	ck_assert_int_eq(buf_puts(&b, "abcd"), 0);
	ck_assert_int_eq(buf_printf(&b, "%d", 123), 0);
	ck_assert_str_eq(b.data, "abcd123");
	ck_assert_int_eq(buf_puts(&b, "xy"), IG_ETOOBIG);
	ck_assert_str_eq(b.data, "abcd123");
	ck_assert_int_eq(buf_puts(&b, "x"), 0);
	ck_assert_uint_eq(b.len, 8);
	buf_release(&b);
}
END_TEST

START_TEST(detach_empty)
{
	struct buf b = BUF_INIT;
	char *s = buf_detach(&b);

	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

START_TEST(read_file_missing)
{
	struct buf b = BUF_INIT;

	ck_assert_int_eq(buf_read_file(&b, "/nonexistent/imageguard"), IG_ENOTFOUND);
	buf_release(&b);
}
END_TEST

START_TEST(error_prefix_once)
{
	struct error err = ERROR_INIT;

	ck_assert_int_eq(error_set(&err, IG_ENOTFOUND, "tag '%s': missing\nsecond", "v1"),
	                 IG_ENOTFOUND);
	ck_assert_int_eq(error_prefix(&err, "registry '%s'", "ghcr.io/x"), IG_ENOTFOUND);
	ck_assert_str_eq(err.msg, "registry 'ghcr.io/x': tag 'v1': missing second");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, append_and_cap);
	tcase_add_test(tc, detach_empty);
	tcase_add_test(tc, read_file_missing);
	tcase_add_test(tc, error_prefix_once);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
