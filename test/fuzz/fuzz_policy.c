/* Filter/extract templates and orders: the input's first line is the filterTags pattern, the
 * second the extract template (empty lines: absent), the third the order ("semver RANGE",
 * "numerical asc|desc", "alphabetical asc|desc"), every further line a tag. The pick, the
 * order and the pairwise comparison the guard trusts must agree; a tag that drives the pattern
 * past PCRE2's match limits fails the pick and the order alike. */
#include "fuzz.h"

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/policy/policy.h"
#include "imageguard/util/strvec.h"

#define MAX_TAGS 128

static void parse_order(struct policy_spec *spec, const char *line)
{
	if (strncmp(line, "numerical", 9) == 0) {
		spec->kind = POLICY_NUMERICAL;
		spec->ascending = !strstr(line, "desc");
	} else if (strncmp(line, "alphabetical", 12) == 0) {
		spec->kind = POLICY_ALPHABETICAL;
		spec->ascending = !strstr(line, "desc");
	} else {
		spec->kind = POLICY_SEMVER;
		spec->range = strncmp(line, "semver ", 7) == 0 ? line + 7 : line;
	}
}

/* Against the pick: SAME both ways for a tie, else BACKWARD one way and FORWARD the other;
 * policy_verdict agrees with policy_compare on accepted tags and policy_value reads them. */
static void check_against_pick(const struct policy *p, const char *pick, const char *tag)
{
	enum policy_verdict down = policy_compare(p, pick, tag), up = policy_compare(p, tag, pick);
	struct buf b = BUF_INIT;

	FUZZ_CHECK(policy_accepts(p, tag));
	FUZZ_CHECK((down == POLICY_SAME && up == POLICY_SAME) ||
	           (down == POLICY_BACKWARD && up == POLICY_FORWARD));
	FUZZ_CHECK(policy_verdict(p, tag, pick) == up);
	FUZZ_CHECK(policy_verdict(p, pick, tag) == down);
	FUZZ_CHECK(policy_value(&b, p, tag) == 0);
	buf_release(&b);
}

static void check(const struct policy *p, struct strvec *tags)
{
	struct policy_result res = POLICY_RESULT_INIT;
	struct strvec order = STRVEC_INIT;
	struct error err = ERROR_INIT;
	const char *const *t = (const char *const *)tags->items;

	int rc = policy_select(&res, p, t, tags->len, &err);

	if (rc == IG_ETOOBIG) {
		/* a tag drove the pattern past PCRE2's limits: the order fails on it too, and the
		 * error names the field */
		FUZZ_CHECK(!res.latest && (strstr(err.msg, "filterTags.pattern '") ||
		                           strstr(err.msg, "exclusionList '")));
		FUZZ_CHECK(policy_order(&order, p, t, tags->len, &err) == IG_ETOOBIG);
		goto done;
	}
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(policy_order(&order, p, t, tags->len, &err) == 0);
	FUZZ_CHECK(res.candidates == order.len);
	FUZZ_CHECK(res.candidates + res.skipped <= tags->len);
	/* a numerical policy over a non-number picks nothing, as in Flux */
	FUZZ_CHECK(!res.unordered || (!res.latest && res.skipped > 0));
	FUZZ_CHECK(!res.latest == (!order.len || res.unordered));
	if (!res.latest)
		goto done;
	FUZZ_CHECK(strcmp(res.latest, order.items[0]) == 0);
	FUZZ_CHECK(policy_compare(p, res.latest, res.latest) == POLICY_SAME);
	for (size_t i = 0; i < order.len; i++) {
		check_against_pick(p, res.latest, order.items[i]);
		if (i + 1 < order.len)
			FUZZ_CHECK(policy_compare(p, order.items[i], order.items[i + 1]) !=
			           POLICY_FORWARD);
	}
	for (size_t i = 0; i < tags->len; i++) {
		/* whatever the committed value, the verdict is one of the four, and a tag the
		 * policy drops is never the pick's equal */
		enum policy_verdict v = policy_verdict(p, tags->items[i], res.latest);

		FUZZ_CHECK(v >= POLICY_FORWARD && v <= POLICY_INCOMPARABLE);
		if (!policy_accepts(p, tags->items[i]))
			FUZZ_CHECK(policy_compare(p, res.latest, tags->items[i]) ==
			           POLICY_INCOMPARABLE);
	}
done:
	strvec_release(&order);
	policy_result_release(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data;
	size_t n = size;
	char *pattern = fuzz_next_line(&p, &n), *extract = fuzz_next_line(&p, &n);
	char *order = fuzz_next_line(&p, &n), *line;
	struct policy_spec spec = {0};
	struct strvec tags = STRVEC_INIT;
	struct policy *pol = NULL;
	struct error err = ERROR_INIT;
	int rc;

	spec.pattern = pattern && pattern[0] ? pattern : NULL;
	spec.extract = extract && extract[0] ? extract : NULL;
	parse_order(&spec, order ? order : "");
	while (tags.len < MAX_TAGS && (line = fuzz_next_line(&p, &n)) != NULL)
		FUZZ_CHECK(strvec_push_owned(&tags, line) == 0);
	rc = policy_new(&pol, &spec, &err);
	FUZZ_CHECK(rc == 0 || (rc == IG_EINVALID && err.msg[0]) || rc == IG_EFAIL);
	if (rc == 0)
		check(pol, &tags);
	policy_free(pol);
	strvec_release(&tags);
	free(pattern);
	free(extract);
	free(order);
	return 0;
}
