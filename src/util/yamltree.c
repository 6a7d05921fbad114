/* Read-only navigation of libyaml document trees (mapping keys, scalars, sequence items). */
#include <string.h>

#include "imageguard/util/yamltree.h"

const char *yamltree_str(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE)
		return NULL;
	return (const char *)n->data.scalar.value;
}

yaml_node_t *yamltree_get(yaml_document_t *doc, const yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		const char *k = yamltree_str(yaml_document_get_node(doc, p->key));
		if (k && strcmp(k, key) == 0)
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
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
	s = yamltree_str(n);
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
