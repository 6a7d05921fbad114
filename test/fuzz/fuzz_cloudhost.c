/* The cloud registry host matcher (cloudhost_match), the gate a cloud token passes: any bytes
 * classify without a crash, deterministically; a host with a byte outside [a-z0-9.-] (but a
 * fixture's ".localhost:port") is no cloud host; whatever is classified ends with its
 * provider's domain (public.ecr.aws exactly, an ECR partition, gcr.io, -docker.pkg.dev,
 * .azurecr.*), and an ECR host's region is a non-empty label found in the host. */
#include "fuzz.h"

#include "imageguard/registry/cloudhost.h"

/* host without a fixture's ".localhost[:port]" tail (the matcher classifies what precedes it). */
static size_t bare_len(const char *host)
{
	size_t n = strcspn(host, ":");
	const char *l = ".localhost";

	if (n > strlen(l) && strncmp(host + n - strlen(l), l, strlen(l)) == 0)
		return n - strlen(l);
	return n;
}

static bool ends(const char *h, size_t n, const char *s)
{
	size_t k = strlen(s);

	return n >= k && memcmp(h + n - k, s, k) == 0;
}

static void check_kind(const struct cloudhost *c, const char *h, size_t n)
{
	switch (c->kind) {
	case CLOUDHOST_ECR_PUBLIC:
		FUZZ_CHECK(n == 14 && memcmp(h, "public.ecr.aws", 14) == 0);
		break;
	case CLOUDHOST_ECR:
		FUZZ_CHECK(*c->partition && ends(h, n, c->partition) && c->region[0]);
		FUZZ_CHECK(strspn(c->region, "abcdefghijklmnopqrstuvwxyz0123456789-") ==
		           strlen(c->region));
		FUZZ_CHECK(strstr(h, c->fips ? ".dkr.ecr-fips." : ".dkr.ecr.") != NULL);
		break;
	case CLOUDHOST_GCP:
		FUZZ_CHECK((n == 6 && memcmp(h, "gcr.io", 6) == 0) || ends(h, n, ".gcr.io") ||
		           ends(h, n, "-docker.pkg.dev"));
		break;
	case CLOUDHOST_ACR:
		FUZZ_CHECK(ends(h, n, ".azurecr.io") || ends(h, n, ".azurecr.cn") ||
		           ends(h, n, ".azurecr.de") || ends(h, n, ".azurecr.us"));
		break;
	default:
		FUZZ_CHECK(false);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *host = fuzz_strndup(data, size);
	struct cloudhost a, b;
	enum cloudhost_kind k = cloudhost_match(&a, host);
	size_t n = bare_len(host);

	FUZZ_CHECK(k == a.kind && cloudhost_match(&b, host) == k);
	FUZZ_CHECK(strcmp(a.region, b.region) == 0 && a.fips == b.fips);
	if (k != CLOUDHOST_NONE) {
		FUZZ_CHECK(strspn(host, "abcdefghijklmnopqrstuvwxyz0123456789.-") >= n);
		FUZZ_CHECK(*cloudhost_provider(k));
		check_kind(&a, host, n);
	} else {
		FUZZ_CHECK(!a.region[0] && !*a.partition && !a.fips);
	}
	free(host);
	return 0;
}
