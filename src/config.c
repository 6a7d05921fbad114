/* Configuration loading: files → YAML documents (libyaml, with marks for file:line) → the four
 * kinds of CONTRACT §4, then references resolved and policies compiled. Every problem found is
 * recorded; loading goes on after an error so that all of them are reported at once. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "imageguard/buf.h"
#include "imageguard/config.h"
#include "imageguard/duration.h"
#include "imageguard/error.h"
#include "imageguard/policy.h"

#define API_IMAGEGUARD "imageguard.io/v1alpha1"
#define DEFAULT_INTERVAL_MS (INT64_C(5) * 60 * 1000)
#define DEFAULT_EXCLUSION "^.*\\.sig$"

struct loader {
	struct config *c;
	struct config_diags *diags;
	size_t errors_before; /* diags->errors when this load began */
	size_t repositories_cap, policies_cap, git_sources_cap, automations_cap;
	bool oom;
};

/* One document being read. */
struct doc {
	struct loader *L;
	yaml_document_t *y;
	const char *file;
	const char *api;
	bool imageguard_api;
};

/* ---- diagnostics ---- */

void config_diags_release(struct config_diags *d)
{
	for (size_t i = 0; i < d->len; i++) {
		free(d->items[i].file);
		free(d->items[i].message);
	}
	free(d->items);
	*d = (struct config_diags)CONFIG_DIAGS_INIT;
}

static void diag_v(struct loader *L, enum config_severity sev, const char *file, size_t line,
		   const char *fmt, va_list ap)
{
	struct config_diags *d = L->diags;
	struct buf msg = BUF_INIT;
	char *f = strdup(file);

	if (buf_vprintf(&msg, fmt, ap) < 0 || !f)
		goto oom;
	if (d->len == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct config_diag *p = realloc(d->items, cap * sizeof(*p));

		if (!p)
			goto oom;
		d->items = p;
		d->cap = cap;
	}
	d->items[d->len++] = (struct config_diag){sev, f, line, buf_detach(&msg)};
	if (sev == CONFIG_ERROR)
		d->errors++;
	else
		d->warnings++;
	return;
oom:
	L->oom = true;
	if (sev == CONFIG_ERROR)
		d->errors++; /* the config must still be refused */
	free(f);
	buf_release(&msg);
}

__attribute__((format(printf, 4, 5))) static void fail(struct loader *L, const char *file,
						      size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_v(L, CONFIG_ERROR, file, line, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 4, 5))) static void warn(struct loader *L, const char *file,
						      size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diag_v(L, CONFIG_WARNING, file, line, fmt, ap);
	va_end(ap);
}

/* ---- YAML node helpers ---- */

static size_t line_of(const yaml_node_t *n)
{
	return n->start_mark.line + 1;
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool is_null(const yaml_node_t *n)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	s = scalar(n);
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	       !strcmp(s, "NULL");
}

static yaml_node_t *node(struct doc *d, yaml_node_item_t id)
{
	return yaml_document_get_node(d->y, id);
}

/* The value under key in mapping m, NULL when absent or null. */
static yaml_node_t *lookup(struct doc *d, const yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(d, p->key), *v = node(d, p->value);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), key))
			return v && !is_null(v) ? v : NULL;
	}
	return NULL;
}

/* "spec" + "." + "image" into out (cut safely: only for messages). */
static const char *join(char *out, size_t n, const char *path, const char *key)
{
	snprintf(out, n, "%s%s%s", path, *path ? "." : "", key);
	return out;
}

/* Warns about keys of m not in known (NULL-terminated), errors on duplicate or non-scalar
 * keys. */
static void check_keys(struct doc *d, const yaml_node_t *m, const char *path,
		       const char *const *known)
{
	yaml_node_pair_t *start = m->data.mapping.pairs.start;
	char full[256];

	for (yaml_node_pair_t *p = start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(d, p->key);
		bool ok = false;

		if (!k || k->type != YAML_SCALAR_NODE) {
			fail(d->L, d->file, k ? line_of(k) : line_of(m), "'%s': keys must be strings",
			     path);
			continue;
		}
		for (yaml_node_pair_t *q = start; q < p; q++) {
			yaml_node_t *k2 = node(d, q->key);

			if (k2 && k2->type == YAML_SCALAR_NODE && !strcmp(scalar(k2), scalar(k))) {
				fail(d->L, d->file, line_of(k), "'%s': duplicate key",
				     join(full, sizeof(full), path, scalar(k)));
				break;
			}
		}
		for (size_t i = 0; known[i] && !ok; i++)
			ok = !strcmp(known[i], scalar(k));
		if (!ok)
			warn(d->L, d->file, line_of(k), "unknown field '%s' (ignored)",
			     join(full, sizeof(full), path, scalar(k)));
	}
}

/* The mapping under key (NULL when absent; an error when not a mapping). */
static yaml_node_t *get_map(struct doc *d, const yaml_node_t *m, const char *path,
			    const char *key, const char *const *known)
{
	yaml_node_t *v = lookup(d, m, key);
	char full[256];

	if (!v)
		return NULL;
	join(full, sizeof(full), path, key);
	if (v->type != YAML_MAPPING_NODE) {
		fail(d->L, d->file, line_of(v), "'%s' must be a mapping", full);
		return NULL;
	}
	if (known)
		check_keys(d, v, full, known);
	return v;
}

/* A copy of the string under key in *out (left NULL when absent). Returns false after
 * reporting a value that is not a plain string. */
static bool get_str(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
		    char **out)
{
	yaml_node_t *v = lookup(d, m, key);
	char full[256];

	*out = NULL;
	if (!v)
		return true;
	join(full, sizeof(full), path, key);
	if (v->type != YAML_SCALAR_NODE) {
		fail(d->L, d->file, line_of(v), "'%s' must be a string", full);
		return false;
	}
	if (strlen(scalar(v)) != v->data.scalar.length) {
		fail(d->L, d->file, line_of(v), "'%s' contains a NUL byte", full);
		return false;
	}
	if (!(*out = strdup(scalar(v))))
		d->L->oom = true;
	return *out != NULL;
}

/* Like get_str, and an error when absent or empty. */
static bool need_str(struct doc *d, const yaml_node_t *m, size_t line, const char *path,
		     const char *key, char **out)
{
	char full[256];

	if (!get_str(d, m, path, key, out))
		return false;
	if (*out && **out)
		return true;
	free(*out);
	*out = NULL;
	fail(d->L, d->file, line, "'%s' is required", join(full, sizeof(full), path, key));
	return false;
}

static bool get_bool(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
		     bool *out)
{
	static const char *const yes[] = {"true", "True", "TRUE"}, *const no[] = {"false", "False",
										   "FALSE"};
	yaml_node_t *v = lookup(d, m, key);
	char full[256];

	if (!v)
		return true;
	for (size_t i = 0; v->type == YAML_SCALAR_NODE &&
			   v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && i < 3; i++) {
		if (!strcmp(scalar(v), yes[i]) || !strcmp(scalar(v), no[i])) {
			*out = !strcmp(scalar(v), yes[i]);
			return true;
		}
	}
	fail(d->L, d->file, line_of(v), "'%s' must be true or false",
	     join(full, sizeof(full), path, key));
	return false;
}

/* A Go duration under key in milliseconds (def when absent); positive. */
static bool get_duration(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
			 int64_t def, int64_t *out)
{
	yaml_node_t *v = lookup(d, m, key);
	struct error err = ERROR_INIT;
	char full[256];
	int64_t ns;

	*out = def;
	if (!v)
		return true;
	join(full, sizeof(full), path, key);
	if (v->type != YAML_SCALAR_NODE || duration_parse(&ns, scalar(v), &err) < 0) {
		fail(d->L, d->file, line_of(v), "'%s': %s", full,
		     err.code ? err.msg : "must be a duration like 5m or 1h30m");
		return false;
	}
	if (ns < 1000000) {
		fail(d->L, d->file, line_of(v), "'%s': duration '%s' must be at least 1ms", full,
		     scalar(v));
		return false;
	}
	*out = ns / 1000000;
	return true;
}

/* Lower-case alphanumerics, '-' and (for subdomains) '.', alphanumeric at both ends. */
static bool is_dns_name(const char *s, size_t max, bool dots)
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

/* A secretRef-like mapping {name: X} under key: the name in *out (NULL when absent). */
static void get_ref_name(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
			 char **out)
{
	static const char *const keys[] = {"name", NULL};
	yaml_node_t *ref = get_map(d, m, path, key, keys);
	char full[256];

	*out = NULL;
	if (!ref)
		return;
	join(full, sizeof(full), path, key);
	if (!need_str(d, ref, line_of(ref), full, "name", out))
		return;
	if (!is_dns_name(*out, 253, true))
		fail(d->L, d->file, line_of(ref),
		     "'%s.name': '%s' is not a valid Kubernetes name (lower-case, digits, '-', '.')",
		     full, *out);
}

/* ---- growable object arrays ---- */

static void *grow(struct loader *L, void *items, size_t len, size_t *cap, size_t size)
{
	size_t n = *cap ? *cap * 2 : 8;
	void *p;

	if (len < *cap)
		return items;
	if (!(p = realloc(items, n * size))) {
		L->oom = true;
		return NULL;
	}
	memset((char *)p + len * size, 0, (n - len) * size);
	*cap = n;
	return p;
}

static char *make_id(struct loader *L, const char *ns, const char *name)
{
	struct buf b = BUF_INIT;

	if (buf_printf(&b, "%s/%s", ns, name) < 0) {
		L->oom = true;
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b);
}

/* ---- metadata ---- */

struct meta {
	char *ns, *name;
	size_t line;
	yaml_node_t *annotations;
};

static bool read_meta(struct doc *d, yaml_node_t *root, size_t kind_line, struct meta *m)
{
	yaml_node_t *md = lookup(d, root, "metadata");

	m->line = kind_line;
	if (!md || md->type != YAML_MAPPING_NODE) {
		fail(d->L, d->file, md ? line_of(md) : kind_line, "'metadata' must be a mapping "
								  "with a name");
		return false;
	}
	m->line = line_of(md);
	if (!need_str(d, md, m->line, "metadata", "name", &m->name) ||
	    !get_str(d, md, "metadata", "namespace", &m->ns))
		return false;
	if (!is_dns_name(m->name, 253, true)) {
		fail(d->L, d->file, m->line,
		     "'metadata.name': '%s' is not a valid Kubernetes name (lower-case, digits, "
		     "'-', '.')",
		     m->name);
		return false;
	}
	if (!m->ns && !(m->ns = strdup("default"))) {
		d->L->oom = true;
		return false;
	}
	if (!is_dns_name(m->ns, 63, false)) {
		fail(d->L, d->file, m->line,
		     "'metadata.namespace': '%s' is not a valid namespace (lower-case, digits, '-')",
		     m->ns);
		return false;
	}
	m->annotations = lookup(d, md, "annotations");
	if (m->annotations && m->annotations->type != YAML_MAPPING_NODE) {
		fail(d->L, d->file, line_of(m->annotations),
		     "'metadata.annotations' must be a mapping");
		return false;
	}
	return true;
}

static void meta_release(struct meta *m)
{
	free(m->ns);
	free(m->name);
}

/* ---- ImageRepository ---- */

/* An exclusion regex is checked by compiling a policy that uses only it. */
static void check_exclusion(struct doc *d, const yaml_node_t *item)
{
	struct policy_spec spec = {0};
	struct policy *p = NULL;
	struct error err = ERROR_INIT;
	const char *re = scalar(item);

	spec.kind = POLICY_ALPHABETICAL;
	spec.ascending = true;
	spec.exclude = &re;
	spec.exclude_len = 1;
	if (policy_new(&p, &spec, &err) < 0)
		fail(d->L, d->file, line_of(item), "'spec.exclusionList': %s", err.msg);
	policy_free(p);
}

static void read_exclusions(struct doc *d, const yaml_node_t *spec, struct strvec *out)
{
	yaml_node_t *list = lookup(d, spec, "exclusionList");
	bool present = false;

	for (yaml_node_pair_t *p = spec->data.mapping.pairs.start;
	     p < spec->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(d, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), "exclusionList"))
			present = true;
	}
	if (!present) {
		if (strvec_push(out, DEFAULT_EXCLUSION) < 0)
			d->L->oom = true;
		return;
	}
	if (!list) /* `exclusionList:` or `[]`-like null: no exclusions */
		return;
	if (list->type != YAML_SEQUENCE_NODE) {
		fail(d->L, d->file, line_of(list), "'spec.exclusionList' must be a list of regexes");
		return;
	}
	for (yaml_node_item_t *i = list->data.sequence.items.start;
	     i < list->data.sequence.items.top; i++) {
		yaml_node_t *item = node(d, *i);

		if (!item || item->type != YAML_SCALAR_NODE) {
			fail(d->L, d->file, item ? line_of(item) : line_of(list),
			     "'spec.exclusionList' items must be strings");
			continue;
		}
		check_exclusion(d, item);
		if (strvec_push(out, scalar(item)) < 0)
			d->L->oom = true;
	}
}

static void read_repository(struct doc *d, struct meta *m, const yaml_node_t *spec,
			    size_t kind_line)
{
	static const char *const keys[] = {"image", "interval", "timeout", "secretRef",
					   "certSecretRef", "insecure", "exclusionList",
					   "suspend", NULL};
	struct loader *L = d->L;
	struct config *c = L->c;
	struct config_repository *r;
	struct error err = ERROR_INIT;
	void *p = grow(L, c->repositories, c->repositories_len, &L->repositories_cap, sizeof(*r));

	if (!p)
		return;
	c->repositories = p;
	r = &c->repositories[c->repositories_len++];
	r->ns = m->ns;
	r->name = m->name;
	m->ns = m->name = NULL;
	r->id = make_id(L, r->ns, r->name);
	r->origin = (struct config_origin){d->file, kind_line};
	check_keys(d, spec, "spec", keys);
	if (need_str(d, spec, line_of(spec), "spec", "image", &r->image) &&
	    imageref_parse(&r->ref, r->image, 0, &err) < 0)
		fail(L, d->file, line_of(lookup(d, spec, "image")), "'spec.image': %s", err.msg);
	get_duration(d, spec, "spec", "interval", DEFAULT_INTERVAL_MS, &r->interval_ms);
	get_duration(d, spec, "spec", "timeout", 0, &r->timeout_ms);
	get_ref_name(d, spec, "spec", "secretRef", &r->secret_ref);
	get_ref_name(d, spec, "spec", "certSecretRef", &r->cert_secret_ref);
	get_bool(d, spec, "spec", "insecure", &r->insecure);
	get_bool(d, spec, "spec", "suspend", &r->suspend);
	read_exclusions(d, spec, &r->exclusion);
}

/* ---- ImagePolicy ---- */

static void check_filter_compiles(struct doc *d, const yaml_node_t *spec,
				  const struct config_policy *p);
static void check_policy_compiles(struct doc *d, const yaml_node_t *spec,
				  const struct config_policy *p);

static bool read_order(struct doc *d, const yaml_node_t *m, const char *path, bool *ascending)
{
	static const char *const keys[] = {"order", NULL};
	char *order = NULL;
	bool ok;

	check_keys(d, m, path, keys);
	*ascending = true;
	if (!get_str(d, m, path, "order", &order))
		return false;
	ok = !order || !strcmp(order, "asc") || !strcmp(order, "desc");
	if (!ok)
		fail(d->L, d->file, line_of(lookup(d, m, "order")),
		     "'%s.order': '%s' must be asc or desc", path, order);
	else if (order)
		*ascending = !strcmp(order, "asc");
	free(order);
	return ok;
}

/* spec.policy: exactly one of semver, numerical, alphabetical (digest with imageguard.io). */
static void read_policy_choice(struct doc *d, const yaml_node_t *spec, struct config_policy *p)
{
	static const char *const keys[] = {"semver", "numerical", "alphabetical", "digest", NULL};
	static const char *const range_keys[] = {"range", NULL}, *const tag_keys[] = {"tag", NULL};
	yaml_node_t *pol = get_map(d, spec, "spec", "policy", keys), *v;
	int n = 0;

	if (!pol) {
		if (!lookup(d, spec, "policy"))
			fail(d->L, d->file, line_of(spec),
			     "'spec.policy' is required (one of semver, numerical, alphabetical)");
		return;
	}
	if ((v = get_map(d, pol, "spec.policy", "semver", range_keys))) {
		n++;
		p->kind = CONFIG_POLICY_SEMVER;
		need_str(d, v, line_of(v), "spec.policy.semver", "range", &p->range);
	}
	if ((v = get_map(d, pol, "spec.policy", "numerical", NULL))) {
		n++;
		p->kind = CONFIG_POLICY_NUMERICAL;
		read_order(d, v, "spec.policy.numerical", &p->ascending);
	}
	if ((v = get_map(d, pol, "spec.policy", "alphabetical", NULL))) {
		n++;
		p->kind = CONFIG_POLICY_ALPHABETICAL;
		read_order(d, v, "spec.policy.alphabetical", &p->ascending);
	}
	if ((v = lookup(d, pol, "digest")) && !d->imageguard_api) {
		n++;
		fail(d->L, d->file, line_of(v), "'spec.policy.digest' needs apiVersion %s (not %s)",
		     API_IMAGEGUARD, d->api);
	} else if ((v = get_map(d, pol, "spec.policy", "digest", tag_keys))) {
		n++;
		p->kind = CONFIG_POLICY_DIGEST;
		if (need_str(d, v, line_of(v), "spec.policy.digest", "tag", &p->digest_tag) &&
		    !imageref_is_valid_tag(p->digest_tag, strlen(p->digest_tag)))
			fail(d->L, d->file, line_of(v), "'spec.policy.digest.tag': '%s' is not a "
							 "valid tag", p->digest_tag);
	}
	if (n != 1)
		fail(d->L, d->file, line_of(pol),
		     "'spec.policy': exactly one of semver, numerical, alphabetical%s is required "
		     "(found %d)",
		     d->imageguard_api ? ", digest" : "", n);
}

static void read_reflect(struct doc *d, const yaml_node_t *spec, struct config_policy *p)
{
	static const char *const names[] = {"Never", "IfNotPresent", "Always"};
	char *s = NULL;

	p->reflect = p->kind == CONFIG_POLICY_DIGEST ? CONFIG_REFLECT_ALWAYS : CONFIG_REFLECT_NEVER;
	if (!get_str(d, spec, "spec", "digestReflectionPolicy", &s) || !s)
		return;
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i]))
			p->reflect = (enum config_reflect)i;
	if (strcmp(s, config_reflect_name(p->reflect)) != 0)
		fail(d->L, d->file, line_of(lookup(d, spec, "digestReflectionPolicy")),
		     "'spec.digestReflectionPolicy': '%s' must be Never, IfNotPresent or Always", s);
	else if (p->kind == CONFIG_POLICY_DIGEST && p->reflect == CONFIG_REFLECT_NEVER)
		fail(d->L, d->file, line_of(lookup(d, spec, "digestReflectionPolicy")),
		     "'spec.digestReflectionPolicy': Never cannot track a tag by digest");
	free(s);
}

/* The annotations of CONTRACT §7. */
static void read_override(struct doc *d, const struct meta *m, struct config_policy *p)
{
	static const char *const known[] = {"imageguard.io/rollback-to",
					    "imageguard.io/rollback-reason",
					    "imageguard.io/rollback-until", NULL};
	const yaml_node_t *a = m->annotations;
	struct config_override *o = &p->override;
	struct error err = ERROR_INIT;
	char *until = NULL;
	yaml_node_t *v;

	if (!a)
		return;
	for (yaml_node_pair_t *pr = a->data.mapping.pairs.start; pr < a->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = node(d, pr->key);
		bool ok = false;

		if (!k || k->type != YAML_SCALAR_NODE ||
		    strncmp(scalar(k), "imageguard.io/", 14) != 0)
			continue;
		for (size_t i = 0; known[i] && !ok; i++)
			ok = !strcmp(known[i], scalar(k));
		if (!ok)
			warn(d->L, d->file, line_of(k), "unknown annotation '%s' (ignored)",
			     scalar(k));
	}
	get_str(d, a, "metadata.annotations", "imageguard.io/rollback-to", &o->tag);
	get_str(d, a, "metadata.annotations", "imageguard.io/rollback-reason", &o->reason);
	get_str(d, a, "metadata.annotations", "imageguard.io/rollback-until", &until);
	if (o->tag && !imageref_is_valid_tag(o->tag, strlen(o->tag)))
		fail(d->L, d->file, line_of(lookup(d, a, "imageguard.io/rollback-to")),
		     "annotation 'imageguard.io/rollback-to': '%s' is not a valid tag", o->tag);
	if (o->tag && (!o->reason || !*o->reason))
		fail(d->L, d->file, line_of(lookup(d, a, "imageguard.io/rollback-to")),
		     "annotation 'imageguard.io/rollback-to' needs 'imageguard.io/rollback-reason'");
	if (!o->tag && (o->reason || until))
		warn(d->L, d->file, line_of(a),
		     "rollback annotations without 'imageguard.io/rollback-to' (ignored)");
	if (until) {
		v = lookup(d, a, "imageguard.io/rollback-until");
		if (rfc3339_parse(&o->until, until, &err) < 0)
			fail(d->L, d->file, line_of(v), "annotation 'imageguard.io/rollback-until': %s",
			     err.msg);
		else
			o->has_until = true;
	}
	free(until);
}

static void read_policy(struct doc *d, struct meta *m, const yaml_node_t *spec, size_t kind_line)
{
	static const char *const keys[] = {"imageRepositoryRef", "filterTags", "policy",
					   "digestReflectionPolicy", "suspend", "interval", NULL};
	static const char *const ref_keys[] = {"name", "namespace", NULL};
	static const char *const filter_keys[] = {"pattern", "extract", NULL};
	struct loader *L = d->L;
	struct config *c = L->c;
	struct config_policy *p;
	yaml_node_t *ref, *filter;
	int64_t interval;
	size_t errors_before;
	void *arr = grow(L, c->policies, c->policies_len, &L->policies_cap, sizeof(*p));

	if (!arr)
		return;
	c->policies = arr;
	p = &c->policies[c->policies_len++];
	p->ns = m->ns;
	p->name = m->name;
	m->ns = m->name = NULL;
	p->id = make_id(L, p->ns, p->name);
	p->origin = (struct config_origin){d->file, kind_line};
	check_keys(d, spec, "spec", keys);
	if ((ref = get_map(d, spec, "spec", "imageRepositoryRef", ref_keys))) {
		p->repo_ref_line = line_of(ref);
		need_str(d, ref, line_of(ref), "spec.imageRepositoryRef", "name", &p->repo_name);
		get_str(d, ref, "spec.imageRepositoryRef", "namespace", &p->repo_ns);
	} else if (!lookup(d, spec, "imageRepositoryRef")) {
		fail(L, d->file, line_of(spec), "'spec.imageRepositoryRef' is required");
	}
	if (p->repo_name && !p->repo_ns && !(p->repo_ns = strdup(p->ns)))
		L->oom = true;
	errors_before = L->diags->errors;
	if ((filter = get_map(d, spec, "spec", "filterTags", filter_keys))) {
		get_str(d, filter, "spec.filterTags", "pattern", &p->pattern);
		get_str(d, filter, "spec.filterTags", "extract", &p->extract);
		check_filter_compiles(d, spec, p);
	}
	read_policy_choice(d, spec, p);
	if (p->kind == CONFIG_POLICY_DIGEST && filter)
		fail(L, d->file, line_of(filter),
		     "'spec.filterTags' cannot be combined with 'spec.policy.digest'");
	if (L->diags->errors == errors_before && !L->oom)
		check_policy_compiles(d, spec, p);
	read_reflect(d, spec, p);
	get_bool(d, spec, "spec", "suspend", &p->suspend);
	get_duration(d, spec, "spec", "interval", 0, &interval);
	read_override(d, m, p);
}

/* ---- GitRepository ---- */

static void read_git_source(struct doc *d, struct meta *m, const yaml_node_t *spec,
			    size_t kind_line)
{
	static const char *const keys[] = {"url", "ref", "secretRef", "interval", "timeout", NULL};
	static const char *const ref_keys[] = {"branch", NULL};
	static const char *const schemes[] = {"ssh://", "https://", "http://", "file://"};
	struct loader *L = d->L;
	struct config *c = L->c;
	struct config_git_source *g;
	yaml_node_t *ref;
	bool ok = false;
	void *arr = grow(L, c->git_sources, c->git_sources_len, &L->git_sources_cap, sizeof(*g));

	if (!arr)
		return;
	c->git_sources = arr;
	g = &c->git_sources[c->git_sources_len++];
	g->ns = m->ns;
	g->name = m->name;
	m->ns = m->name = NULL;
	g->id = make_id(L, g->ns, g->name);
	g->origin = (struct config_origin){d->file, kind_line};
	check_keys(d, spec, "spec", keys);
	if (need_str(d, spec, line_of(spec), "spec", "url", &g->url)) {
		for (size_t i = 0; i < 4 && !ok; i++)
			ok = !strncmp(g->url, schemes[i], strlen(schemes[i])) &&
			     g->url[strlen(schemes[i])] != '\0';
		if (!ok)
			fail(L, d->file, line_of(lookup(d, spec, "url")),
			     "'spec.url': '%s' must start with ssh://, https://, http:// or file://",
			     g->url);
	}
	if ((ref = get_map(d, spec, "spec", "ref", ref_keys)))
		get_str(d, ref, "spec.ref", "branch", &g->branch);
	get_ref_name(d, spec, "spec", "secretRef", &g->secret_ref);
	get_duration(d, spec, "spec", "interval", 0, &g->interval_ms);
	get_duration(d, spec, "spec", "timeout", 0, &g->timeout_ms);
}

/* ---- ImageUpdateAutomation ---- */

static void read_automation_git(struct doc *d, const yaml_node_t *spec,
				struct config_automation *a)
{
	static const char *const git_keys[] = {"checkout", "commit", "push", NULL};
	static const char *const checkout_keys[] = {"ref", NULL}, *const ref_keys[] = {"branch",
										    NULL};
	static const char *const commit_keys[] = {"author", "messageTemplate", NULL};
	static const char *const author_keys[] = {"name", "email", NULL};
	static const char *const push_keys[] = {"branch", NULL};
	yaml_node_t *git = get_map(d, spec, "spec", "git", git_keys);
	yaml_node_t *co = get_map(d, git, "spec.git", "checkout", checkout_keys);
	yaml_node_t *ref = get_map(d, co, "spec.git.checkout", "ref", ref_keys);
	yaml_node_t *commit = get_map(d, git, "spec.git", "commit", commit_keys);
	yaml_node_t *author = get_map(d, commit, "spec.git.commit", "author", author_keys);
	yaml_node_t *push = get_map(d, git, "spec.git", "push", push_keys);

	get_str(d, ref, "spec.git.checkout.ref", "branch", &a->checkout_branch);
	get_str(d, author, "spec.git.commit.author", "name", &a->author_name);
	get_str(d, author, "spec.git.commit.author", "email", &a->author_email);
	get_str(d, commit, "spec.git.commit", "messageTemplate", &a->message_template);
	get_str(d, push, "spec.git.push", "branch", &a->push_branch);
}

static void read_automation_update(struct doc *d, const yaml_node_t *spec,
				   struct config_automation *a)
{
	static const char *const keys[] = {"path", "strategy", NULL};
	yaml_node_t *update = get_map(d, spec, "spec", "update", keys);
	char *strategy = NULL;

	get_str(d, update, "spec.update", "path", &a->update_path);
	if (get_str(d, update, "spec.update", "strategy", &strategy) && strategy &&
	    strcmp(strategy, "Setters") != 0)
		fail(d->L, d->file, line_of(lookup(d, update, "strategy")),
		     "'spec.update.strategy': '%s' is not supported (only Setters)", strategy);
	free(strategy);
	if (a->update_path && (a->update_path[0] == '/' || strstr(a->update_path, "..")))
		fail(d->L, d->file, line_of(lookup(d, update, "path")),
		     "'spec.update.path': '%s' must be relative to the repository root, without '..'",
		     a->update_path);
}

static void read_automation(struct doc *d, struct meta *m, const yaml_node_t *spec,
			    size_t kind_line)
{
	static const char *const keys[] = {"sourceRef", "git", "update", "interval", "suspend",
					   NULL};
	static const char *const ref_keys[] = {"kind", "name", "namespace", "apiVersion", NULL};
	struct loader *L = d->L;
	struct config *c = L->c;
	struct config_automation *a;
	yaml_node_t *ref;
	char *kind = NULL;
	void *arr = grow(L, c->automations, c->automations_len, &L->automations_cap, sizeof(*a));

	if (!arr)
		return;
	c->automations = arr;
	a = &c->automations[c->automations_len++];
	a->ns = m->ns;
	a->name = m->name;
	m->ns = m->name = NULL;
	a->id = make_id(L, a->ns, a->name);
	a->origin = (struct config_origin){d->file, kind_line};
	check_keys(d, spec, "spec", keys);
	if ((ref = get_map(d, spec, "spec", "sourceRef", ref_keys))) {
		a->source_ref_line = line_of(ref);
		need_str(d, ref, line_of(ref), "spec.sourceRef", "name", &a->source_name);
		get_str(d, ref, "spec.sourceRef", "namespace", &a->source_ns);
		if (get_str(d, ref, "spec.sourceRef", "kind", &kind) && kind &&
		    strcmp(kind, "GitRepository") != 0)
			fail(L, d->file, line_of(lookup(d, ref, "kind")),
			     "'spec.sourceRef.kind': '%s' is not supported (only GitRepository)", kind);
		free(kind);
	} else if (!lookup(d, spec, "sourceRef")) {
		fail(L, d->file, line_of(spec), "'spec.sourceRef' is required");
	}
	if (a->source_name && !a->source_ns && !(a->source_ns = strdup(a->ns)))
		L->oom = true;
	read_automation_git(d, spec, a);
	read_automation_update(d, spec, a);
	get_duration(d, spec, "spec", "interval", DEFAULT_INTERVAL_MS, &a->interval_ms);
	get_bool(d, spec, "spec", "suspend", &a->suspend);
}

/* ---- documents ---- */

enum kind { KIND_REPOSITORY, KIND_POLICY, KIND_GIT, KIND_AUTOMATION, KIND_OTHER };

/* Which of our kinds the (apiVersion, kind) pair is; warns about our groups' other
 * versions and kinds, since those are likely mistakes rather than foreign objects. */
static enum kind classify(struct doc *d, const char *api, const char *kind, size_t line)
{
	static const char *const image_apis[] = {"image.toolkit.fluxcd.io/v1beta1",
						 "image.toolkit.fluxcd.io/v1beta2",
						 "image.toolkit.fluxcd.io/v1", NULL};
	static const char *const source_apis[] = {"source.toolkit.fluxcd.io/v1beta2",
						  "source.toolkit.fluxcd.io/v1", NULL};
	static const char *const kinds[] = {"ImageRepository", "ImagePolicy", "GitRepository",
					    "ImageUpdateAutomation"};
	const char *const *apis = NULL;
	enum kind k = KIND_OTHER;

	for (int i = 0; i < 4; i++)
		if (!strcmp(kind, kinds[i]))
			k = (enum kind)i;
	if (!strcmp(api, API_IMAGEGUARD)) {
		if (k == KIND_OTHER)
			warn(d->L, d->file, line, "kind '%s' is not an imageguard kind (ignored)",
			     kind);
		return k;
	}
	if (k == KIND_GIT)
		apis = source_apis;
	else if (k != KIND_OTHER)
		apis = image_apis;
	for (size_t i = 0; apis && apis[i]; i++)
		if (!strcmp(api, apis[i]))
			return k;
	if (k != KIND_OTHER && !strncmp(api, k == KIND_GIT ? "source.toolkit.fluxcd.io/" :
							     "image.toolkit.fluxcd.io/", 24))
		warn(d->L, d->file, line, "%s with apiVersion '%s' is not supported (ignored)",
		     kind, api);
	return KIND_OTHER;
}

static void read_document(struct doc *d, yaml_node_t *root)
{
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
	yaml_node_t *api = lookup(d, root, "apiVersion"), *kind = lookup(d, root, "kind"), *spec;
	struct meta m = {0};
	enum kind k;

	if (!api || !kind || api->type != YAML_SCALAR_NODE || kind->type != YAML_SCALAR_NODE)
		return; /* not a Kubernetes object: someone else's YAML */
	d->api = scalar(api);
	d->imageguard_api = !strcmp(d->api, API_IMAGEGUARD);
	if ((k = classify(d, d->api, scalar(kind), line_of(kind))) == KIND_OTHER)
		return;
	check_keys(d, root, "", top);
	if (!read_meta(d, root, line_of(kind), &m))
		goto done;
	spec = lookup(d, root, "spec");
	if (!spec || spec->type != YAML_MAPPING_NODE) {
		fail(d->L, d->file, spec ? line_of(spec) : line_of(kind),
		     "'spec' must be a mapping (%s '%s/%s')", scalar(kind), m.ns, m.name);
		goto done;
	}
	if (k == KIND_REPOSITORY)
		read_repository(d, &m, spec, line_of(kind));
	else if (k == KIND_POLICY)
		read_policy(d, &m, spec, line_of(kind));
	else if (k == KIND_GIT)
		read_git_source(d, &m, spec, line_of(kind));
	else
		read_automation(d, &m, spec, line_of(kind));
done:
	meta_release(&m);
}

static void read_file(struct loader *L, const char *file)
{
	struct buf data = BUF_INIT_MAX(CONFIG_MAX_FILE_BYTES);
	yaml_parser_t parser;
	yaml_document_t y;
	struct doc d = {L, &y, file, NULL, false};
	int rc = buf_read_file(&data, file);

	if (rc == IG_ETOOBIG) {
		fail(L, file, 0, "file is larger than %u bytes", CONFIG_MAX_FILE_BYTES);
		goto done;
	} else if (rc < 0) {
		fail(L, file, 0, "cannot read: %s", strerror(errno));
		goto done;
	}
	if (!yaml_parser_initialize(&parser)) {
		L->oom = true;
		goto done;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)data.data, data.len);
	for (;;) {
		yaml_node_t *root;

		if (!yaml_parser_load(&parser, &y)) {
			fail(L, file, parser.problem_mark.line + 1, "invalid YAML: %s%s%s",
			     parser.problem ? parser.problem : "parse error",
			     parser.context ? " " : "", parser.context ? parser.context : "");
			break;
		}
		if (!(root = yaml_document_get_root_node(&y))) {
			yaml_document_delete(&y);
			break;
		}
		if (root->type == YAML_MAPPING_NODE)
			read_document(&d, root);
		yaml_document_delete(&y);
	}
	yaml_parser_delete(&parser);
done:
	buf_release(&data);
}

/* ---- files ---- */

static bool has_yaml_suffix(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

/* Appends every *.yaml / *.yml below dir (unsorted) to files. */
static int walk(struct strvec *files, const char *dir, int depth, struct error *err)
{
	DIR *dh = NULL;
	struct dirent *e;
	struct buf path = BUF_INIT;
	struct stat st;
	int rc = 0;

	if (depth > CONFIG_MAX_DEPTH)
		return error_set(err, IG_ETOOBIG, "config '%s': directories nested deeper than %d",
				 dir, CONFIG_MAX_DEPTH);
	if (!(dh = opendir(dir)))
		return error_set(err, IG_EFAIL, "config '%s': %s", dir, strerror(errno));
	while ((e = readdir(dh))) {
		if (e->d_name[0] == '.') /* ., .., hidden files, ConfigMap's ..data */
			continue;
		buf_reset(&path);
		if ((rc = buf_printf(&path, "%s/%s", dir, e->d_name)) < 0)
			break;
		if (stat(path.data, &st) < 0)
			continue; /* a dangling symlink */
		if (S_ISDIR(st.st_mode))
			rc = walk(files, path.data, depth + 1, err);
		else if (S_ISREG(st.st_mode) && has_yaml_suffix(e->d_name))
			rc = files->len >= CONFIG_MAX_FILES
				     ? error_set(err, IG_ETOOBIG, "config '%s': more than %d files",
						 dir, CONFIG_MAX_FILES)
				     : strvec_push(files, path.data);
		if (rc < 0)
			break;
	}
	if (rc == IG_EFAIL && !err->code)
		error_set(err, IG_EFAIL, "config '%s': out of memory", dir);
	closedir(dh);
	buf_release(&path);
	return rc;
}

static int list_files(struct strvec *files, const char *path, struct error *err)
{
	struct stat st;
	size_t n = strlen(path);
	char *dir;
	int rc;

	if (stat(path, &st) < 0)
		return error_set(err, errno == ENOENT ? IG_ENOTFOUND : IG_EFAIL, "config '%s': %s",
				 path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return strvec_push(files, path) < 0
			       ? error_set(err, IG_EFAIL, "config '%s': out of memory", path)
			       : 0;
	while (n > 1 && path[n - 1] == '/') /* "dir/" lists as "dir/x.yaml", not "dir//x.yaml" */
		n--;
	if (!(dir = strndup(path, n)))
		return error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	rc = walk(files, dir, 0, err);
	free(dir);
	strvec_sort(files);
	return rc;
}

/* ---- policies compiled ---- */

/* "^tag$" with the regex metacharacters a tag may hold ('.') escaped. */
static char *exact_tag_pattern(const char *tag)
{
	struct buf b = BUF_INIT;

	buf_puts(&b, "^");
	for (const char *s = tag; *s; s++)
		buf_puts(&b, *s == '.' ? "\\." : (char[]){*s, 0});
	if (buf_puts(&b, "$") < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b);
}

static const char *const no_exclusions[1] = {NULL};

/* Fills spec from p; exclusions from the repository (NULL: the default list). *digest_pattern
 * receives the pattern built for kind DIGEST (free it). */
static int policy_spec_of(struct policy_spec *spec, char **digest_pattern,
			  const struct config_policy *p, const struct config_repository *r)
{
	static const enum policy_kind kinds[] = {POLICY_SEMVER, POLICY_NUMERICAL,
						 POLICY_ALPHABETICAL, POLICY_ALPHABETICAL};

	*spec = (struct policy_spec){0};
	*digest_pattern = NULL;
	spec->pattern = p->pattern;
	spec->extract = p->extract;
	spec->kind = kinds[p->kind];
	spec->range = p->range;
	spec->ascending = p->ascending;
	if (r) {
		spec->exclude = r->exclusion.len ? (const char *const *)r->exclusion.items
						 : no_exclusions;
		spec->exclude_len = r->exclusion.len;
	}
	if (p->kind == CONFIG_POLICY_DIGEST) {
		if (!(*digest_pattern = exact_tag_pattern(p->digest_tag)))
			return IG_EFAIL;
		spec->pattern = *digest_pattern;
		spec->extract = NULL;
		spec->ascending = true;
	}
	return 0;
}

/* Compiles the filter alone, so that a bad pattern names filterTags's line. */
static void check_filter_compiles(struct doc *d, const yaml_node_t *spec,
				  const struct config_policy *p)
{
	struct policy_spec ps = {0};
	struct policy *pol = NULL;
	struct error err = ERROR_INIT;

	if (!p->pattern && !p->extract)
		return;
	ps.pattern = p->pattern;
	ps.extract = p->extract;
	ps.kind = POLICY_ALPHABETICAL;
	ps.ascending = true;
	if (policy_new(&pol, &ps, &err) < 0)
		fail(d->L, d->file, line_of(lookup(d, spec, "filterTags")), "'spec.filterTags': %s",
		     err.msg);
	policy_free(pol);
}

/* Compiles the whole policy (default exclusions: the repository's come later), so that a bad
 * range names spec.policy's line. Called only when the choice and the filter are sound. */
static void check_policy_compiles(struct doc *d, const yaml_node_t *spec,
				  const struct config_policy *p)
{
	struct policy_spec ps;
	struct policy *pol = NULL;
	struct error err = ERROR_INIT;
	char *digest_pattern = NULL;

	if (policy_spec_of(&ps, &digest_pattern, p, NULL) < 0)
		d->L->oom = true;
	else if (policy_new(&pol, &ps, &err) < 0)
		fail(d->L, d->file, line_of(lookup(d, spec, "policy")), "'spec.policy': %s",
		     err.msg);
	policy_free(pol);
	free(digest_pattern);
}

/* ---- references, duplicates, final compilation ---- */

#define FIND(arr, len, ns_, name_)                                                    \
	do {                                                                          \
		for (size_t i_ = 0; i_ < (len); i_++)                                 \
			if (!strcmp((arr)[i_].ns, (ns_)) && !strcmp((arr)[i_].name, (name_))) \
				return &(arr)[i_];                                    \
		return NULL;                                                          \
	} while (0)

const struct config_repository *config_find_repository(const struct config *c, const char *ns,
						       const char *name)
{
	FIND(c->repositories, c->repositories_len, ns, name);
}

const struct config_policy *config_find_policy(const struct config *c, const char *ns,
					       const char *name)
{
	FIND(c->policies, c->policies_len, ns, name);
}

const struct config_git_source *config_find_git_source(const struct config *c, const char *ns,
						       const char *name)
{
	FIND(c->git_sources, c->git_sources_len, ns, name);
}

const struct config_automation *config_find_automation(const struct config *c, const char *ns,
						       const char *name)
{
	FIND(c->automations, c->automations_len, ns, name);
}

const struct config_policy *config_find_policy_id(const struct config *c, const char *id)
{
	for (size_t i = 0; i < c->policies_len; i++)
		if (c->policies[i].id && !strcmp(c->policies[i].id, id))
			return &c->policies[i];
	return NULL;
}

/* Reports the second and later objects of one kind with the same ns/name. */
#define CHECK_DUPLICATES(L, kind, arr, len)                                                     \
	for (size_t i_ = 0; i_ < (len); i_++) {                                                 \
		for (size_t j_ = 0; j_ < i_; j_++) {                                            \
			if (!strcmp((arr)[i_].ns, (arr)[j_].ns) &&                              \
			    !strcmp((arr)[i_].name, (arr)[j_].name)) {                          \
				fail((L), (arr)[i_].origin.file, (arr)[i_].origin.line,         \
				     "%s '%s/%s' is already defined at %s:%zu", (kind),         \
				     (arr)[i_].ns, (arr)[i_].name, (arr)[j_].origin.file,       \
				     (arr)[j_].origin.line);                                    \
				break;                                                          \
			}                                                                       \
		}                                                                               \
	}

static void resolve_policy(struct loader *L, struct config_policy *p)
{
	struct policy_spec spec;
	struct error err = ERROR_INIT;
	char *digest_pattern = NULL;

	if (!p->repo_name)
		return; /* already reported */
	p->repository = config_find_repository(L->c, p->repo_ns, p->repo_name);
	if (!p->repository) {
		fail(L, p->origin.file, p->repo_ref_line,
		     "'spec.imageRepositoryRef': ImageRepository '%s/%s' not found", p->repo_ns,
		     p->repo_name);
		return;
	}
	if (L->diags->errors > L->errors_before || L->oom)
		return; /* compiling is for a config that will be returned */
	if (policy_spec_of(&spec, &digest_pattern, p, p->repository) < 0)
		L->oom = true;
	else if (policy_new(&p->policy, &spec, &err) < 0)
		fail(L, p->origin.file, p->origin.line, "ImagePolicy '%s': %s", p->id, err.msg);
	free(digest_pattern);
}

static char *dup_or(struct loader *L, const char *a, const char *b)
{
	char *s = strdup(a ? a : b);

	if (!s)
		L->oom = true;
	return s;
}

static void resolve_automation(struct loader *L, struct config_automation *a)
{
	const struct config_git_source *g;

	if (!a->source_name)
		return;
	if (!(g = a->source = config_find_git_source(L->c, a->source_ns, a->source_name))) {
		fail(L, a->origin.file, a->source_ref_line,
		     "'spec.sourceRef': GitRepository '%s/%s' not found", a->source_ns,
		     a->source_name);
		return;
	}
	if (!a->checkout_branch)
		a->checkout_branch = dup_or(L, g->branch, "master");
	if (!a->push_branch && a->checkout_branch)
		a->push_branch = dup_or(L, a->checkout_branch, "");
	if (!a->author_name)
		a->author_name = dup_or(L, NULL, "imageguard");
	if (!a->author_email)
		a->author_email = dup_or(L, NULL, "imageguard@localhost");
	if (!a->update_path)
		a->update_path = dup_or(L, NULL, "./");
}

static void resolve(struct loader *L)
{
	struct config *c = L->c;

	CHECK_DUPLICATES(L, "ImageRepository", c->repositories, c->repositories_len)
	CHECK_DUPLICATES(L, "ImagePolicy", c->policies, c->policies_len)
	CHECK_DUPLICATES(L, "GitRepository", c->git_sources, c->git_sources_len)
	CHECK_DUPLICATES(L, "ImageUpdateAutomation", c->automations, c->automations_len)
	for (size_t i = 0; i < c->automations_len; i++)
		resolve_automation(L, &c->automations[i]);
	/* Policies last: they compile only when nothing else went wrong. */
	for (size_t i = 0; i < c->policies_len; i++)
		resolve_policy(L, &c->policies[i]);
}

/* ---- lifecycle ---- */

void config_free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->repositories_len; i++) {
		struct config_repository *r = &c->repositories[i];

		free(r->ns), free(r->name), free(r->id), free(r->image);
		imageref_release(&r->ref);
		free(r->secret_ref), free(r->cert_secret_ref);
		strvec_release(&r->exclusion);
	}
	for (size_t i = 0; i < c->policies_len; i++) {
		struct config_policy *p = &c->policies[i];

		free(p->ns), free(p->name), free(p->id), free(p->repo_ns), free(p->repo_name);
		free(p->pattern), free(p->extract), free(p->range), free(p->digest_tag);
		free(p->override.tag), free(p->override.reason);
		policy_free(p->policy);
	}
	for (size_t i = 0; i < c->git_sources_len; i++) {
		struct config_git_source *g = &c->git_sources[i];

		free(g->ns), free(g->name), free(g->id), free(g->url), free(g->branch);
		free(g->secret_ref);
	}
	for (size_t i = 0; i < c->automations_len; i++) {
		struct config_automation *a = &c->automations[i];

		free(a->ns), free(a->name), free(a->id), free(a->source_ns), free(a->source_name);
		free(a->checkout_branch), free(a->push_branch), free(a->author_name);
		free(a->author_email), free(a->message_template), free(a->update_path);
	}
	free(c->repositories);
	free(c->policies);
	free(c->git_sources);
	free(c->automations);
	strvec_release(&c->files);
	free(c);
}

int config_load(struct config **out, const char *path, struct config_diags *diags,
		struct error *err)
{
	struct loader L = {0};
	size_t errors_before = diags->errors;
	int rc;

	L.errors_before = errors_before;

	*out = NULL;
	if (!(L.c = calloc(1, sizeof(*L.c))))
		return error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	L.diags = diags;
	if ((rc = list_files(&L.c->files, path, err)) < 0)
		goto done;
	for (size_t i = 0; i < L.c->files.len; i++)
		read_file(&L, L.c->files.items[i]);
	resolve(&L);
	if (L.oom) {
		rc = error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	} else if (diags->errors > errors_before) {
		rc = error_set(err, IG_EINVALID, "config '%s': %zu error%s", path,
			       diags->errors - errors_before,
			       diags->errors - errors_before == 1 ? "" : "s");
	}
done:
	if (rc < 0) {
		config_free(L.c);
		return rc;
	}
	*out = L.c;
	return 0;
}

/* ---- small public helpers ---- */

int config_secret_path(char **out, const char *secrets_dir, const char *name, struct error *err)
{
	struct buf b = BUF_INIT;

	*out = NULL;
	if (!is_dns_name(name, 253, true))
		return error_set(err, IG_EINVALID, "secret '%s': not a valid Kubernetes name", name);
	if (buf_printf(&b, "%s/%s", secrets_dir, name) < 0) {
		buf_release(&b);
		return error_set(err, IG_EFAIL, "secret '%s': out of memory", name);
	}
	*out = buf_detach(&b);
	return 0;
}

bool config_override_active(const struct config_override *o, time_t now)
{
	return o->tag && (!o->has_until || now < o->until);
}

const char *config_reflect_name(enum config_reflect r)
{
	switch (r) {
	case CONFIG_REFLECT_NEVER: return "Never";
	case CONFIG_REFLECT_IF_NOT_PRESENT: return "IfNotPresent";
	case CONFIG_REFLECT_ALWAYS: return "Always";
	}
	return "unknown";
}
