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
#include "imageguard/util/strindex.h"
#include "imageguard/util/strvec.h"

struct config_arena;
struct error;
struct labelsel;
struct policy;

/* Caps on outside input: one YAML file, the number of files below a directory, the depth of
 * directories followed (symlinked directories included, so a loop ends here). */
#define CONFIG_MAX_FILE_BYTES (4u << 20)
#define CONFIG_MAX_FILES 10000
#define CONFIG_MAX_DEPTH 16

/* ---- diagnostics ---- */

/* CONFIG_INFO: something read past on purpose (a kustomize patch), said once. */
enum config_severity { CONFIG_ERROR, CONFIG_WARNING, CONFIG_INFO };

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
	size_t errors, warnings, infos;
};

#define CONFIG_DIAGS_INIT                                                                          \
	{                                                                                          \
		NULL, 0, 0, 0, 0, 0                                                                \
	}

void config_diags_release(struct config_diags *d);

/* The one printer of diagnostics: each on stderr as "imageguard: FILE:LINE: [warning: ]MESSAGE"
 * (FILE alone for a whole-file problem; "info: " for an info), or with as_log as log lines
 * (config.error, config.warning, config.info) for `run`. */
void config_diags_print(const struct config_diags *d, bool as_log);

/* ---- the objects ----
 * Their "owned" strings belong to the config: they live in its string blocks
 * (config.strings), may be shared between objects, and are freed by config_free only. */

/* Where an object was declared: its document's `kind:` line. */
struct config_origin {
	const char *file; /* borrowed from config->files */
	size_t line;
};

/* Strings of the config (or static), items[len] NULL; items NULL when the list is empty. */
struct config_strlist {
	const char *const *items;
	size_t len;
};

/* One item of an ImageRepository's spec.accessFrom.namespaceSelectors: its matchLabels. */
struct config_namespace_selector {
	struct strvec labels; /* key, value, key, value, ...; none: every namespace */
	/* a key or value Kubernetes' selector parser refuses: a walk that reaches this item
	 * denies (Flux's check ends with that error) */
	bool invalid;
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
	size_t secret_ref_line, cert_secret_ref_line; /* their lines, for messages */
	bool insecure;                                /* spec.insecure: plain HTTP allowed */
	bool suspend;          /* (beside insecure: no padding between them) */
	char *provider;        /* owned; spec.provider (generic|aws|gcp|azure), NULL: generic */
	char *service_account; /* owned; spec.serviceAccountName (run --kube only), or NULL */
	/* spec.exclusionList; default {"^.*\\.sig$"} (one static list, shared); may be empty */
	struct config_strlist exclusion;
	/* spec.accessFrom, Flux's ACL: which other namespaces' policies may use this repository.
	 * access_from false: absent (none may); else its namespaceSelectors in order (owned),
	 * none of them: none may (see config_policy_access) */
	bool access_from;
	struct config_namespace_selector *access_selectors;
	size_t access_selectors_len;
};

/* A Namespace: a `kind: Namespace` document (file mode) or the API's object (run --kube),
 * with its labels, which an ImageRepository's accessFrom selects. */
struct config_namespace {
	char *name; /* owned */
	struct config_origin origin;
	/* metadata.labels as key, value, ...; always with kubernetes.io/metadata.name=<name>,
	 * which the API server sets on every namespace */
	struct strvec labels;
};

/* A Kubernetes label selector (metav1.LabelSelector): matchLabels folded into In requirements
 * with one value, then matchExpressions; every requirement must hold. No requirement selects
 * everything. */
enum config_selector_op {
	CONFIG_SELECTOR_IN,
	CONFIG_SELECTOR_NOT_IN,
	CONFIG_SELECTOR_EXISTS,
	CONFIG_SELECTOR_DOES_NOT_EXIST
};

struct config_requirement {
	char *key; /* owned */
	enum config_selector_op op;
	struct strvec values; /* In/NotIn: one or more; Exists/DoesNotExist: none */
};

struct config_selector {
	struct config_requirement *items; /* owned */
	size_t len;
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

/* One keyless identity rule (CONTRACT §12, Flux's matchOIDCIdentity): regexes, unanchored. */
struct config_oidc_identity {
	char *issuer, *subject; /* owned by the config */
};

/* The signature gate of CONTRACT §12 (annotations imageguard.io/verify-*, or spec.verify). */
struct config_verify {
	char *provider;    /* "cosign"; NULL: no verification */
	char *secret;      /* the Secret (policy's namespace) holding *.pub or the trust root */
	size_t line;       /* where it is set, for messages */
	const char *field; /* "spec.verify.secretRef" or
	                      "metadata.annotations.imageguard.io/verify-secret" */
	struct config_oidc_identity *identities; /* keyless rules, NULL: key-based only */
	size_t identities_len;
};

struct config_policy {
	char *ns, *name, *id; /* owned; id is "ns/name" (the marker's "ns:name") */
	struct config_origin origin;
	struct strvec labels;      /* metadata.labels as key, value, key, value, ... */
	char *repo_ns, *repo_name; /* owned; spec.imageRepositoryRef (ns defaults to ns) */
	size_t repo_ref_line;      /* line of spec.imageRepositoryRef, for messages */
	const struct config_repository *repository; /* borrowed; resolved, never NULL */
	enum config_policy_kind kind;
	bool ascending;          /* numerical/alphabetical order (default asc) */
	char *pattern, *extract; /* owned; spec.filterTags, NULL when absent */
	char *range;             /* owned; policy.semver.range (kind SEMVER) */
	char *digest_tag;        /* owned; policy.digest.tag (kind DIGEST) */
	/* owned; policy.digest.platform "os/arch[/variant]" whose image config an index's
	 * `created` is read from (kind DIGEST); NULL: linux/amd64 */
	char *digest_platform;
	enum config_reflect reflect; /* digestReflectionPolicy; kind DIGEST: Always unless set */
	bool suspend;
	struct config_override override;
	long settle_s; /* imageguard.io/settle in seconds (rounded up), 0: none */
	struct config_verify verify;
	/* Owned, compiled with the repository's exclusion list. For kind DIGEST it accepts exactly
	 * digest_tag (pattern ^tag$, alphabetical), so selection and comparison work unchanged. */
	struct policy *policy;
};

struct config_git_source {
	char *ns, *name, *id; /* owned */
	struct config_origin origin;
	char *url;        /* owned; ssh://, https://, http:// or file:// */
	char *branch;     /* owned; spec.ref.branch, NULL when not given */
	char *secret_ref; /* owned; spec.secretRef.name, NULL: none */
	char *provider;   /* owned; spec.provider: NULL/generic, or github (a GitHub App) */
	size_t secret_ref_line;
	int64_t interval_ms; /* spec.interval (Flux requires it; unused by imageguard
	                        beyond validation), 0 when absent */
	int64_t timeout_ms;  /* spec.timeout, 0 when absent */
	/* spec.ref's tag, semver, name or commit when given (static string: "tag", ...), which
	 * Flux checks out before the branch; imageguard checks out branches only, so an
	 * automation on this source must name its own checkout branch. NULL: none. */
	const char *ref_field;
	size_t ref_line;
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
	bool push_branch_given; /* git.push.branch is in the document (not the default) */
	/* owned; git.push.refspec ("SRC:refs/...", never forced), NULL: none. With it and
	 * without git.push.branch the commit is pushed with the refspec only, as in Flux. */
	char *push_refspec;
	/* owned; git.commit.signingKey.secretRef.name, NULL: commits are not signed */
	char *signing_secret;
	size_t signing_secret_line; /* line of spec.git.commit.signingKey */
	char *author_name;          /* owned; default "imageguard" */
	char *author_email;         /* owned; default "imageguard@localhost" */
	char *message_template;     /* owned; NULL: the caller's default message */
	/* spec.git.commit.messageTemplateValues as key, value, key, value, ... (.Values) */
	struct strvec template_values;
	char *update_path;       /* owned; update.path, default "./" */
	size_t update_path_line; /* line of spec.update.path (the automation's line when absent) */
	/* spec.policySelector; which policies the automation writes: see
	 * config_automation_selects */
	struct config_selector selector;
	int64_t interval_ms; /* spec.interval, default 5m */
	bool suspend;
};

/* The Ready reasons Flux's controllers give an object that cannot run (config_invalid.reason):
 * image-automation-controller's api/v1 and its use of fluxcd/pkg (AccessDenied), and
 * image-reflector-controller's ImagePolicy reconciler; CONFIG_REASON_INVALID_CONFIG is
 * imageguard's own, for what Flux would not refuse (a field imageguard cannot honour). */
#define CONFIG_REASON_ACCESS_DENIED "AccessDenied"
#define CONFIG_REASON_SOURCE_MANAGER_FAILED "SourceManagerFailed" /* GitRepository, Secret */
#define CONFIG_REASON_INVALID_SOURCE "InvalidSourceConfiguration" /* sourceRef.kind */
#define CONFIG_REASON_INVALID_STRATEGY "InvalidUpdateStrategy"
#define CONFIG_REASON_GIT_OPERATION_FAILED "GitOperationFailed" /* a template that fails */
#define CONFIG_REASON_INVALID_POLICY "InvalidPolicy"
#define CONFIG_REASON_DEPENDENCY_NOT_READY "DependencyNotReady" /* the ImageRepository */
#define CONFIG_REASON_INVALID_CONFIG "InvalidConfig"

/* What an invalid object is (same order as the kinds are read). */
enum config_kind {
	CONFIG_KIND_REPOSITORY,
	CONFIG_KIND_POLICY,
	CONFIG_KIND_GIT_SOURCE,
	CONFIG_KIND_AUTOMATION,
	CONFIG_KIND_FILE /* a file, or a document whose object could not be named */
};

/* An object left out of the config because it is invalid, or depends on one that is (a policy
 * of an invalid or missing ImageRepository, an automation of an invalid or missing
 * GitRepository, both objects of a duplicated name). Only with config_load_options.keep_valid:
 * the arrays of struct config then hold the valid objects only, resolved and compiled. */
struct config_invalid {
	enum config_kind kind;
	char *ns, *name, *id; /* owned; NULL when the object's name could not be read */
	const char *file;     /* borrowed from config->files */
	size_t line;          /* its document's `kind:` line (0: the whole file) */
	/* owned; one line, "file:line: " then the object's first error or the dependency that
	 * failed, as in a check-config line */
	char *message;
	/* static; the Ready condition reason Flux gives this refusal (CONFIG_REASON_*:
	 * AccessDenied for a reference the ACL or --no-cross-namespace-refs refuses,
	 * SourceManagerFailed for an automation whose GitRepository or Secret is missing or
	 * invalid, InvalidPolicy, ...), NULL: none of its own (a repository, a file) */
	const char *reason;
};

struct config {
	struct strvec files;            /* every file read, sorted; origins point into it */
	struct config_invalid *invalid; /* owned; see struct config_invalid */
	size_t invalid_len;
	struct config_repository *repositories;
	size_t repositories_len;
	struct config_policy *policies;
	size_t policies_len;
	struct config_git_source *git_sources;
	size_t git_sources_len;
	struct config_automation *automations;
	size_t automations_len;
	struct config_namespace *namespaces; /* the Namespace documents read (first of a name) */
	size_t namespaces_len;
	/* by "ns/name", one per enum config_kind: the config_find_* lookups (config.c) */
	struct strindex index[CONFIG_KIND_FILE]; /* the four object kinds */
	struct config_arena *strings;            /* owned; the objects' strings (config.c) */
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

struct config_load_options {
	/* Return the valid objects whatever else is wrong, the invalid ones in config->invalid
	 * (CONTRACT §4: one invalid object invalidates only itself and what depends on it). */
	bool keep_valid;
	/* Check every secret an object names (secretRef, certSecretRef): the folder exists under
	 * secrets_dir and its files parse (config_secrets_check); a failure is an error of that
	 * object. With secrets_dir NULL, naming a secret is an error asking for --secrets-dir. */
	bool check_secrets;
	const char *secrets_dir;
	/* --watch-label-selector: only objects whose metadata.labels match are read, the others
	 * are left out as the API server leaves them out of a list (NULL: every object). A
	 * path whose objects are all left out is an empty config, not an error. */
	const struct labelsel *selector;
	/* The objects come from the Kubernetes API (run --kube, check-config --kube): what needs
	 * the API, spec.serviceAccountName, is accepted instead of refused. */
	bool kube;
	/* secrets_dir is run --kube's copy of the API's Secrets (src/controller/kubesource.c):
	 * Secret ns/name in the folder <ns>.<name>, each secretRef rewritten to it. A secret's
	 * error then names it ns/name in the Kubernetes API, never the folder (check-config --kube
	 * leaves it false: its --secrets-dir is the user's). */
	bool secrets_from_api;
	/* --shards N (0: none). Above 1, the unit a shard owns is one (Git URL, branch) pair, so
	 * an automation that writes two branches (spec.git.push.branch and a push.refspec to
	 * another destination, both pushed as Flux pushes them) is an error of that automation:
	 * another shard could own the refspec's branch. */
	unsigned shards;
	/* --no-cross-namespace-refs (Flux's flag): a reference to an object of another namespace
	 * is refused, whatever the ACL says: an ImagePolicy's spec.imageRepositoryRef.namespace,
	 * an ImageUpdateAutomation's spec.sourceRef.namespace. The refused object is invalid
	 * (config_invalid.reason "AccessDenied"). */
	bool no_cross_namespace_refs;
	/* config_load_documents: the text of document i whose data is NULL, made when it is read
	 * and freed (free()) right after, so that a load holds one text at a time, not all of
	 * them (run --kube); *len its length. NULL: out of memory. */
	char *(*document_text)(void *ctx, size_t i, size_t *len);
	void *document_ctx;
};

/* One document in memory (run --kube: an object's JSON, which is YAML). */
struct config_document {
	const char *name; /* in messages as the file: "ImagePolicy/ns/name" */
	const char *data; /* NULL: config_load_options.document_text makes it */
	size_t len;
};

/* config_load with options (o NULL: as config_load). With o->keep_valid it returns 0 and a
 * config whenever the path holds at least one object, valid or not: every error is still in
 * diags (diags->errors counts them), and each invalid object is in config->invalid. A path
 * with no object at all is an error ("no ImageRepository, ...") and IG_EINVALID either way. */
int config_load_with(struct config **out, const char *path, const struct config_load_options *o,
                     struct config_diags *diags, struct error *err);

/* config_load_with over documents instead of files (copied: docs may go afterwards); source
 * names the whole set in err. Same options, returns and diagnostics. */
int config_load_documents(struct config **out, const struct config_document *docs, size_t n,
                          const char *source, const struct config_load_options *o,
                          struct config_diags *diags, struct error *err);

/* The invalid object of kind with ns/name (the first one, for a duplicate); NULL when none.
 * Borrowed, valid until config_free. */
const struct config_invalid *config_find_invalid(const struct config *c, enum config_kind kind,
                                                 const char *ns, const char *name);

/* The same by id "ns/name" (a marker's policy). */
const struct config_invalid *config_find_invalid_id(const struct config *c, enum config_kind kind,
                                                    const char *id);

/* The first invalid object of kind in namespace ns (for a pass: an unmarked policy whose
 * namespace has an invalid automation is error/config with that automation's message, not
 * none/no-markers); NULL when none. Borrowed, valid until config_free. */
const struct config_invalid *config_find_invalid_in(const struct config *c, enum config_kind kind,
                                                    const char *ns);

/* "ImageRepository", "ImagePolicy", "GitRepository", "ImageUpdateAutomation", "file". */
const char *config_kind_name(enum config_kind k);
void config_free(struct config *c);

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
 * is not checked here. secrets_dir NULL (no --secrets-dir) is IG_EINVALID "secret 'X' needs
 * --secrets-dir": there is no default folder, never the current directory. Returns 0, or
 * IG_EINVALID / IG_EFAIL (out of memory) with err set. */
int config_secret_path(char **out, const char *secrets_dir, const char *name, struct error *err);

/* True when automation a considers policy p, as Flux's image-automation-controller does: p is in
 * a's namespace and its labels match a's spec.policySelector (absent or empty: every policy of
 * the namespace). Markers naming a policy a does not select are left untouched. */
bool config_automation_selects(const struct config_automation *a, const struct config_policy *p);

/* For a pass that finds a's spec.update.path missing in its clone: sets err (IG_ENOTFOUND, which
 * it returns) to the one-line message naming the field and the config's file:line, not the
 * cache path: "FILE:LINE: ImageUpdateAutomation 'ns/name': 'spec.update.path': './x' does not
 * exist on branch 'main'". */
int config_automation_path_error(struct error *err, const struct config_automation *a);

/* The Namespace ns as the configuration knows it (a document, or the API's object); NULL when
 * it has none. Borrowed, valid until config_free. */
const struct config_namespace *config_find_namespace(const struct config *c, const char *ns);

/* Flux's ACL (fluxcd/pkg runtime/acl HasAccessToRef) for a policy of namespace ns on r: true
 * when ns is r's own namespace, or one of r's accessFrom.namespaceSelectors, walked in order,
 * matches the labels of ns (config_find_namespace; a namespace without one has only the label
 * kubernetes.io/metadata.name=<ns>, as the API server gives every namespace). Otherwise false
 * with Flux's message in why ("access denied: 'repoNS/repoName' can't be accessed due to ..."). */
bool config_policy_access(char *why, size_t why_n, const struct config *c, const char *ns,
                          const struct config_repository *r);

/* True when labels (key, value pairs as in config_policy.labels) satisfy every requirement. */
bool config_selector_matches(const struct config_selector *s, const struct strvec *labels);

/* True while the override is in force at now: a rollback-to is set and rollback-until is
 * absent or later than now. */
bool config_override_active(const struct config_override *o, time_t now);

/* "Never", "IfNotPresent", "Always" (static storage). */
const char *config_reflect_name(enum config_reflect r);

#endif
