/* Unit tests for exact decimal numbers in Go's ParseFloat syntax (the numerical order). */
#include <check.h>
#include <string.h>

#include "imageguard/policy/number.h"

/* Go's strconv.ParseFloat(s, 64) accepts (true) or rejects (false) each of these; NaN and hex
 * floats are accepted by Go but not ordered here (false, see docs/policy.md). */
static const struct {
	const char *in;
	bool ok;
} parses[] = {
    {"0", true},
    {"-0", true},
    {"+12", true},
    {"1.", true},
    {".5", true},
    {"1e3", true},
    {"1E+3", true},
    {"2.5e-3", true},
    {"inf", true},
    {"-Inf", true},
    {"+INFINITY", true},
    {"007", true},
    {"", false},
    {".", false},
    {"-", false},
    {"e3", false},
    {"1e", false},
    {"1e+", false},
    {"1.2.3", false},
    {"1_000", false},
    {"0x1p4", false},
    {"NaN", false},
    {"nan", false},
    {"+nan", false},
    {"infin", false},
    {" 1", false},
    {"1 ", false},
    {"1a", false},
    {"1e1000000000000000", false},     /* an exponent of more than 15 digits */
    {"1e000000000000000000001", true}, /* leading zeros do not count */
};

START_TEST(parse)
{
	struct number n;
	const char *s = parses[_i].in;

	ck_assert_msg((number_parse(&n, s, strlen(s)) == 0) == parses[_i].ok, "'%s'", s);
}
END_TEST

/* Ascending chains: each strictly below the next. */
static const char *const chains[][10] = {
    {"-inf", "-1e999999", "-10", "-9.5", "-0.001", "0", "1e-999999", "0.049999", "5e-2", NULL},
    {"5e-2", "0.5", "1", "9.99", "10", "1e2", "20240501123456788", "20240501123456789", NULL},
    {"99.99999999999999999", "100", "100.00000000000000001", "1e999999", "Infinity", NULL},
    {"1.05", "1.5", "1.55", "16e-1", "0.0000000000000000000000000000001e32", NULL},
};

/* Equal values, however spelled. */
static const char *const equals[][2] = {
    {"0", "-0.000"},      {"100", "1e2"},      {"100", "100.000"},
    {"0.05", "5e-2"},     {"0.05", ".5e-1"},   {"007", "7"},
    {"inf", "+Infinity"}, {"-1.50", "-15E-1"}, {"1e-999999", "0.1e-999998"},
};

static void parse_or_fail(struct number *n, const char *s)
{
	ck_assert_msg(number_parse(n, s, strlen(s)) == 0, "'%s' does not parse", s);
}

START_TEST(order)
{
	for (int i = 0; chains[_i][i + 1]; i++) {
		struct number a, b;

		parse_or_fail(&a, chains[_i][i]);
		parse_or_fail(&b, chains[_i][i + 1]);
		ck_assert_msg(number_compare(&a, &b) < 0, "%s < %s", chains[_i][i],
		              chains[_i][i + 1]);
		ck_assert_msg(number_compare(&b, &a) > 0, "%s > %s", chains[_i][i + 1],
		              chains[_i][i]);
	}
}
END_TEST

START_TEST(equal)
{
	struct number a, b;

	parse_or_fail(&a, equals[_i][0]);
	parse_or_fail(&b, equals[_i][1]);
	ck_assert_msg(number_compare(&a, &b) == 0, "%s == %s", equals[_i][0], equals[_i][1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("number");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, parse, 0, sizeof(parses) / sizeof(parses[0]));
	tcase_add_loop_test(tc, order, 0, sizeof(chains) / sizeof(chains[0]));
	tcase_add_loop_test(tc, equal, 0, sizeof(equals) / sizeof(equals[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
