/* The audit log: one JSON line per marker decision per pass (CONTRACT §8), enough to prove
 * after an incident what the registry served (tag count, sha256 and optionally every tag);
 * and, from `run --verify-interval`, one line per container found running another image. */
#ifndef IMAGEGUARD_AUDIT_H
#define IMAGEGUARD_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct error;
struct strvec;

/* One decision. Every pointer is borrowed; NULL strings are written as JSON null. */
struct audit_record {
	const char *policy; /* "ns/name" */
	const char *image;  /* "host/repo" */
	bool listed;        /* false: no listing this pass (tag_count/tags_sha256 null) */
	size_t tag_count;
	const char *tags_sha256;
	const struct strvec *tags; /* written only when the log was opened with_tags */
	const char *current, *candidate, *decision, *reason;
	const struct strvec *warnings; /* NULL: [] */
	const char *file;              /* NULL for a policy without markers */
	size_t line;
	const char *commit, *digest;
	const char *message;         /* error text, or NULL */
	const char *rollback_reason; /* the override's reason while one is in force, or NULL */
	/* Written only when set: the digest committed at the marker, and for digest-tracked
	 * policies the config `created` of the committed and the new image (RFC3339). */
	const char *current_digest, *current_created, *candidate_created;
};

/* One container that runs another image than Git pins (verify, issue 8). Every pointer is
 * borrowed; NULL strings are written as JSON null. The record has "event": "drift" and no
 * "decision" field, so readers of decisions can tell the two apart. */
/* One verification record: the line `verify -o json` prints for each container, and (event
 * "drift") the audit log's drift record. One shape, one writer (audit_verify_json). */
struct verify_record {
	const char *policy;   /* "ns/name" from the marker */
	const char *workload; /* "ns/Kind/name" */
	const char *kind, *ns, *name;
	const char *container, *pod;
	const char *file; /* the marker, NULL when unknown */
	size_t line;
	const char *image;                          /* the value in Git */
	const char *expected_tag, *expected_digest; /* what Git wants */
	const char *running_image, *running_digest; /* what the pod status reports */
	const char *status;                         /* ok, drift, not-running, unknown */
	const char *reason;                         /* one line */
};

struct audit;

/* Opens path for appending (created 0640 when missing); "-" is stdout. with_tags puts the
 * whole tag list into each record (--audit-tags). Returns 0 or IG_EFAIL naming the file. */
int audit_open(struct audit **out, const char *path, bool with_tags, struct error *err);
/* Appends one record as a single write(2) of one line (whole lines even with several writers
 * on O_APPEND). `time` is now, RFC 3339 UTC with milliseconds. */
int audit_write(struct audit *a, const struct audit_record *r, struct error *err);
/* The record as a JSON object (json_decref it; NULL out of memory): time (now), event (when
 * non-NULL), policy, workload, kind, namespace, name, container, pod, file, line, image,
 * expected_tag, expected_digest, running_image, running_digest, status, reason. */
json_t *audit_verify_json(const struct verify_record *r, const char *event);
/* Appends one drift record (audit_verify_json with event "drift") the same way as audit_write.
 * Returns 0 or IG_EFAIL naming the file. */
int audit_write_drift(struct audit *a, const struct verify_record *r, struct error *err);
/* fsync at the end of a pass (a no-op on stdout or a pipe). */
int audit_sync(struct audit *a, struct error *err);
/* Closes the file (not stdout) and frees a; NULL-safe. */
void audit_close(struct audit *a);

#endif
