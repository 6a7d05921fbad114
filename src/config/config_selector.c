/* Kubernetes label selectors (an automation's spec.policySelector) and the labels they match
 * (an ImagePolicy's metadata.labels): read with their syntax checked as the API server checks
 * it, and matched as metav1.LabelSelectorAsSelector does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config_private.h"
#include "imageguard/kube/kubename.h"

/* ---- reading ---- */

/* The scalar text of n, or NULL after reporting it at path. */
static const char *label_text(struct doc *d, const yaml_node_t *n, const char *path)
{
	if (n && n->type == YAML_SCALAR_NODE && strlen(scalar(n)) == n->data.scalar.length)
		return config_yaml_is_null(n) ? "" : scalar(n);
	config_doc_error(d, n ? line_of(n) : 0, "'%s' must be a string", path);
	return NULL;
}

void config_labels_read(struct doc *d, const yaml_node_t *m, struct strvec *out)
{
	if (!m)
		return;
	if (m->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(m), "'metadata.labels' must be a mapping");
		return;
	}
	if (!config_strvec_reserve(
	        out, 2 * (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start)))
		d->L->oom = true;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		const char *k = label_text(d, node(d, p->key), "metadata.labels");
		const char *v = k ? label_text(d, node(d, p->value), "metadata.labels") : NULL;

		if (!v)
			continue;
		if (!kubename_is_label_key(k))
			config_doc_error(d, line_of(node(d, p->key)),
			                 "'metadata.labels': '%s' is not a valid label key", k);
		else if (!kubename_is_label_value(v))
			config_doc_error(d, line_of(node(d, p->value)),
			                 "'metadata.labels.%s': '%s' is not a valid label value", k,
			                 v);
		else if (strvec_push(out, k) < 0 || strvec_push(out, v) < 0)
			d->L->oom = true;
	}
}

static struct config_requirement *add_requirement(struct doc *d, struct config_selector *s,
                                                  const char *key, enum config_selector_op op)
{
	struct config_requirement *r = realloc(s->items, (s->len + 1) * sizeof(*r));

	if (!r) {
		d->L->oom = true;
		return NULL;
	}
	s->items = r;
	r = &s->items[s->len];
	*r = (struct config_requirement){NULL, op, STRVEC_INIT};
	if (!(r->key = config_strdup(d->L, key)))
		return NULL;
	s->len++;
	return r;
}

static void read_match_labels(struct doc *d, const yaml_node_t *m, struct config_selector *s)
{
	const char *path = "spec.policySelector.matchLabels";
	struct config_requirement *r;

	if (m->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(m), "'%s' must be a mapping", path);
		return;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		const char *k = label_text(d, node(d, p->key), path);
		const char *v = k ? label_text(d, node(d, p->value), path) : NULL;

		if (!v)
			continue;
		if (!kubename_is_label_key(k))
			config_doc_error(d, line_of(node(d, p->key)),
			                 "'%s': '%s' is not a valid label key", path, k);
		else if (!kubename_is_label_value(v))
			config_doc_error(d, line_of(node(d, p->value)),
			                 "'%s.%s': '%s' is not a valid label value", path, k, v);
		else if ((r = add_requirement(d, s, k, CONFIG_SELECTOR_IN)) &&
		         strvec_push(&r->values, v) < 0)
			d->L->oom = true;
	}
}

static bool read_operator(struct doc *d, const yaml_node_t *e, const char *path,
                          enum config_selector_op *op)
{
	static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist"};
	char *s = NULL;
	bool ok = false;

	if (!config_yaml_need_str(d, e, line_of(e), path, "operator", &s))
		return false;
	for (int i = 0; i < 4 && !ok; i++)
		if ((ok = !strcmp(s, ops[i])))
			*op = (enum config_selector_op)i;
	if (!ok) {
		static const char *const known[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};
		char hint[96];

		config_doc_error(d, line_of(config_yaml_lookup(d, e, "operator")),
		                 "'%s.operator': '%s' is not In, NotIn, Exists or DoesNotExist%s",
		                 path, s, config_did_you_mean(hint, sizeof(hint), s, known));
	}
	return ok;
}

static void read_values(struct doc *d, const yaml_node_t *e, const char *path,
                        struct config_requirement *r)
{
	yaml_node_t *vs = config_yaml_lookup(d, e, "values");
	char full[128];
	bool want = r->op == CONFIG_SELECTOR_IN || r->op == CONFIG_SELECTOR_NOT_IN;

	snprintf(full, sizeof(full), "%s.values", path);
	if (vs && vs->type != YAML_SEQUENCE_NODE) {
		config_doc_error(d, line_of(vs), "'%s' must be a list of strings", full);
		return;
	}
	for (yaml_node_item_t *i = vs ? vs->data.sequence.items.start : NULL;
	     vs && i < vs->data.sequence.items.top; i++) {
		const char *v = label_text(d, node(d, *i), full);

		if (v && !kubename_is_label_value(v))
			config_doc_error(d, line_of(node(d, *i)),
			                 "'%s': '%s' is not a valid label value", full, v);
		else if (v && strvec_push(&r->values, v) < 0)
			d->L->oom = true;
	}
	if (want && r->values.len == 0)
		config_doc_error(d, vs ? line_of(vs) : line_of(e),
		                 "'%s' must not be empty for operator %s", full,
		                 r->op == CONFIG_SELECTOR_IN ? "In" : "NotIn");
	else if (!want && vs && vs->data.sequence.items.top > vs->data.sequence.items.start)
		config_doc_error(d, line_of(vs), "'%s' must be empty for operator %s", full,
		                 r->op == CONFIG_SELECTOR_EXISTS ? "Exists" : "DoesNotExist");
}

static void read_expression(struct doc *d, const yaml_node_t *e, size_t index,
                            struct config_selector *s)
{
	static const char *const keys[] = {"key", "operator", "values", NULL};
	struct config_requirement *r;
	enum config_selector_op op = CONFIG_SELECTOR_IN;
	char path[96], *key = NULL;

	snprintf(path, sizeof(path), "spec.policySelector.matchExpressions[%zu]", index);
	if (e->type != YAML_MAPPING_NODE) {
		config_doc_error(d, line_of(e), "'%s' must be a mapping", path);
		return;
	}
	config_yaml_check_keys(d, e, path, keys);
	if (!config_yaml_need_str(d, e, line_of(e), path, "key", &key))
		return;
	if (!kubename_is_label_key(key))
		config_doc_error(d, line_of(config_yaml_lookup(d, e, "key")),
		                 "'%s.key': '%s' is not a valid label key", path, key);
	else if (read_operator(d, e, path, &op) && (r = add_requirement(d, s, key, op)))
		read_values(d, e, path, r);
}

void config_selector_read(struct doc *d, const yaml_node_t *spec, struct config_selector *out)
{
	static const char *const keys[] = {"matchLabels", "matchExpressions", NULL};
	yaml_node_t *sel = config_yaml_get_map(d, spec, "spec", "policySelector", keys), *v;
	size_t n = 0;

	if (!sel)
		return;
	if ((v = config_yaml_lookup(d, sel, "matchLabels")))
		read_match_labels(d, v, out);
	if (!(v = config_yaml_lookup(d, sel, "matchExpressions")))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		config_doc_error(d, line_of(v),
		                 "'spec.policySelector.matchExpressions' must be a list");
		return;
	}
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++)
		read_expression(d, node(d, *i), n++, out);
}

void config_selector_release(struct config_selector *s)
{
	for (size_t i = 0; i < s->len; i++) /* the keys are the config's strings */
		strvec_release(&s->items[i].values);
	free(s->items);
	s->items = NULL;
	s->len = 0;
}

/* ---- matching ---- */

static const char *label_value(const struct strvec *labels, const char *key)
{
	for (size_t i = 0; i + 1 < labels->len; i += 2)
		if (!strcmp(labels->items[i], key))
			return labels->items[i + 1];
	return NULL;
}

bool config_selector_matches(const struct config_selector *s, const struct strvec *labels)
{
	for (size_t i = 0; i < s->len; i++) {
		const struct config_requirement *r = &s->items[i];
		const char *v = label_value(labels, r->key);
		bool in = v && strvec_has(&r->values, v);

		if ((r->op == CONFIG_SELECTOR_IN && !in) ||
		    (r->op == CONFIG_SELECTOR_NOT_IN && in) ||
		    (r->op == CONFIG_SELECTOR_EXISTS && !v) ||
		    (r->op == CONFIG_SELECTOR_DOES_NOT_EXIST && v))
			return false;
	}
	return true;
}

bool config_automation_selects(const struct config_automation *a, const struct config_policy *p)
{
	return !strcmp(a->ns, p->ns) && config_selector_matches(&a->selector, &p->labels);
}
