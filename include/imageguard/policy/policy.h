/* Tag policies as a Flux ImagePolicy defines them: filter (pcre2 pattern + extract template,
 * exclusion list), order (semver range, numerical, alphabetical), pick the best, and compare
 * two tags under the same order. Deterministic: equal ranks are broken by the byte-wise
 * greater original tag. */
#ifndef IMAGEGUARD_POLICY_H
#define IMAGEGUARD_POLICY_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct error;
struct strvec;

enum policy_kind { POLICY_SEMVER, POLICY_NUMERICAL, POLICY_ALPHABETICAL };

struct policy_spec {
	const char *pattern;        /* NULL: every tag passes the filter */
	const char *extract;        /* NULL: the whole tag (or "$0") is the value ordered */
	const char *const *exclude; /* NULL: the default exclusion list ("^.*\\.sig$") */
	size_t exclude_len;         /* with exclude != NULL; 0 with a non-NULL exclude: none */
	enum policy_kind kind;
	const char *range; /* POLICY_SEMVER: Masterminds v3 range (e.g. ">=1.0.0") */
	bool ascending;    /* numerical/alphabetical: asc picks the greatest */
};

struct policy; /* opaque, immutable after policy_new: safe to share between threads */

/* Tags longer than this are never candidates (counted as skipped, no regex runs on them):
 * OCI tags are at most 128 bytes, and it bounds the work per tag. */
#define POLICY_TAG_MAX 4096

/* Compiles the spec (pcre2 with JIT when available, the semver range). Invalid regexes are
 * IG_EINVALID naming the offset and pcre2's message; invalid ranges are IG_EINVALID. */
int policy_new(struct policy **out, const struct policy_spec *spec, struct error *err);
void policy_free(struct policy *p);

struct policy_result {
	char *latest;      /* owned; NULL when no candidate */
	size_t candidates; /* tags that passed filter, exclusion and the order's parse/range */
	size_t skipped;    /* tags that matched the filter but could not be ordered (not a number,
	                      not semver, outside the range), and tags over POLICY_TAG_MAX */
	/* owned; a numerical policy's first skipped tag, else NULL. Flux fails a numerical policy
	 * when any tag passing the filter is not a number: then latest is NULL and the caller
	 * reports the failure naming this tag */
	char *unordered;
};

#define POLICY_RESULT_INIT                                                                         \
	{                                                                                          \
		NULL, 0, 0, NULL                                                                   \
	}

/* Picks the best of n tags in one pass without per-tag allocation. Duplicates are counted as
 * given (fold them first). Returns 0 (latest may be NULL when nothing qualifies, and is NULL
 * when unordered is set) or a negative code (out is then released): IG_ETOOBIG when a tag
 * made the filter pattern or an exclusion entry fail (over PCRE2's match or depth limit, those
 * of the template budget, or any PCRE2 error but no-match), named with the pattern and the
 * tag in err; else out of memory. policy_order fails the same way. */
int policy_select(struct policy_result *out, const struct policy *p, const char *const *tags,
                  size_t n, struct error *err);
void policy_result_release(struct policy_result *r);

/* The length of a listing's identity for policy_select_keyed: listmemo's key, the SHA-256 of
 * the page the tags were parsed from. */
#define POLICY_LISTING_KEY_LEN 32

/* policy_select, remembering its last result under key (NULL: none, plain policy_select): the
 * same policy over the same listing in the next `run` pass answers from memory (the policy
 * was a fifth of an up-to-date pass). The memo is the policy's own and not thread-safe: one
 * pass thread decides. Out of memory while remembering only forgets. */
int policy_select_keyed(struct policy_result *out, const struct policy *p, const char *const *tags,
                        size_t n, const unsigned char *key, struct error *err);

/* Appends the candidates in policy order, best first, to out. */
int policy_order(struct strvec *out, const struct policy *p, const char *const *tags, size_t n,
                 struct error *err);

enum policy_verdict {
	POLICY_FORWARD,     /* candidate strictly ahead of current */
	POLICY_SAME,        /* the order ties them: the same tag, or the same version, number or
	                       extracted value spelled differently (v1.3.0 and 1.3.0) */
	POLICY_BACKWARD,    /* candidate behind current */
	POLICY_INCOMPARABLE /* current (or candidate) is outside the policy's order */
};

/* Compares current with candidate under exactly this policy (filter, extract and range applied
 * to both): INCOMPARABLE when either side does not pass. */
enum policy_verdict policy_compare(const struct policy *p, const char *current,
                                   const char *candidate);

/* The verdict every decision uses (the guard and `eval --current` alike): whether moving the
 * committed value current to candidate, the policy's pick, is forward. INCOMPARABLE when
 * candidate does not pass the policy. Otherwise current is compared under the policy's order
 * with the range lifted (a narrowed range must not roll back), and SAME means equal under that
 * order. For a semver policy, a current that is outside the order but reads loosely as a
 * version (semver_parse_loose of the extracted value when the pattern matches it, else of the
 * tag) ahead of the candidate is BACKWARD: `v2`, `2.1`, `2025.07.03`, `1.2.3.4` are never
 * replaced by a version behind them. Everything else is INCOMPARABLE (adopt). */
enum policy_verdict policy_verdict(const struct policy *p, const char *current,
                                   const char *candidate);

/* The value tag is ordered by, as Flux's filter computes it: the extract template expanded from
 * the pattern's first match, or the tag itself. Appends it to out (a NUL-terminated buffer).
 * Returns 0, IG_ENOTFOUND when the exclusion list or the pattern drops the tag, IG_ETOOBIG for
 * a tag or value over its cap or a match over its limits, or IG_EFAIL (memory, out's cap). */
int policy_value(struct buf *out, const struct policy *p, const char *tag);

/* True when tag passes filter and exclusion and is orderable (in range for semver). */
bool policy_accepts(const struct policy *p, const char *tag);

const char *policy_verdict_name(enum policy_verdict v);

#endif
