/* Shard units (shard_normalize_url): any bytes normalise or fail as invalid, the result is
 * bounded, and the rules hold as properties: a network URL names the same unit under ssh:// and
 * https:// when its authority has no port, and a trailing '/' never changes the unit. */
#include "fuzz.h"

#include "imageguard/pass/shard.h"
#include "imageguard/util/error.h"

static char *norm(const char *prefix, const char *s, const char *suffix, int *rc)
{
	size_t n = strlen(prefix) + strlen(s) + strlen(suffix) + 1;
	char *u = malloc(n), *out = NULL;
	struct error err = ERROR_INIT;

	if (!u)
		abort();
	snprintf(u, n, "%s%s%s", prefix, s, suffix);
	*rc = shard_normalize_url(&out, u, &err);
	FUZZ_CHECK(*rc == 0 || *rc == IG_EINVALID);
	FUZZ_CHECK(*rc == 0 ? out && strlen(out) <= n + 8 : !out && err.msg[0]);
	free(u);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size), *a, *b, *slash;
	int ra, rb;

	fuzz_quiet();
	free(norm("", s, "", &ra));
	/* the same authority and path under two schemes (no port: the defaults differ) */
	slash = strchr(s, '/');
	if (!memchr(s, ':', slash ? (size_t)(slash - s) : strlen(s)) && !strstr(s, "://")) {
		a = norm("ssh://", s, "", &ra);
		b = norm("https://", s, "", &rb);
		FUZZ_CHECK(ra == rb && (ra < 0 || strcmp(a, b) == 0));
		free(a);
		free(b);
		a = norm("https://", s, "/", &rb);
		b = norm("https://", s, "", &ra);
		FUZZ_CHECK(ra < 0 || rb < 0 || strcmp(a, b) == 0);
		free(a);
		free(b);
	}
	free(s);
	return 0;
}
