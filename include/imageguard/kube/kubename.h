/* Kubernetes names as the API server checks them: object names and namespaces (DNS names),
 * label keys and values. Everything an object names is checked here before it reaches a URL,
 * a path or a log line. Pure functions, thread-safe. */
#ifndef IMAGEGUARD_KUBENAME_H
#define IMAGEGUARD_KUBENAME_H

#include <stdbool.h>
#include <stddef.h>

/* Lower-case alphanumerics and '-' (and '.' when dots), alphanumeric at both ends, 1..max
 * bytes: a DNS subdomain (max 253, dots) for object names, a DNS label (63, no dots) for
 * namespaces. */
bool kubename_is_dns_name(const char *s, size_t max, bool dots);

/* A label key: an optional DNS-subdomain prefix and '/', then a name of up to 63 of
 * [A-Za-z0-9-_.], alphanumeric at both ends. */
bool kubename_is_label_key(const char *k);

/* A label value: empty, or as a key's name part. */
bool kubename_is_label_value(const char *v);

#endif
