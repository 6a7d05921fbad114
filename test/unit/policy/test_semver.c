/* Unit tests for SemVer 2.0.0 parsing and precedence and Masterminds v3 range semantics. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/policy/semver.h"

static const struct {
	const char *in;
	bool ok;
} parses[] = {
    {"1.2.3", true},
    {"v1.2.3", true},
    {"V1.2.3", false}, /* Masterminds takes a lowercase v only */
    {"0.0.0", true},
    {"1.0.0-alpha", true},
    {"1.0.0-alpha.1", true},
    {"1.0.0-0.3.7", true},
    {"1.0.0-x.7.z.92", true},
    {"1.0.0-x-y-z.--", true},
    {"1.0.0-alpha+001", true},
    {"1.0.0+20130313144700", true},
    {"1.0.0-beta+exp.sha.5114f85", true},
    {"1.0.0+21AF26D3----117B344092BD", true},
    {"18446744073709551615.0.0", true},
    {"18446744073709551616.0.0", false}, /* past uint64: ParseUint fails */
    {"123456789012345678901234567890.0.0", false},
    {"1.2.3-alpine", true},
    {"", false},
    {"v", false},
    {"1", false},
    {"1.2", false},
    {"1.2.3.4", false},
    {"01.2.3", false}, /* StrictNewVersion: no leading zeros (CONTRACT §6) */
    {"1.02.3", false},
    {"1.2.03", false},
    {"1.2-rc.1", false}, /* three numbers, not two dots anywhere */
    {"1-rc.1.2", false},
    {"1.2+b.c", false},
    {"1.2-rc1", false},
    {"1..2", false},
    {"1.2.3-01", false},
    {"1.2.3-", false},
    {"1.2.3+", false},
    {"1.2.3-a..b", false},
    {"1.2.3+a..b", false},
    {"1.2.3-a_b", false},
    {"vv1.2.3", false},
    {" 1.2.3", false},
    {"1.2.3 ", false},
    {"1.2.-3", false},
    {"latest", false},
    {"2024.05.01", false},
    {"2024.5.1", true},
    {"0.10.0", true},
    {"v0.0.0", true},
    {"00.1.0", false},
    {"1.2.3-rc.0", true},
    {"1.2.3-rc.00", false},
    {"1.2.3+001", true}, /* build metadata may have leading zeros */
    {"sha256-abc.sig", false},
    {"1.2.3-beta\n", false},
};

START_TEST(parse)
{
	struct semver v;
	struct error err = ERROR_INIT;
	const char *s = parses[_i].in;
	int rc = semver_parse(&v, s, strlen(s), &err);

	ck_assert_msg((rc == 0) == parses[_i].ok, "'%s': rc %d", s, rc);
	if (rc < 0)
		ck_assert_msg(strstr(err.msg, "not a semantic version"), "%s", err.msg);
}
END_TEST

/* Ascending chains: each strictly below the next (SemVer 2.0.0 §11 and more). */
static const char *const chains[][10] = {
    {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
     "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", NULL},
    {"1.0.0", "2.0.0", "2.1.0", "2.1.1", NULL},
    {"1.9.0", "1.10.0", "1.11.0", NULL},
    {"0.0.1", "0.1.0", "1.0.0", "10.0.0", "9999999999999999999.0.0", "18446744073709551615.0.0",
     NULL},
    {"1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-18446744073709551616", "1.0.0-a", NULL},
    /* Masterminds: an identifier past uint64 is text, so it ranks above every number and
     * compares byte-wise with other text (21 digits below 20 nines). */
    {"1.0.0-18446744073709551615", "1.0.0-100000000000000000000", "1.0.0-99999999999999999999",
     NULL},
    {"1.0.0-alpha", "1.0.0-alpha.0", "1.0.0-alpha.0.0", "1.0.0-alpha.1", NULL},
    {"1.0.0--", "1.0.0-A", "1.0.0-Z", "1.0.0-a", "1.0.0-alpha-1", NULL},
};

static void parse_or_fail(struct semver *v, const char *s)
{
	ck_assert_msg(semver_parse(v, s, strlen(s), NULL) == 0, "'%s' does not parse", s);
}

START_TEST(precedence)
{
	for (int i = 0; chains[_i][i + 1]; i++) {
		struct semver a, b;

		parse_or_fail(&a, chains[_i][i]);
		parse_or_fail(&b, chains[_i][i + 1]);
		ck_assert_msg(semver_compare(&a, &b) < 0, "%s < %s", chains[_i][i],
		              chains[_i][i + 1]);
		ck_assert_msg(semver_compare(&b, &a) > 0, "%s > %s", chains[_i][i + 1],
		              chains[_i][i]);
		ck_assert_int_eq(semver_compare(&a, &a), 0);
	}
}
END_TEST

static const char *const equals[][2] = {
    {"1.0.0", "v1.0.0"},
    {"1.0.0+a", "1.0.0+b"},
    {"1.0.0-rc.1+build.1", "v1.0.0-rc.1+build.2"},
    {"v0.1.0", "0.1.0"},
};

START_TEST(equal)
{
	struct semver a, b;

	parse_or_fail(&a, equals[_i][0]);
	parse_or_fail(&b, equals[_i][1]);
	ck_assert_int_eq(semver_compare(&a, &b), 0);
}
END_TEST

/* Loose readings of committed values: what a person reads as a version. */
static const struct {
	const char *in;
	bool ok;
	const char *as; /* the strict version it equals, when ok */
	bool longer;
} looses[] = {
    {"v2", true, "2.0.0", false},
    {"V2", true, "2.0.0", false},
    {"2.1", true, "2.1.0", false},
    {"2025.07.03", true, "2025.7.3", false},
    {"v1.3.0", true, "1.3.0", false},
    {"1.2.3.4", true, "1.2.3", true},
    {"1.2.3.0", true, "1.2.3", false},
    {"1.2.3.0.0.0.0.1", true, "1.2.3", true},
    {"1.2.3.0.0.0.0.0.1", false, NULL, false}, /* more than SEMVER_LOOSE_PARTS numbers */
    {"2.1-alpine", true, "2.1.0-alpine", false},
    {"1.0-01", true, NULL, false}, /* leading zeros in a prerelease are read too */
    {"100000000000000000000000.0", true, NULL, false}, /* no cap on a loose number */
    {"latest", false, NULL, false},
    {"", false, NULL, false},
    {"v", false, NULL, false},
    {"1..2", false, NULL, false},
    {"1.2.", false, NULL, false},
    {"1.2-", false, NULL, false},
    {"main-abc", false, NULL, false},
};

START_TEST(loose)
{
	struct semver v, want;
	bool longer = true;
	const char *s = looses[_i].in;
	int rc = semver_parse_loose(&v, &longer, s, strlen(s));

	ck_assert_msg((rc == 0) == looses[_i].ok, "'%s': rc %d", s, rc);
	ck_assert_msg(longer == looses[_i].longer, "'%s': longer %d", s, longer);
	if (looses[_i].as) {
		parse_or_fail(&want, looses[_i].as);
		ck_assert_msg(semver_compare(&v, &want) == 0, "'%s' reads as %s", s, looses[_i].as);
	}
}
END_TEST

/* Masterminds/semver v3 constraint examples (constraints_test.go, README), with its partial
 * versions written out in full because tags must be strict versions. */
static const struct {
	const char *range, *version;
	bool match;
} checks[] = {
    {"=2.0.0", "1.2.3", false},
    {"=2.0.0", "2.0.0", true},
    {"=2.0", "1.2.3", false},
    {"=2.0", "2.0.0", true},
    {"=2.0", "2.0.1", true},
    {"4.1", "4.1.0", true},
    {"!=4.1.0", "4.1.0", false},
    {"!=4.1.0", "4.1.1", true},
    {"!=4.1", "4.1.0", false},
    {"!=4.1", "4.1.1", false},
    {"!=4.1", "5.1.0-alpha.1", false},
    {"!=4.1-alpha", "4.1.0", true},
    {"!=4.1-alpha", "4.1.0-alpha", false},
    {"!=4.1-alpha", "4.1.1-alpha", false},
    {"!=4.1", "5.1.0", true},
    {"!=4.x", "5.1.0", true},
    {"!=4.x", "4.1.0", false},
    {"!=4.1.x", "4.2.0", true},
    {"!=4.2.x", "4.2.3", false},
    {"<11", "0.1.0", true},
    {"<11", "11.1.0", false},
    {"<1.1", "0.1.0", true},
    {"<1.1", "1.1.0", false},
    {"<1.1", "1.1.1", false},
    {"<1.x", "1.1.1", false},
    {"<1.x", "0.1.1", true},
    {"<1.x", "2.0.0", false},
    {"<1.1.x", "1.2.1", false},
    {"<1.1.x", "1.1.500", false},
    {"<1.1.x", "1.0.500", true},
    {"<1.2.x", "1.1.1", true},
    {"<=11", "1.2.3", true},
    {"<=11", "12.2.3", false},
    {"<=11", "11.2.3", true},
    {"<=1.1", "1.2.3", false},
    {"<=1.1", "0.1.0", true},
    {"<=1.1", "1.1.0", true},
    {"<=1.1", "1.1.1", true},
    {"<=1.1", "0.1.0-alpha", false},
    {"<=1.1-a", "0.1.0-alpha", true},
    {"<=1.x", "1.1.0", true},
    {"<=2.x", "3.0.0", false},
    {"<=1.1.x", "1.2.500", false},
    {"<=4.5", "3.4.0", true},
    {"<=4.5", "3.7.0", true},
    {"<=4.5", "4.6.3", false},
    {">1.1", "4.1.0", true},
    {">1.1", "1.1.0", false},
    {">0", "0.0.0", false},
    {">0", "1.0.0", true},
    {">0", "0.0.1-alpha", false},
    {">0.0", "0.0.1-alpha", false},
    {">0-0", "0.0.1-alpha", false},
    {">0.0-0", "0.0.1-alpha", false},
    {">0", "0.0.0-alpha", false},
    {">0-0", "0.0.0-alpha", false},
    {">0.0.0-0", "0.0.0-alpha", true},
    {">1.2.3-alpha.1", "1.2.3-alpha.2", true},
    {">1.2.3-alpha.1", "1.3.3-alpha.2", true},
    {">11", "11.1.0", false},
    {">11.1", "11.1.0", false},
    {">11.1", "11.1.1", false},
    {">11.1", "11.2.1", true},
    {">=11", "11.1.2", true},
    {">=11.1", "11.1.2", true},
    {">=11.1", "11.0.2", false},
    {">=1.1", "4.1.0", true},
    {">=1.1", "4.1.0-beta", false},
    {">=1.1", "1.1.0", true},
    {">=1.1", "0.0.9", false},
    {">=0", "0.0.1-alpha", false},
    {">=0.0", "0.0.1-alpha", false},
    {">=0-0", "0.0.1-alpha", true},
    {">=0.0-0", "0.0.1-alpha", true},
    {">=0", "0.0.0-alpha", false},
    {">=0-0", "0.0.0-alpha", true},
    {">=0.0.0-0", "0.0.0-alpha", true},
    {">=0.0.0-0", "1.2.3", true},
    {">=0.0.0-0", "3.4.5-beta.1", true},
    {"<0", "0.0.0-alpha", false},
    {"<0-z", "0.0.0-alpha", true},
    {">=0", "0.0.0", true},
    {"=0", "1.0.0", false},
    {"*", "1.0.0", true},
    {"*", "4.5.6", true},
    {"*", "1.2.3-alpha.1", false},
    {"*-0", "1.2.3-alpha.1", true},
    {"x", "1.2.3", true},
    {"X", "1.2.3", true},
    {"2.*", "1.0.0", false},
    {"2.*", "3.4.5", false},
    {"2.*", "2.1.1", true},
    {"2.1.*", "2.1.1", true},
    {"2.1.*", "2.2.1", false},
    {"2", "1.0.0", false},
    {"2", "3.4.5", false},
    {"2", "2.1.1", true},
    {"2.1", "2.1.1", true},
    {"2.1", "2.2.1", false},
    {"~1.2.3", "1.2.4", true},
    {"~1.2.3", "1.3.4", false},
    {"~1.2", "1.2.4", true},
    {"~1.2", "1.3.4", false},
    {"~1", "1.2.4", true},
    {"~1", "2.3.4", false},
    {"~0.2.3", "0.2.5", true},
    {"~0.2.3", "0.3.5", false},
    {"~1.2.3-beta.2", "1.2.3-beta.4", true},
    {"~1.2.3-beta.2", "1.2.4-beta.2", true},
    {"~1.2.3-beta.2", "1.3.4-beta.2", false},
    {"~*", "2.1.1", true},
    {"~1.x", "2.1.1", false},
    {"~1.x", "1.3.5", true},
    {"~1.x", "1.4.0", true},
    {"~1", "1.3.5-beta", false},
    {"~1.1", "1.1.1-alpha", false},
    {"~1.1-alpha", "1.1.1-beta", true},
    {"~1.1.1-beta", "1.1.1-alpha", false},
    {"~1.1.1-beta", "1.1.1", true},
    {"~1.3.6-alpha", "1.3.5-beta", false},
    {"~1.3.5-alpha", "1.3.5-beta", true},
    {"~>1.2.3", "1.2.9", true},
    {"~>1.2.3", "1.3.0", false},
    {"~0.0.0", "1.2.3", true},
    {"^1.2.3", "1.8.9", true},
    {"^1.2.3", "2.8.9", false},
    {"^1.2.3", "1.2.1", false},
    {"^1.1.0", "2.1.0", false},
    {"^1.2.0", "2.2.1", false},
    {"^1.2.0", "1.2.1-alpha.1", false},
    {"^1.2.0-alpha.0", "1.2.1-alpha.1", true},
    {"^1.2.0-alpha.0", "1.2.1-alpha.0", true},
    {"^1.2.0-alpha.2", "1.2.0-alpha.1", false},
    {"^1.2", "1.8.9", true},
    {"^1.2", "2.8.9", false},
    {"^1", "1.8.9", true},
    {"^1", "2.8.9", false},
    {"^0.2.3", "0.2.5", true},
    {"^0.2.3", "0.5.6", false},
    {"^0.2", "0.2.5", true},
    {"^0.2", "0.5.6", false},
    {"^0.0.3", "0.0.3", true},
    {"^0.0.3", "0.0.4", false},
    {"^0.0", "0.0.3", true},
    {"^0.0", "0.1.4", false},
    {"^0.0", "1.0.4", false},
    {"^0", "0.2.3", true},
    {"^0", "1.1.4", false},
    {"^0.2.3-beta.2", "0.2.3-beta.4", true},
    {"^0.2.3-beta.2", "0.2.4-beta.2", true},
    {"^0.2.3-beta.2", "0.3.4-beta.2", false},
    {"^0.2.3-beta.2", "0.2.3-beta.2", true},
    {"^0.0.0", "1.2.3", false},
    {"^1.x", "1.1.1", true},
    {"^2.x", "1.1.1", false},
    {"^1.x", "2.1.1", false},
    {"^1.x", "1.1.1-beta1", false},
    {"^1.1.2-alpha", "1.2.1-beta1", true},
    {"^1.2.x-alpha", "1.1.1-beta1", false},
    {"^0.0.1", "0.0.1", true},
    {"^0.0.1", "0.3.1", false},
    {"0.x.x", "1.2.3", false},
    {"0.0.x", "1.2.3", false},
    {"0.0.0", "1.2.3", false},
    {"= 2.0", "2.0.0", true},
    {"4.1.x", "4.1.3", true},
    {"1.x", "1.4.0", true},
    {">1.1, <2", "1.1.1", false},
    {">1.1, <2", "1.2.1", true},
    {">1.1, <3", "4.3.2", false},
    {">=1.1, <2, !=1.2.3", "1.2.3", false},
    {">1.1 <2", "1.2.1", true},
    {">1.1    <3", "4.3.2", false},
    {">=1.1    <2    !=1.2.3", "1.2.3", false},
    {">=1.1, <2, !=1.2.3 || > 3", "4.1.2", true},
    {">=1.1, <2, !=1.2.3 || > 3", "3.1.2", false},
    {">=1.1, <2, !=1.2.3 || >= 3", "3.0.0", true},
    {">=1.1, <2, !=1.2.3 || > 3", "3.0.0", false},
    {">=1.1, <2, !=1.2.3 || > 3", "1.2.3", false},
    {">=1.1 <2 !=1.2.3 || > 3", "4.1.2", true},
    {"> 1.1, <     2", "1.1.1", false},
    {">   1.1, <2", "1.2.1", true},
    {">= 1.1 <2 != 1.2.3 || >= 3", "3.0.0", true},
    {"1.1 - 2", "1.1.1", true},
    {"1.1 - 2", "2.9.9", true},
    {"1.1 - 2", "3.0.0", false},
    {"1.2 - 1.4.5", "1.4.5", true},
    {"1.2 - 1.4.5", "1.4.6", false},
    {"1.2 - 1.4.5", "1.1.9", false},
    {"1.5.0 - 4.5", "3.7.0", true},
    {"1.1-3", "4.3.2", false},
    {"1.0.0 - 2.0.0 <=2.0.0", "1.5.0", true},
    {"1.0.0 - 2.0.0, <=2.0.0", "1.5.0", true},
    {"3 - 4 || => 3.0, < 4", "4.5.0", true},
    {"=< 1.2", "1.2.9", true},
    {"=> 1.2", "1.2.0", true},
    {"v1.2.3", "1.2.3", true},
    {">=v1.0.0", "v2.0.0", true},
    {">=01.02.03", "1.2.3", true},
    {">=1.0.0 <2.0.0-0", "2.0.0-rc.1", false},
    {">=1.0.0-0 <2.0.0", "1.5.0-rc.1", true},
    {">=1.0.0-0 <2.0.0", "2.0.0-rc.1", true}, /* Masterminds: rc of 2.0.0 is < 2.0.0 */
    {">=1.0.0-0 <2.0.0 || >=3", "3.1.0-rc.1", false},
    {">=1.0.0 || >=3.0.0-0", "3.1.0-rc.1", true},
    {">=9999999999999999999.0.0", "10000000000000000000.0.0", true},
    {">=99999999999999999999.0.0", "9999999999999999999.0.0", false},
    {"<1.0.0", "v0.9.9", true},
    {">=1.0.0", "1.0.0+build.5", true},
    /* Masterminds ignores whatever follows a wildcard part */
    {"x.8X5x*92", "3.0.0", true},
    {"1.x.5x", "1.2.0", true},
    {"!=1.2.3", "1.2.4-rc.1", false},
    {"!=1.2.3-0", "1.2.4-rc.1", true},
};

START_TEST(range_check)
{
	struct semver_range *r = NULL;
	struct semver v;
	struct error err = ERROR_INIT;
	const char *vs = checks[_i].version;

	ck_assert_msg(semver_range_new(&r, checks[_i].range, &err) == 0, "'%s': %s",
	              checks[_i].range, err.msg);
	parse_or_fail(&v, vs);
	ck_assert_msg(semver_range_matches(r, &v) == checks[_i].match, "'%s' vs %s: expected %s",
	              checks[_i].range, vs, checks[_i].match ? "match" : "no match");
	semver_range_free(r);
}
END_TEST

static const char *const bad_ranges[] = {
    "",
    "   ",
    "foo",
    ">= bar",
    "BAR >= 1.2.3",
    "12.3.4.1234",
    "12.23.4.1234",
    "12.3.34~ 1.2.3",
    ">=1.0<2",
    ">=1.0,",
    ",>=1.0",
    ">=1.0,,<2",
    ">=1.0 ||",
    "|| >=1.0",
    ">=1.0 | <2",
    "1.x2",
    "1x.2",
    "1.2x.3",
    "1.2.3-01",
    "1.2.3-",
    ">1.0 - 2.0",
    "1.0 - ",
    "1.0 - 2.0 - 3.0",
    ">==1.0",
    "V1.0",
    "1.2.3+",
    "^",
    "~>",
    ">=1.0\x01",
};

START_TEST(range_invalid)
{
	struct semver_range *r = NULL;
	struct error err = ERROR_INIT;

	ck_assert_msg(semver_range_new(&r, bad_ranges[_i], &err) == IG_EINVALID, "'%s' accepted",
	              bad_ranges[_i]);
	ck_assert_ptr_null(r);
	ck_assert_msg(strstr(err.msg, "semver range '") == err.msg, "%s", err.msg);
	ck_assert_msg(strstr(err.msg, "offset") != NULL, "%s", err.msg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("semver");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, parse, 0, sizeof(parses) / sizeof(parses[0]));
	tcase_add_loop_test(tc, precedence, 0, sizeof(chains) / sizeof(chains[0]));
	tcase_add_loop_test(tc, equal, 0, sizeof(equals) / sizeof(equals[0]));
	tcase_add_loop_test(tc, loose, 0, sizeof(looses) / sizeof(looses[0]));
	tcase_add_loop_test(tc, range_check, 0, sizeof(checks) / sizeof(checks[0]));
	tcase_add_loop_test(tc, range_invalid, 0, sizeof(bad_ranges) / sizeof(bad_ranges[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
