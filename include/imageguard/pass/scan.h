/* The registry side of one pass: list every ImageRepository that a marker needs, once,
 * concurrently (up to a global limit, and a smaller one per registry host so that one slow
 * or rate-limiting registry cannot starve the others). */
#ifndef IMAGEGUARD_SCAN_H
#define IMAGEGUARD_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/registry.h"

struct config_repository;

/* At most this many requests run against one registry host at once. */
#define SCAN_PER_HOST_MAX 4

/* One repository to list. The caller fills repo and wanted; scan_run fills the rest. */
struct scan {
	const struct config_repository *repo; /* borrowed */
	bool wanted;                          /* a marker of a policy using it exists */
	bool done;                            /* listing attempted */
	bool packed;                          /* with rc == 0: see listing */
	int rc;                               /* 0 or the registry/creds error code */
	char *error; /* owned; with rc < 0, the one-line message (NULL: out of memory) */
	/* With rc == 0. When packed, listing.tags.items is NULL (its len still counts the tags)
	 * and the tags are the strings of listing.arena's one block: scan_tags rebuilds them. A
	 * pass keeps every listing until its automations are decided, and the pointers were
	 * more than half of a 100-tag listing. */
	struct registry_listing listing;
	struct registry_creds creds; /* loaded from the secret, kept for HEADs */
	char *ca_file;               /* owned; NULL: system CAs */
};

/* Lists every wanted scan (suspended repositories are skipped: done stays false) with up to
 * concurrency threads. Per-scan failures land in each scan; the return is negative only
 * when threads cannot be started. */
int scan_run(struct scan *scans, size_t n, struct registry_client *client, const char *secrets_dir,
             unsigned concurrency, struct error *err);

/* Called as each listing completes (success or not), on the worker thread that made it, with
 * the scan's index; scans[index] is final and no other thread touches it. Calls for different
 * scans may run at once. This is the seam for deciding per repository as its listing
 * completes, so that one slow registry delays only the policies that use it. */
struct scan_hooks {
	void (*done)(void *ctx, size_t index);
	void *ctx;
};

/* scan_run with hooks (NULL: none). */
int scan_run_hooked(struct scan *scans, size_t n, struct registry_client *client,
                    const char *secrets_dir, unsigned concurrency, const struct scan_hooks *hooks,
                    struct error *err);

/* What a request to repository r carries: its Secret's credentials (or its cloud provider's)
 * into creds, and its certSecretRef's CA file into *ca_file (owned, NULL: system CAs). The one
 * rule for the listings, the manifest HEADs and verify. Returns 0 or the secret's error. */
int scan_load_access(struct registry_creds *creds, char **ca_file,
                     const struct config_repository *r, const char *secrets_dir, struct error *err);

/* The registry target (ref, creds, insecure, CA, timeout) of a scan, for manifest HEADs. */
void scan_target(struct registry_target *out, const struct scan *s);

/* The tags of a listed scan (rc == 0), sorted: listing.tags.items, or for a packed listing
 * scratch (which holds listing.tags.len + 1 pointers) pointed at them. Borrowed from the
 * scan (and scratch). */
const char *const *scan_tags(const struct scan *s, const char **scratch);

/* The listing's SHA-256 (registry_listing.sha256) of a listed scan, computed the first time
 * it is asked for: a pass lists with skip_digest, since only an audit record or a commit
 * trailer reads it (it was 6% of an up-to-date pass). NULL when the listing failed. On the
 * pass's thread, once the scan is final. */
const char *scan_tags_sha256(struct scan *s);

/* Frees what scan_run put in the scans (not the array). */
void scan_release(struct scan *scans, size_t n);

#endif
