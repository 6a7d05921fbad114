/* Filter/extract templates and orders: the input's first line is the filterTags pattern, the
 * second the extract template (empty lines: absent), the third the order ("semver RANGE",
 * "numerical asc|desc", "alphabetical asc|desc"), every further line a tag. The pick, the
 * order and the pairwise comparison the guard trusts must agree. */
#include "fuzz.h"

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

static void check(const struct policy *p, struct strvec *tags)
{
	struct policy_result res = POLICY_RESULT_INIT;
	struct strvec order = STRVEC_INIT;
	struct error err = ERROR_INIT;
	const char *const *t = (const char *const *)tags->items;

	FUZZ_CHECK(policy_select(&res, p, t, tags->len, &err) == 0);
	FUZZ_CHECK(policy_order(&order, p, t, tags->len, &err) == 0);
	FUZZ_CHECK(res.candidates == order.len);
	FUZZ_CHECK(res.candidates + res.skipped <= tags->len);
	FUZZ_CHECK(!res.latest == !order.len);
	if (res.latest) {
		FUZZ_CHECK(strcmp(res.latest, order.items[0]) == 0);
		FUZZ_CHECK(policy_compare(p, res.latest, res.latest) == POLICY_SAME);
	}
	for (size_t i = 0; i < order.len; i++) {
		FUZZ_CHECK(policy_accepts(p, order.items[i]));
		if (strcmp(order.items[i], res.latest) == 0)
			continue;
		/* Nothing is ahead of the pick, and the verdict is antisymmetric. */
		FUZZ_CHECK(policy_compare(p, res.latest, order.items[i]) == POLICY_BACKWARD);
		FUZZ_CHECK(policy_compare(p, order.items[i], res.latest) == POLICY_FORWARD);
		if (i + 1 < order.len && strcmp(order.items[i], order.items[i + 1]) != 0)
			FUZZ_CHECK(policy_compare(p, order.items[i], order.items[i + 1]) ==
				   POLICY_BACKWARD);
	}
	for (size_t i = 0; i < tags->len; i++)
		if (!policy_accepts(p, tags->items[i]))
			FUZZ_CHECK(policy_compare(p, res.latest, tags->items[i]) ==
				   POLICY_INCOMPARABLE);
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
