/* The signed payloads (simplesign, dsse) and the identity rules (oidcmatch): cosign's
 * simple-signing JSON read strictly, DSSE's pre-authentication encoding (the spec's example),
 * in-toto subjects, and matchOIDCIdentity matching as Go's unanchored regexp.MatchString. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/sigstore/dsse.h"
#include "imageguard/sigstore/fulcio.h"
#include "imageguard/sigstore/oidcmatch.h"
#include "imageguard/sigstore/simplesign.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define D "sha256:634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00"
#define IDENT "\"identity\":{\"docker-reference\":\"r.example/app\"}"
#define IMAGE "\"image\":{\"docker-manifest-digest\":\"" D "\"}"
#define TYPE "\"type\":\"cosign container image signature\""

struct payload_case {
	const char *json;
	int code;
};

static const struct payload_case payloads[] = {
    {"{\"critical\":{" IDENT "," IMAGE "," TYPE "},\"optional\":null}", 0},
    {"{\"critical\":{" IDENT "," IMAGE "," TYPE "},\"optional\":{\"creator\":\"x\"}}", 0},
    {"{\"critical\":{" IDENT "," IMAGE "," TYPE "}}", 0},
    {"{\"critical\":{" IDENT "," IMAGE "," TYPE ",\"extra\":1}}", IG_EINVALID},
    {"{\"critical\":{" IDENT "," IMAGE "," TYPE "},\"other\":1}", IG_EINVALID},
    {"{\"critical\":{" IDENT "," IMAGE "," TYPE "},\"critical\":{}}", IG_EINVALID},
    {"{\"critical\":{" IDENT "," IMAGE ",\"type\":\"atomic container signature\"}}", IG_EINVALID},
    {"{\"critical\":{" IDENT ",\"image\":{\"docker-manifest-digest\":\"sha256:abc\"}," TYPE "}}",
     IG_EINVALID},
    {"{\"critical\":{" IMAGE "," TYPE "}}", IG_EINVALID},
    {"{\"critical\":{" IDENT "," IMAGE "," TYPE "},\"optional\":[]}", IG_EINVALID},
    {"[]", IG_EINVALID},
    {"", IG_EINVALID},
};

START_TEST(simple_signing_payloads)
{
	const struct payload_case *c = &payloads[_i];
	struct simplesign ss;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(simplesign_parse(&ss, c->json, strlen(c->json), &err), c->code);
	if (c->code == 0) {
		ck_assert_str_eq(ss.digest, D);
		ck_assert_str_eq(ss.reference, "r.example/app");
	}
}
END_TEST

START_TEST(simple_signing_cap)
{
	size_t n = SIMPLESIGN_MAX + 1;
	char *big = malloc(n);
	struct simplesign ss;
	struct error err = ERROR_INIT;

	memset(big, ' ', n);
	ck_assert_int_eq(simplesign_parse(&ss, big, n, &err), IG_ETOOBIG);
	free(big);
}
END_TEST

/* The DSSE specification's own example of the encoding. */
START_TEST(pae_example)
{
	struct buf b = BUF_INIT;

	ck_assert_int_eq(
	    dsse_pae(&b, "http://example.com/HelloWorld", (const unsigned char *)"hello world", 11),
	    0);
	ck_assert_str_eq(b.data, "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
	buf_release(&b);
}
END_TEST

struct subject_case {
	const char *statement, *digest;
	int code;
	bool found;
};

#define ST(subjects) "{\"_type\":\"https://in-toto.io/Statement/v1\",\"subject\":" subjects "}"

static const struct subject_case subjects[] = {
    {ST("[{\"name\":\"a\",\"digest\":{\"sha256\":\"ABCD\"}}]"), "sha256:abcd", 0, true},
    {ST("[{\"digest\":{\"sha512\":\"abcd\"}},{\"digest\":{\"sha256\":\"ef\"}}]"), "sha256:ef", 0,
     true},
    {ST("[{\"digest\":{\"sha512\":\"abcd\"}}]"), "sha256:abcd", 0, false},
    {ST("[{\"digest\":{\"sha256\":\"abcde\"}}]"), "sha256:abcd", 0, false},
    {ST("[]"), "sha256:abcd", 0, false},
    {"{\"_type\":\"https://in-toto.io/Statement/v0.1\",\"subject\":[{\"digest\":{\"sha256\":"
     "\"ab\"}}]}",
     "sha256:ab", 0, true},
    {"{\"_type\":\"https://example.com/other\",\"subject\":[]}", "sha256:ab", IG_EINVALID, false},
    {ST("{}"), "sha256:ab", IG_EINVALID, false},
    {"not json", "sha256:ab", IG_EINVALID, false},
};

START_TEST(statement_subjects)
{
	const struct subject_case *c = &subjects[_i];
	struct error err = ERROR_INIT;
	bool found = true;

	ck_assert_int_eq(
	    dsse_statement_has_subject(&found, c->statement, strlen(c->statement), c->digest, &err),
	    c->code);
	ck_assert_int_eq(found, c->found);
}
END_TEST

struct match_case {
	const char *issuer_re, *subject_re;
	bool want;
};

/* Against issuer https://token.actions.githubusercontent.com and SAN
 * https://github.com/acme/app/.github/workflows/release.yml@refs/heads/main */
static const struct match_case matches[] = {
    {"^https://token\\.actions\\.githubusercontent\\.com$",
     "^https://github\\.com/acme/app/\\.github/workflows/release\\.yml@refs/heads/main$", true},
    {"githubusercontent", "acme/app", true}, /* unanchored, as Go's MatchString */
    {"^githubusercontent", "acme/app", false},
    {"githubusercontent", "^acme", false},
    {"", "", true}, /* no rule on either: cosign accepts */
    {"^https://accounts\\.google\\.com$", ".*", false},
    {".*", "refs/heads/(main|master)$", true},
    {".*", "refs/tags/", false},
    {"(?i)TOKEN\\.ACTIONS", "acme", true},
};

static const struct fulcio_identity github = {
    "https://token.actions.githubusercontent.com",
    {"https://github.com/acme/app/.github/workflows/release.yml@refs/heads/main"},
    1};

START_TEST(identity_rules)
{
	const struct match_case *c = &matches[_i];
	struct oidcmatch_rule rule = {c->issuer_re, c->subject_re};
	struct oidcmatch *m;
	struct error err = ERROR_INIT;

	ck_assert_msg(oidcmatch_new(&m, &rule, 1, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(oidcmatch_test(m, &github), c->want);
	oidcmatch_free(m);
}
END_TEST

/* Any rule of the list may match; a broken regex names itself. */
START_TEST(identity_rule_lists)
{
	const struct oidcmatch_rule rules[] = {{"google", "x"}, {"github", "acme"}};
	const struct oidcmatch_rule broken[] = {{"github", "acme"}, {"(", "x"}};
	struct oidcmatch *m;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(oidcmatch_new(&m, rules, 2, &err), 0);
	ck_assert(oidcmatch_test(m, &github));
	ck_assert_ptr_nonnull(strstr(oidcmatch_text(m), "issuer=github subject=acme"));
	oidcmatch_free(m);
	ck_assert_int_eq(oidcmatch_new(&m, broken, 2, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "issuer regex '('"), "%s", err.msg);
	ck_assert_int_eq(oidcmatch_new(&m, rules, 0, &err), IG_EINVALID);
}
END_TEST

/* A certificate without a SAN matches a rule without a subject regex (as cosign accepts),
 * never one with a subject regex, however permissive. */
START_TEST(identity_without_san)
{
	const struct oidcmatch_rule with[] = {{"github", ".*"}}, without[] = {{"github", NULL}};
	struct fulcio_identity id = {"https://token.actions.githubusercontent.com", {""}, 0};
	struct oidcmatch *m;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(oidcmatch_new(&m, with, 1, &err), 0);
	ck_assert(!oidcmatch_test(m, &id));
	oidcmatch_free(m);
	ck_assert_int_eq(oidcmatch_new(&m, without, 1, &err), 0);
	ck_assert(oidcmatch_test(m, &id));
	oidcmatch_free(m);
}
END_TEST

/* A hostile SAN cannot make a backtracking rule run away: the match limit ends it. */
START_TEST(identity_match_limit)
{
	struct oidcmatch_rule rule = {"", "^(a+)+$"};
	struct fulcio_identity id = {"i", {""}, 1};
	struct oidcmatch *m;
	struct error err = ERROR_INIT;

	memset(id.sans[0], 'a', 60);
	id.sans[0][60] = '!';
	ck_assert_int_eq(oidcmatch_new(&m, &rule, 1, &err), 0);
	ck_assert(!oidcmatch_test(m, &id));
	oidcmatch_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("simplesign");
	TCase *tc = tcase_create("payloads");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, simple_signing_payloads, 0, sizeof(payloads) / sizeof(payloads[0]));
	tcase_add_test(tc, simple_signing_cap);
	tcase_add_test(tc, pae_example);
	tcase_add_loop_test(tc, statement_subjects, 0, sizeof(subjects) / sizeof(subjects[0]));
	tcase_add_loop_test(tc, identity_rules, 0, sizeof(matches) / sizeof(matches[0]));
	tcase_add_test(tc, identity_rule_lists);
	tcase_add_test(tc, identity_without_san);
	tcase_add_test(tc, identity_match_limit);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
