/* The OCI Distribution client: tag listings (paginated, capped, never silently short) and
 * manifest HEADs (existence + Docker-Content-Digest), with token/basic auth, retries with
 * backoff and one keep-alive connection pool per client. A client is safe to use from several
 * threads at once. */
#ifndef IMAGEGUARD_REGISTRY_H
#define IMAGEGUARD_REGISTRY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imageguard/registry/imageconfig.h"
#include "imageguard/registry/listmemo.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/strvec.h"

struct error;
struct imageref;
struct registry_creds;

struct registry_options {
	long connect_timeout_ms; /* default 10000 */
	long timeout_ms;         /* whole request, default 30000 */
	size_t page_size;        /* `n` asked for, default 1000 */
	size_t max_pages;        /* default 10000 */
	size_t max_bytes;        /* total listing bytes, default registry_max_bytes(the default
	                          * memory budget) = 48 MiB */
	size_t max_tags;         /* entries of one listing, default TAGLIST_MAX_TAGS */
	long listing_timeout_ms; /* one whole listing, every page, retry and wait; default
	                          * 300000; a target's listing_timeout_ms, when set, replaces it */
	unsigned max_retries;    /* on 429/5xx/transport errors, default 4 */
	long max_backoff_ms;     /* cap of one wait, default 30000 */
	/* Leave registry_listing.sha256 "" (default false): for a caller that never reads it
	 * (`tags -o text`), which then skips the hash and OpenSSL's first digest fetch. */
	bool skip_digest;
	/* Keep single-page listings between passes (listmemo.h), for `run`: a page that comes
	 * back identical is not parsed again. Default false: a one-pass command keeps nothing. */
	bool memo_listings;
	/* Called after every HTTP response (or transport failure with code 0), for metrics. */
	void (*observe)(void *ctx, const char *registry, long http_code);
	void *observe_ctx;
};

/* Fills the defaults above. */
void registry_options_init(struct registry_options *opts);

/* The memory budget a process has for the tag listings it holds at once, by default: the
 * shipped Deployment's 128Mi limit less the process itself and the Git work beside it. */
#define REGISTRY_MEMORY_BUDGET_DEFAULT ((size_t)96 << 20)
/* The listing cap (max_bytes) that keeps one listing inside budget bytes: half of it. A
 * listing is read as a stream, so what it costs is its tags (packed strings and a pointer
 * each), about 1.3 times the JSON bytes, 1.7 when they come unsorted (bench/listing_rss.sh). */
size_t registry_max_bytes(size_t budget);

/* What one request is about: the repository and how to reach it. Borrowed pointers. */
struct registry_target {
	const struct imageref *ref;         /* registry + repository (tag/digest ignored) */
	const struct registry_creds *creds; /* NULL: anonymous */
	bool insecure;                      /* plain HTTP allowed */
	const char *ca_file;                /* NULL: system CAs */
	long timeout_ms;                    /* one request; 0: the client's default */
	long listing_timeout_ms; /* a whole listing (every page, retry and wait), as Flux's
	                          * ImageRepository spec.timeout; 0: the client's default */
};

struct registry_client;

int registry_client_new(struct registry_client **out, const struct registry_options *opts,
                        struct error *err);
void registry_client_free(struct registry_client *c);

/* A stop flag (SIGTERM): once set, every request of the client in flight ends within about a
 * second, no new one starts, and the call fails with a "stopping" message. Set it before
 * requests run (not concurrently with them); NULL: none. */
void registry_client_set_stop(struct registry_client *c, const volatile sig_atomic_t *stop);
/* The pass deadline (http_now_ms() instant, 0: none): every listing ends by it (IG_ETIMEOUT),
 * so the registries of a pass cannot hold it past the deadline. Manifest HEADs and configs
 * after it keep their own timeouts: the listings that did complete can still be confirmed
 * and committed. Set it between passes, not while requests run. */
void registry_client_set_deadline(struct registry_client *c, int64_t deadline_ms);
/* Starts a pass for the listing memo (memo_listings): what the pass before did not list is
 * dropped. */
void registry_client_next_pass(struct registry_client *c);
/* The listing cap from a memory budget: max_bytes = registry_max_bytes(budget). Set it before
 * requests run. */
void registry_client_set_budget(struct registry_client *c, size_t budget);

struct registry_listing {
	/* Deduplicated, byte-wise sorted. Read-only: the strings live in `arena` (one pointer and
	 * the bytes per tag), so never strvec_release or strvec_sort_unique it; copy what must
	 * outlive registry_listing_release. */
	struct strvec tags;
	size_t pages;    /* pages fetched */
	char sha256[65]; /* hex SHA-256 of the sorted tags joined by "\n" (no trailing newline) */
	/* With memo_listings and a single page held whole: listmemo's key of that page. Equal
	 * keys, equal tags: policy_select_keyed reuses a policy's pick over it. */
	bool keyed;
	unsigned char key[LISTMEMO_KEY_LEN];
	struct tagarena arena; /* owns the strings of tags */
};

#define REGISTRY_LISTING_INIT                                                                      \
	{                                                                                          \
		STRVEC_INIT, 0, {0}, false, {0}, TAGARENA_INIT                                     \
	}

/* Lists every tag, each page parsed as it arrives (taglist.h). A listing that failed, timed
 * out (its own deadline or the pass's), was cut by a cap (bytes, pages, entries), looped
 * (a next link seen before) or did not parse is an error (IG_EFAIL, IG_EAUTH, IG_ENOTFOUND for
 * NAME_UNKNOWN, IG_ETIMEOUT, IG_ETOOBIG, IG_EINVALID), never a shorter list. Errors name the
 * registry and the HTTP status. */
int registry_list_tags(struct registry_listing *out, struct registry_client *c,
                       const struct registry_target *t, struct error *err);
void registry_listing_release(struct registry_listing *l);

/* HEAD of the manifest `reference` (a tag or digest) with the full OCI/Docker Accept list.
 * On 200 *digest_out is the Docker-Content-Digest (owned; the index digest for multi-arch),
 * falling back to GET + sha256 of the body when the header is absent. IG_ENOTFOUND on 404. */
int registry_head_manifest(char **digest_out, struct registry_client *c,
                           const struct registry_target *t, const char *reference,
                           struct error *err);

/* The `created` of the image that manifest `digest` names: GET the manifest by digest; for an
 * index (or manifest list), the entry of platform ("os/arch[/variant]", NULL: linux/amd64),
 * GET that manifest; then GET the config blob (redirects followed as http_do does). Every body
 * is capped (4 MiB manifests, 8 MiB config) and checked against its digest. Returns 0 with
 * out filled: out->known false (and out->why) when the config has no usable `created` or the
 * index has no entry for the platform — a result, not an error. IG_ENOTFOUND when a manifest
 * or the blob is 404; IG_EINVALID for a body that does not match its digest or does not parse;
 * IG_ETOOBIG, IG_EAUTH, IG_ETIMEOUT, IG_EFAIL as for the other calls. */
int registry_image_created(struct imageconfig_created *out, struct registry_client *c,
                           const struct registry_target *t, const char *digest,
                           const char *platform, struct error *err);

/* The raw GETs that signature verification needs (sigfetch.h). Each replaces out's content
 * with the 200 body (capped at max bytes, 0: 4 MiB: IG_ETOOBIG past it) and returns 0, or
 * IG_ENOTFOUND on 404, IG_EAUTH, IG_ETIMEOUT, IG_EFAIL as for the other calls.
 * registry_get_manifest: the manifest `reference` (a tag or a digest) with the full OCI/Docker
 * Accept list; *media_type (owned, may be NULL) is the Content-Type. By digest, the body must
 * hash to it (else IG_EINVALID). */
int registry_get_manifest(struct buf *out, char **media_type, struct registry_client *c,
                          const struct registry_target *t, const char *reference, size_t max,
                          struct error *err);
/* The blob `digest`; the body must hash to it (else IG_EINVALID). */
int registry_get_blob(struct buf *out, struct registry_client *c, const struct registry_target *t,
                      const char *digest, size_t max, struct error *err);
/* The OCI 1.1 referrers API, GET /v2/<name>/referrers/<digest>: an image index. IG_ENOTFOUND
 * (404) means the registry has no referrers API (a registry with one answers 200, with an
 * empty index when nothing refers to digest). */
int registry_get_referrers(struct buf *out, struct registry_client *c,
                           const struct registry_target *t, const char *digest, size_t max,
                           struct error *err);

/* The hex SHA-256 of the byte-wise sorted tags joined by "\n" (CONTRACT §3 `tags -o json`). */
void registry_tags_sha256(char out[65], const struct strvec *sorted_tags);

/* Body parsers of registry_list_tags, public for the fuzz targets and unit tests.
 * registry_parse_tag_list appends the valid tags of one tag-list page (data[0..len), need not
 * be NUL-terminated) to tags, skipping entries that are not valid tags; `"tags": null` is an
 * empty page. It is taglist_parse: returns 0, IG_EINVALID (not JSON, no "tags" array, a
 * non-string entry, a bad "name"; err names `name`), IG_ETOOBIG or IG_EFAIL. */
int registry_parse_tag_list(struct strvec *tags, const char *name, const char *data, size_t len,
                            struct error *err);
/* Writes into out (n bytes, n > 0, always NUL-terminated) a one-line summary of an OCI error
 * body ("CODE: message[; CODE: message]"), or "" when data is not one. */
void registry_oci_errors(char *out, size_t n, const char *data, size_t len);

#endif
