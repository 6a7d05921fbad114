/* Masterminds v3 version ranges: the input's first line is a range, each further line a
 * version checked against it. A full version used as a range matches itself. */
#include "fuzz.h"

#include "imageguard/util/error.h"
#include "imageguard/policy/semver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data;
	size_t n = size;
	char *range = fuzz_next_line(&p, &n), *line;
	struct semver_range *r = NULL;
	struct error err = ERROR_INIT;
	int rc;

	if (!range)
		return 0;
	rc = semver_range_new(&r, range, &err);
	FUZZ_CHECK(rc == 0 || (rc == IG_EINVALID && err.msg[0]) || rc == IG_EFAIL);
	FUZZ_CHECK((rc == 0) == (r != NULL));
	for (size_t k = 0; k < 64 && (line = fuzz_next_line(&p, &n)) != NULL; k++) {
		struct semver v;

		if (r && semver_parse(&v, line, strlen(line), NULL) == 0)
			(void)semver_range_matches(r, &v);
		free(line);
	}
	if (r) {
		struct semver v;

		if (semver_parse(&v, range, strlen(range), NULL) == 0)
			FUZZ_CHECK(semver_range_matches(r, &v));
	}
	semver_range_free(r);
	free(range);
	return 0;
}
