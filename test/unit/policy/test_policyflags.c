/* Unit tests for the shared POLICY FLAGS parser (eval and tags use it). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/policy/policyflags.h"

static const struct {
	const char *argv[8];
	int rc;    /* of the take loop / finish: 0 ok, else the error code */
	int taken; /* number of policy flags consumed */
	int kind;  /* expected kind when rc == 0 and set */
	bool asc;
	const char *want; /* message substring on error, or the range/pattern/extract "r|p|e" */
	size_t excludes;
} cases[] = {
    {{"--semver", ">=1.0.0"}, 0, 1, POLICY_SEMVER, false, ">=1.0.0||", 0},
    {{"--semver=^1.2", "--pattern", "^v", "--extract=$0"},
     0,
     3,
     POLICY_SEMVER,
     false,
     "^1.2|^v|$0",
     0},
    {{"--numerical", "asc", "--exclude", "a", "--exclude=b"},
     0,
     3,
     POLICY_NUMERICAL,
     true,
     "||",
     2},
    {{"--alphabetical=desc"}, 0, 1, POLICY_ALPHABETICAL, false, "||", 0},
    {{"--alphabetical", "up"}, IG_EUSAGE, 0, 0, false, "expected asc or desc, got 'up'", 0},
    {{"--semver"}, IG_EUSAGE, 0, 0, false, "option '--semver': missing value", 0},
    {{"--semver", ""}, IG_EUSAGE, 0, 0, false, "empty range", 0},
    {{"--semver", "1", "--numerical", "asc"}, IG_EUSAGE, 1, 0, false, "only one of", 0},
    {{"--numerical", "asc", "--numerical", "desc"}, IG_EUSAGE, 1, 0, false, "only one of", 0},
    {{"--pattern", "^v"}, IG_EUSAGE, 1, 0, false, "is required", 0},
    {{"--exclude", "x"}, IG_EUSAGE, 1, 0, false, "is required", 0},
    {{"--current", "v1"}, 0, 0, 0, false, NULL, 0},
    {{"--semverx", "1"}, 0, 0, 0, false, NULL, 0},
};

START_TEST(take)
{
	struct policyflags pf = POLICYFLAGS_INIT;
	struct error err = ERROR_INIT;
	int argc = 0, i = 0, rc = 0, taken = 0;
	char *argv[8];

	while (cases[_i].argv[argc]) {
		argv[argc] = (char *)cases[_i].argv[argc];
		argc++;
	}
	while (i < argc && (rc = policyflags_take(&pf, argc, argv, &i, &err)) == 1)
		taken++;
	if (rc >= 0)
		rc = policyflags_finish(&pf, &err);
	ck_assert_msg(rc == cases[_i].rc, "rc %d: %s", rc, err.msg);
	ck_assert_int_eq(taken, cases[_i].taken);
	if (rc < 0) {
		ck_assert_msg(strstr(err.msg, cases[_i].want), "%s", err.msg);
	} else if (taken == 0) {
		ck_assert(!pf.set);
		ck_assert_int_eq(i, 0);
	} else {
		char got[256];

		ck_assert(pf.set);
		ck_assert_int_eq(i, argc);
		ck_assert_int_eq(pf.spec.kind, cases[_i].kind);
		if (cases[_i].kind != POLICY_SEMVER)
			ck_assert(pf.spec.ascending == cases[_i].asc);
		snprintf(got, sizeof(got), "%s|%s|%s", pf.spec.range ? pf.spec.range : "",
		         pf.spec.pattern ? pf.spec.pattern : "",
		         pf.spec.extract ? pf.spec.extract : "");
		ck_assert_str_eq(got, cases[_i].want);
		ck_assert_uint_eq(pf.spec.exclude_len, cases[_i].excludes);
		ck_assert(cases[_i].excludes ? pf.spec.exclude != NULL : pf.spec.exclude == NULL);
	}
	policyflags_release(&pf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policyflags");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, take, 0, sizeof(cases) / sizeof(cases[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
