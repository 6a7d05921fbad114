/* Shared between the configuration loader's files (config, config_yaml, config_kinds,
 * config_files); not part of the library's interface. */
#ifndef IMAGEGUARD_CONFIG_PRIVATE_H
#define IMAGEGUARD_CONFIG_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "imageguard/config/config.h"

struct error;
struct policy_spec;
struct strvec;

/* One call of config_load. */
struct loader {
	struct config *c;
	struct config_diags *diags;
	size_t errors_before; /* diags->errors when this load began */
	size_t repositories_cap, policies_cap, git_sources_cap, automations_cap;
	bool oom; /* out of memory somewhere: the load fails whatever else happened */
};

/* One YAML document being read. */
struct doc {
	struct loader *L;
	yaml_document_t *y;
	const char *file;
	const char *api;     /* its apiVersion (borrowed from the document) */
	bool imageguard_api; /* apiVersion is imageguard.io/v1alpha1 */
	char object[320];    /* "ImagePolicy 'ns/name'" once known: the subject of messages */
};

static inline size_t line_of(const yaml_node_t *n)
{
	return n->start_mark.line + 1;
}

static inline const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static inline yaml_node_t *node(struct doc *d, yaml_node_item_t id)
{
	return yaml_document_get_node(d->y, id);
}

/* config.c: record a problem (out of memory is remembered in L->oom). */
void config_diag_error(struct loader *L, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void config_diag_warn(struct loader *L, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* config_yaml.c: a problem in document d, its object named first when known. */
void config_doc_error(struct doc *d, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void config_doc_warn(struct doc *d, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* config_yaml.c: field access. Getters report wrong types and return false; absent or null
 * values leave outputs untouched (strings NULL) and return true. Paths ("spec.secretRef")
 * only name fields in messages. */
bool config_yaml_is_null(const yaml_node_t *n);
yaml_node_t *config_yaml_lookup(struct doc *d, const yaml_node_t *m, const char *key);
size_t config_yaml_key_line(struct doc *d, const yaml_node_t *m, const char *key, size_t fallback);
const char *config_yaml_join(char *out, size_t n, const char *path, const char *key);
void config_yaml_check_keys(struct doc *d, const yaml_node_t *m, const char *path,
                            const char *const *known);
yaml_node_t *config_yaml_get_map(struct doc *d, const yaml_node_t *m, const char *path,
                                 const char *key, const char *const *known);
bool config_yaml_get_str(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
                         char **out);
/* Like config_yaml_get_str, and an error when the string is empty. */
bool config_yaml_get_nonempty(struct doc *d, const yaml_node_t *m, const char *path,
                              const char *key, char **out);
bool config_yaml_need_str(struct doc *d, const yaml_node_t *m, size_t line, const char *path,
                          const char *key, char **out);
bool config_yaml_get_bool(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
                          bool *out);
bool config_yaml_get_duration(struct doc *d, const yaml_node_t *m, const char *path,
                              const char *key, int64_t def, int64_t *out);
bool config_yaml_is_dns_name(const char *s, size_t max, bool dots);
void config_yaml_get_ref_name(struct doc *d, const yaml_node_t *m, const char *path,
                              const char *key, char **out);

/* config_kinds.c: reads every document of one file into L->c. */
void config_kinds_read_file(struct loader *L, const char *file);
/* The same for documents in memory; file names them in messages. */
void config_kinds_read_buffer(struct loader *L, const char *file, const char *data, size_t len);
/* The policy_spec of p with the repository's exclusions (r NULL: the default list);
 * *digest_pattern receives the pattern built for kind DIGEST (free it). 0 or IG_EFAIL. */
int config_kinds_policy_spec(struct policy_spec *spec, char **digest_pattern,
                             const struct config_policy *p, const struct config_repository *r);

/* config_files.c: the files path names, sorted. */
int config_files_list(struct strvec *files, const char *path, struct error *err);

#endif
