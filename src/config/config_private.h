/* Shared between the configuration loader's files (config, config_yaml, config_kinds,
 * config_files); not part of the library's interface. */
#ifndef IMAGEGUARD_CONFIG_PRIVATE_H
#define IMAGEGUARD_CONFIG_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <yaml.h>

#include "imageguard/config/config.h"
#include "imageguard/kube/kubename.h"

struct error;
struct policy_spec;
struct strvec;

/* One call of config_load. */
struct loader {
	struct config *c;
	struct config_diags *diags;
	size_t errors_before; /* diags->errors when this load began */
	size_t repositories_cap, policies_cap, git_sources_cap, automations_cap, invalid_cap;
	size_t namespaces_cap;
	struct config_load_options opts;
	bool oom;          /* out of memory somewhere: the load fails whatever else happened */
	size_t unselected; /* objects left out by opts.selector (not an empty config) */
};

/* One YAML document being read. */
struct doc {
	struct loader *L;
	yaml_document_t *y;
	const char *file;
	const char *api;     /* its apiVersion (borrowed from the document) */
	bool imageguard_api; /* apiVersion is imageguard.io/v1alpha1 */
	char object[320];    /* "ImagePolicy 'ns/name'" once known: the subject of messages */
	/* the Flux reason (CONFIG_REASON_*) of the document's error at diags index reason_at,
	 * set by config_doc_reason right after that error; NULL: none */
	const char *reason;
	size_t reason_at;
};

/* strcmp(a, b) == 0 with the first bytes compared inline: keys mostly differ there, and a
 * mapping's keys are compared for every field read. */
static inline bool same_str(const char *a, const char *b)
{
	return a[0] == b[0] && (!a[0] || !strcmp(a + 1, b + 1));
}

static inline size_t line_of(const yaml_node_t *n)
{
	return n->start_mark.line + 1;
}

static inline const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* yaml_document_get_node, inline: it is called for every key compared. */
static inline yaml_node_t *node(struct doc *d, yaml_node_item_t id)
{
	yaml_node_t *start = d->y->nodes.start;

	return id > 0 && (size_t)id <= (size_t)(d->y->nodes.top - start) ? start + id - 1 : NULL;
}

/* config.c: a copy of the n bytes at s, NUL-terminated, in the config's strings (freed by
 * config_free, never one by one: they may be shared); NULL with L->oom set when out of memory. */
char *config_strndup(struct loader *L, const char *s, size_t n);
char *config_strdup(struct loader *L, const char *s);
/* a + sep + b, the same way. */
char *config_strjoin(struct loader *L, const char *a, char sep, const char *b);
/* The same for n bytes aligned for a pointer (lists of the config's strings). */
void *config_alloc(struct loader *L, size_t n);

/* config.c: record a problem (out of memory is remembered in L->oom). */
void config_diag_error(struct loader *L, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void config_diag_warn(struct loader *L, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void config_diag_info(struct loader *L, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* config_yaml.c: a problem in document d, its object named first when known. */
void config_doc_error(struct doc *d, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The Flux reason of the error just reported in d (the first such reason stays). */
void config_doc_reason(struct doc *d, const char *reason);
void config_doc_warn(struct doc *d, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* config_yaml.c: field access. Getters report wrong types and return false; absent or null
 * values leave outputs untouched (strings NULL) and return true. Paths ("spec.secretRef")
 * only name fields in messages. */
bool config_yaml_is_null(const yaml_node_t *n);
yaml_node_t *config_yaml_lookup(struct doc *d, const yaml_node_t *m, const char *key);
size_t config_yaml_key_line(struct doc *d, const yaml_node_t *m, const char *key, size_t fallback);
const char *config_yaml_join(char *out, size_t n, const char *path, const char *key);
/* s appended at out[at] (out holds n bytes; cut to fit as snprintf would, NUL-terminated);
 * returns the new length. */
size_t config_append(char *out, size_t n, size_t at, const char *s);
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
/* An error "'path.key' is not supported: why" when key is present; returns whether it was. */
bool config_yaml_refuse(struct doc *d, const yaml_node_t *m, const char *path, const char *key,
                        const char *why);
/* spec.provider must be one of ok (NULL-terminated), else an error; *out gets the accepted
 * value (owned) or NULL. */
void config_yaml_check_provider(struct doc *d, const yaml_node_t *spec, const char *const *ok,
                                char **out);
void config_yaml_get_ref_name(struct doc *d, const yaml_node_t *m, const char *path,
                              const char *key, char **out);

/* config_yaml.c: room for n strings in the empty v, so that it does not take strvec_push's 16
 * (most lists of a config hold one or two; cutting them down afterwards with realloc leaves
 * the heap fragmented, and costs libyaml's mallocs more than the copy saves). False when out of
 * memory. */
bool config_strvec_reserve(struct strvec *v, size_t n);

/* config_yaml.c: " (did you mean 'X'?)" into out when s is a near miss of one of known
 * (NULL-terminated: same letters in another case, or a small edit away), else "". */
const char *config_did_you_mean(char *out, size_t n, const char *s, const char *const *known);

/* config_selector.c: metadata.labels (key, value pairs) and spec.policySelector. */
void config_labels_read(struct doc *d, const yaml_node_t *m, struct strvec *out);
void config_selector_read(struct doc *d, const yaml_node_t *spec, struct config_selector *out);
void config_selector_release(struct config_selector *s);

/* config_invalid.c: an object is invalid with its first error (the first error diagnostic
 * from index first_diag), or because of what it depends on (the message from fmt). */
struct config_invalid *config_invalid_note(struct loader *L, enum config_kind kind, const char *ns,
                                           const char *name, const char *file, size_t line,
                                           size_t first_diag);
struct config_invalid *config_invalid_dependent(struct loader *L, enum config_kind kind,
                                                const char *ns, const char *name, const char *file,
                                                size_t line, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* The invalid entry of the object declared at file:line (origins are unique), or NULL. */
const struct config_invalid *config_invalid_at(const struct config *c, enum config_kind kind,
                                               const char *file, size_t line);
void config_invalid_release(struct config *c);

/* config_kinds.c: reads every document of one file into L->c. */
void config_kinds_read_file(struct loader *L, const char *file);
/* The same for documents in memory; file names them in messages. */
void config_kinds_read_buffer(struct loader *L, const char *file, const char *data, size_t len);
/* The policy_spec of p with the repository's exclusions (r NULL: the default list);
 * *digest_pattern receives the pattern built for kind DIGEST (free it). 0 or IG_EFAIL. */
int config_kinds_policy_spec(struct policy_spec *spec, char **digest_pattern,
                             const struct config_policy *p, const struct config_repository *r);

/* Whether r's exclusions are the default list alone: a policy compiled with them is the one
 * compiled with none given (policy_new shares the default). */
bool config_kinds_default_exclusions(const struct config_repository *r);

/* config_acl.c: an ImageRepository's spec.accessFrom; a `kind: Namespace` document (v1); their
 * release. */
void config_acl_read_access_from(struct doc *d, const yaml_node_t *spec,
                                 struct config_repository *r);
void config_acl_read_namespace(struct doc *d, const yaml_node_t *root, size_t kind_line);
void config_acl_release(struct config_repository *r);
void config_acl_release_namespaces(struct config *c);
/* config_acl.c: references across namespaces. With --no-cross-namespace-refs, a reference to
 * another namespace is an error (Flux's message) and its object invalid with the reason
 * AccessDenied: true when refused (checked before the reference is looked up, as Flux does).
 * config_acl_check_policy does the same when r's accessFrom does not admit p's namespace. */
bool config_acl_refuse_policy_ref(struct loader *L, const struct config_policy *p);
bool config_acl_refuse_source_ref(struct loader *L, const struct config_automation *a);
void config_acl_check_policy(struct loader *L, const struct config_policy *p,
                             const struct config_repository *r);

/* config_secrets.c: every secret a valid object names, checked (L->opts.secrets_dir); a
 * failure is an error of that object, which becomes invalid. */
void config_secrets_check_all(struct loader *L);

/* config_verify.c: the signature gate's settings (CONTRACT §12) into p->verify, from the
 * imageguard.io/verify-* annotations (NULL: none) or spec.verify; and the check of its Secret's
 * folder: msg "" when usable, else the problem naming the key. */
extern const char *const config_verify_annotations[];
void config_verify_read(struct doc *d, const yaml_node_t *annotations, const yaml_node_t *spec,
                        struct config_policy *p);
void config_verify_check_folder(char *msg, size_t n, const char *dir, bool keyless);

/* config_files.c: the files path names, sorted. */
int config_files_list(struct strvec *files, const char *path, struct error *err);

/* config_patches.c: drops from files those a kustomization.yaml among them names as patches
 * (patchesStrategicMerge, patches[].path), each with an info diagnostic. */
void config_patches_skip(struct loader *L, struct strvec *files);

#endif
