/* Signature and attestation tags are never candidates (CONTRACT §12): the predicate on every tag
 * shape cosign and the OCI referrers tag scheme write, then every policy shape (semver, numerical
 * and alphabetical both ways, with and without filterTags and extract, with Flux's default
 * exclusionList `^.*\.sig$`, an empty one and one of the user's) over a listing holding them. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/policy/policy.h"
#include "imageguard/policy/sigtag.h"
#include "imageguard/util/error.h"

#define HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct {
	const char *tag;
	bool signature;
} tags[] = {
    {"sha256-" HEX ".sig", true},  /* cosign's legacy signature */
    {"sha256-" HEX ".att", true},  /* cosign's attestation */
    {"sha256-" HEX ".sbom", true}, /* cosign's SBOM attachment */
    {"sha256-" HEX, true},         /* OCI referrers tag scheme */
    {"v1.2.3.sig", true},          /* any *.sig (Flux's default exclusion) */
    {"build.att", true},           /* any *.att */
    {"sha256-abc", false},         /* not a digest */
    {"sha256-" HEX "0", false},    /* 65 hex digits */
    {"sha256-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", false},
    {"sha512-" HEX, false}, /* only sha256 tags are written */
    {"1.2.3", false},
    {"signature", false},
    {"v1.sigx", false},
    {".sig", true},
    {"", false},
};

START_TEST(predicate)
{
	ck_assert_msg(sigtag_is_signature(tags[_i].tag, strlen(tags[_i].tag)) == tags[_i].signature,
	              "%s", tags[_i].tag);
}
END_TEST

/* A listing where every signature tag would otherwise rank first. */
static const char *const listing[] = {
    "1.0.0",
    "2.0.0",
    "10",
    "20",
    "sha256-" HEX,
    "sha256-" HEX ".sig",
    "sha256-" HEX ".att",
    "9999.sig",
    "9999.att",
    "zzz.sig",
    "zzz.att",
};

static const char *const none[] = {NULL};
static const char *const own[] = {"^1\\."};
#define NUMS "^[0-9]+(\\.sig|\\.att)?$"

static const struct shape {
	enum policy_kind kind;
	bool asc;
	const char *pattern, *extract, *range;
	const char *const *exclude; /* NULL: Flux's default */
	size_t exclude_len;
	const char *latest;
	size_t candidates;
} shapes[] = {
    {POLICY_SEMVER, true, NULL, NULL, ">=0.0.0", NULL, 0, "2.0.0", 2},
    {POLICY_SEMVER, true, NULL, NULL, ">=0.0.0", none, 0, "2.0.0", 2},
    {POLICY_SEMVER, true, "^(?P<v>.*?)(\\.sig|\\.att)?$", "$v", ">=0.0.0", none, 0, "2.0.0", 2},
    /* 9999.sig passes the filter: kept, it would fail the numerical policy as Flux does */
    {POLICY_NUMERICAL, true, NUMS, NULL, NULL, NULL, 0, "20", 2},
    {POLICY_NUMERICAL, true, "^(?P<n>[0-9]+)", "$n", NULL, none, 0, "20", 4},
    {POLICY_NUMERICAL, false, NUMS, NULL, NULL, none, 0, "10", 2},
    {POLICY_ALPHABETICAL, true, NULL, NULL, NULL, NULL, 0, "20", 4},
    {POLICY_ALPHABETICAL, true, NULL, NULL, NULL, none, 0, "20", 4},
    {POLICY_ALPHABETICAL, false, NULL, NULL, NULL, none, 0, "1.0.0", 4},
    {POLICY_ALPHABETICAL, true, "^(sha|zzz|9)", NULL, NULL, none, 0, NULL, 0},
    {POLICY_ALPHABETICAL, true, NULL, NULL, NULL, own, 1, "20", 3},
};

START_TEST(every_shape_drops_them)
{
	const struct shape *s = &shapes[_i];
	struct policy_spec ps = {s->pattern, s->extract, s->exclude, s->exclude_len,
	                         s->kind,    s->range,   s->asc};
	struct policy_result r = POLICY_RESULT_INIT;
	struct error err = ERROR_INIT;
	struct policy *p = NULL;

	ck_assert_msg(policy_new(&p, &ps, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(policy_select(&r, p, listing, sizeof(listing) / sizeof(listing[0]), &err),
	                 0);
	if (s->latest)
		ck_assert_str_eq(r.latest, s->latest);
	else
		ck_assert_ptr_null(r.latest);
	ck_assert_uint_eq(r.candidates, s->candidates);
	ck_assert_ptr_null(r.unordered); /* a numerical policy never fails on them */
	for (size_t i = 0; i < sizeof(listing) / sizeof(listing[0]); i++)
		if (sigtag_is_signature(listing[i], strlen(listing[i])))
			ck_assert_msg(!policy_accepts(p, listing[i]), "%s accepted", listing[i]);
	policy_result_release(&r);
	policy_free(p);
}
END_TEST

static Suite *sigtag_suite(void)
{
	Suite *s = suite_create("sigtag");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, predicate, 0, (int)(sizeof(tags) / sizeof(tags[0])));
	tcase_add_loop_test(tc, every_shape_drops_them, 0,
	                    (int)(sizeof(shapes) / sizeof(shapes[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sigtag_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
