/* Commit messages for image updates: imageguard's default (a subject and one line per change)
 * or a Flux `messageTemplate` (Go text/template with Sprig's hermetic functions, run on the
 * data Flux passes), followed by the provenance trailers (docs/git.md). */
#ifndef IMAGEGUARD_COMMITMSG_H
#define IMAGEGUARD_COMMITMSG_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct error;

struct commitmsg_change {
	const char *policy;    /* "ns/name" */
	const char *old_value; /* the value committed before */
	const char *new_value;
	const char *file;   /* relative to the repository root */
	const char *reason; /* NULL, or a short note for the default message (an override's) */
	/* Flux's template data: the marker's setter as written ("ns:name", "ns:name:tag"; NULL:
	 * derived from policy) and the YAML document holding it (NULL: empty) */
	const char *setter;
	const char *api_version, *kind, *name, *namespace;
	/* trailers: "update/forward", "rollback/override", ...; the listing's sha256 (hex, as in
	 * `tags -o json`); for a rollback its reason annotation (NULL otherwise) */
	const char *decision;
	const char *tags_sha256;
	const char *rollback_reason;
	/* with a verified policy (CONTRACT §12): who signed the image written ("key NAME
	 * (sha256:...)" or "SAN (ISSUER)", from the registry), NULL otherwise */
	const char *verified_by;
};

struct commitmsg_input {
	const char *tmpl;      /* NULL or "": imageguard's default message */
	const char *tmpl_name; /* names the template in errors */
	const char *automation_namespace, *automation_name;
	const char *update_path; /* spec.update.path: Flux's FileChanges keys are relative to it */
	const char *const *values; /* messageTemplateValues: key, value, key, value, ... */
	size_t nvalues;            /* pairs */
	const struct commitmsg_change *changes;
	size_t n;
};

/* Appends the message for in->changes to out: the default
 *   imageguard: update N image(s)
 *
 *   ns/name: old -> new (file)
 * (" [reason]" after a change that has one; outside text escaped), or the rendered template,
 * then the final trailer block: per policy (sorted) `Imageguard-Policy: ns/name`, one
 * `Imageguard-Decision:` per distinct decision, `Imageguard-Tags-Sha256:`, one
 * `Imageguard-Verified:` per distinct signer and, for a rollback, `Rollback-Reason:`, all
 * escaped. When the message already ends in a trailer block (a
 * template's `Signed-off-by:`), the trailers join it. Returns 0, IG_EINVALID for a template
 * error (naming tmpl_name, the line and the problem), or IG_ETOOBIG when out's cap is
 * reached. */
int commitmsg_render(struct buf *out, const struct commitmsg_input *in, struct error *err);

/* Whether commitmsg_render's err says the message is too long for out's cap (the default
 * message, the trailers, a template's output or its data): fewer changes would fit. False for
 * every other failure, a template's step, CPU-time and regex budgets included. */
bool commitmsg_too_long(const struct error *err);

/* Under leader election: appends `Imageguard-Lease: <generation>` ("LEASE/TRANSITIONS",
 * escaped) to a message commitmsg_render made (it ends in its trailer block, so the trailer
 * joins it). Returns 0 or IG_ETOOBIG (err set) at out's cap. */
int commitmsg_add_lease(struct buf *out, const char *generation, struct error *err);

/* The lease generation a message's last `Imageguard-Lease: NAME/N` trailer names: 1 with the
 * name in name (n bytes; truncated names do not match) and N in *transitions, 0 when the
 * message has none (or a malformed one). */
int commitmsg_lease_of(char *name, size_t n, long *transitions, const char *msg);

/* Checks a template at configuration load: syntax, functions (a Sprig function imageguard does
 * not implement is an error naming it), and, by a trial run on sample data, fields Flux's data
 * does not have (the removed `.Updated` and `.Changed.ImageResult` with Flux's messages), and
 * the execution budget (template.h: the template and each {{define}} run on one sample change;
 * IG_ETOOBIG). Same errors as commitmsg_render. */
int commitmsg_check(const char *tmpl, const char *tmpl_name, struct error *err);

#endif
