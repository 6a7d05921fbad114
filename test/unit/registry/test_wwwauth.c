/* Unit tests for WWW-Authenticate parsing: registries' real challenges, RFC 7235 corner cases,
 * and a fuzz-style table (plus every truncation and byte flip) that must never crash. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/registry/wwwauth.h"

static const struct {
	const char *in;
	int rc;
	const char *scheme, *realm, *service, *scope, *error;
} cases[] = {
    /* Docker Hub */
    {"Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
     "scope=\"repository:library/nginx:pull\"",
     0, "bearer", "https://auth.docker.io/token", "registry.docker.io",
     "repository:library/nginx:pull", NULL},
    /* GHCR: scope with several actions (a comma inside quotes) */
    {"Bearer "
     "realm=\"https://ghcr.io/token\",service=\"ghcr.io\",scope=\"repository:o/a:pull,push\"",
     0, "bearer", "https://ghcr.io/token", "ghcr.io", "repository:o/a:pull,push", NULL},
    /* ECR: Basic with parameters */
    {"Basic realm=\"https://1.dkr.ecr.us-east-1.amazonaws.com/\",service=\"ecr.amazonaws.com\"", 0,
     "basic", "https://1.dkr.ecr.us-east-1.amazonaws.com/", "ecr.amazonaws.com", NULL, NULL},
    /* distribution registry with htpasswd */
    {"Basic realm=\"basic-realm\"", 0, "basic", "basic-realm", NULL, NULL, NULL},
    /* expired token */
    {"Bearer realm=\"https://r/t\",error=\"invalid_token\",error_description=\"expired\"", 0,
     "bearer", "https://r/t", NULL, NULL, "invalid_token"},
    /* case-insensitive scheme and names, spaces around '=', unquoted tokens */
    {"BEARER Realm = \"https://r/t\" , SERVICE=svc", 0, "bearer", "https://r/t", "svc", NULL, NULL},
    /* escapes inside quoted strings */
    {"Bearer realm=\"https://r/t\",scope=\"a\\\"b\\\\c\"", 0, "bearer", "https://r/t", NULL,
     "a\"b\\c", NULL},
    /* several challenges: Bearer preferred whatever the order */
    {"Basic realm=\"x\", Bearer realm=\"https://r/t\",service=\"s\"", 0, "bearer", "https://r/t",
     "s", NULL, NULL},
    {"Negotiate, Basic realm=\"x\"", 0, "basic", "x", NULL, NULL, NULL},
    /* token68 form, then another challenge */
    {"Negotiate YWJjZA==, Basic realm=\"y\"", 0, "basic", "y", NULL, NULL, NULL},
    {"Custom", 0, "custom", NULL, NULL, NULL, NULL},
    /* the first occurrence of a parameter wins */
    {"Bearer realm=\"https://a\",realm=\"https://b\"", 0, "bearer", "https://a", NULL, NULL, NULL},
    {"", IG_ENOTFOUND, NULL, NULL, NULL, NULL, NULL},
    {" , ,", IG_ENOTFOUND, NULL, NULL, NULL, NULL, NULL},
    {"Bearer realm=\"unterminated", IG_EINVALID, NULL, NULL, NULL, NULL, NULL},
    {"realm=\"x\"", IG_EINVALID, NULL, NULL, NULL, NULL, NULL},
    /* "realm=" alone is a token68 by the grammar: a challenge without parameters */
    {"Bearer realm=", 0, "bearer", NULL, NULL, NULL, NULL},
    {"Bearer realm=, service=x", 0, "bearer", NULL, "x", NULL, NULL},
    {"Bearer service=x, realm=", IG_EINVALID, NULL, NULL, NULL, NULL, NULL},
    {"Bearer realm=\"x\" junk", IG_EINVALID, NULL, NULL, NULL, NULL, NULL},
    {"Bearer =x", IG_EINVALID, NULL, NULL, NULL, NULL, NULL},
    {"\"Bearer\"", IG_EINVALID, NULL, NULL, NULL, NULL, NULL},
    {"Bearer realm=\"a\"\"b\"", IG_EINVALID, NULL, NULL, NULL, NULL, NULL},
};

START_TEST(parse)
{
	struct wwwauth_challenge c;
	struct error err = ERROR_INIT;
	int rc = wwwauth_parse(&c, cases[_i].in, &err);

	ck_assert_msg(rc == cases[_i].rc, "'%s': rc %d (%s)", cases[_i].in, rc, err.msg);
	if (rc == 0) {
		ck_assert_str_eq(c.scheme, cases[_i].scheme);
		ck_assert_pstr_eq(c.realm, cases[_i].realm);
		ck_assert_pstr_eq(c.service, cases[_i].service);
		ck_assert_pstr_eq(c.scope, cases[_i].scope);
		ck_assert_pstr_eq(c.error, cases[_i].error);
	} else {
		ck_assert_msg(strncmp(err.msg, "WWW-Authenticate: ", 18) == 0, "%s", err.msg);
		ck_assert_ptr_null(c.scheme);
	}
	wwwauth_release(&c);
}
END_TEST

/* Malformed input of every kind must give 0 or an error, never a crash or a leak. */
static const char *const garbage[] = {
    "\"",
    "\\",
    "=",
    ",,,,=",
    "Bearer \"",
    "Bearer realm=\"\\",
    "Bearer realm=\"a\\\"",
    "Bearer ,realm=x,",
    "Bearer realm=x,,,service",
    "B\x01 realm=x",
    "Bearer realm=\x7f",
    "Basic ====",
    "Basic a=b=c",
    "Bearer realm=\"x\",",
    "Bearer\trealm=\"x\"",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z", /* more than 16 challenges */
    "\xff\xfe\xfd",
    "Bearer realm=\"\xc3\x28\"",
};

static void parse_quietly(const char *s)
{
	struct wwwauth_challenge c;
	struct error err = ERROR_INIT;
	int rc = wwwauth_parse(&c, s, &err);

	ck_assert(rc == 0 || rc == IG_EINVALID || rc == IG_ENOTFOUND);
	ck_assert(rc == 0 ? c.scheme != NULL : err.msg[0] != '\0');
	wwwauth_release(&c);
}

START_TEST(fuzz_table)
{
	parse_quietly(garbage[_i]);
}
END_TEST

/* Every prefix and every single-byte substitution of the valid cases. */
START_TEST(fuzz_mutations)
{
	static const char subst[] = "\",=\\ \t;<>\x01";
	const char *in = cases[_i].in;
	size_t len = strlen(in);
	char *copy = malloc(len + 1);

	for (size_t cut = 0; cut <= len; cut++) {
		memcpy(copy, in, cut);
		copy[cut] = '\0';
		parse_quietly(copy);
	}
	for (size_t pos = 0; pos < len; pos++)
		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			memcpy(copy, in, len + 1);
			copy[pos] = subst[k];
			parse_quietly(copy);
		}
	free(copy);
}
END_TEST

START_TEST(too_long)
{
	size_t n = (64u << 10) + 10;
	char *s = malloc(n + 1);
	struct wwwauth_challenge c;
	struct error err = ERROR_INIT;

	memcpy(s, "Bearer realm=\"", 14);
	memset(s + 14, 'a', n - 14);
	s[n] = '\0';
	ck_assert_int_eq(wwwauth_parse(&c, s, &err), IG_EINVALID);
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wwwauth");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, parse, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_loop_test(tc, fuzz_table, 0, sizeof(garbage) / sizeof(garbage[0]));
	tcase_add_loop_test(tc, fuzz_mutations, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, too_long);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
