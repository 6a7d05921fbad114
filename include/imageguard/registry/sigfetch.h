/* The registry side of signature verification: the callbacks of sigverify's struct
 * sigverify_source (sigstore/sigverify.h) over the registry client, for one repository. The
 * pass fills a struct sigfetch per candidate's repository and points the source at these
 * functions; the sigstore layer stays free of I/O and this layer free of signature formats.
 * Request cost: a tag the pass's listing lacks costs nothing; the referrers API, once a
 * registry answered 404, is not asked again through the same struct sigfetch (and a pass that
 * remembers no_referrers_api per host leaves sigverify_source.get_referrers NULL for it, so
 * that sigverify_result.requests counts HTTP requests exactly). */
#ifndef IMAGEGUARD_SIGFETCH_H
#define IMAGEGUARD_SIGFETCH_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct error;
struct registry_client;
struct registry_target;

#define SIGFETCH_DEFAULT_MAX (4u << 20) /* a body cap when the caller's buffer has none */

struct sigfetch {
	struct registry_client *client;       /* borrowed */
	const struct registry_target *target; /* the candidate's repository; borrowed */
	/* The repository's tag listing of this pass, tags_len tags sorted byte-wise
	 * (registry_listing.tags, scan_tags), or NULL when unknown: then every signature tag is
	 * asked for. Borrowed. */
	const char *const *tags;
	size_t tags_len;
	/* Set once the registry answered 404 to the referrers API (it has none); the caller may
	 * keep it per registry host between candidates. */
	bool no_referrers_api;
};

/* sigverify_source.get_manifest: registry_get_manifest capped at body->max. */
int sigfetch_manifest(void *ctx, struct buf *body, char *media_type, size_t n,
                      const char *reference, struct error *err);
/* sigverify_source.get_blob: registry_get_blob (the body hashes to digest). */
int sigfetch_blob(void *ctx, struct buf *body, const char *digest, struct error *err);
/* sigverify_source.get_referrers: registry_get_referrers, IG_ENOTFOUND without a request once
 * no_referrers_api is set. */
int sigfetch_referrers(void *ctx, struct buf *body, const char *digest, struct error *err);
/* sigverify_source.has_tag: 1 when the listing has tag, 0 when it has not, -1 without one. */
int sigfetch_has_tag(void *ctx, const char *tag);

#endif
