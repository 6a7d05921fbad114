/* Unit tests for the tag policy engine: filter, extract, the three orders, deterministic ties,
 * policy_order and policy_compare (which the guard trusts with every commit), and bad input. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/policy/policy.h"
#include "imageguard/util/strvec.h"

/* The tables below leave trailing spec fields zero on purpose. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

enum { SEMVER = POLICY_SEMVER, NUM = POLICY_NUMERICAL, ALPHA = POLICY_ALPHABETICAL };

struct spec {
	int kind;
	const char *range; /* semver range, or "asc"/"desc" */
	const char *pattern, *extract;
	const char *exclude; /* NULL: default list; "-": empty list; else one regex */
};

/* Splits a space-separated list into a NULL-terminated array (tags contain no spaces). */
static char **split(const char *list, size_t *n)
{
	char *copy = strdup(list), *save = NULL, **out = calloc(strlen(list) + 2, sizeof(*out));
	size_t k = 0;

	ck_assert_ptr_nonnull(copy);
	ck_assert_ptr_nonnull(out);
	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
		out[k++] = strdup(t);
	out[k] = NULL;
	*n = k;
	free(copy);
	return out;
}

static void free_split(char **v)
{
	for (size_t k = 0; v[k]; k++)
		free(v[k]);
	free(v);
}

static struct policy *make(const struct spec *s)
{
	struct policy_spec ps;
	struct policy *p = NULL;
	struct error err = ERROR_INIT;
	static const char *one[1];

	memset(&ps, 0, sizeof(ps));
	ps.kind = (enum policy_kind)s->kind;
	ps.pattern = s->pattern;
	ps.extract = s->extract;
	if (s->kind == SEMVER)
		ps.range = s->range;
	else
		ps.ascending = strcmp(s->range, "asc") == 0;
	if (s->exclude && strcmp(s->exclude, "-") == 0) {
		ps.exclude = one;
		ps.exclude_len = 0;
	} else if (s->exclude) {
		one[0] = s->exclude;
		ps.exclude = one;
		ps.exclude_len = 1;
	}
	ck_assert_msg(policy_new(&p, &ps, &err) == 0, "policy_new: %s", err.msg);
	return p;
}

#define SHA "a1b2c3d"
static const struct {
	struct spec s;
	const char *tags, *latest;
	size_t candidates, skipped;
	const char *unordered; /* numerical: Flux fails the policy on this tag; nothing is picked */
} selects[] = {
    /* semver */
    {{SEMVER, ">=1.0.0"}, "v1.2.0 v1.10.0 v1.9.3", "v1.10.0", 3, 0},
    {{SEMVER, ">=1.0.0"}, "1.0.0 1.1.0-rc.1 latest sha256-abc.sig", "1.0.0", 1, 2},
    {{SEMVER, ">=1.1.0-0"}, "1.0.0 1.1.0-rc.1 1.1.0-rc.2", "1.1.0-rc.2", 2, 1},
    {{SEMVER, "^1.2"}, "1.2.0 1.9.9 2.0.0 1.1.9", "1.9.9", 2, 2},
    {{SEMVER, "~1.2"}, "1.2.0 1.2.7 1.3.0", "1.2.7", 2, 1},
    {{SEMVER, "^0.2"}, "0.2.1 0.2.9 0.3.0", "0.2.9", 2, 1},
    {{SEMVER, "1.2 - 1.4.5"}, "1.2.0 1.4.5 1.4.6 1.1.0", "1.4.5", 2, 2},
    {{SEMVER, "<1.0.0 || >=3.0.0"}, "0.9.0 2.5.0 3.1.0", "3.1.0", 2, 1},
    {{SEMVER, "*"}, "1.0.0 2.0.0-rc.1 1.5.0", "1.5.0", 2, 1},
    {{SEMVER, ">=1.0.0"}, "1.0.0 v1.0.0 V1.0.0", "v1.0.0", 2, 1}, /* Flux: lowercase v only */
    {{SEMVER, ">=1.0.0"}, "1.0.0+build.1 1.0.0+build.2", "1.0.0+build.2", 2, 0},
    {{SEMVER, ">=1.0.0"}, "1.2.3-alpine 1.2.2", "1.2.2", 1, 1},
    {{SEMVER, ">=1.0.0", "^(?P<v>[0-9.]+)-alpine$", "$v"},
     "1.2.3-alpine 1.2.10-alpine 1.2.11 1.3.0-debian",
     "1.2.10-alpine",
     2,
     0},
    {{SEMVER, ">=1.0.0"},
     "18446744073709551614.0.0 18446744073709551615.0.0 18446744073709551616.0.0",
     "18446744073709551615.0.0",
     2,
     1}, /* Flux's numbers are uint64: past it, not a version */
    /* zero-padded parts and two-number versions are no candidates (StrictNewVersion after a
     * v, as CONTRACT §6 pins fluxcd/pkg version.ParseVersion) */
    {{SEMVER, ">=0.0.0"}, "2024.05.01 2024.5.1 2024.04.30 latest", "2024.5.1", 1, 3},
    {{SEMVER, ">=0.0.0-0"}, "1.2-rc.1 1.2 1.2.0-rc.0", "1.2.0-rc.0", 1, 2},
    {{SEMVER, ">=1.0.0"}, "01.4.0 1.3.0 v1.2-beta.5", "1.3.0", 1, 2},
    /* numerical: exact, no float64 */
    {{NUM, "asc"},
     "20240501123456788 20240501123456789 20240501123456787",
     "20240501123456789",
     3,
     0},
    {{NUM, "desc"},
     "20240501123456788 20240501123456789 20240501123456787",
     "20240501123456787",
     3,
     0},
    {{NUM, "asc"}, "1.5 1.25 -3 +2 0.0001 1e3 -1E-2 inf", "inf", 8, 0}, /* ParseFloat syntax */
    {{NUM, "asc"}, "1.5 1.25 -3 +2 0.0001 abc 1e3", NULL, 6, 1, "abc"},
    {{NUM, "desc"}, "1 -Infinity -1e999999", "-Infinity", 3, 0},
    {{NUM, "asc"}, "1 NaN", NULL, 1, 1, "NaN"},
    {{NUM, "asc"}, "1 0x1p4", NULL, 1, 1, "0x1p4"}, /* hex floats: not ordered */
    {{NUM, "asc"}, "1 1_000", NULL, 1, 1, "1_000"},
    {{NUM, "asc"}, "1e2 99.5 100.0 1e+2", "1e2", 4, 0}, /* 100 three ways: byte-wise tie */
    {{NUM, "asc"}, "0.05 5e-2 0.5e-1 0.049999", "5e-2", 4, 0},
    {{NUM, "desc"}, "1.5 1.25 -3 +2 0.0001 abc", NULL, 5, 1, "abc"},
    {{NUM, "desc"}, "1.5 1.25 -3 +2 0.0001", "-3", 5, 0},
    {{NUM, "asc"}, "-1.5 -1.25 -10", "-1.25", 3, 0},
    {{NUM, "asc"}, "1.5 1.50 01.5", "1.50", 3, 0},
    {{NUM, "asc"}, "0 -0 0.0", "0.0", 3, 0},
    {{NUM, "asc"},
     "123456789012345678901234567890.000000000000000000001 "
     "123456789012345678901234567890",
     "123456789012345678901234567890.000000000000000000001",
     2,
     0},
    {{NUM, "asc"}, ". - + 1. .5", NULL, 2, 3, "."},
    {{NUM, "asc"}, "1. .5", "1.", 2, 0},
    {{NUM, "asc", "^release-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
     "release-" SHA "-1700000000000000001 release-fffffff-1700000000000000002 "
     "release-0000000-1699999999999999999 main-" SHA "-1800000000000000000",
     "release-fffffff-1700000000000000002",
     3,
     0},
    {{NUM, "asc", "^main-[a-f0-9]+-(?P<ts>[0-9]+)", "${ts}"},
     "main-" SHA "-1712000000 main-bbbbbbb-1712000001 main-ccccccc-1712000001 dev-x-9",
     "main-ccccccc-1712000001",
     3,
     0},
    /* Flux expands the template from the first match only: the rest of the tag never counts */
    {{NUM, "asc", "([0-9]+)$", "$1"}, "build-42 7 19", "build-42", 3, 0},
    {{NUM, "asc", "^main-[a-f0-9]+-(?P<ts>[0-9]+)", "$ts"},
     "main-abc-1600000000-arm64 main-abc-1500000000",
     "main-abc-1600000000-arm64",
     2,
     0},
    {{ALPHA, "asc", "[0-9]", "x${0}y"}, "a1b2 c3", "c3", 2, 0},
    {{NUM, "asc", "^build-([0-9]+)$", "$1"}, "build-42 build-7 build-x", "build-42", 2, 0},
    /* alphabetical: byte-wise */
    {{ALPHA, "asc"}, "2024.05.01 2024.12.01 2023.11.30", "2024.12.01", 3, 0},
    {{ALPHA, "desc"}, "2024.05.01 2024.12.01 2023.11.30", "2023.11.30", 3, 0},
    {{ALPHA, "asc"}, "B a A b", "b", 4, 0},
    {{ALPHA, "asc", "^main-"}, "main-b main-a dev-z", "main-b", 2, 0},
    {{ALPHA, "asc", "^(?P<d>[0-9]{4}\\.[0-9]{2}\\.[0-9]{2})-(?:rc|final)$", "$d"},
     "2024.05.01-final 2024.05.01-rc 2024.04.30-final",
     "2024.05.01-rc",
     3,
     0},
    {{ALPHA, "asc", "^(x)-(y)$", "$2$$$1"}, "x-y", "x-y", 1, 0},
    /* exclusion */
    /* signature and attestation tags are never candidates (CONTRACT §12), whatever the
     * exclusionList: Flux's empty list or one of its own would let them through */
    {{ALPHA, "asc"}, "sha256-abc.sig sha256-abc.att v1", "v1", 1, 0},
    {{ALPHA, "asc", NULL, NULL, "-"}, "sha256-abc.sig v1", "v1", 1, 0},
    {{ALPHA, "desc", NULL, NULL, "-"}, "sha256-abc.sig v1", "v1", 1, 0},
    {{ALPHA, "asc", NULL, NULL, "^v"}, "sha256-abc.sig v1 v2", NULL, 0, 0},
    /* nothing qualifies */
    {{SEMVER, ">=1.0.0"}, "latest main", NULL, 0, 2},
    {{SEMVER, ">=1.0.0"}, "", NULL, 0, 0},
    {{ALPHA, "asc", "^v"}, "latest main", NULL, 0, 0},
};

START_TEST(select_)
{
	struct policy *p = make(&selects[_i].s);
	struct policy_result r = POLICY_RESULT_INIT;
	struct error err = ERROR_INIT;
	size_t n;
	char **tags = split(selects[_i].tags, &n);

	ck_assert_int_eq(policy_select(&r, p, (const char *const *)tags, n, &err), 0);
	ck_assert_pstr_eq(r.latest, selects[_i].latest);
	ck_assert_uint_eq(r.candidates, selects[_i].candidates);
	ck_assert_uint_eq(r.skipped, selects[_i].skipped);
	ck_assert_pstr_eq(r.unordered, selects[_i].unordered);
	policy_result_release(&r);
	free_split(tags);
	policy_free(p);
}
END_TEST

static void same_result(const struct policy_result *r, size_t i)
{
	ck_assert_pstr_eq(r->latest, selects[i].latest);
	ck_assert_uint_eq(r->candidates, selects[i].candidates);
	ck_assert_uint_eq(r->skipped, selects[i].skipped);
	ck_assert_pstr_eq(r->unordered, selects[i].unordered);
}

/* policy_select_keyed: the same key answers from memory (here: even over no tags, which shows
 * the tags were not read), another key or none selects again, and only the last key is kept. */
START_TEST(select_keyed)
{
	struct policy *p = make(&selects[_i].s);
	struct policy_result r = POLICY_RESULT_INIT;
	unsigned char k1[POLICY_LISTING_KEY_LEN], k2[POLICY_LISTING_KEY_LEN];
	const char *const none[] = {NULL};
	size_t n;
	char **tags = split(selects[_i].tags, &n);

	memset(k1, 1, sizeof(k1));
	memset(k2, 2, sizeof(k2));
	ck_assert_int_eq(policy_select_keyed(&r, p, (const char *const *)tags, n, k1, NULL), 0);
	same_result(&r, (size_t)_i);
	policy_result_release(&r);
	ck_assert_int_eq(policy_select_keyed(&r, p, none, 0, k1, NULL), 0);
	same_result(&r, (size_t)_i);
	policy_result_release(&r);
	ck_assert_int_eq(policy_select_keyed(&r, p, none, 0, k2, NULL), 0);
	ck_assert_ptr_null(r.latest);
	ck_assert_uint_eq(r.candidates, 0);
	policy_result_release(&r);
	ck_assert_int_eq(policy_select_keyed(&r, p, none, 0, k1, NULL), 0); /* k2 replaced it */
	ck_assert_ptr_null(r.latest);
	policy_result_release(&r);
	ck_assert_int_eq(policy_select_keyed(&r, p, (const char *const *)tags, n, NULL, NULL), 0);
	same_result(&r, (size_t)_i);
	policy_result_release(&r);
	free_split(tags);
	policy_free(p);
}
END_TEST

/* Deterministic pseudo-random permutation (no global RNG state). */
static void shuffle(char **v, size_t n, unsigned seed)
{
	unsigned long long s = seed * 2654435761ULL + 1;

	for (size_t k = n; k > 1; k--) {
		size_t j;
		char *t;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		j = (size_t)((s >> 33) % k);
		t = v[k - 1];
		v[k - 1] = v[j];
		v[j] = t;
	}
}

/* Ties must not depend on input order: every permutation picks the same tag. */
START_TEST(select_shuffled)
{
	for (unsigned seed = 0; seed < 64; seed++) {
		struct policy *p = make(&selects[_i].s);
		struct policy_result r = POLICY_RESULT_INIT;
		size_t n;
		char **tags = split(selects[_i].tags, &n);

		shuffle(tags, n, seed);
		ck_assert_int_eq(policy_select(&r, p, (const char *const *)tags, n, NULL), 0);
		ck_assert_pstr_eq(r.latest, selects[_i].latest);
		policy_result_release(&r);
		free_split(tags);
		policy_free(p);
	}
}
END_TEST

static const struct {
	struct spec s;
	const char *current, *candidate;
	enum policy_verdict v;
} compares[] = {
    {{SEMVER, ">=1.0.0"}, "1.2.0", "1.3.0", POLICY_FORWARD},
    {{SEMVER, ">=1.0.0"}, "1.3.0", "1.2.0", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0"}, "1.3.0", "1.3.0", POLICY_SAME},
    {{SEMVER, ">=1.0.0"}, "v1.9.3", "v1.10.0", POLICY_FORWARD},
    {{SEMVER, ">=1.0.0"}, "1.0.0", "v1.0.0", POLICY_SAME}, /* one version, two spellings */
    {{SEMVER, ">=1.0.0"}, "v1.0.0", "1.0.0", POLICY_SAME},
    /* a zero-padded spelling is no version of the order (only policy_verdict reads it) */
    {{SEMVER, ">=0.0.0"}, "2025.07.03", "2025.7.3", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "latest", "1.0.0", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "1.0.0", "latest", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "", "1.0.0", POLICY_INCOMPARABLE},
    {{SEMVER, ">=2.0.0"}, "1.9.0", "2.0.0", POLICY_INCOMPARABLE}, /* current out of range */
    {{SEMVER, ">=1.0.0"}, "1.1.0-rc.1", "1.0.0", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0-0"}, "1.1.0-rc.1", "1.1.0", POLICY_FORWARD},
    {{SEMVER, ">=1.0.0-0"}, "1.1.0", "1.1.0-rc.1", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0"}, "1.0.0+b1", "1.0.0+b2", POLICY_SAME}, /* build metadata: no rank */
    {{SEMVER, ">=0.0.0"}, "sha256-abc.sig", "1.0.0", POLICY_INCOMPARABLE},
    {{NUM, "asc"}, "20240501123456788", "20240501123456789", POLICY_FORWARD},
    {{NUM, "asc"}, "20240501123456789", "20240501123456788", POLICY_BACKWARD},
    {{NUM, "desc"}, "20240501123456789", "20240501123456788", POLICY_FORWARD},
    {{NUM, "asc"}, "1.5", "1.50", POLICY_SAME},
    {{NUM, "asc"}, "1.50", "1.5", POLICY_SAME},
    {{NUM, "asc"}, "abc", "1", POLICY_INCOMPARABLE},
    {{NUM, "asc", "^main-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
     "main-" SHA "-1712000000",
     "main-0000000-1712000001",
     POLICY_FORWARD},
    {{NUM, "asc", "^main-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
     "main-" SHA "-1712000001",
     "main-fffffff-1712000000",
     POLICY_BACKWARD},
    {{NUM, "asc", "^main-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
     "latest",
     "main-fffffff-1712000000",
     POLICY_INCOMPARABLE},
    {{NUM, "asc", "^main-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
     "release-" SHA "-1712000000",
     "main-fffffff-1712000000",
     POLICY_INCOMPARABLE},
    {{ALPHA, "asc"}, "2024.05.01", "2024.12.01", POLICY_FORWARD},
    {{ALPHA, "desc"}, "2024.05.01", "2024.12.01", POLICY_BACKWARD},
    {{ALPHA, "asc", "^v"}, "latest", "v2", POLICY_INCOMPARABLE},
};

START_TEST(compare)
{
	struct policy *p = make(&compares[_i].s);
	enum policy_verdict v = policy_compare(p, compares[_i].current, compares[_i].candidate);

	ck_assert_msg(v == compares[_i].v, "%s -> %s: %s, expected %s", compares[_i].current,
	              compares[_i].candidate, policy_verdict_name(v),
	              policy_verdict_name(compares[_i].v));
	policy_free(p);
}
END_TEST

/* policy_verdict: what the guard and `eval --current` decide with (CONTRACT §6). */
static const struct {
	struct spec s;
	const char *current, *candidate;
	enum policy_verdict v;
} verdicts[] = {
    /* looser spellings of a version are never replaced by a version behind them */
    {{SEMVER, ">=1.0.0"}, "v2", "1.9.0", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0"}, "v2", "2.0.0", POLICY_INCOMPARABLE}, /* not behind: adopt */
    {{SEMVER, ">=1.0.0"}, "v2", "2.1.0", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "2.1", "2.0.9", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0"}, "V1.3.0", "1.2.0", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0"}, "V1.3.0", "1.3.0", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "1.2.3.4", "1.2.3", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0"}, "1.2.3.4", "1.2.4", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "1.2.3.0", "1.2.3", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "99999999999999999999.0.0", "2.0.0", POLICY_BACKWARD},
    {{SEMVER, ">=0.0.0"}, "2025.07.03", "2025.7.2", POLICY_BACKWARD},
    {{SEMVER, ">=0.0.0"}, "2025.07.03", "2025.7.4", POLICY_INCOMPARABLE}, /* not behind */
    {{SEMVER, ">=0.0.0"}, "2025.07.03", "2025.7.3", POLICY_INCOMPARABLE},
    {{SEMVER, ">=0.0.0"}, "01.4.0", "1.3.9", POLICY_BACKWARD},
    /* the same version spelled differently is up to date */
    {{SEMVER, ">=1.0.0"}, "v1.3.0", "1.3.0", POLICY_SAME},
    {{SEMVER, ">=1.0.0"}, "1.3.0", "v1.3.0", POLICY_SAME},
    /* a narrowed range does not roll back; prereleases are in the order */
    {{SEMVER, ">=1.0.0 <2.0.0"}, "2.1.0", "1.9.0", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0 <2.0.0"}, "0.9.0", "1.0.0", POLICY_FORWARD},
    {{SEMVER, ">=1.0.0"}, "1.1.0-rc.1", "1.0.0", POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0"}, "1.1.0-rc.1", "1.1.0", POLICY_FORWARD},
    /* the candidate must be the policy's */
    {{SEMVER, ">=1.0.0"}, "1.0.0", "latest", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "2.0.0", "0.9.0", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, "latest", "1.0.0", POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0"}, NULL, "1.0.0", POLICY_INCOMPARABLE},
    /* extract: the loose reading is of the extracted value, or of the tag off the filter */
    {{SEMVER, ">=1.0.0", "^(?P<v>[0-9.]+)-alpine$", "$v"},
     "2.1-alpine",
     "2.0.9-alpine",
     POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0", "^(?P<v>[0-9.]+)-alpine$", "$v"},
     "2.1-alpine",
     "2.1.1-alpine",
     POLICY_INCOMPARABLE},
    {{SEMVER, ">=1.0.0", "^(?P<v>[0-9.]+)-alpine$", "$v"},
     "3.0.0",
     "2.9.0-alpine",
     POLICY_BACKWARD},
    {{SEMVER, ">=1.0.0", "^(?P<v>[0-9.]+)-alpine$", "$v"},
     "latest-alpine",
     "2.9.0-alpine",
     POLICY_INCOMPARABLE},
    /* numerical and alphabetical orders have no loose reading */
    {{NUM, "asc"}, "v2", "1", POLICY_INCOMPARABLE},
    {{NUM, "asc"}, "1.50", "1.5", POLICY_SAME},
    {{ALPHA, "asc", "^v"}, "latest", "v2", POLICY_INCOMPARABLE},
};

START_TEST(verdict)
{
	struct policy *p = make(&verdicts[_i].s);
	enum policy_verdict v = policy_verdict(p, verdicts[_i].current, verdicts[_i].candidate);

	ck_assert_msg(v == verdicts[_i].v, "%s -> %s: %s, expected %s", verdicts[_i].current,
	              verdicts[_i].candidate, policy_verdict_name(v),
	              policy_verdict_name(verdicts[_i].v));
	policy_free(p);
}
END_TEST

START_TEST(compare_null)
{
	struct spec s = {ALPHA, "asc"};
	struct policy *p = make(&s);

	ck_assert_int_eq(policy_compare(p, NULL, "a"), POLICY_INCOMPARABLE);
	ck_assert_int_eq(policy_compare(p, "a", NULL), POLICY_INCOMPARABLE);
	ck_assert(!policy_accepts(p, NULL));
	ck_assert(policy_accepts(p, "a"));
	ck_assert(!policy_accepts(p, "a.sig"));
	policy_free(p);
}
END_TEST

/* A mixed list of real tag shapes for the consistency properties below. */
static const char *const mixed =
    "v1.2.3 1.2.3 V1.2.3 1.2.3+b1 1.2.3+b2 1.2.3-alpine 1.2.4-alpine 1.10.0 1.9.9 2.0.0-rc.1 "
    "2.0.0 v2.0.0 0.9.0 latest main dev sha256-0123abcd.sig sha256-0123abcd.att "
    "2024.05.01 2024.12.01 2023.11.30 20240501123456788 20240501123456789 1.5 1.50 -3 "
    "main-a1b2c3d-1712000000 main-fffffff-1712000000 main-0000000-1712000001 "
    "release-a1b2c3d-1700000000000000001 release-bbbbbbb-1700000000000000002 "
    "release-ccccccc-1700000000000000002 1e3 0x10 10 9 010";

static const struct spec props[] = {
    {SEMVER, ">=0.0.0"},
    {SEMVER, ">=1.0.0-0"},
    {SEMVER, "^1.2 || >=2.0.0-0"},
    {SEMVER, ">=1.0.0", "^(?P<v>[0-9.]+)(-alpine)?$", "$v"},
    {NUM, "asc"},
    {NUM, "desc"},
    {NUM, "asc", "^(?:main|release)-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
    {NUM, "desc", "^(?:main|release)-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
    {ALPHA, "asc"},
    {ALPHA, "desc"},
    {ALPHA, "asc", "^(?:main|release)-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"},
    {ALPHA, "desc", NULL, NULL, "-"},
};

/* policy_compare is a total preorder over accepted tags that agrees with policy_order and
 * policy_select: antisymmetric, SAME both ways for ties, INCOMPARABLE exactly when a side is
 * not accepted, order[i+1] -> order[i] is FORWARD or a tie, and nothing is FORWARD of the pick.
 * policy_verdict agrees with policy_compare wherever both sides are accepted. */
START_TEST(compare_consistency)
{
	struct policy *p = make(&props[_i]);
	struct strvec order = STRVEC_INIT;
	struct policy_result r = POLICY_RESULT_INIT;
	size_t n;
	char **tags = split(mixed, &n);

	ck_assert_int_eq(policy_order(&order, p, (const char *const *)tags, n, NULL), 0);
	ck_assert_int_eq(policy_select(&r, p, (const char *const *)tags, n, NULL), 0);
	ck_assert_uint_eq(order.len, r.candidates);
	ck_assert_msg(order.len > 1, "property needs at least two candidates");
	if (r.unordered) /* a numerical policy over non-numbers fails, as in Flux */
		ck_assert_ptr_null(r.latest);
	else
		ck_assert_str_eq(order.items[0], r.latest);
	for (size_t k = 0; k + 1 < order.len; k++)
		ck_assert_msg(policy_compare(p, order.items[k + 1], order.items[k]) !=
		                  POLICY_BACKWARD,
		              "%s -> %s backward", order.items[k + 1], order.items[k]);
	for (size_t a = 0; a < n; a++) {
		bool acc_a = policy_accepts(p, tags[a]);

		ck_assert(acc_a == strvec_has(&order, tags[a]));
		if (acc_a)
			ck_assert_int_ne(policy_compare(p, tags[a], r.latest), POLICY_BACKWARD);
		for (size_t b = 0; b < n; b++) {
			enum policy_verdict ab = policy_compare(p, tags[a], tags[b]);
			enum policy_verdict ba = policy_compare(p, tags[b], tags[a]);

			if (!acc_a || !policy_accepts(p, tags[b])) {
				ck_assert_int_eq(ab, POLICY_INCOMPARABLE);
				continue;
			}
			ck_assert_int_eq(policy_verdict(p, tags[a], tags[b]), ab);
			if (a == b) {
				ck_assert_int_eq(ab, POLICY_SAME);
				continue;
			}
			ck_assert_msg((ab == POLICY_FORWARD && ba == POLICY_BACKWARD) ||
			                  (ab == POLICY_BACKWARD && ba == POLICY_FORWARD) ||
			                  (ab == POLICY_SAME && ba == POLICY_SAME),
			              "%s vs %s: %s / %s", tags[a], tags[b],
			              policy_verdict_name(ab), policy_verdict_name(ba));
		}
	}
	policy_result_release(&r);
	strvec_release(&order);
	free_split(tags);
	policy_free(p);
}
END_TEST

/* Order output for a known list, best first. */
START_TEST(order)
{
	struct spec s = {NUM, "asc", "^main-[a-f0-9]+-(?P<ts>[0-9]+)$", "$ts"};
	struct policy *p = make(&s);
	struct strvec out = STRVEC_INIT;
	const char *tags[] = {"main-bbbbbbb-2", "main-aaaaaaa-10", "latest", "main-ccccccc-2",
	                      "main-ddddddd-1"};
	const char *want[] = {"main-aaaaaaa-10", "main-ccccccc-2", "main-bbbbbbb-2",
	                      "main-ddddddd-1"};

	ck_assert_int_eq(policy_order(&out, p, tags, 5, NULL), 0);
	ck_assert_uint_eq(out.len, 4);
	for (size_t k = 0; k < 4; k++)
		ck_assert_str_eq(out.items[k], want[k]);
	strvec_release(&out);
	/* No tags at all (found by fuzzing: qsort was handed a NULL array). */
	ck_assert_int_eq(policy_order(&out, p, NULL, 0, NULL), 0);
	ck_assert_uint_eq(out.len, 0);
	policy_free(p);
}
END_TEST

static const struct {
	struct policy_spec s;
	const char *want; /* substring of the message */
} bad_specs[] = {
    {{"(", NULL, NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "pattern '(': missing closing"},
    {{"a{2,1}", NULL, NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "at offset"},
    {{"^(?P<x>a)$", "$y", NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "group 'y' does not"},
    {{"^(a)$", "$2", NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "group 2 does not"},
    {{"^(a)$", "$", NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "names no group"},
    {{"^(a)$", "x$-", NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "names no group"},
    {{"^(a)$", "${1", NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "malformed ${...}"},
    {{"^(a)$", "${}", NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "malformed ${...}"},
    {{NULL, "$1", NULL, 0, POLICY_ALPHABETICAL, NULL, true}, "needs a pattern"},
    {{NULL, NULL, NULL, 0, POLICY_SEMVER, NULL, true}, "a range is required"},
    {{NULL, NULL, NULL, 0, POLICY_SEMVER, ">= x.y.z.w", true}, "semver range '>= x.y.z.w'"},
    {{NULL, NULL, NULL, 0, POLICY_SEMVER, "latest", true}, "semver range 'latest'"},
};

START_TEST(bad_spec)
{
	struct policy *p = (struct policy *)1;
	struct error err = ERROR_INIT;
	const char *bad_exclude[] = {"[z-a]"};

	ck_assert_int_eq(policy_new(&p, &bad_specs[_i].s, &err), IG_EINVALID);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(err.msg, bad_specs[_i].want), "%s", err.msg);
	if (_i == 0) {
		struct policy_spec s = {NULL, NULL, bad_exclude, 1, POLICY_ALPHABETICAL,
		                        NULL, true};

		ck_assert_int_eq(policy_new(&p, &s, &err), IG_EINVALID);
		ck_assert_msg(strstr(err.msg, "exclude '[z-a]'") && strstr(err.msg, "offset"), "%s",
		              err.msg);
	}
}
END_TEST

/* Hostile tags: huge, NUL-free binary, invalid UTF-8, empty. Never a crash; sane verdicts. */
START_TEST(hostile_tags)
{
	struct spec specs[] = {
	    {SEMVER, ">=0.0.0"},
	    {ALPHA, "asc", "^(.*)$",
	     "$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1"}, /* over the value cap */
	    {ALPHA, "asc", "(?P<c>.)", "${c}${c}"},
	};
	char *big = malloc(1 << 20);
	const char *tags[5];
	struct policy_result r = POLICY_RESULT_INIT;

	ck_assert_ptr_nonnull(big);
	memset(big, '9', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	tags[0] = big;
	tags[1] = "\xff\xfe\x80";
	tags[2] = "";
	tags[3] = "1.0.0";
	tags[4] = "a\xc3(";
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		struct policy *p = make(&specs[k]);

		ck_assert_int_eq(policy_select(&r, p, tags, 5, NULL), 0);
		ck_assert_ptr_nonnull(r.latest);
		policy_result_release(&r);
		(void)policy_compare(p, big, "1.0.0");
		(void)policy_compare(p, tags[1], tags[4]);
		policy_free(p);
	}
	/* a tag over POLICY_TAG_MAX is skipped, never a candidate, whatever the policy */
	{
		struct spec s = {NUM, "asc"};
		struct policy *p = make(&s);
		const char *nums[] = {big, "12", "7"};

		ck_assert_int_eq(policy_select(&r, p, nums, 3, NULL), 0);
		ck_assert_str_eq(r.latest, "12");
		ck_assert_uint_eq(r.candidates, 2);
		ck_assert_uint_eq(r.skipped, 1);
		ck_assert_int_eq(policy_compare(p, "12", big), POLICY_INCOMPARABLE);
		ck_assert(!policy_accepts(p, big));
		big[POLICY_TAG_MAX] = '\0';
		ck_assert(policy_accepts(p, big));
		ck_assert_int_eq(policy_compare(p, "12", big), POLICY_FORWARD);
		policy_result_release(&r);
		policy_free(p);
	}
	free(big);
}
END_TEST

/* A catastrophic pattern (filter or exclusion entry) over a tag that makes it backtrack
 * without end: the match hits the template budget's PCRE2 limits and the policy fails with one
 * line naming the pattern and the tag, never a silent no-match; a pattern that does not blow up
 * on the same tags still picks. */
static const struct {
	struct spec s;
	const char *what; /* the field the error names */
} hostile_res[] = {
    {{ALPHA, "asc", "^(a+)+$"}, "filterTags.pattern '^(a+)+$'"},
    {{ALPHA, "asc", "^(a+)+$", "$1"}, "filterTags.pattern '^(a+)+$'"},
    {{ALPHA, "asc", NULL, NULL, "^(a|aa)+$"}, "exclusionList '^(a|aa)+$'"},
};

START_TEST(hostile_pattern)
{
	struct policy *p = make(&hostile_res[_i].s);
	char evil[64];
	const char *tags[] = {"aaa", evil, "aaaa"};
	struct policy_result r = POLICY_RESULT_INIT;
	struct strvec v = STRVEC_INIT;
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;

	memset(evil, 'a', 48);
	evil[48] = 'b';
	evil[49] = '\0';
	ck_assert_int_eq(policy_select(&r, p, tags, 3, &err), IG_ETOOBIG);
	ck_assert_ptr_null(r.latest);
	ck_assert_msg(strstr(err.msg, hostile_res[_i].what) && strstr(err.msg, "aaaaab") &&
	                  strstr(err.msg, "limit") && !strchr(err.msg, '\n'),
	              "%s", err.msg);
	error_clear(&err);
	ck_assert_int_eq(policy_order(&v, p, tags, 3, &err), IG_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, hostile_res[_i].what));
	ck_assert_int_eq(policy_value(&b, p, evil), IG_ETOOBIG);
	ck_assert(!policy_accepts(p, evil));
	ck_assert_int_eq(policy_compare(p, "aaa", evil), POLICY_INCOMPARABLE);
	/* without the hostile tag the same policy decides */
	ck_assert_int_eq(policy_select(&r, p, tags + 2, 1, &err), 0);
	if (hostile_res[_i].s.exclude) {
		ck_assert_ptr_null(r.latest); /* "aaaa" is excluded */
	} else {
		ck_assert_str_eq(r.latest, "aaaa");
	}
	policy_result_release(&r);
	strvec_release(&v);
	buf_release(&b);
	error_clear(&err);
	policy_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, select_, 0, sizeof(selects) / sizeof(selects[0]));
	tcase_add_loop_test(tc, select_shuffled, 0, sizeof(selects) / sizeof(selects[0]));
	tcase_add_loop_test(tc, select_keyed, 0, sizeof(selects) / sizeof(selects[0]));
	tcase_add_loop_test(tc, verdict, 0, sizeof(verdicts) / sizeof(verdicts[0]));
	tcase_add_loop_test(tc, compare, 0, sizeof(compares) / sizeof(compares[0]));
	tcase_add_test(tc, compare_null);
	tcase_add_loop_test(tc, compare_consistency, 0, sizeof(props) / sizeof(props[0]));
	tcase_add_test(tc, order);
	tcase_add_loop_test(tc, bad_spec, 0, sizeof(bad_specs) / sizeof(bad_specs[0]));
	tcase_add_test(tc, hostile_tags);
	tcase_add_loop_test(tc, hostile_pattern, 0, sizeof(hostile_res) / sizeof(hostile_res[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
