/* Kubernetes label selectors in their string form (`--watch-label-selector`, the API's
 * labelSelector query), parsed and matched as k8s.io/apimachinery's labels.Parse and
 * Selector.Matches do: requirements joined by ',' (AND), each `key`, `!key`, `key=v`,
 * `key==v`, `key!=v`, `key in (v,...)`, `key notin (v,...)`, `key>N` or `key<N`. */
#ifndef IMAGEGUARD_LABELSEL_H
#define IMAGEGUARD_LABELSEL_H

#include <stdbool.h>
#include <stddef.h>

struct error;
struct strvec;

/* Caps on a selector from outside: its length and its number of requirements. */
#define LABELSEL_MAX_BYTES 8192
#define LABELSEL_MAX_REQUIREMENTS 256

struct labelsel; /* opaque, immutable once parsed: safe to match from several threads */

/* Parses text into *out (free with labelsel_free). The empty string selects everything.
 * Returns 0, IG_EINVALID with a one-line message naming the selector and the token found
 * ("label selector 'x==a==b': found '==', expected: ',' or end of string"), or IG_EFAIL
 * (out of memory). */
int labelsel_parse(struct labelsel **out, const char *text, struct error *err);

/* labelsel_parse for its verdict only. */
int labelsel_check(const char *text, struct error *err);

void labelsel_free(struct labelsel *s);

/* True when labels (key, value, key, value, ...; as config_policy.labels) satisfy every
 * requirement of s. */
bool labelsel_matches(const struct labelsel *s, const struct strvec *labels);

/* The number of requirements (0 for the empty selector). */
size_t labelsel_len(const struct labelsel *s);

#endif
