/* Kubernetes names, label keys and label values, checked as the API server checks them
 * (k8s.io/apimachinery's validation). */
#include <stdio.h>
#include <string.h>

#include "imageguard/kube/kubename.h"

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
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

bool kubename_is_dns_name(const char *s, size_t max, bool dots)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && c != '-' && !(dots && c == '.'))
			return false;
		if (!alnum && (i == 0 || i == n - 1))
			return false;
	}
	return true;
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
