/* The four kinds of CONTRACT §4 read from YAML documents into the config's arrays, each
 * field checked where it is read so that problems name their own line. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config_private.h"
#include "imageguard/config/labelsel.h"
#include "imageguard/util/buf.h"
#include "imageguard/git/commitmsg.h"
#include "imageguard/util/duration.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageconfig.h"
#include "imageguard/policy/policy.h"
#include "imageguard/util/yamldepth.h"

#define API_IMAGEGUARD "imageguard.io/v1alpha1"
#define DEFAULT_INTERVAL_MS (INT64_C(5) * 60 * 1000)
#define DEFAULT_EXCLUSION "^.*\\.sig$"

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

/* "ns/name" in the config's strings. */
static char *make_id(struct loader *L, const char *ns, const char *name)
{
	return config_strjoin(L, ns, '/', name);
}

/* ---- metadata ---- */

struct meta {
	char *ns, *name;
	size_t line;
	yaml_node_t *annotations;
	yaml_node_t *labels;
};

static bool read_meta(struct doc *d, yaml_node_t *root, size_t kind_line, struct meta *m)
{
	yaml_node_t *md = config_yaml_lookup(d, root, "metadata");

	m->line = kind_line;
	if (!md || md->type != YAML_MAPPING_NODE) {
		config_doc_error(d, md ? line_of(md) : kind_line,
		                 "'metadata' must be a mapping "
		                 "with a name");
		return false;
	}
	m->line = line_of(md);
	if (!config_yaml_need_str(d, md, m->line, "metadata", "name", &m->name) ||
	    !config_yaml_get_str(d, md, "metadata", "namespace", &m->ns))
		return false;
	if (!kubename_is_dns_name(m->name, 253, true)) {
		config_doc_error(
		    d, m->line,
		    "'metadata.name': '%s' is not a valid Kubernetes name (lower-case, digits, "
		    "'-', '.')",
		    m->name);
		return false;
	}
	if (!m->ns && !(m->ns = config_strdup(d->L, "default")))
		return false;
	if (!kubename_is_dns_name(m->ns, 63, false)) {
		config_doc_error(
		    d, m->line,
		    "'metadata.namespace': '%s' is not a valid namespace (lower-case, digits, '-')",
		    m->ns);
		return false;
	}
	m->labels = config_yaml_lookup(d, md, "labels");
	m->annotations = config_yaml_lookup(d, md, "annotations");
	if (m->annotations && m->annotations->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(m->annotations),
		                 "'metadata.annotations' must be a mapping");
		return false;
	}
	return true;
}

/* Whether the object passes the loader's label selector (--watch-label-selector): its
 * metadata.labels as the API server would filter them. Labels are validated where they are
 * read (an ImagePolicy's); here a non-string one is simply not a label. */
static bool selected(struct doc *d, const struct meta *m)
{
	struct strvec labels = STRVEC_INIT;
	const yaml_node_t *l = m->labels;
	bool ok;

	if (!d->L->opts.selector)
		return true;
	for (yaml_node_pair_t *p = l && l->type == YAML_MAPPING_NODE ? l->data.mapping.pairs.start
	                                                             : NULL;
	     p && p < l->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(d, p->key), *v = node(d, p->value);

		if (k && v && k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE &&
		    (strvec_push(&labels, scalar(k)) < 0 ||
		     strvec_push(&labels, config_yaml_is_null(v) ? "" : scalar(v)) < 0))
			d->L->oom = true;
	}
	ok = labelsel_matches(d->L->opts.selector, &labels);
	strvec_release(&labels);
	return ok;
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
		config_doc_error(d, line_of(item), "'spec.exclusionList': %s", err.msg);
	policy_free(p);
}

static void read_exclusions(struct doc *d, const yaml_node_t *spec, struct config_strlist *out)
{
	static const char *const default_list[] = {DEFAULT_EXCLUSION, NULL};
	yaml_node_t *list = config_yaml_lookup(d, spec, "exclusionList");
	const char **items;
	size_t n;

	/* Absent or null takes Flux's default, as the API server's defaulting would (one list,
	 * shared); an empty list `[]` excludes nothing. */
	if (!list) {
		*out = (struct config_strlist){default_list, 1};
		return;
	}
	if (list->type != YAML_SEQUENCE_NODE) {
		config_doc_error(d, line_of(list),
		                 "'spec.exclusionList' must be a list of regexes");
		return;
	}
	n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	if (!n || !(items = config_alloc(d->L, (n + 1) * sizeof(*items))))
		return;
	out->items = items;
	for (yaml_node_item_t *i = list->data.sequence.items.start;
	     i < list->data.sequence.items.top; i++) {
		yaml_node_t *item = node(d, *i);

		if (!item || item->type != YAML_SCALAR_NODE) {
			config_doc_error(d, item ? line_of(item) : line_of(list),
			                 "'spec.exclusionList' items must be strings");
			continue;
		}
		check_exclusion(d, item);
		if ((items[out->len] = config_strdup(d->L, scalar(item))))
			out->len++;
	}
	items[out->len] = NULL;
}

/* spec.serviceAccountName as Flux reads it (fluxcd/image-reflector-controller
 * internal/registry/options.go, commit 157c5be4): with provider generic, the ServiceAccount's
 * imagePullSecrets join spec.secretRef's (src/pass/kubesa.c); with a cloud provider, the
 * account's own workload identity (Flux's object-level workload identity) for aws, azure and
 * gcp. Both need the Kubernetes API: file mode refuses. */
static void read_service_account(struct doc *d, const yaml_node_t *spec,
                                 struct config_repository *r)
{
	size_t line = config_yaml_key_line(d, spec, "serviceAccountName", line_of(spec));

	if (!d->L->opts.kube) {
		config_yaml_refuse(d, spec, "spec", "serviceAccountName",
		                   "it needs the Kubernetes API (the service account's "
		                   "imagePullSecrets); run with --kube, or use spec.secretRef or "
		                   "spec.provider in file mode");
		return;
	}
	if (!config_yaml_get_str(d, spec, "spec", "serviceAccountName", &r->service_account) ||
	    !r->service_account)
		return;
	if (!*r->service_account) { /* Flux: "" is unset */
		r->service_account = NULL;
		return;
	}
	if (!kubename_is_dns_name(r->service_account, 253, true))
		config_doc_error(d, line,
		                 "'spec.serviceAccountName': '%s' is not a valid Kubernetes name "
		                 "(lower-case, digits, '-', '.')",
		                 r->service_account);
}

static void read_repository(struct doc *d, struct meta *m, const yaml_node_t *spec,
                            size_t kind_line)
{
	static const char *const keys[] = {
	    "image",         "interval",   "timeout",  "secretRef",          "certSecretRef",
	    "insecure",      "suspend",    "provider", "serviceAccountName", "proxySecretRef",
	    "exclusionList", "accessFrom", NULL};
	static const char *const providers[] = {"generic", "aws", "gcp", "azure", NULL};
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
	config_yaml_check_keys(d, spec, "spec", keys);
	if (config_yaml_need_str(d, spec, line_of(spec), "spec", "image", &r->image) &&
	    imageref_parse(&r->ref, r->image, 0, &err) < 0)
		config_doc_error(d, line_of(config_yaml_lookup(d, spec, "image")),
		                 "'spec.image': %s", err.msg);
	config_yaml_get_duration(d, spec, "spec", "interval", DEFAULT_INTERVAL_MS, &r->interval_ms);
	config_yaml_get_duration(d, spec, "spec", "timeout", 0, &r->timeout_ms);
	config_yaml_get_ref_name(d, spec, "spec", "secretRef", &r->secret_ref);
	config_yaml_get_ref_name(d, spec, "spec", "certSecretRef", &r->cert_secret_ref);
	r->secret_ref_line = config_yaml_key_line(d, spec, "secretRef", kind_line);
	r->cert_secret_ref_line = config_yaml_key_line(d, spec, "certSecretRef", kind_line);
	config_yaml_get_bool(d, spec, "spec", "insecure", &r->insecure);
	config_yaml_get_bool(d, spec, "spec", "suspend", &r->suspend);
	read_exclusions(d, spec, &r->exclusion);
	config_yaml_check_provider(d, spec, providers, &r->provider);
	read_service_account(d, spec, r);
	config_yaml_refuse(d, spec, "spec", "proxySecretRef",
	                   "the registry would be reached without the proxy");
	config_acl_read_access_from(d, spec, r);
}

/* ---- references ---- */

/* A reference's name and namespace as read (path.name, path.namespace) checked as Kubernetes
 * names: they become lookups, messages and, in run --kube, API paths. A name that is not one
 * is an error and *name NULL (the reference is not resolved); an empty namespace is the
 * object's own, as in Flux. */
static void read_ref_names(struct doc *d, const yaml_node_t *ref, const char *path, char **name,
                           char **ns)
{
	if (*name && !kubename_is_name(*name)) {
		config_doc_error(d, line_of(config_yaml_lookup(d, ref, "name")),
		                 "'%s.name': '%s' is not a valid Kubernetes name (lower-case, "
		                 "digits, '-', '.')",
		                 path, *name);
		*name = NULL;
	}
	if (*ns && !**ns)
		*ns = NULL;
	if (*ns && !kubename_is_namespace(*ns)) {
		config_doc_error(
		    d, line_of(config_yaml_lookup(d, ref, "namespace")),
		    "'%s.namespace': '%s' is not a valid namespace (lower-case, digits, "
		    "'-')",
		    path, *ns);
		*name = NULL;
	}
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
int config_kinds_policy_spec(struct policy_spec *spec, char **digest_pattern,
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
		spec->exclude = r->exclusion.len ? r->exclusion.items : no_exclusions;
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
		config_doc_error(d, line_of(config_yaml_lookup(d, spec, "filterTags")),
		                 "'spec.filterTags': %s", err.msg);
	policy_free(pol);
}

bool config_kinds_default_exclusions(const struct config_repository *r)
{
	return r->exclusion.len == 1 && !strcmp(r->exclusion.items[0], DEFAULT_EXCLUSION);
}

/* Compiles the whole policy (default exclusions: the repository's come later), so that a bad
 * range names spec.policy's line; without the filter when that was reported already. The
 * policy compiled with the filter is kept in p->policy: it is the final one when the
 * repository has the default exclusions (compile_policy in config.c). */
static void check_policy_compiles(struct doc *d, const yaml_node_t *spec, struct config_policy *p,
                                  bool filter_ok)
{
	struct policy_spec ps;
	struct policy *pol = NULL;
	struct error err = ERROR_INIT;
	char *digest_pattern = NULL;

	if (config_kinds_policy_spec(&ps, &digest_pattern, p, NULL) < 0) {
		d->L->oom = true;
		return;
	}
	if (!filter_ok && p->kind != CONFIG_POLICY_DIGEST)
		ps.pattern = ps.extract = NULL;
	if (policy_new(&pol, &ps, &err) < 0) {
		yaml_node_t *at = config_yaml_lookup(d, spec, "policy"), *range;

		/* a bad range is the usual cause: point at it */
		range = config_yaml_lookup(d, config_yaml_lookup(d, at, "semver"), "range");
		config_doc_error(d, line_of(range ? range : at), "'spec.policy': %s", err.msg);
	}
	if (pol && (filter_ok || p->kind == CONFIG_POLICY_DIGEST))
		p->policy = pol;
	else
		policy_free(pol);
	free(digest_pattern);
}

/* ---- ImagePolicy ---- */

static bool read_order(struct doc *d, const yaml_node_t *m, const char *path, bool *ascending)
{
	static const char *const keys[] = {"order", NULL};
	char *order = NULL;
	bool ok;

	config_yaml_check_keys(d, m, path, keys);
	*ascending = true;
	if (!config_yaml_get_str(d, m, path, "order", &order))
		return false;
	ok = !order || !strcmp(order, "asc") || !strcmp(order, "desc");
	if (!ok)
		config_doc_error(d, line_of(config_yaml_lookup(d, m, "order")),
		                 "'%s.order': '%s' must be asc or desc", path, order);
	else if (order)
		*ascending = !strcmp(order, "asc");
	return ok;
}

/* spec.policy: exactly one of semver, numerical, alphabetical (digest with imageguard.io). */
static void read_policy_choice(struct doc *d, const yaml_node_t *spec, struct config_policy *p)
{
	static const char *const keys[] = {"semver", "numerical", "alphabetical", "digest", NULL};
	static const char *const range_keys[] = {"range", NULL}, *const tag_keys[] = {
	                                                             "tag", "platform", NULL};
	yaml_node_t *pol = config_yaml_get_map(d, spec, "spec", "policy", keys), *v;
	int n = 0;

	if (!pol) {
		if (!config_yaml_lookup(d, spec, "policy"))
			config_doc_error(
			    d, line_of(spec),
			    "'spec.policy' is required (one of semver, numerical, alphabetical)");
		return;
	}
	if ((v = config_yaml_get_map(d, pol, "spec.policy", "semver", range_keys))) {
		n++;
		p->kind = CONFIG_POLICY_SEMVER;
		config_yaml_need_str(d, v, line_of(v), "spec.policy.semver", "range", &p->range);
	}
	if ((v = config_yaml_get_map(d, pol, "spec.policy", "numerical", NULL))) {
		n++;
		p->kind = CONFIG_POLICY_NUMERICAL;
		read_order(d, v, "spec.policy.numerical", &p->ascending);
	}
	if ((v = config_yaml_get_map(d, pol, "spec.policy", "alphabetical", NULL))) {
		n++;
		p->kind = CONFIG_POLICY_ALPHABETICAL;
		read_order(d, v, "spec.policy.alphabetical", &p->ascending);
	}
	if ((v = config_yaml_lookup(d, pol, "digest")) && !d->imageguard_api) {
		n++;
		config_doc_error(d, config_yaml_key_line(d, pol, "digest", line_of(v)),
		                 "'spec.policy.digest' needs apiVersion %s (not %s)",
		                 API_IMAGEGUARD, d->api);
	} else if ((v = config_yaml_get_map(d, pol, "spec.policy", "digest", tag_keys))) {
		n++;
		p->kind = CONFIG_POLICY_DIGEST;
		if (config_yaml_need_str(d, v, line_of(v), "spec.policy.digest", "tag",
		                         &p->digest_tag) &&
		    !imageref_is_valid_tag(p->digest_tag, strlen(p->digest_tag)))
			config_doc_error(d, line_of(v),
			                 "'spec.policy.digest.tag': '%s' is not a "
			                 "valid tag",
			                 p->digest_tag);
		if (config_yaml_get_str(d, v, "spec.policy.digest", "platform",
		                        &p->digest_platform) &&
		    p->digest_platform && !imageconfig_is_valid_platform(p->digest_platform))
			config_doc_error(
			    d, line_of(config_yaml_lookup(d, v, "platform")),
			    "'spec.policy.digest.platform': '%s' is not os/arch[/variant] "
			    "(like linux/arm64/v8)",
			    p->digest_platform);
	}
	if (n != 1)
		config_doc_error(
		    d, config_yaml_key_line(d, spec, "policy", line_of(pol)),
		    "'spec.policy': exactly one of semver, numerical, alphabetical%s is required "
		    "(found %d)",
		    d->imageguard_api ? ", digest" : "", n);
}

static void read_reflect(struct doc *d, const yaml_node_t *spec, struct config_policy *p)
{
	static const char *const names[] = {"Never", "IfNotPresent", "Always"};
	char *s = NULL;

	p->reflect = p->kind == CONFIG_POLICY_DIGEST ? CONFIG_REFLECT_ALWAYS : CONFIG_REFLECT_NEVER;
	if (!config_yaml_get_str(d, spec, "spec", "digestReflectionPolicy", &s) || !s)
		return;
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i]))
			p->reflect = (enum config_reflect)i;
	if (strcmp(s, config_reflect_name(p->reflect)) != 0)
		config_doc_error(
		    d, line_of(config_yaml_lookup(d, spec, "digestReflectionPolicy")),
		    "'spec.digestReflectionPolicy': '%s' must be Never, IfNotPresent or Always", s);
	else if (p->kind == CONFIG_POLICY_DIGEST && p->reflect == CONFIG_REFLECT_NEVER)
		config_doc_error(
		    d, line_of(config_yaml_lookup(d, spec, "digestReflectionPolicy")),
		    "'spec.digestReflectionPolicy': Never cannot track a tag by digest");
}

/* imageguard.io/settle (CONTRACT §11): a positive Go duration, kept in whole seconds. */
static void read_settle(struct doc *d, const yaml_node_t *a, struct config_policy *p)
{
	struct error err = ERROR_INIT;
	char *text = NULL;
	int64_t ns;

	config_yaml_get_str(d, a, "metadata.annotations", "imageguard.io/settle", &text);
	if (!text)
		return;
	if (duration_parse(&ns, text, &err) < 0 || ns <= 0)
		config_doc_error(d, line_of(config_yaml_lookup(d, a, "imageguard.io/settle")),
		                 "annotation 'imageguard.io/settle': %s",
		                 err.msg[0] ? err.msg : "must be a positive duration");
	else
		p->settle_s = (long)((ns + 999999999) / 1000000000);
}

/* The annotations of CONTRACT §7 and §11. */
static void read_override(struct doc *d, const struct meta *m, struct config_policy *p)
{
	static const char *const known[] = {
	    "imageguard.io/rollback-to", "imageguard.io/rollback-reason",
	    "imageguard.io/rollback-until", "imageguard.io/settle", NULL};
	const yaml_node_t *a = m->annotations;
	struct config_override *o = &p->override;
	struct error err = ERROR_INIT;
	char *until = NULL, hint[128];
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
		for (size_t i = 0; config_verify_annotations[i] && !ok; i++)
			ok = !strcmp(config_verify_annotations[i], scalar(k));
		if (!ok)
			config_doc_warn(d, line_of(k), "unknown annotation '%s' (ignored)%s",
			                scalar(k),
			                config_did_you_mean(hint, sizeof(hint), scalar(k), known));
	}
	read_settle(d, a, p);
	config_yaml_get_str(d, a, "metadata.annotations", "imageguard.io/rollback-to", &o->tag);
	config_yaml_get_str(d, a, "metadata.annotations", "imageguard.io/rollback-reason",
	                    &o->reason);
	config_yaml_get_str(d, a, "metadata.annotations", "imageguard.io/rollback-until", &until);
	/* A digest-tracked policy has one tag: its rollback names a digest of that tag. */
	if (o->tag && p->kind == CONFIG_POLICY_DIGEST &&
	    !imageref_is_valid_digest(o->tag, strlen(o->tag)))
		config_doc_error(d, line_of(config_yaml_lookup(d, a, "imageguard.io/rollback-to")),
		                 "annotation 'imageguard.io/rollback-to': '%s' is not a digest "
		                 "(policy.digest tracks one tag: roll back to one of its digests, "
		                 "sha256:...)",
		                 o->tag);
	else if (o->tag && p->kind != CONFIG_POLICY_DIGEST &&
	         !imageref_is_valid_tag(o->tag, strlen(o->tag)))
		config_doc_error(d, line_of(config_yaml_lookup(d, a, "imageguard.io/rollback-to")),
		                 "annotation 'imageguard.io/rollback-to': '%s' is not a valid tag",
		                 o->tag);
	if (o->tag && (!o->reason || !*o->reason))
		config_doc_error(
		    d, line_of(config_yaml_lookup(d, a, "imageguard.io/rollback-to")),
		    "annotation 'imageguard.io/rollback-to' needs 'imageguard.io/rollback-reason'");
	if (!o->tag && (o->reason || until))
		config_doc_warn(
		    d, line_of(a),
		    "rollback annotations without 'imageguard.io/rollback-to' (ignored)");
	if (until) {
		v = config_yaml_lookup(d, a, "imageguard.io/rollback-until");
		if (rfc3339_parse(&o->until, until, &err) < 0)
			config_doc_error(d, line_of(v),
			                 "annotation 'imageguard.io/rollback-until': %s", err.msg);
		else
			o->has_until = true;
	}
}

static void read_policy(struct doc *d, struct meta *m, const yaml_node_t *spec, size_t kind_line)
{
	static const char *const keys[] = {
	    "imageRepositoryRef", "filterTags", "policy", "digestReflectionPolicy", "suspend",
	    "interval",           "verify",     NULL};
	static const char *const ref_keys[] = {"name", "namespace", NULL};
	static const char *const filter_keys[] = {"pattern", "extract", NULL};
	struct loader *L = d->L;
	struct config *c = L->c;
	struct config_policy *p;
	yaml_node_t *ref, *filter;
	int64_t interval;
	size_t errors_before;
	bool filter_ok;
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
	config_labels_read(d, m->labels, &p->labels);
	config_yaml_check_keys(d, spec, "spec", keys);
	if ((ref = config_yaml_get_map(d, spec, "spec", "imageRepositoryRef", ref_keys))) {
		p->repo_ref_line =
		    config_yaml_key_line(d, spec, "imageRepositoryRef", line_of(ref));
		config_yaml_need_str(d, ref, line_of(ref), "spec.imageRepositoryRef", "name",
		                     &p->repo_name);
		config_yaml_get_str(d, ref, "spec.imageRepositoryRef", "namespace", &p->repo_ns);
		read_ref_names(d, ref, "spec.imageRepositoryRef", &p->repo_name, &p->repo_ns);
	} else if (!config_yaml_lookup(d, spec, "imageRepositoryRef")) {
		config_doc_error(d, line_of(spec), "'spec.imageRepositoryRef' is required");
	}
	if (p->repo_name && !p->repo_ns)
		p->repo_ns = p->ns; /* the config's strings are shared, never freed one by one */
	errors_before = L->diags->errors;
	if ((filter = config_yaml_get_map(d, spec, "spec", "filterTags", filter_keys))) {
		config_yaml_get_str(d, filter, "spec.filterTags", "pattern", &p->pattern);
		config_yaml_get_str(d, filter, "spec.filterTags", "extract", &p->extract);
		check_filter_compiles(d, spec, p);
	}
	filter_ok = L->diags->errors == errors_before;
	errors_before = L->diags->errors;
	read_policy_choice(d, spec, p);
	if (p->kind == CONFIG_POLICY_DIGEST && filter)
		config_doc_error(d, line_of(filter),
		                 "'spec.filterTags' cannot be combined with 'spec.policy.digest'");
	if (L->diags->errors == errors_before && !L->oom)
		check_policy_compiles(d, spec, p, filter_ok);
	read_reflect(d, spec, p);
	config_yaml_get_bool(d, spec, "spec", "suspend", &p->suspend);
	config_yaml_get_duration(d, spec, "spec", "interval", 0, &interval);
	read_override(d, m, p);
	config_verify_read(d, m->annotations, spec, p);
}

/* ---- GitRepository ---- */

static void read_git_source(struct doc *d, struct meta *m, const yaml_node_t *spec,
                            size_t kind_line)
{
	static const char *const keys[] = {"url",
	                                   "ref",
	                                   "secretRef",
	                                   "interval",
	                                   "timeout",
	                                   "provider",
	                                   "verify",
	                                   "ignore",
	                                   "suspend",
	                                   "include",
	                                   "recurseSubmodules",
	                                   "sparseCheckout",
	                                   "proxySecretRef",
	                                   "serviceAccountName",
	                                   NULL};
	static const char *const ref_keys[] = {"branch", "tag", "semver", "name", "commit", NULL};
	static const char *const providers[] = {"generic", "github", NULL};
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
	config_yaml_check_keys(d, spec, "spec", keys);
	if (config_yaml_need_str(d, spec, line_of(spec), "spec", "url", &g->url)) {
		for (size_t i = 0; i < 4 && !ok; i++)
			ok = !strncmp(g->url, schemes[i], strlen(schemes[i])) &&
			     g->url[strlen(schemes[i])] != '\0';
		if (!ok)
			config_doc_error(
			    d, line_of(config_yaml_lookup(d, spec, "url")),
			    "'spec.url': '%s' must start with ssh://, https://, http:// or file://",
			    g->url);
	}
	if ((ref = config_yaml_get_map(d, spec, "spec", "ref", ref_keys))) {
		config_yaml_get_nonempty(d, ref, "spec.ref", "branch", &g->branch);
		/* Flux's precedence: commit, name, semver, tag over branch. */
		for (size_t i = 4; i >= 1 && !g->ref_field; i--)
			if (config_yaml_lookup(d, ref, ref_keys[i])) {
				g->ref_field = ref_keys[i];
				g->ref_line =
				    config_yaml_key_line(d, ref, ref_keys[i], line_of(ref));
			}
	}
	config_yaml_check_provider(d, spec, providers, &g->provider);
	if (g->provider && !strcmp(g->provider, "github") &&
	    !config_yaml_lookup(d, spec, "secretRef"))
		config_doc_error(
		    d, line_of(config_yaml_lookup(d, spec, "provider")),
		    "'spec.provider' github needs spec.secretRef (the GitHub App's Secret)");
	config_yaml_refuse(d, spec, "spec", "proxySecretRef",
	                   "the Git host would be reached without the proxy");
	config_yaml_refuse(d, spec, "spec", "serviceAccountName",
	                   "workload identity is not implemented (use spec.secretRef)");
	config_yaml_get_ref_name(d, spec, "spec", "secretRef", &g->secret_ref);
	g->secret_ref_line = config_yaml_key_line(d, spec, "secretRef", kind_line);
	config_yaml_get_duration(d, spec, "spec", "interval", 0, &g->interval_ms);
	config_yaml_get_duration(d, spec, "spec", "timeout", 0, &g->timeout_ms);
}

/* ---- ImageUpdateAutomation ---- */

/* spec.git.commit.messageTemplateValues: a string map, .Values in the template. */
static void read_template_values(struct doc *d, const yaml_node_t *commit, struct strvec *out)
{
	yaml_node_t *m = config_yaml_lookup(d, commit, "messageTemplateValues");

	if (!m)
		return;
	if (m->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(m),
		                 "'spec.git.commit.messageTemplateValues' must be a mapping");
		return;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node(d, p->key), *v = node(d, p->value);

		if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
			config_doc_error(
			    d, k ? line_of(k) : line_of(m),
			    "'spec.git.commit.messageTemplateValues' must map strings to "
			    "strings");
			continue;
		}
		if (strvec_push(out, scalar(k)) < 0 || strvec_push(out, scalar(v)) < 0)
			d->L->oom = true;
	}
}

/* spec.git.commit.signingKey.type (Flux v1: gpg, the default, or ssh): only gpg is honoured;
 * ssh, which Flux signs with the Secret's 'identity', is refused rather than signed otherwise. */
static void read_signing_type(struct doc *d, const yaml_node_t *sk)
{
	char *type = NULL; /* borrowed from the document */
	size_t line;

	if (!config_yaml_get_str(d, sk, "spec.git.commit.signingKey", "type", &type) || !type)
		return;
	line = line_of(config_yaml_lookup(d, sk, "type"));
	if (strcmp(type, "ssh") == 0)
		config_doc_error(
		    d, line,
		    "'spec.git.commit.signingKey.type': 'ssh' is not supported: imageguard "
		    "signs commits with OpenPGP only (type 'gpg', the Secret's git.asc)");
	else if (strcmp(type, "gpg") != 0)
		config_doc_error(
		    d, line,
		    "'spec.git.commit.signingKey.type': '%s' is not a signing key type "
		    "(Flux's are 'gpg' and 'ssh')",
		    type);
}

/* spec.git.commit.signingKey.secretRef.name: the Secret with git.asc (and passphrase). */
static void read_signing_key(struct doc *d, const yaml_node_t *commit, struct config_automation *a)
{
	static const char *const keys[] = {"secretRef", "type", NULL};
	yaml_node_t *sk = config_yaml_get_map(d, commit, "spec.git.commit", "signingKey", keys);

	if (!sk)
		return;
	a->signing_secret_line = line_of(sk);
	config_yaml_get_ref_name(d, sk, "spec.git.commit.signingKey", "secretRef",
	                         &a->signing_secret);
	if (!a->signing_secret && !config_yaml_lookup(d, sk, "secretRef"))
		config_doc_error(d, line_of(sk),
		                 "'spec.git.commit.signingKey.secretRef' is required");
	read_signing_type(d, sk);
}

/* "SRC:refs/DST" with SRC non-empty, one ':', no wildcard: the refspecs imageguard pushes. */
static bool refspec_is_plain(const char *s)
{
	const char *colon = strchr(s, ':');

	return colon && colon != s && !strchr(colon + 1, ':') && !strchr(s, '*') &&
	       strncmp(colon + 1, "refs/", 5) == 0 && colon[6] != '\0';
}

/* spec.git.push.refspec: "SRC:DST" with DST under refs/, never forced (invariant 4). */
static void read_refspec(struct doc *d, const yaml_node_t *push, struct config_automation *a)
{
	size_t line;

	if (!config_yaml_get_nonempty(d, push, "spec.git.push", "refspec", &a->push_refspec) ||
	    !a->push_refspec)
		return;
	line = line_of(config_yaml_lookup(d, push, "refspec"));
	if (a->push_refspec[0] == '+')
		config_doc_error(
		    d, line,
		    "'spec.git.push.refspec': '%s' is forced (leading '+'); imageguard "
		    "never forces a push",
		    a->push_refspec);
	else if (!refspec_is_plain(a->push_refspec))
		config_doc_error(d, line,
		                 "'spec.git.push.refspec': '%s' is not SRC:refs/... (SRC a branch, "
		                 "refs/heads/BRANCH or HEAD)",
		                 a->push_refspec);
	else if (d->L->opts.shards > 1 && a->push_branch_given) {
		const char *dst = strchr(a->push_refspec, ':') + 1;

		if (strncmp(dst, "refs/heads/", 11) == 0)
			dst += 11;
		if (strcmp(dst, a->push_branch) != 0)
			config_doc_error(d, line,
			                 "'spec.git.push.refspec': '%s' pushes to a second branch "
			                 "beside spec.git.push.branch '%s'; under --shards an "
			                 "automation writes one branch (a shard owns one Git URL "
			                 "and branch pair)",
			                 a->push_refspec, a->push_branch);
	}
}

static void read_automation_git(struct doc *d, const yaml_node_t *spec, struct config_automation *a)
{
	static const char *const git_keys[] = {"checkout", "commit", "push", NULL};
	static const char *const checkout_keys[] = {"ref", NULL};
	static const char *const ref_keys[] = {"branch", "tag", "semver", "name", "commit", NULL};
	static const char *const commit_keys[] = {"author", "signingKey", "messageTemplate",
	                                          "messageTemplateValues", NULL};
	static const char *const author_keys[] = {"name", "email", NULL};
	static const char *const push_keys[] = {"branch", "refspec", "options", NULL};
	yaml_node_t *git = config_yaml_get_map(d, spec, "spec", "git", git_keys);
	yaml_node_t *co = config_yaml_get_map(d, git, "spec.git", "checkout", checkout_keys);
	yaml_node_t *ref = config_yaml_get_map(d, co, "spec.git.checkout", "ref", ref_keys);
	yaml_node_t *commit = config_yaml_get_map(d, git, "spec.git", "commit", commit_keys);
	yaml_node_t *author =
	    config_yaml_get_map(d, commit, "spec.git.commit", "author", author_keys);
	yaml_node_t *push = config_yaml_get_map(d, git, "spec.git", "push", push_keys);

	config_yaml_get_nonempty(d, ref, "spec.git.checkout.ref", "branch", &a->checkout_branch);
	for (size_t i = 1; i < 5; i++)
		config_yaml_refuse(d, ref, "spec.git.checkout.ref", ref_keys[i],
		                   "imageguard checks out a branch (spec.git.checkout.ref.branch)");
	read_template_values(d, commit, &a->template_values);
	read_signing_key(d, commit, a);
	config_yaml_refuse(d, push, "spec.git.push", "options",
	                   "libgit2 1.5 cannot send push options");
	config_yaml_get_nonempty(d, author, "spec.git.commit.author", "name", &a->author_name);
	config_yaml_get_nonempty(d, author, "spec.git.commit.author", "email", &a->author_email);
	if (config_yaml_get_str(d, commit, "spec.git.commit", "messageTemplate",
	                        &a->message_template) &&
	    a->message_template) {
		struct error err = ERROR_INIT;

		/* A template the commit step would refuse is a configuration error now, not a
		 * failed commit later. */
		if (commitmsg_check(a->message_template, "messageTemplate", &err) < 0) {
			config_doc_error(d,
			                 line_of(config_yaml_lookup(d, commit, "messageTemplate")),
			                 "'spec.git.commit.messageTemplate': %s", err.msg);
			/* Flux's reason when its commit step cannot run the template */
			config_doc_reason(d, CONFIG_REASON_GIT_OPERATION_FAILED);
		}
	}
	config_yaml_get_nonempty(d, push, "spec.git.push", "branch", &a->push_branch);
	a->push_branch_given = a->push_branch != NULL;
	read_refspec(d, push, a);
}

static void read_automation_update(struct doc *d, const yaml_node_t *spec,
                                   struct config_automation *a)
{
	static const char *const keys[] = {"path", "strategy", NULL};
	yaml_node_t *update = config_yaml_get_map(d, spec, "spec", "update", keys);
	char *strategy = NULL;

	config_yaml_get_nonempty(d, update, "spec.update", "path", &a->update_path);
	a->update_path_line = config_yaml_key_line(d, update, "path", a->origin.line);
	if (config_yaml_get_str(d, update, "spec.update", "strategy", &strategy) && strategy &&
	    strcmp(strategy, "Setters") != 0) {
		config_doc_error(d, line_of(config_yaml_lookup(d, update, "strategy")),
		                 "'spec.update.strategy': '%s' is not supported (only Setters)",
		                 strategy);
		config_doc_reason(d, CONFIG_REASON_INVALID_STRATEGY);
	}
	if (a->update_path && (a->update_path[0] == '/' || strstr(a->update_path, "..")))
		config_doc_error(d, line_of(config_yaml_lookup(d, update, "path")),
		                 "'spec.update.path': '%s' must be relative to the repository "
		                 "root, without '..'",
		                 a->update_path);
}

static void read_automation(struct doc *d, struct meta *m, const yaml_node_t *spec,
                            size_t kind_line)
{
	static const char *const keys[] = {"sourceRef",      "git", "update", "interval", "suspend",
	                                   "policySelector", NULL};
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
	config_yaml_check_keys(d, spec, "spec", keys);
	if ((ref = config_yaml_get_map(d, spec, "spec", "sourceRef", ref_keys))) {
		a->source_ref_line = config_yaml_key_line(d, spec, "sourceRef", line_of(ref));
		config_yaml_need_str(d, ref, line_of(ref), "spec.sourceRef", "name",
		                     &a->source_name);
		config_yaml_get_str(d, ref, "spec.sourceRef", "namespace", &a->source_ns);
		read_ref_names(d, ref, "spec.sourceRef", &a->source_name, &a->source_ns);
		if (config_yaml_get_str(d, ref, "spec.sourceRef", "kind", &kind) && kind &&
		    strcmp(kind, "GitRepository") != 0) {
			config_doc_error(
			    d, line_of(config_yaml_lookup(d, ref, "kind")),
			    "'spec.sourceRef.kind': '%s' is not supported (only GitRepository)",
			    kind);
			config_doc_reason(d, CONFIG_REASON_INVALID_SOURCE);
		}
	} else if (!config_yaml_lookup(d, spec, "sourceRef")) {
		config_doc_error(d, line_of(spec), "'spec.sourceRef' is required");
	}
	if (a->source_name && !a->source_ns)
		a->source_ns = a->ns;
	read_automation_git(d, spec, a);
	read_automation_update(d, spec, a);
	config_selector_read(d, spec, &a->selector);
	config_yaml_get_duration(d, spec, "spec", "interval", DEFAULT_INTERVAL_MS, &a->interval_ms);
	config_yaml_get_bool(d, spec, "spec", "suspend", &a->suspend);
}

/* ---- documents ---- */

enum kind { KIND_REPOSITORY, KIND_POLICY, KIND_GIT, KIND_AUTOMATION, KIND_OTHER };

#define GROUP_IMAGE "image.toolkit.fluxcd.io"
#define GROUP_SOURCE "source.toolkit.fluxcd.io"

/* Newest first: a near miss between two versions suggests the newer. */
static const char *const image_apis[] = {GROUP_IMAGE "/v1", GROUP_IMAGE "/v1beta2",
                                         GROUP_IMAGE "/v1beta1", NULL};
static const char *const source_apis[] = {GROUP_SOURCE "/v1", GROUP_SOURCE "/v1beta2", NULL};
static const char *const kind_names[] = {"ImageRepository", "ImagePolicy", "GitRepository",
                                         "ImageUpdateAutomation", NULL};
static const char *const image_kinds[] = {"ImageRepository", "ImagePolicy", "ImageUpdateAutomation",
                                          NULL};
static const char *const source_kinds[] = {"GitRepository", NULL};

/* Every kind of Flux's API groups (their controllers' config/crd/bases): another Flux
 * controller's object, never a mistake of ours, so read past silently. */
static const struct {
	const char *group, *kinds[7];
} flux_kinds[] = {
    {GROUP_IMAGE, {"ImageRepository", "ImagePolicy", "ImageUpdateAutomation", NULL}},
    {GROUP_SOURCE,
     {"GitRepository", "OCIRepository", "HelmRepository", "HelmChart", "Bucket", "ExternalArtifact",
      NULL}},
    {"kustomize.toolkit.fluxcd.io", {"Kustomization", NULL}},
    {"helm.toolkit.fluxcd.io", {"HelmRelease", NULL}},
    {"notification.toolkit.fluxcd.io", {"Alert", "Provider", "Receiver", NULL}},
};

static bool has_group(const char *api, const char *group)
{
	size_t n = strlen(group);

	return !strncmp(api, group, n) && api[n] == '/';
}

static bool is_flux_kind(const char *api, const char *kind)
{
	for (size_t g = 0; g < sizeof(flux_kinds) / sizeof(flux_kinds[0]); g++)
		if (has_group(api, flux_kinds[g].group))
			for (size_t i = 0; flux_kinds[g].kinds[i]; i++)
				if (!strcmp(kind, flux_kinds[g].kinds[i]))
					return true;
	return false;
}

/* One of our kinds under an apiVersion that is not one we read: a wrong version of its own
 * group, another Flux group, or a near miss of its group's name. */
static void warn_api(struct doc *d, enum kind k, const char *api, const char *kind, size_t line)
{
	const char *const *apis = k == KIND_GIT ? source_apis : image_apis;
	const char *group = k == KIND_GIT ? GROUP_SOURCE : GROUP_IMAGE;
	const char *slash = strchr(api, '/');
	char hint[128], g[128];

	snprintf(g, sizeof(g), "%.*s", slash ? (int)(slash - api) : (int)strlen(api), api);
	if (has_group(api, group))
		config_doc_warn(d, line, "%s with apiVersion '%s' is not supported (ignored)%s",
		                kind, api, config_did_you_mean(hint, sizeof(hint), api, apis));
	else if (has_group(api, GROUP_IMAGE) || has_group(api, GROUP_SOURCE))
		config_doc_warn(d, line, "%s is not a kind of '%s' (ignored; it belongs to %s)",
		                kind, api, apis[0]);
	else if (*config_did_you_mean(hint, sizeof(hint), g, (const char *const[]){group, NULL}))
		config_doc_warn(d, line, "%s with apiVersion '%s' is not supported (ignored)%s",
		                kind, api, hint);
}

/* A kind our groups do not have: every unknown kind of the image group, and near misses of
 * GitRepository in the source group (which has other kinds: HelmRepository, Bucket, ...). */
static void warn_kind(struct doc *d, const char *api, const char *kind, size_t line)
{
	char hint[128];

	if (has_group(api, GROUP_IMAGE))
		config_doc_warn(d, line, "kind '%s' is not a kind of %s (ignored)%s", kind, api,
		                config_did_you_mean(hint, sizeof(hint), kind, image_kinds));
	else if (has_group(api, GROUP_SOURCE) &&
	         *config_did_you_mean(hint, sizeof(hint), kind, source_kinds))
		config_doc_warn(d, line, "kind '%s' is not a kind imageguard reads (ignored)%s",
		                kind, hint);
}

/* Which of our kinds the (apiVersion, kind) pair is; warns about what looks like a mistake
 * in our groups (other versions, unknown kinds, near misses) rather than a foreign object. */
static enum kind classify(struct doc *d, const char *api, const char *kind, size_t line)
{
	const char *const *apis;
	enum kind k = KIND_OTHER;
	char hint[128];

	for (int i = 0; i < 4; i++)
		if (!strcmp(kind, kind_names[i]))
			k = (enum kind)i;
	if (!strcmp(api, API_IMAGEGUARD)) {
		if (k == KIND_OTHER)
			config_doc_warn(d, line, "kind '%s' is not an imageguard kind (ignored)%s",
			                kind,
			                config_did_you_mean(hint, sizeof(hint), kind, kind_names));
		return k;
	}
	if (has_group(api, "imageguard.io")) {
		config_doc_warn(d, line, "%s with apiVersion '%s' is not supported (ignored)%s",
		                kind, api,
		                config_did_you_mean(hint, sizeof(hint), api,
		                                    (const char *const[]){API_IMAGEGUARD, NULL}));
		return KIND_OTHER;
	}
	if (k == KIND_OTHER) {
		if (!is_flux_kind(api, kind))
			warn_kind(d, api, kind, line);
		return k;
	}
	apis = k == KIND_GIT ? source_apis : image_apis;
	for (size_t i = 0; apis[i]; i++)
		if (!strcmp(api, apis[i]))
			return k;
	warn_api(d, k, api, kind, line);
	return KIND_OTHER;
}

static size_t kind_len(const struct config *c, enum kind k)
{
	const size_t lens[] = {c->repositories_len, c->policies_len, c->git_sources_len,
	                       c->automations_len, 0};

	return lens[k];
}

/* The object of document d had errors: it is invalid, with its first one (diagnostics from
 * index first). Named by the object appended for it, else by what its metadata gave. */
static void note_invalid(struct doc *d, enum kind k, const struct meta *m, size_t len_before,
                         size_t first, size_t line)
{
	struct config *c = d->L->c;
	const struct config_diags *diags = d->L->diags;
	const char *ns = m->ns, *name = m->name;
	size_t n = kind_len(c, k), at = first;
	struct config_invalid *v;

	if (n > len_before) {
		if (k == KIND_REPOSITORY)
			ns = c->repositories[n - 1].ns, name = c->repositories[n - 1].name;
		else if (k == KIND_POLICY)
			ns = c->policies[n - 1].ns, name = c->policies[n - 1].name;
		else if (k == KIND_GIT)
			ns = c->git_sources[n - 1].ns, name = c->git_sources[n - 1].name;
		else
			ns = c->automations[n - 1].ns, name = c->automations[n - 1].name;
	}
	if (!(v = config_invalid_note(d->L, (enum config_kind)k, ns, name, d->file, line, first)))
		return;
	while (at < diags->len && diags->items[at].severity != CONFIG_ERROR)
		at++; /* the error its message quotes */
	if (d->reason && d->reason_at == at)
		v->reason = d->reason;
	else if (k == KIND_POLICY)
		v->reason = CONFIG_REASON_INVALID_POLICY;
	else if (k == KIND_AUTOMATION)
		v->reason = CONFIG_REASON_INVALID_CONFIG;
}

/* "ImagePolicy 'ns/name'" into out (size n), cut as snprintf would. */
static void object_name(char *out, size_t n, const char *kind, const char *ns, const char *name)
{
	size_t at = config_append(out, n, 0, kind);

	at = config_append(out, n, at, " '");
	at = config_append(out, n, at, ns);
	at = config_append(out, n, at, "/");
	at = config_append(out, n, at, name);
	config_append(out, n, at, "'");
}

/* A Namespace (its labels, which accessFrom selects): not an object of ours, so not filtered
 * by --watch-label-selector; a problem in it leaves its file invalid. */
static void read_namespace(struct doc *d, yaml_node_t *root, size_t kind_line)
{
	const yaml_node_t *md = config_yaml_lookup(d, root, "metadata");
	const yaml_node_t *name =
	    md && md->type == YAML_MAPPING_NODE ? config_yaml_lookup(d, md, "name") : NULL;
	size_t errors = d->L->diags->errors, first = d->L->diags->len;
	size_t at = config_append(d->object, sizeof(d->object), 0, "Namespace '");

	at = config_append(d->object, sizeof(d->object), at,
	                   name && name->type == YAML_SCALAR_NODE ? scalar(name) : "");
	config_append(d->object, sizeof(d->object), at, "'");
	config_acl_read_namespace(d, root, kind_line);
	if (d->L->diags->errors > errors)
		config_invalid_note(d->L, CONFIG_KIND_FILE, NULL, NULL, d->file, kind_line, first);
}

static void read_document(struct doc *d, yaml_node_t *root)
{
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
	yaml_node_t *api = config_yaml_lookup(d, root, "apiVersion"),
	            *kind = config_yaml_lookup(d, root, "kind"), *spec;
	struct meta m = {0};
	size_t errors = d->L->diags->errors, first = d->L->diags->len, len_before;
	enum kind k;

	d->object[0] = '\0';
	d->reason = NULL;
	if (!api || !kind || api->type != YAML_SCALAR_NODE || kind->type != YAML_SCALAR_NODE)
		return; /* not a Kubernetes object: someone else's YAML */
	d->api = scalar(api);
	d->imageguard_api = !strcmp(d->api, API_IMAGEGUARD);
	if (!strcmp(d->api, "v1") && !strcmp(scalar(kind), "Namespace")) {
		read_namespace(d, root, line_of(kind));
		return;
	}
	if ((k = classify(d, d->api, scalar(kind), line_of(kind))) == KIND_OTHER)
		return;
	len_before = kind_len(d->L->c, k);
	config_append(d->object, sizeof(d->object), 0, scalar(kind));
	config_yaml_check_keys(d, root, "", top);
	if (!read_meta(d, root, line_of(kind), &m))
		goto done;
	if (!selected(d, &m)) {
		d->L->unselected++;
		goto done;
	}
	object_name(d->object, sizeof(d->object), scalar(kind), m.ns, m.name);
	spec = config_yaml_lookup(d, root, "spec");
	if (!spec || spec->type != YAML_MAPPING_NODE) {
		config_doc_error(d, spec ? line_of(spec) : line_of(kind),
		                 "'spec' must be a mapping");
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
	if (d->L->diags->errors > errors)
		note_invalid(d, k, &m, len_before, first, line_of(kind));
}

/* A problem with the file itself (or the rest of it, after a YAML error). */
static void file_error(struct loader *L, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void file_error(struct loader *L, const char *file, size_t line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	config_diag_error(L, file, line, "%s", msg);
	config_invalid_note(L, CONFIG_KIND_FILE, NULL, NULL, file, line, L->diags->len - 1);
}

void config_kinds_read_file(struct loader *L, const char *file)
{
	struct buf data = BUF_INIT_MAX(CONFIG_MAX_FILE_BYTES);
	int rc = buf_read_file(&data, file);

	if (rc == IG_ETOOBIG)
		file_error(L, file, 0, "file is larger than %u bytes", CONFIG_MAX_FILE_BYTES);
	else if (rc < 0)
		file_error(L, file, 0, "cannot read: %s", strerror(errno));
	else
		config_kinds_read_buffer(L, file, data.data ? data.data : "", data.len);
	buf_release(&data);
}

/* Whether data holds more than max opening flow brackets: below that it cannot nest deeper
 * than max, which is the bound yamldepth_check starts with too, counted here with memchr
 * (a byte loop over a 1.4 MB config is 7 M instructions). */
static bool flow_brackets_over(const char *data, size_t len, size_t max)
{
	const char *end = data + len;
	size_t n = 0;

	for (const char *p = data; n <= max && (p = memchr(p, '[', (size_t)(end - p))); p++)
		n++;
	for (const char *p = data; n <= max && (p = memchr(p, '{', (size_t)(end - p))); p++)
		n++;
	return n > max;
}

void config_kinds_read_buffer(struct loader *L, const char *file, const char *data, size_t len)
{
	yaml_parser_t parser;
	yaml_document_t y;
	struct doc d = {L, &y, file, NULL, false, {0}, NULL, 0};
	size_t line;
	int rc;

	if (len > CONFIG_MAX_FILE_BYTES) {
		file_error(L, file, 0, "document is larger than %u bytes", CONFIG_MAX_FILE_BYTES);
		return;
	}
	rc = flow_brackets_over(data, len, YAMLDEPTH_MAX)
	         ? yamldepth_check(&line, data, len, YAMLDEPTH_MAX)
	         : 0;
	if (rc == IG_ETOOBIG) {
		file_error(L, file, line, "invalid YAML: nested deeper than %d levels",
		           YAMLDEPTH_MAX);
		return;
	}
	if (rc < 0 || !yaml_parser_initialize(&parser)) {
		L->oom = true;
		return;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	for (;;) {
		yaml_node_t *root;

		if (!yaml_parser_load(&parser, &y)) {
			file_error(L, file, parser.problem_mark.line + 1,
			           "invalid YAML (column %zu): %s%s%s",
			           parser.problem_mark.column + 1,
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
}
