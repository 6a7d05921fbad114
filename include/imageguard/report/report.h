/* The outcome of one pass, one item per marker (or per policy without marker): rendered as
 * the text lines and JSON array of CONTRACT §6, and written to the audit log (§8). */
#ifndef IMAGEGUARD_REPORT_H
#define IMAGEGUARD_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "imageguard/guard/guard.h"

struct audit;
struct buf;
struct error;
struct strvec;

struct report_item {
	char *policy; /* owned; "ns/name" */
	char *image;  /* owned; the repository's image, NULL when unknown */
	char *file;   /* owned; relative to the Git repository root, NULL: no marker */
	size_t line;
	char *current;   /* owned; the committed tag (or value), NULL when none */
	char *candidate; /* owned; NULL when none */
	enum guard_decision_kind decision;
	enum guard_reason reason;
	unsigned warnings; /* enum guard_warning bits */
	unsigned shard;    /* with has_shard */
	bool has_shard;    /* plan --shards: shard is the automation's owner */
	/* For the audit record: what the registry served this pass. The pointers are borrowed
	 * and valid only until the pass's listings are freed (a pass keeps 5,000 items). */
	bool listed;
	size_t tag_count;
	const char *tags_sha256;
	const struct strvec *tags;
	/* when tags is packed (its items NULL, scan.h): the first of its strings, which follow
	 * one another */
	const char *tags_first;
	char *digest;         /* owned; the confirmed digest, NULL when none */
	char *commit;         /* owned; the commit that wrote this marker, NULL when none */
	char *message;        /* owned; error text or the rollback reason, NULL when none */
	char *current_digest; /* owned; the digest committed at the marker, NULL when none */
	/* owned; RFC3339 config `created` of the committed and the new image when a
	 * digest-tracked policy compared them, NULL otherwise (or when unknown) */
	char *current_created, *candidate_created;
	char *automation; /* owned; the ImageUpdateAutomation "ns/name" of the marker, NULL
	                     for a policy without marker (run --kube: status and events) */
	/* static; the Ready reason and Event reason Flux gives this error when it has one of its
	 * own (config_invalid.reason: "AccessDenied"), NULL: from decision and reason */
	const char *kube_reason;
	/* owned; the invalid object this error reports, "Kind/ns/name" (JSON "object"): an
	 * invalid policy itself, or an invalid automation on each policy it would select; NULL
	 * for every other item */
	char *object;
	/* owned; set by report_set_strings: every string field above points into it (then
	 * report_set must not be used on the item) */
	char *block;
};

/* Every string field of an item at once (NULL allowed), for report_set_strings. */
struct report_strings {
	const char *policy, *image, *file, *current, *candidate, *digest, *commit, *message,
	    *current_digest, *current_created, *candidate_created, *automation;
};

/* An automation whose Git repository could not be read in the pass (run --kube: its status). */
struct report_failure {
	char *automation; /* owned; "ns/name" */
	char *message;    /* owned; one line */
};

struct report {
	struct report_item *items;
	size_t len, cap;
	size_t errors;  /* items whose decision is error */
	size_t commits; /* commits pushed */
	struct report_failure *failures;
	size_t failures_len;
	unsigned shards; /* plan --shards N: items with has_shard say "shard I/N"; 0: never */
};

#define REPORT_INIT                                                                                \
	{                                                                                          \
		NULL, 0, 0, 0, 0, NULL, 0, 0                                                       \
	}

/* Appends a zeroed item and returns it in *out (borrowed; valid until the next add).
 * Returns 0 or IG_EFAIL when out of memory. */
int report_add(struct report_item **out, struct report *r);
/* Makes room for n items in all, so that adding up to n moves none; 0 or IG_EFAIL. */
int report_reserve(struct report *r, size_t n);
/* Releases the items from number len on (a report cut back to its first len items). */
void report_truncate(struct report *r, size_t len);
/* Moves every item of src to the end of dst, in order; src is left empty (its counts are not
 * moved: the caller counts on dst). Returns 0 or IG_EFAIL (dst unchanged, src kept). */
int report_join(struct report *dst, struct report *src);
/* Records that automation (its id) failed with message; 0 or IG_EFAIL. */
int report_add_failure(struct report *r, const char *automation, const char *message);
/* Sets an owned string field from s (NULL allowed); returns 0 or IG_EFAIL. */
int report_set(char **field, const char *s);
/* Sets an owned field to c's time in RFC3339 when c is KNOWN, else NULL; 0 or IG_EFAIL. */
int report_set_created(char **field, const struct guard_created *c);
/* Replaces every string field of it with copies of s's, held in one block (it->block): a pass
 * fills an item per marker, and one allocation each instead of up to twelve is half of the
 * strings' memory at 5,000 markers. 0 or IG_EFAIL (it unchanged). */
int report_set_strings(struct report_item *it, const struct report_strings *s);
#define REPORT_CREATED_LEN 48
/* c's time in RFC3339 in text when c is KNOWN (returns text), else NULL. */
const char *report_created_text(char text[REPORT_CREATED_LEN], const struct guard_created *c);
void report_release(struct report *r);

/* One line per item: `policy file:line current -> candidate decision/reason [warnings]`. */
int report_text(struct buf *out, const struct report *r);
/* The JSON array of CONTRACT §6, pretty-printed, with a final newline. */
int report_json(struct buf *out, const struct report *r);
/* Writes one audit record per item, then fsyncs. */
int report_audit(struct audit *a, const struct report *r, struct error *err);

/* The warning names of bits, in bit order, appended to out. */
int report_warning_names(struct strvec *out, unsigned warnings);

#endif
