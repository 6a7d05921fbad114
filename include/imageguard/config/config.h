/* Configuration (CONTRACT §4): YAML files or a directory of them, Flux's kinds and imageguard's
 * own, turned into validated structs with resolved references and compiled policies. Every
 * problem is collected with its file:line; a config with any error is never returned. */
#ifndef IMAGEGUARD_CONFIG_H
#define IMAGEGUARD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/util/strvec.h"

struct error;
struct policy;

/* Caps on outside input: one YAML file, the number of files below a directory, the depth of
 * directories followed (symlinked directories included, so a loop ends here). */
#define CONFIG_MAX_FILE_BYTES (4u << 20)
#define CONFIG_MAX_FILES 10000
#define CONFIG_MAX_DEPTH 16

/* ---- diagnostics ---- */

enum config_severity { CONFIG_ERROR, CONFIG_WARNING };

struct config_diag {
	enum config_severity severity;
	char *file;    /* owned; the path as found (`--config` joined with the walk) */
	size_t line;   /* 1-based; 0 when the problem concerns the whole file */
	char *message; /* owned; one line, no file:line prefix */
};

/* Errors and warnings in the order found (files sorted, then by position; reference checks
 * after all files are read). */
struct config_diags {
	struct config_diag *items;
	size_t len, cap;
	size_t errors, warnings;
};

#define CONFIG_DIAGS_INIT                                                                          \
	{                                                                                          \
		NULL, 0, 0, 0, 0                                                                   \
	}

void config_diags_release(struct config_diags *d);

/* ---- the objects ---- */

/* Where an object was declared: its document's `kind:` line. */
struct config_origin {
	const char *file; /* borrowed from config->files */
	size_t line;
};

struct config_repository {
	char *ns, *name, *id; /* owned; id is "ns/name" */
	struct config_origin origin;
	char *image;           /* owned; spec.image as written (no tag, no digest) */
	struct imageref ref;   /* spec.image parsed: registry + repository, tag NULL */
	int64_t interval_ms;   /* spec.interval, default 5m */
	int64_t timeout_ms;    /* spec.timeout, 0: the registry client's default */
	char *secret_ref;      /* owned; spec.secretRef.name, NULL: anonymous */
	char *cert_secret_ref; /* owned; spec.certSecretRef.name, NULL: system CAs */
	bool insecure;         /* spec.insecure: plain HTTP allowed */
	bool suspend;
	struct strvec exclusion; /* spec.exclusionList; default {"^.*\\.sig$"}; may be empty */
};

enum config_policy_kind {
	CONFIG_POLICY_SEMVER,
	CONFIG_POLICY_NUMERICAL,
	CONFIG_POLICY_ALPHABETICAL,
	CONFIG_POLICY_DIGEST /* imageguard.io only: policy.digest.tag, track one tag by digest */
};

enum config_reflect { CONFIG_REFLECT_NEVER, CONFIG_REFLECT_IF_NOT_PRESENT, CONFIG_REFLECT_ALWAYS };

/* The rollback override of CONTRACT §7 (annotations of an ImagePolicy). */
struct config_override {
	char *tag;    /* owned; imageguard.io/rollback-to, NULL: no override; a digest for
	                 kind DIGEST, a tag otherwise */
	char *reason; /* owned; imageguard.io/rollback-reason, never NULL when tag is set */
	bool has_until;
	time_t until; /* imageguard.io/rollback-until (RFC3339), with has_until */
};

struct config_policy {
	char *ns, *name, *id; /* owned; id is "ns/name" (the marker's "ns:name") */
	struct config_origin origin;
	char *repo_ns, *repo_name; /* owned; spec.imageRepositoryRef (ns defaults to ns) */
	size_t repo_ref_line;      /* line of spec.imageRepositoryRef, for messages */
	const struct config_repository *repository; /* borrowed; resolved, never NULL */
	enum config_policy_kind kind;
	char *pattern, *extract; /* owned; spec.filterTags, NULL when absent */
	char *range;             /* owned; policy.semver.range (kind SEMVER) */
	bool ascending;          /* numerical/alphabetical order (default asc) */
	char *digest_tag;        /* owned; policy.digest.tag (kind DIGEST) */
	/* owned; policy.digest.platform "os/arch[/variant]" whose image config an index's
	 * `created` is read from (kind DIGEST); NULL: linux/amd64 */
	char *digest_platform;
	enum config_reflect reflect; /* digestReflectionPolicy; kind DIGEST: Always unless set */
	bool suspend;
	struct config_override override;
	/* Owned, compiled with the repository's exclusion list. For kind DIGEST it accepts exactly
	 * digest_tag (pattern ^tag$, alphabetical), so selection and comparison work unchanged. */
	struct policy *policy;
	/* Owned; kind SEMVER only (else NULL): the same filter with every SemVer version in range
	 * (">=0.0.0-0"), for guard_input.order_policy: a committed version outside a narrowed
	 * range is still compared, and held rather than adopted when the pick is lower. */
	struct policy *order_policy;
};

struct config_git_source {
	char *ns, *name, *id; /* owned */
	struct config_origin origin;
	char *url;           /* owned; ssh://, https://, http:// or file:// */
	char *branch;        /* owned; spec.ref.branch, NULL when not given */
	char *secret_ref;    /* owned; spec.secretRef.name, NULL: none */
	int64_t interval_ms; /* spec.interval (Flux requires it; unused by imageguard
	                        beyond validation), 0 when absent */
	int64_t timeout_ms;  /* spec.timeout, 0 when absent */
};

struct config_automation {
	char *ns, *name, *id; /* owned */
	struct config_origin origin;
	char *source_ns, *source_name;          /* owned; spec.sourceRef (ns defaults to ns) */
	size_t source_ref_line;                 /* line of spec.sourceRef, for messages */
	const struct config_git_source *source; /* borrowed; resolved, never NULL */
	/* owned; git.checkout.ref.branch, else the GitRepository's ref.branch, else "master"
	 * (Flux's GitRepository default) */
	char *checkout_branch;
	char *push_branch;      /* owned; git.push.branch, default checkout_branch */
	char *author_name;      /* owned; default "imageguard" */
	char *author_email;     /* owned; default "imageguard@localhost" */
	char *message_template; /* owned; NULL: the caller's default message */
	char *update_path;      /* owned; update.path, default "./" */
	int64_t interval_ms;    /* spec.interval, default 5m */
	bool suspend;
};

struct config {
	struct strvec files; /* every file read, sorted; origins point into it */
	struct config_repository *repositories;
	size_t repositories_len;
	struct config_policy *policies;
	size_t policies_len;
	struct config_git_source *git_sources;
	size_t git_sources_len;
	struct config_automation *automations;
	size_t automations_len;
};

/* Loads path: one file, or every *.yaml / *.yml below a directory (sorted, names starting
 * with '.' skipped as Kubernetes ConfigMap mounts need). Documents of other kinds or
 * apiVersions are ignored. Errors and warnings are appended to diags (which may already hold
 * items). Returns 0 and a config in *out (the caller frees it with config_free) when no error
 * was found; IG_EINVALID with err naming the count when any error was (each one in diags,
 * *out NULL); IG_ENOTFOUND when path does not exist; IG_EFAIL when out of memory. Secrets are
 * not opened here: config_secret_path names the folder and its users check it when used. */
int config_load(struct config **out, const char *path, struct config_diags *diags,
                struct error *err);
void config_free(struct config *c);

/* One document in memory (run --kube: an object's JSON, which is YAML). */
struct config_document {
	const char *name; /* in messages as the file: "ImagePolicy/ns/name" */
	const char *data;
	size_t len;
};

/* config_load over documents instead of files (copied: docs may go afterwards); source
 * names the whole set in err. Same returns and diagnostics as config_load. */
int config_load_documents(struct config **out, const struct config_document *docs, size_t n,
                          const char *source, struct config_diags *diags, struct error *err);

/* Lookups by namespace and name, or by id "ns/name"; NULL when absent. Borrowed pointers,
 * valid until config_free. */
const struct config_repository *config_find_repository(const struct config *c, const char *ns,
                                                       const char *name);
const struct config_policy *config_find_policy(const struct config *c, const char *ns,
                                               const char *name);
const struct config_policy *config_find_policy_id(const struct config *c, const char *id);
const struct config_git_source *config_find_git_source(const struct config *c, const char *ns,
                                                       const char *name);
const struct config_automation *config_find_automation(const struct config *c, const char *ns,
                                                       const char *name);

/* The folder of secret `name` under secrets_dir ("<secrets_dir>/<name>") in a new string
 * (free() it). Names were validated at load (DNS-1123 subdomain: no '/', no ".."). Existence
 * is not checked here. Returns 0, or IG_EINVALID / IG_EFAIL (out of memory) with err set. */
int config_secret_path(char **out, const char *secrets_dir, const char *name, struct error *err);

/* True while the override is in force at now: a rollback-to is set and rollback-until is
 * absent or later than now. */
bool config_override_active(const struct config_override *o, time_t now);

/* "Never", "IfNotPresent", "Always" (static storage). */
const char *config_reflect_name(enum config_reflect r);

#endif
