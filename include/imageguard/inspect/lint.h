/* `imageguard lint`: find the image references in Kubernetes manifests, Kustomize `images:` and
 * HelmRelease values that can run something other than what was meant (mutable tags, no digest,
 * a pull policy that keeps a stale cached image) and markers naming unknown policies. */
#ifndef IMAGEGUARD_LINT_H
#define IMAGEGUARD_LINT_H

#include <stdbool.h>
#include <stddef.h>

struct error;
struct strvec;
struct marker_set;

/* The largest manifest read: bigger than any a human keeps in Git; larger files are
 * problems, never read whole. */
#define LINT_FILE_MAX ((size_t)16 << 20)

/* Ordered as they sort in a report at the same line. */
enum lint_rule { LINT_MUTABLE_TAG, LINT_PULL_POLICY, LINT_NO_DIGEST, LINT_UNKNOWN_POLICY };
enum lint_severity { LINT_WARNING, LINT_ERROR };

/* Kubernetes' imagePullPolicy; LINT_PULL_UNSET when the manifest does not say. */
enum lint_pull { LINT_PULL_UNSET, LINT_PULL_ALWAYS, LINT_PULL_IF_NOT_PRESENT, LINT_PULL_NEVER };

struct lint_finding {
	char *file;  /* owned; relative to the scan root */
	size_t line; /* 1-based */
	enum lint_rule rule;
	enum lint_severity severity;
	char *image;   /* owned; the reference as the manifest writes it */
	char *message; /* owned; one line */
};

/* A file or value lint could not read (does not parse, too big, invalid reference): reported
 * on stderr by the command, never a finding, never fatal for the other files. */
struct lint_problem {
	char *file;    /* owned */
	size_t line;   /* 0 when no line applies */
	char *message; /* owned; one line */
};

struct lint_report {
	struct lint_finding *findings;
	size_t len, cap;
	struct lint_problem *problems;
	size_t problems_len, problems_cap;
};

#define LINT_REPORT_INIT                                                                           \
	{                                                                                          \
		NULL, 0, 0, NULL, 0, 0                                                             \
	}

struct lint_options {
	/* Tags treated as mutable; NULL: the default list (latest, main, master, dev, develop,
	 * edge, nightly, stable). A missing tag is always mutable. Borrowed. */
	const struct strvec *mutable_tags;
};

/* One image occurrence as the rules see it (all borrowed). */
struct lint_image {
	const char *image; /* as written, for the report */
	const char *tag;   /* NULL: no tag */
	bool has_digest;
	enum lint_pull pull; /* the explicit policy, or LINT_PULL_UNSET */
	bool pull_known;     /* false where the manifest cannot say (Kustomize images) */
};

/* Kubernetes' defaulting of imagePullPolicy for a reference with this tag (NULL: none) and
 * digest: `latest`, or neither tag nor digest, is Always; anything else IfNotPresent. */
enum lint_pull lint_pull_default(const char *tag, bool has_digest);

/* True when tag (NULL: no tag) counts as mutable under opts. */
bool lint_is_mutable_tag(const struct lint_options *opts, const char *tag);

/* Applies the rule table to one image and appends its findings (file/line copied).
 * Returns 0 or IG_EFAIL (out of memory). */
int lint_check_image(struct lint_report *out, const struct lint_options *opts, const char *file,
                     size_t line, const struct lint_image *img, struct error *err);

/* Appends a problem (printf-style message, flattened to one line; file copied).
 * Returns 0 or IG_EFAIL (out of memory). */
int lint_add_problem(struct lint_report *out, const char *file, size_t line, struct error *err,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Lints one file's bytes (every YAML document in it), named `file` in results. A parse error
 * is a problem, not a failure; returns negative only for out-of-memory. */
int lint_scan_buffer(struct lint_report *out, const struct lint_options *opts, const char *file,
                     const char *data, size_t len, struct error *err);

/* Lints every *.yaml / *.yml below root (a directory, or one file), in sorted path order,
 * skipping dot-directories. Unreadable or oversized files are problems. Returns IG_ENOTFOUND
 * or IG_EINVALID (with a message) when root itself cannot be read, IG_EFAIL when out of memory. */
int lint_scan_tree(struct lint_report *out, const struct lint_options *opts, const char *root,
                   struct error *err);

/* Appends an unknown-policy finding for each marker whose policy ("ns/name") is not in
 * known (borrowed, any order). */
int lint_check_markers(struct lint_report *out, const struct marker_set *markers,
                       const struct strvec *known, struct error *err);

/* Sorts findings by file, line and rule (problems by file and line). */
void lint_report_sort(struct lint_report *r);

/* Frees everything the report owns; it may be reused. */
void lint_report_release(struct lint_report *r);

/* Stable names: "mutable-tag", "pull-policy", "no-digest", "unknown-policy";
 * "error", "warning"; "Always", "IfNotPresent", "Never" ("" for unset). Static storage. */
const char *lint_rule_name(enum lint_rule rule);
const char *lint_severity_name(enum lint_severity severity);
const char *lint_pull_name(enum lint_pull pull);

#endif
