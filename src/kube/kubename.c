/* Kubernetes names, label keys and label values, checked exactly as the API server checks them
 * (k8s.io/apimachinery pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain,
 * IsQualifiedName, IsValidLabelValue). */
#include <stdio.h>
#include <string.h>

#include "imageguard/kube/kubename.h"

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A label name or value: up to 63 of [A-Za-z0-9-_.], alphanumeric at both ends. */
static bool is_label_name(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* One DNS-1123 label of n bytes, without its length cap: [a-z0-9]([-a-z0-9]*[a-z0-9])?. */
static bool is_dns_label(const char *s, size_t n)
{
	if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool kubename_is_dns_name(const char *s, size_t max, bool dots)
{
	size_t n = strlen(s);
	const char *p = s, *end = s + n, *dot;

	if (n == 0 || n > max)
		return false;
	if (!dots)
		return is_dns_label(s, n);
	/* a subdomain: labels joined by single dots */
	for (; (dot = memchr(p, '.', (size_t)(end - p))); p = dot + 1)
		if (!is_dns_label(p, (size_t)(dot - p)))
			return false;
	return is_dns_label(p, (size_t)(end - p));
}

bool kubename_is_name(const char *s)
{
	return s && kubename_is_dns_name(s, KUBENAME_MAX_NAME, true);
}

bool kubename_is_namespace(const char *s)
{
	return s && kubename_is_dns_name(s, KUBENAME_MAX_NAMESPACE, false);
}

bool kubename_is_label_key(const char *k)
{
	const char *slash = strchr(k, '/');
	char prefix[254];

	if (!slash)
		return is_label_name(k, strlen(k));
	if ((size_t)(slash - k) >= sizeof(prefix))
		return false;
	snprintf(prefix, sizeof(prefix), "%.*s", (int)(slash - k), k);
	return kubename_is_dns_name(prefix, 253, true) &&
	       is_label_name(slash + 1, strlen(slash + 1));
}

bool kubename_is_label_value(const char *v)
{
	return !*v || is_label_name(v, strlen(v));
}
