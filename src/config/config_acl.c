/* References across namespaces, as Flux's multi-tenancy lockdown allows them: an ImageRepository's
 * spec.accessFrom (fluxcd/pkg runtime/acl, checked by image-reflector-controller), the Namespace
 * labels it selects, and --no-cross-namespace-refs. A refusal makes the referring object invalid
 * with Flux's message and reason (AccessDenied), never a silent fallback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config_private.h"
#include "imageguard/kube/kubename.h"

#define METADATA_NAME "kubernetes.io/metadata.name"

/* ---- reading ---- */

/* The scalar text of n, or NULL after reporting it at path. */
static const char *text_of(struct doc *d, const yaml_node_t *n, const char *path)
{
	if (n && n->type == YAML_SCALAR_NODE && strlen(scalar(n)) == n->data.scalar.length)
		return config_yaml_is_null(n) ? "" : scalar(n);
	config_doc_error(d, n ? line_of(n) : 0, "'%s' must be a string", path);
	return NULL;
}

/* One item's matchLabels. A key or value Kubernetes refuses is kept as the item's mark, with a
 * warning: Flux accepts the object and refuses at the check, which reaches it in order. */
static void read_match_labels(struct doc *d, const yaml_node_t *item, const char *path,
                              struct config_namespace_selector *out)
{
	static const char *const keys[] = {"matchLabels", NULL};
	const yaml_node_t *m;
	char full[160];

	snprintf(full, sizeof(full), "%s.matchLabels", path);
	if (item->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(item), "'%s' must be a mapping", path);
		return;
	}
	config_yaml_check_keys(d, item, path, keys);
	if (!(m = config_yaml_lookup(d, item, "matchLabels")) || config_yaml_is_null(m))
		return; /* every namespace */
	if (m->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(m), "'%s' must be a mapping", full);
		return;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		const char *k = text_of(d, node(d, p->key), full);
		const char *v = k ? text_of(d, node(d, p->value), full) : NULL;

		if (!v)
			continue;
		if (!out->invalid && (!kubename_is_label_key(k) || !kubename_is_label_value(v))) {
			config_doc_warn(
			    d, line_of(node(d, p->key)),
			    "'%s': '%s: %s' is not a valid label selector: every namespace "
			    "this item is reached for is denied (as Flux does)",
			    full, k, v);
			out->invalid = true;
		}
		if (strvec_push(&out->labels, k) < 0 || strvec_push(&out->labels, v) < 0)
			d->L->oom = true;
	}
}

void config_acl_read_access_from(struct doc *d, const yaml_node_t *spec,
                                 struct config_repository *r)
{
	static const char *const keys[] = {"namespaceSelectors", NULL};
	const yaml_node_t *af = config_yaml_lookup(d, spec, "accessFrom"), *list;
	size_t n;

	if (!af || config_yaml_is_null(af))
		return; /* absent: no other namespace */
	if (af->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(af), "'spec.accessFrom' must be a mapping");
		return;
	}
	config_yaml_check_keys(d, af, "spec.accessFrom", keys);
	r->access_from = true;
	if (!(list = config_yaml_lookup(d, af, "namespaceSelectors")) || config_yaml_is_null(list))
		return; /* given, with no selector: no other namespace */
	if (list->type != YAML_SEQUENCE_NODE) {
		config_doc_error(d, line_of(list),
		                 "'spec.accessFrom.namespaceSelectors' must be a list");
		return;
	}
	n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	if (n && !(r->access_selectors = calloc(n, sizeof(*r->access_selectors)))) {
		d->L->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char path[96];

		snprintf(path, sizeof(path), "spec.accessFrom.namespaceSelectors[%zu]", i);
		read_match_labels(d, node(d, list->data.sequence.items.start[i]), path,
		                  &r->access_selectors[r->access_selectors_len++]);
	}
}

void config_acl_release(struct config_repository *r)
{
	for (size_t i = 0; i < r->access_selectors_len; i++)
		strvec_release(&r->access_selectors[i].labels);
	free(r->access_selectors);
	r->access_selectors = NULL;
	r->access_selectors_len = 0;
}

/* The labels of a Namespace document, with the one the API server sets on every namespace
 * (whatever the document says of it). */
static void read_namespace_labels(struct doc *d, const yaml_node_t *labels, const char *name,
                                  struct strvec *out)
{
	struct strvec read = STRVEC_INIT;

	config_labels_read(d, labels, &read);
	for (size_t i = 0; i + 1 < read.len; i += 2)
		if (strcmp(read.items[i], METADATA_NAME) != 0 &&
		    (strvec_push(out, read.items[i]) < 0 ||
		     strvec_push(out, read.items[i + 1]) < 0))
			d->L->oom = true;
	if (strvec_push(out, METADATA_NAME) < 0 || strvec_push(out, name) < 0)
		d->L->oom = true;
	strvec_release(&read);
}

void config_acl_read_namespace(struct doc *d, const yaml_node_t *root, size_t kind_line)
{
	struct loader *L = d->L;
	struct config *c = L->c;
	const yaml_node_t *md = config_yaml_lookup(d, root, "metadata"), *name;
	const struct config_namespace *seen;
	struct config_namespace *ns;

	name = md && md->type == YAML_MAPPING_NODE ? config_yaml_lookup(d, md, "name") : NULL;
	if (!name || name->type != YAML_SCALAR_NODE || !kubename_is_namespace(scalar(name))) {
		config_doc_error(d, kind_line,
		                 "'metadata.name' must be a valid namespace (lower-case, digits, "
		                 "'-')");
		return;
	}
	if ((seen = config_find_namespace(c, scalar(name)))) {
		config_doc_warn(d, kind_line,
		                "Namespace '%s' is already defined at %s:%zu: its labels are used",
		                scalar(name), seen->origin.file, seen->origin.line);
		return;
	}
	if (c->namespaces_len == L->namespaces_cap) {
		size_t cap = L->namespaces_cap ? 2 * L->namespaces_cap : 8;
		void *p = realloc(c->namespaces, cap * sizeof(*c->namespaces));

		if (!p) {
			L->oom = true;
			return;
		}
		c->namespaces = p;
		L->namespaces_cap = cap;
	}
	ns = &c->namespaces[c->namespaces_len];
	*ns = (struct config_namespace){
	    config_strdup(L, scalar(name)), {d->file, kind_line}, STRVEC_INIT};
	if (!ns->name)
		return;
	c->namespaces_len++;
	read_namespace_labels(d, config_yaml_lookup(d, md, "labels"), ns->name, &ns->labels);
}

void config_acl_release_namespaces(struct config *c)
{
	for (size_t i = 0; i < c->namespaces_len; i++)
		strvec_release(&c->namespaces[i].labels);
	free(c->namespaces);
	c->namespaces = NULL;
	c->namespaces_len = 0;
}

/* ---- the check ---- */

const struct config_namespace *config_find_namespace(const struct config *c, const char *ns)
{
	for (size_t i = 0; i < c->namespaces_len; i++)
		if (strcmp(c->namespaces[i].name, ns) == 0)
			return &c->namespaces[i];
	return NULL;
}

/* The value of label key on namespace ns (n its object, or NULL: only the label the API server
 * sets), NULL when it has none. */
static const char *label_of(const struct config_namespace *n, const char *ns, const char *key)
{
	if (!n)
		return strcmp(key, METADATA_NAME) == 0 ? ns : NULL;
	for (size_t i = 0; i + 1 < n->labels.len; i += 2)
		if (strcmp(n->labels.items[i], key) == 0)
			return n->labels.items[i + 1];
	return NULL;
}

/* matchLabels as metav1.LabelSelectorAsSelector reads them: every key present with exactly
 * its value (bytes compared); none: every namespace. */
static bool selector_matches(const struct config_namespace_selector *s,
                             const struct config_namespace *n, const char *ns)
{
	for (size_t i = 0; i + 1 < s->labels.len; i += 2) {
		const char *v = label_of(n, ns, s->labels.items[i]);

		if (!v || strcmp(v, s->labels.items[i + 1]) != 0)
			return false;
	}
	return true;
}

bool config_policy_access(char *why, size_t why_n, const struct config *c, const char *ns,
                          const struct config_repository *r)
{
	const struct config_namespace *n;

	if (strcmp(ns, r->ns) == 0)
		return true; /* its own namespace: no ACL, no Namespace read */
	if (!r->access_from) {
		snprintf(why, why_n,
		         "access denied: '%s/%s' can't be accessed due to missing ACL labels on "
		         "'accessFrom'",
		         r->ns, r->name);
		return false;
	}
	n = config_find_namespace(c, ns);
	for (size_t i = 0; i < r->access_selectors_len; i++) {
		const struct config_namespace_selector *s = &r->access_selectors[i];

		if (s->invalid) {
			snprintf(why, why_n,
			         "access denied: '%s/%s': "
			         "'spec.accessFrom.namespaceSelectors[%zu].matchLabels' is not a "
			         "valid label selector",
			         r->ns, r->name, i);
			return false;
		}
		if (selector_matches(s, n, ns))
			return true;
	}
	snprintf(why, why_n,
	         "access denied: '%s/%s' can't be accessed due to ACL labels mismatch on namespace "
	         "'%s'",
	         r->ns, r->name, ns);
	return false;
}

/* The object (k, its head fields) refers where it may not: an error on the reference's line,
 * and the object invalid with Flux's reason. */
static void refuse(struct loader *L, enum config_kind k, const char *ns, const char *name,
                   const char *id, struct config_origin origin, size_t line, const char *field,
                   const char *msg)
{
	size_t first = L->diags->len;
	struct config_invalid *v;

	config_diag_error(L, origin.file, line, "%s '%s': '%s': %s", config_kind_name(k), id, field,
	                  msg);
	if (config_invalid_at(L->c, k, origin.file, origin.line))
		return; /* already invalid: its first error stays its message */
	if ((v = config_invalid_note(L, k, ns, name, origin.file, origin.line, first)))
		v->reason = CONFIG_REASON_ACCESS_DENIED;
}

bool config_acl_refuse_policy_ref(struct loader *L, const struct config_policy *p)
{
	char msg[512];

	if (!L->opts.no_cross_namespace_refs || strcmp(p->repo_ns, p->ns) == 0)
		return false;
	snprintf(msg, sizeof(msg),
	         "failed to get the referred ImageRepository: cannot access "
	         "'ImageRepository/%s/%s', cross-namespace references have been blocked",
	         p->repo_ns, p->repo_name);
	refuse(L, CONFIG_KIND_POLICY, p->ns, p->name, p->id, p->origin, p->repo_ref_line,
	       "spec.imageRepositoryRef", msg);
	return true;
}

void config_acl_check_policy(struct loader *L, const struct config_policy *p,
                             const struct config_repository *r)
{
	char why[400], msg[512];

	if (config_policy_access(why, sizeof(why), L->c, p->ns, r))
		return;
	snprintf(msg, sizeof(msg), "failed to get the referred ImageRepository: %s", why);
	refuse(L, CONFIG_KIND_POLICY, p->ns, p->name, p->id, p->origin, p->repo_ref_line,
	       "spec.imageRepositoryRef", msg);
}

bool config_acl_refuse_source_ref(struct loader *L, const struct config_automation *a)
{
	char msg[512];

	if (!L->opts.no_cross_namespace_refs || strcmp(a->source_ns, a->ns) == 0)
		return false;
	snprintf(msg, sizeof(msg),
	         "can't access 'GitRepository/%s/%s', cross-namespace references have been "
	         "blocked",
	         a->source_ns, a->source_name);
	refuse(L, CONFIG_KIND_AUTOMATION, a->ns, a->name, a->id, a->origin, a->source_ref_line,
	       "spec.sourceRef", msg);
	return true;
}
