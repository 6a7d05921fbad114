/* Cloud registry hosts: fluxcd/pkg's patterns for ECR, Artifact Registry/GCR and ACR, anchored,
 * written out as string checks (no regex engine on a credential's path). */
#include <stddef.h>
#include <string.h>

#include "imageguard/registry/cloudhost.h"

#define HOST_MAX 253 /* a DNS name */
#define LOCALHOST ".localhost"

static const char *const ecr_partitions[] = {
    "amazonaws.com", "amazonaws.com.cn", "amazonaws.eu",   "sc2s.sgov.gov",
    "c2s.ic.gov",    "cloud.adc-e.uk",   "csp.hci.ic.gov",
};
static const char *const acr_suffixes[] = {".azurecr.io", ".azurecr.cn", ".azurecr.de",
                                           ".azurecr.us"};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_label_char(char c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-';
}

/* A host name: labels of [a-z0-9-], none empty. */
static bool is_host(const char *h, size_t n)
{
	size_t label = 0;

	for (size_t i = 0; i < n; i++) {
		if (h[i] == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (is_label_char(h[i])) {
			label++;
		} else {
			return false;
		}
	}
	return n > 0 && label > 0;
}

/* The length of host without a fixture's ".localhost[:port]" suffix, or the whole length when
 * there is none; (size_t)-1 for a port on anything else. */
static size_t host_len(const char *host)
{
	size_t n = strcspn(host, ":"), l = strlen(LOCALHOST);

	if (n > l && strncmp(host + n - l, LOCALHOST, l) == 0) {
		if (host[n]) /* ":port": digits only */
			for (size_t i = n + 1; i == n + 1 || host[i]; i++)
				if (!is_digit(host[i]))
					return (size_t)-1;
		return n - l;
	}
	return host[n] ? (size_t)-1 : n;
}

static bool ends_with(const char *h, size_t n, const char *suffix)
{
	size_t s = strlen(suffix);

	return n >= s && memcmp(h + n - s, suffix, s) == 0;
}

static bool equals(const char *h, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(h, s, n) == 0;
}

/* <digits>.dkr.ecr[-fips].<region>.<partition>, the whole of h[0..n). */
static bool match_ecr(struct cloudhost *out, const char *h, size_t n)
{
	static const char mark[] = ".dkr.ecr", fips[] = "-fips";
	size_t i = 0, r;

	while (i < n && is_digit(h[i]))
		i++;
	if (i == 0 || n - i < sizeof(mark) - 1 || memcmp(h + i, mark, sizeof(mark) - 1) != 0)
		return false;
	i += sizeof(mark) - 1;
	out->fips = n - i >= sizeof(fips) - 1 && memcmp(h + i, fips, sizeof(fips) - 1) == 0;
	if (out->fips)
		i += sizeof(fips) - 1;
	if (i >= n || h[i++] != '.')
		return false;
	for (r = i; i < n && h[i] != '.'; i++)
		if (!is_label_char(h[i]))
			return false;
	if (i == r || i - r >= CLOUDHOST_REGION_MAX || i >= n)
		return false;
	for (size_t p = 0; p < sizeof(ecr_partitions) / sizeof(ecr_partitions[0]); p++)
		if (equals(h + i + 1, n - i - 1, ecr_partitions[p])) {
			memcpy(out->region, h + r, i - r);
			out->region[i - r] = '\0';
			out->partition = ecr_partitions[p];
			return true;
		}
	return false;
}

static bool match_gcp(const char *h, size_t n)
{
	static const char gcr[] = "gcr.io", sub[] = ".gcr.io", ar[] = "-docker.pkg.dev";

	return equals(h, n, gcr) || (n > sizeof(sub) - 1 && ends_with(h, n, sub)) ||
	       (n > sizeof(ar) - 1 && ends_with(h, n, ar));
}

static bool match_acr(const char *h, size_t n)
{
	for (size_t i = 0; i < sizeof(acr_suffixes) / sizeof(acr_suffixes[0]); i++)
		if (n > strlen(acr_suffixes[i]) && ends_with(h, n, acr_suffixes[i]))
			return true;
	return false;
}

enum cloudhost_kind cloudhost_match(struct cloudhost *out, const char *host)
{
	size_t n = host ? host_len(host) : (size_t)-1;

	memset(out, 0, sizeof(*out));
	out->partition = "";
	if (n == (size_t)-1 || n > HOST_MAX || !is_host(host, n))
		return out->kind = CLOUDHOST_NONE;
	if (equals(host, n, "public.ecr.aws"))
		out->kind = CLOUDHOST_ECR_PUBLIC;
	else if (match_ecr(out, host, n))
		out->kind = CLOUDHOST_ECR;
	else if (match_gcp(host, n))
		out->kind = CLOUDHOST_GCP;
	else if (match_acr(host, n))
		out->kind = CLOUDHOST_ACR;
	if (out->kind != CLOUDHOST_ECR) {
		out->fips = false;
		out->region[0] = '\0';
		out->partition = "";
	}
	return out->kind;
}

const char *cloudhost_provider(enum cloudhost_kind kind)
{
	switch (kind) {
	case CLOUDHOST_ECR:
	case CLOUDHOST_ECR_PUBLIC:
		return "aws";
	case CLOUDHOST_GCP:
		return "gcp";
	case CLOUDHOST_ACR:
		return "azure";
	default:
		return "";
	}
}
