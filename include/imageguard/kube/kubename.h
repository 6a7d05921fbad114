/* Kubernetes names as the API server checks them: object names and namespaces (DNS names),
 * label keys and values. Everything an object names is checked here before it reaches a URL,
 * a path or a log line. Pure functions, thread-safe. */
#ifndef IMAGEGUARD_KUBENAME_H
#define IMAGEGUARD_KUBENAME_H

#include <stdbool.h>
#include <stddef.h>

/* The longest object name (a DNS-1123 subdomain) and namespace (a DNS-1123 label). */
#define KUBENAME_MAX_NAME 253
#define KUBENAME_MAX_NAMESPACE 63

/* 1..max bytes of a DNS-1123 label, [a-z0-9]([-a-z0-9]*[a-z0-9])?, or with dots a DNS-1123
 * subdomain: such labels joined by single dots (no empty label, no '-' beside a dot). A
 * subdomain (max 253) names Secrets, ServiceAccounts and every custom resource; a label (63)
 * a namespace. Neither can be "", ".", ".." or hold '/', '%' or a byte a URL would escape. */
bool kubename_is_dns_name(const char *s, size_t max, bool dots);

/* kubename_is_dns_name(s, 253, true): an object name. False for NULL. */
bool kubename_is_name(const char *s);

/* kubename_is_dns_name(s, 63, false): a namespace. False for NULL. */
bool kubename_is_namespace(const char *s);

/* A label key: an optional DNS-subdomain prefix and '/', then a name of up to 63 of
 * [A-Za-z0-9-_.], alphanumeric at both ends. */
bool kubename_is_label_key(const char *k);

/* A label value: empty, or as a key's name part. */
bool kubename_is_label_value(const char *v);

#endif
