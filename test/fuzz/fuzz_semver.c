/* SemVer 2.0.0 versions: two versions (the input's first line and the rest) parsed and
 * compared; precedence must be a consistent order. */
#include "fuzz.h"

#include "imageguard/util/error.h"
#include "imageguard/policy/semver.h"

static int sgn(int c)
{
	return (c > 0) - (c < 0);
}

static void check_version(const struct semver *v, const char *s, size_t len)
{
	const struct semver_num *nums[] = {&v->major, &v->minor, &v->patch};

	for (size_t k = 0; k < 3; k++) {
		FUZZ_CHECK(nums[k]->len == 0 ||
		           (nums[k]->p >= s && nums[k]->p + nums[k]->len <= s + len));
		FUZZ_CHECK(nums[k]->len == 0 || nums[k]->p[0] != '0');
		for (size_t i = 0; i < nums[k]->len; i++)
			FUZZ_CHECK(nums[k]->p[i] >= '0' && nums[k]->p[i] <= '9');
	}
	FUZZ_CHECK(semver_compare(v, v) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	const char *nl = memchr(s, '\n', size);
	size_t alen = nl ? (size_t)(nl - s) : size;
	const char *b = nl ? nl + 1 : s;
	size_t blen = nl ? size - alen - 1 : size;
	struct semver va, vb;
	struct error err = ERROR_INIT;
	int ra = semver_parse(&va, s, alen, &err);
	int rb = semver_parse(&vb, b, blen, NULL);

	FUZZ_CHECK(ra == 0 || (ra == IG_EINVALID && err.msg[0]));
	FUZZ_CHECK(rb == 0 || rb == IG_EINVALID);
	if (ra == 0)
		check_version(&va, s, alen);
	if (rb == 0)
		check_version(&vb, b, blen);
	/* A version is also a loose version, of the same precedence. */
	{
		struct semver la;
		bool longer;

		if (semver_parse_loose(&la, &longer, s, alen) == 0 && ra == 0)
			FUZZ_CHECK(semver_compare(&la, &va) == 0 && !longer);
		if (ra == 0)
			FUZZ_CHECK(semver_parse_loose(&la, &longer, s, alen) == 0);
	}
	if (ra == 0 && rb == 0) {
		int ab = semver_compare(&va, &vb);

		FUZZ_CHECK(sgn(ab) == -sgn(semver_compare(&vb, &va)));
		/* Equal precedence means equal but for build metadata and the v prefix. */
		if (ab == 0) {
			FUZZ_CHECK(semver_num_compare(va.major, vb.major) == 0);
			FUZZ_CHECK(va.pre_len == vb.pre_len &&
			           (!va.pre_len || memcmp(va.pre, vb.pre, va.pre_len) == 0));
		}
	}
	return 0;
}
