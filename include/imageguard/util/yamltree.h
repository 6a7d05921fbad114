/* Read-only helpers over a libyaml document tree (yaml_parser_load): mapping lookups, scalar
 * text and line numbers, shared by the kubeconfig reader and the workload finder. */
#ifndef IMAGEGUARD_YAMLTREE_H
#define IMAGEGUARD_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

/* The value node of key in mapping m, or NULL (m NULL or not a mapping, key absent). Keys
 * merged in with `<<` (YAML 1.1 merge keys, which Kubernetes' YAML reader honours) count:
 * explicit keys win, then the merged maps in order, followed 8 merges deep. The returned node
 * is borrowed from doc. */
yaml_node_t *yamltree_get(yaml_document_t *doc, const yaml_node_t *m, const char *key);

/* The text of a scalar node (borrowed, NUL-terminated), or NULL for anything else, and for a
 * scalar holding a NUL byte (a "\0" escape), which no consumer could read whole. */
const char *yamltree_str(const yaml_node_t *n);

/* The scalar text at m[key], or NULL. */
const char *yamltree_get_str(yaml_document_t *doc, const yaml_node_t *m, const char *key);

/* True for a missing node or a YAML null: a plain scalar that is empty, `~`, `null`, `Null` or
 * `NULL` (the YAML 1.2 core schema, as Kubernetes reads it). A quoted "null" is a string. */
bool yamltree_is_null(const yaml_node_t *n);

/* The 1-based line where n starts (0 for NULL). */
size_t yamltree_line(const yaml_node_t *n);

/* The i-th item of a sequence (borrowed), or NULL past the end or for a non-sequence. */
yaml_node_t *yamltree_item(yaml_document_t *doc, const yaml_node_t *seq, size_t i);

#endif
