/* escape: outside text can never end a line or drive a terminal, and stays recoverable. */
#include <check.h>
#include <stdlib.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/escape.h"

static const struct {
	const char *in, *out;
	bool plain;
} cases[] = {
    {"v1.2.3", "v1.2.3", true},
    {"", "", true},
    {"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac", true},
    {"a\nImageguard-Policy: x/y", "a\\nImageguard-Policy: x/y", false},
    {"a\r\nb", "a\\r\\nb", false},
    {"\x1b[31mred", "\\e[31mred", false},
    {"tab\there", "tab\\there", false},
    {"back\\slash", "back\\\\slash", false},
    {"nul\x01\x7f", "nul\\x01\\x7f", false},
    {"nel\xc2\x85x", "nel\\u{0085}x", false},
    {"ls\xe2\x80\xa8ps\xe2\x80\xa9", "ls\\u{2028}ps\\u{2029}", false},
    {"\xe2\x80\xa7 not a break", "\xe2\x80\xa7 not a break", true},
    {"trail\xe2\x80", "trail\xe2\x80", true},
};

START_TEST(test_escape_table)
{
	struct buf b = BUF_INIT;

	ck_assert_int_eq(escape_append(&b, cases[_i].in), 0);
	ck_assert_str_eq(b.data ? b.data : "", cases[_i].out);
	ck_assert(escape_is_plain(cases[_i].in) == cases[_i].plain);
	buf_release(&b);
}
END_TEST

START_TEST(test_escape_cap)
{
	struct buf b = BUF_INIT_MAX(4);

	ck_assert_int_lt(escape_append(&b, "\n\n\n"), 0);
	buf_release(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("escape");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, test_escape_table, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, test_escape_cap);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
