/* One marker's decision, as data in and data out: what the marker holds (markers_current),
 * the guard's table (guard_decide), the manifest HEAD and build times it asks for, and the
 * value to write. The registry is reached only through struct decide_io, so the whole path
 * runs in tests over fake callbacks; this module links without libcurl and libgit2. */
#ifndef IMAGEGUARD_DECIDE_H
#define IMAGEGUARD_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "imageguard/guard/guard.h"

struct config;
struct config_automation;
struct marker;
struct marker_set;

/* A repository's listing in this pass, as decide reads it. Borrowed pointers. */
struct decide_listing {
	bool done;         /* listing attempted (false: not listed in this pass) */
	bool ok;           /* with done: it succeeded */
	const char *error; /* with done && !ok: one line */
	const char *const *tags;
	size_t tags_len;
	const unsigned char *key; /* NULL, or the listing's identity (registry_listing.key) */
};

/* The signature gate's answer for one digest (CONTRACT §12). Strings borrowed, valid until the
 * pass ends. */
struct decide_verified {
	const char *status; /* "ok", or the failure's name (sigverify_status_name) */
	const char *signer; /* with "ok": who signed (from the registry: escape before writing) */
	const char *detail; /* one line, "" when none */
};

/* The I/O a decision may need, answered by the pass (reconcile) or a test. Strings handed out
 * are borrowed and must stay valid until the pass ends (reconcile caches them). */
struct decide_io {
	/* The manifest HEAD of ref (a tag or a digest) in repository repo (an index into
	 * config->repositories): result, the digest on OK (NULL if the registry sent none), the
	 * one-line error on FAILED. Returns 0, or IG_EFAIL when out of memory. */
	int (*head)(void *ctx, size_t repo, const char *ref, enum guard_head *result,
	            const char **digest, const char **error);
	/* The image config `created` of digest in repo, for platform (NULL: linux/amd64).
	 * Returns 0 with *out set, or IG_EFAIL when out of memory. */
	int (*created)(void *ctx, size_t repo, const char *digest, const char *platform,
	               const struct guard_created **out);
	/* Whether digest was held at marker m of automation a (in an earlier commit of its file,
	 * by a marker of the same policy) and a later commit replaced it: the marker's Git
	 * history, asked only when build times cannot order two builds. Returns 0 with *out
	 * set, or negative with a one-line error (the decision becomes error/git). */
	int (*replaced)(void *ctx, const struct config_automation *a, const struct marker *m,
	                const char *digest, bool *out, struct error *err);
	/* Since when config policy number policy's candidate, with digest (NULL: none), has been
	 * listed (the settle window's memory), asked only for a policy with imageguard.io/settle
	 * whose decision would write. Returns 0 with *out set, or IG_EFAIL (out of memory). */
	int (*listed_since)(void *ctx, size_t policy, const char *candidate, const char *digest,
	                    time_t *out);
	/* The signature gate: whether digest (what the decision would write, or the digest the
	 * candidate's tag points at) in repo verifies under config policy number policy's
	 * verification settings. Asked only for a policy with verification whose decision would
	 * write (an update, or a rollback override's target). NULL: no gate (a policy with
	 * verification then holds, status "unsigned"). Returns 0 with *out set, or negative with
	 * a one-line error (the registry or the trust root failed: the decision becomes
	 * error/registry, or error/config for IG_EINVALID). */
	int (*verify)(void *ctx, size_t policy, size_t repo, const char *digest,
	              struct decide_verified *out, struct error *err);
	void *ctx;
};

/* What one pass hands every decision. */
struct decide_env {
	const struct config *cfg;
	time_t now;
	const struct decide_listing *listings; /* one per config repository, same index */
	const struct decide_io *io;
};

/* One marker's decision. */
struct decide_item {
	size_t marker;                      /* index in the automation's marker set */
	size_t policy;                      /* index in config->policies */
	char *current_tag, *current_digest; /* owned; what the marker holds (markers_current) */
	struct guard_input in;
	struct guard_decision d;
	char *new_value; /* owned; what to write, NULL: nothing */
	/* owned; with a verified policy's writing decision, who signed what is written (the
	 * Imageguard-Verified trailer; unescaped, from the registry); NULL otherwise */
	char *verified_by;
	/* borrowed from the io; set when the guard compared build times */
	const struct guard_created *cur_created, *cand_created;
};

/* Decides marker number `marker` of s, which names config policy number `policy`, for
 * automation a, into out (which this fills from scratch). A new value that cannot be built
 * becomes error/config. Returns 0, or IG_EFAIL when out of memory (out then holds what it
 * has; release it either way). */
int decide_marker(struct decide_item *out, const struct decide_env *env,
                  const struct config_automation *a, const struct marker_set *s, size_t marker,
                  size_t policy);

/* decide_marker in two steps, for a caller that makes the HEADs of several markers at once:
 * decide_marker_begin fills out and runs the guard's table (the listing is read here only);
 * decide_head_ref then names the reference whose HEAD the rest will ask io->head for (NULL:
 * none; borrowed from the item); decide_marker_finish does the rest. Both return as
 * decide_marker does, which is the two in a row. */
int decide_marker_begin(struct decide_item *out, const struct decide_env *env,
                        const struct config_automation *a, const struct marker_set *s,
                        size_t marker, size_t policy);
const char *decide_head_ref(const struct decide_item *it);
int decide_marker_finish(struct decide_item *out, const struct decide_env *env,
                         const struct config_automation *a, const struct marker_set *s);

/* Frees what decide_marker put in the item (not the item). NULL-safe. */
void decide_item_release(struct decide_item *it);

#endif
