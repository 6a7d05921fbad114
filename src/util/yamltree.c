/* Read-only navigation of libyaml document trees (mapping keys, scalars, sequence items). */
#include <string.h>

#include "imageguard/util/yamltree.h"

#define MERGE_DEPTH_MAX 8 /* `<<` merges followed into merges */

const char *yamltree_str(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE)
		return NULL;
	/* a "\0" escape would cut the text short and make it read as something else */
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return NULL;
	return (const char *)n->data.scalar.value;
}

static bool is_merge_key(const yaml_node_t *k)
{
	const char *s = yamltree_str(k);

	return s && strcmp(s, "<<") == 0 && k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static yaml_node_t *get_merged(yaml_document_t *doc, const yaml_node_t *m, const char *key,
                               int depth)
{
	yaml_node_pair_t *p;

	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		const char *ks = yamltree_str(k);

		if (ks && strcmp(ks, key) == 0 && !is_merge_key(k))
			return yaml_document_get_node(doc, p->value);
	}
	for (p = m->data.mapping.pairs.start;
	     depth < MERGE_DEPTH_MAX && p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *v = yaml_document_get_node(doc, p->value), *r = NULL;

		if (!is_merge_key(yaml_document_get_node(doc, p->key)) || !v)
			continue;
		if (v->type == YAML_MAPPING_NODE)
			r = get_merged(doc, v, key, depth + 1);
		for (size_t i = 0; !r && v->type == YAML_SEQUENCE_NODE; i++) {
			yaml_node_t *item = yamltree_item(doc, v, i);

			if (!item)
				break;
			r = get_merged(doc, item, key, depth + 1);
		}
		if (r)
			return r;
	}
	return NULL;
}

yaml_node_t *yamltree_get(yaml_document_t *doc, const yaml_node_t *m, const char *key)
{
	return get_merged(doc, m, key, 0);
}

const char *yamltree_get_str(yaml_document_t *doc, const yaml_node_t *m, const char *key)
{
	yaml_node_t *n = yamltree_get(doc, m, key);

	return yamltree_is_null(n) ? NULL : yamltree_str(n);
}

bool yamltree_is_null(const yaml_node_t *n)
{
	const char *s;

	if (!n)
		return true;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	if (!(s = yamltree_str(n)))
		return false;
	return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
	       strcmp(s, "NULL") == 0;
}

size_t yamltree_line(const yaml_node_t *n)
{
	return n ? n->start_mark.line + 1 : 0;
}

yaml_node_t *yamltree_item(yaml_document_t *doc, const yaml_node_t *seq, size_t i)
{
	if (!seq || seq->type != YAML_SEQUENCE_NODE)
		return NULL;
	if (i >= (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start))
		return NULL;
	return yaml_document_get_node(doc, seq->data.sequence.items.start[i]);
}
