/* Unit tests for the YAML nesting guard: hostile nesting refused fast, real files untouched. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/util/yamldepth.h"

static char *nested(const char *prefix, const char *open, const char *close, size_t n)
{
	size_t p = strlen(prefix), len = p + n * (strlen(open) + strlen(close)) + 2;
	char *s = malloc(len), *w;

	ck_assert_ptr_nonnull(s);
	memcpy(s, prefix, p);
	w = s + p;
	for (size_t i = 0; i < n; i++, w += strlen(open))
		memcpy(w, open, strlen(open));
	for (size_t i = 0; i < n; i++, w += strlen(close))
		memcpy(w, close, strlen(close));
	memcpy(w, "\n", 2);
	return s;
}

static const struct {
	const char *prefix, *open, *close;
	size_t n, max;
	int rc;
	size_t line;
} cases[] = {
    {"a: ", "[", "]", 100000, YAMLDEPTH_MAX, IG_ETOOBIG, 1},
    {"---\nx: 1\nb: ", "{k: ", "}", 50000, YAMLDEPTH_MAX, IG_ETOOBIG, 3},
    {"a: ", "[", "]", 100, YAMLDEPTH_MAX, 0, 0},
    {"a: ", "[", "]", 600, 1000, 0, 0},
    {"a: ", "[1, ", "]", 600, 1000, 0, 0},
    {"a: [1, 2]\nb: ", "[", "", 5000, YAMLDEPTH_MAX, IG_ETOOBIG, 2}, /* unclosed */
    {"a: \"unterminated ", "[", "]", 5000, YAMLDEPTH_MAX, 0, 0},     /* a parse error */
};

START_TEST(depth)
{
	char *s = nested(cases[_i].prefix, cases[_i].open, cases[_i].close, cases[_i].n);
	size_t line = 99;

	ck_assert_int_eq(yamldepth_check(&line, s, strlen(s), cases[_i].max), cases[_i].rc);
	ck_assert_uint_eq(line, cases[_i].line);
	free(s);
}
END_TEST

START_TEST(brackets_in_scalars)
{
	const char *s = "a: '[[[[[[[['\nb: \"{{{{{{{{\"\nc: x[y\n";
	size_t line;

	ck_assert_int_eq(yamldepth_check(&line, s, strlen(s), 2), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("yamldepth");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, depth, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, brackets_in_scalars);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
