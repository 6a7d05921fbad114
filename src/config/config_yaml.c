/* Reading configuration YAML with libyaml's document API: typed field access that reports
 * wrong types, duplicate and unknown keys with the line they sit on. */
#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config_private.h"
#include "imageguard/util/duration.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

static void doc_diag(struct doc *d, enum config_severity sev, size_t line, const char *fmt,
                     va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (sev == CONFIG_ERROR && d->object[0])
		config_diag_error(d->L, d->file, line, "%s: %s", d->object, msg);
	else if (sev == CONFIG_ERROR)
		config_diag_error(d->L, d->file, line, "%s", msg);
	else if (d->object[0])
		config_diag_warn(d->L, d->file, line, "%s: %s", d->object, msg);
	else
		config_diag_warn(d->L, d->file, line, "%s", msg);
}

void config_doc_error(struct doc *d, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	doc_diag(d, CONFIG_ERROR, line, fmt, ap);
	va_end(ap);
}

void config_doc_reason(struct doc *d, const char *reason)
{
	if (!d->reason && d->L->diags->len) {
		d->reason = reason;
		d->reason_at = d->L->diags->len - 1;
	}
}

void config_doc_warn(struct doc *d, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	doc_diag(d, CONFIG_WARNING, line, fmt, ap);
	va_end(ap);
}

bool config_yaml_is_null(const yaml_node_t *n)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	s = scalar(n);
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	       !strcmp(s, "NULL");
}

/* The value under key in mapping m, NULL when absent or null. */
yaml_node_t *config_yaml_lookup(struct doc *d, const yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node(d, p->key), *v = node(d, p->value);

		if (k && k->type == YAML_SCALAR_NODE && same_str(scalar(k), key))
			return v && !config_yaml_is_null(v) ? v : NULL;
	}
	return NULL;
}

/* The line of key itself in mapping m (a block mapping's value starts on the next line);
 * fallback when absent. */
size_t config_yaml_key_line(struct doc *d, const yaml_node_t *m, const char *key, size_t fallback)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return fallback;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node(d, p->key);

		if (k && k->type == YAML_SCALAR_NODE && same_str(scalar(k), key))
			return line_of(k);
	}
	return fallback;
}

size_t config_append(char *out, size_t n, size_t at, const char *s)
{
	size_t len = strlen(s);

	if (at + 1 >= n)
		return at;
	if (len > n - 1 - at)
		len = n - 1 - at;
	memcpy(out + at, s, len);
	out[at + len] = '\0';
	return at + len;
}

/* "spec" + "." + "image" into out (cut safely: only for messages). Called for every field
 * read, so without snprintf (1 k instructions a call). */
const char *config_yaml_join(char *out, size_t n, const char *path, const char *key)
{
	size_t at = config_append(out, n, 0, path);

	if (*path)
		at = config_append(out, n, at, ".");
	config_append(out, n, at, key);
	return out;
}

bool config_strvec_reserve(struct strvec *v, size_t n)
{
	assert(!v->items);
	if (!n)
		return true;
	if (n >= SIZE_MAX / sizeof(*v->items) || !(v->items = malloc((n + 1) * sizeof(*v->items))))
		return false;
	v->items[0] = NULL;
	v->cap = n + 1;
	return true;
}

/* Levenshtein distance of a and b, case folded, capped at 8 (longer words only get
 * "not near"). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[65];

	if (la > 64 || lb > 64)
		return 8;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0], cost, best;

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];

			cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			best = diag + cost;
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb] < 8 ? row[lb] : 8;
}

const char *config_did_you_mean(char *out, size_t n, const char *s, const char *const *known)
{
	size_t len = strlen(s), best = 8, limit = len < 5 ? 1 : len < 10 ? 2 : 3;
	const char *pick = NULL;

	for (size_t i = 0; known[i]; i++) {
		size_t dist = edit_distance(s, known[i]);

		if (strcmp(s, known[i]) != 0 && dist < best) {
			best = dist;
			pick = known[i];
		}
	}
	if (pick && best <= limit)
		snprintf(out, n, " (did you mean '%s'?)", pick);
	else
		snprintf(out, n, "%s", "");
	return out;
}

/* Warns about keys of m not in known (NULL-terminated), errors on duplicate or non-scalar
 * keys. */
void config_yaml_check_keys(struct doc *d, const yaml_node_t *m, const char *path,
                            const char *const *known)
{
	yaml_node_pair_t *start = m->data.mapping.pairs.start;
	char full[256], hint[128];

	for (yaml_node_pair_t *p = start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(d, p->key);
		bool ok = false;

		if (!k || k->type != YAML_SCALAR_NODE) {
			config_doc_error(d, k ? line_of(k) : line_of(m),
			                 "'%s': keys must be strings", path);
			continue;
		}
		for (yaml_node_pair_t *q = start; q < p; q++) {
			yaml_node_t *k2 = node(d, q->key);

			if (k2 && k2->type == YAML_SCALAR_NODE && same_str(scalar(k2), scalar(k))) {
				config_diag_error(
				    d->L, d->file, line_of(k), "'%s': duplicate key",
				    config_yaml_join(full, sizeof(full), path, scalar(k)));
				break;
			}
		}
		for (size_t i = 0; known[i] && !ok; i++)
			ok = same_str(known[i], scalar(k));
		if (!ok)
			config_doc_warn(d, line_of(k), "unknown field '%s' (ignored)%s",
			                config_yaml_join(full, sizeof(full), path, scalar(k)),
			                config_did_you_mean(hint, sizeof(hint), scalar(k), known));
	}
}

/* The mapping under key (NULL when absent; an error when not a mapping). */
yaml_node_t *config_yaml_get_map(struct doc *d, const yaml_node_t *m, const char *path,
                                 const char *key, const char *const *known)
{
	yaml_node_t *v = config_yaml_lookup(d, m, key);
	char full[256];

	if (!v)
		return NULL;
	config_yaml_join(full, sizeof(full), path, key);
	if (v->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(v), "'%s' must be a mapping", full);
		return NULL;
	}
	if (known)
		config_yaml_check_keys(d, v, full, known);
	return v;
}

/* A copy of the string under key in *out (left NULL when absent). Returns false after
 * reporting a value that is not a plain string. */
bool config_yaml_get_str(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
                         char **out)
{
	yaml_node_t *v = config_yaml_lookup(d, m, key);
	char full[256];

	*out = NULL;
	if (!v)
		return true;
	config_yaml_join(full, sizeof(full), path, key);
	if (v->type != YAML_SCALAR_NODE) {
		config_doc_error(d, line_of(v), "'%s' must be a string", full);
		return false;
	}
	if (strlen(scalar(v)) != v->data.scalar.length) {
		config_doc_error(d, line_of(v), "'%s' contains a NUL byte", full);
		return false;
	}
	*out = config_strndup(d->L, scalar(v), v->data.scalar.length);
	return *out != NULL;
}

bool config_yaml_get_nonempty(struct doc *d, const yaml_node_t *m, const char *path,
                              const char *key, char **out)
{
	char full[256];

	if (!config_yaml_get_str(d, m, path, key, out))
		return false;
	if (!*out || **out) /* absent, or a real value */
		return true;
	config_doc_error(d, line_of(config_yaml_lookup(d, m, key)), "'%s' must not be empty",
	                 config_yaml_join(full, sizeof(full), path, key));
	*out = NULL;
	return false;
}

/* Like get_str, and an error when absent or empty. */
bool config_yaml_need_str(struct doc *d, const yaml_node_t *m, size_t line, const char *path,
                          const char *key, char **out)
{
	char full[256];

	if (!config_yaml_get_str(d, m, path, key, out))
		return false;
	if (*out && **out)
		return true;
	*out = NULL;
	config_doc_error(d, line, "'%s' is required",
	                 config_yaml_join(full, sizeof(full), path, key));
	return false;
}

bool config_yaml_get_bool(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
                          bool *out)
{
	static const char *const yes[] = {"true", "True", "TRUE"}, *const no[] = {"false", "False",
	                                                                          "FALSE"};
	yaml_node_t *v = config_yaml_lookup(d, m, key);
	char full[256];

	if (!v)
		return true;
	for (size_t i = 0; v->type == YAML_SCALAR_NODE &&
	                   v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && i < 3;
	     i++) {
		if (!strcmp(scalar(v), yes[i]) || !strcmp(scalar(v), no[i])) {
			*out = !strcmp(scalar(v), yes[i]);
			return true;
		}
	}
	config_doc_error(d, line_of(v), "'%s' must be true or false",
	                 config_yaml_join(full, sizeof(full), path, key));
	return false;
}

/* A Go duration under key in milliseconds (def when absent); positive. */
bool config_yaml_get_duration(struct doc *d, const yaml_node_t *m, const char *path,
                              const char *key, int64_t def, int64_t *out)
{
	yaml_node_t *v = config_yaml_lookup(d, m, key);
	struct error err = ERROR_INIT;
	char full[256];
	int64_t ns;

	*out = def;
	if (!v)
		return true;
	config_yaml_join(full, sizeof(full), path, key);
	if (v->type != YAML_SCALAR_NODE || duration_parse(&ns, scalar(v), &err) < 0) {
		config_doc_error(d, line_of(v), "'%s': %s", full,
		                 err.code ? err.msg : "must be a duration like 5m or 1h30m");
		return false;
	}
	if (ns < 1000000) {
		config_doc_error(d, line_of(v), "'%s': duration '%s' must be at least 1ms", full,
		                 scalar(v));
		return false;
	}
	*out = ns / 1000000;
	return true;
}

/* A secretRef-like mapping {name: X} under key: the name in *out (NULL when absent). */
void config_yaml_get_ref_name(struct doc *d, const yaml_node_t *m, const char *path,
                              const char *key, char **out)
{
	static const char *const keys[] = {"name", NULL};
	yaml_node_t *ref = config_yaml_get_map(d, m, path, key, keys);
	char full[256];

	*out = NULL;
	if (!ref)
		return;
	config_yaml_join(full, sizeof(full), path, key);
	if (!config_yaml_need_str(d, ref, line_of(ref), full, "name", out))
		return;
	if (!kubename_is_dns_name(*out, 253, true))
		config_diag_error(
		    d->L, d->file, line_of(ref),
		    "'%s.name': '%s' is not a valid Kubernetes name (lower-case, digits, '-', '.')",
		    full, *out);
}

/* A field imageguard cannot honour: an error naming it (and why), never a silent difference. */
bool config_yaml_refuse(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
                        const char *why)
{
	char full[256];

	if (!config_yaml_lookup(d, m, key))
		return false;
	config_doc_error(d, config_yaml_key_line(d, m, key, line_of(m)),
	                 "'%s' is not supported: %s",
	                 config_yaml_join(full, sizeof(full), path, key), why);
	return true;
}

/* spec.provider: one of ok (Flux's default `generic`, which `flux export` writes, and the
 * providers src/registry/cloudauth.c and src/git/githubapp.c implement); the accepted value
 * goes to *out (owned; NULL when absent or refused). */
void config_yaml_check_provider(struct doc *d, const yaml_node_t *spec, const char *const *ok,
                                char **out)
{
	char *provider = NULL, list[128] = "";
	bool known = false;

	*out = NULL;
	if (!config_yaml_get_str(d, spec, "spec", "provider", &provider) || !provider)
		return;
	for (size_t i = 0; ok[i] && !known; i++)
		known = !strcmp(provider, ok[i]);
	if (known) {
		*out = provider;
		return;
	}
	for (size_t i = 0, n = 0; ok[i] && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", ok[i]);
	config_doc_error(d, line_of(config_yaml_lookup(d, spec, "provider")),
	                 "'spec.provider': '%s' is not supported (use one of: %s)", provider, list);
}
