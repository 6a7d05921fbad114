/* error: one-line messages, and the scrubbing of credentials that text from outside echoes
 * (registry and Git host error bodies) without garbling ordinary words. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"

/* error_set's scrubbing: what a registry or Git host may echo back. */
static const struct {
	const char *in, *want;
} creds[] = {
    /* echoed headers and tokens */
    {"registry 'r': 401 UNAUTHORIZED: bad Authorization: Basic dXNlcjpodW50ZXIy",
     "registry 'r': 401 UNAUTHORIZED: bad Authorization: ***"},
    {"{\"authorization\": \"Bearer eyJhbGciOi.eyJzdWIi.sig\", \"x\": 1}",
     "{\"authorization\": \"***\", \"x\": 1}"},
    {"DENIED: token Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc rejected",
     "DENIED: token Bearer *** rejected"},
    {"got basic dXNlcjpwYXNzd29yZA== from client", "got basic *** from client"},
    {"fetch http://bob:hunter22@git.example/r.git failed",
     "fetch http://bob:***@git.example/r.git failed"},
    /* ordinary text stays as it is */
    {"git 'git@github.com:o/r.git': github.com says no",
     "git 'git@github.com:o/r.git': github.com says no"},
    {"authorization required", "authorization required"},
    {"unsupported scheme Basic authentication", "unsupported scheme Basic authentication"},
    {"Basic realm=\"registry\"", "Basic realm=\"registry\""},
    {"bearer token refused", "bearer token refused"},
    {"ssh://git@host:2222/r.git: no route", "ssh://git@host:2222/r.git: no route"},
    {"https://h.example:8443/r.git: 404", "https://h.example:8443/r.git: 404"},
    {"already scrubbed Authorization: ***", "already scrubbed Authorization: ***"},
};

START_TEST(scrub_credentials)
{
	struct error err = ERROR_INIT;

	error_set(&err, IG_EAUTH, "%s", creds[_i].in);
	ck_assert_str_eq(err.msg, creds[_i].want);
	if (strstr(creds[_i].in, "uthorization:"))
		return; /* a header's value runs to the end of the text */
	error_clear(&err);
	error_set(&err, IG_EAUTH, "%s", "inner");
	error_prefix(&err, "%s", creds[_i].in);
	ck_assert_str_eq(err.msg + strlen(err.msg) - strlen(": inner"), ": inner");
	ck_assert_int_eq(strncmp(err.msg, creds[_i].want, strlen(creds[_i].want)), 0);
}
END_TEST

/* error_scrub_secret: a long secret everywhere, a short one only as a whole token. */
static const struct {
	const char *secret, *in, *want;
} secrets[] = {
    {"hunter22", "x hunter22 yhunter22z", "x *** y***z"},
    {"git", "git@github.com: git is git", "***@github.com: *** is ***"},
    {"pw", "pw wrong for github.com; upwards pw", "** wrong for github.com; upwards **"},
    {"tok-abc", "failed tok-abc at tok-abcd", "failed *** at tok-abcd"},
    {"abc", "abc", "***"},
    {"", "nothing changes", "nothing changes"},
    {NULL, "nothing changes", "nothing changes"},
};

START_TEST(scrub_secret)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "%s", secrets[_i].in);
	error_scrub_secret(msg, sizeof(msg), secrets[_i].secret);
	ck_assert_str_eq(msg, secrets[_i].want);
}
END_TEST

START_TEST(one_line)
{
	struct error err = ERROR_INIT;

	error_set(&err, IG_EFAIL, "tag '%s'", "v1\nDecision: forged\x1b[2J");
	ck_assert_str_eq(err.msg, "tag 'v1 Decision: forged [2J'");
}
END_TEST

START_TEST(oom)
{
	struct error err = ERROR_INIT;

	ck_assert_int_eq(error_oom(&err), IG_EFAIL);
	ck_assert_int_eq(err.code, IG_EFAIL);
	ck_assert_str_eq(err.msg, "out of memory");
	ck_assert_int_eq(error_prefix(&err, "registry '%s'", "ghcr.io"), IG_EFAIL);
	ck_assert_str_eq(err.msg, "registry 'ghcr.io': out of memory");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, scrub_credentials, 0, sizeof(creds) / sizeof(creds[0]));
	tcase_add_loop_test(tc, scrub_secret, 0, sizeof(secrets) / sizeof(secrets[0]));
	tcase_add_test(tc, one_line);
	tcase_add_test(tc, oom);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
