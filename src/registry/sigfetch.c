/* sigverify's registry callbacks over the registry client, for one repository: manifests,
 * blobs and referrers by their public GETs, signature tags looked up in the pass's listing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/registry.h"
#include "imageguard/registry/sigfetch.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static size_t cap(const struct buf *body)
{
	return body->max ? body->max : SIGFETCH_DEFAULT_MAX;
}

/* Moves what the registry gave into the caller's buffer, keeping its cap. */
static void move(struct buf *body, struct buf *got)
{
	size_t max = body->max;

	buf_release(body);
	*body = *got;
	body->max = max;
	*got = (struct buf)BUF_INIT;
}

int sigfetch_manifest(void *ctx, struct buf *body, char *media_type, size_t n,
                      const char *reference, struct error *err)
{
	struct sigfetch *f = ctx;
	struct buf got = BUF_INIT;
	char *type = NULL;
	int rc =
	    registry_get_manifest(&got, &type, f->client, f->target, reference, cap(body), err);

	if (n)
		snprintf(media_type, n, "%s", type ? type : "");
	free(type);
	if (rc == 0)
		move(body, &got);
	buf_release(&got);
	return rc;
}

int sigfetch_blob(void *ctx, struct buf *body, const char *digest, struct error *err)
{
	struct sigfetch *f = ctx;
	struct buf got = BUF_INIT;
	int rc = registry_get_blob(&got, f->client, f->target, digest, cap(body), err);

	if (rc == 0)
		move(body, &got);
	buf_release(&got);
	return rc;
}

int sigfetch_referrers(void *ctx, struct buf *body, const char *digest, struct error *err)
{
	struct sigfetch *f = ctx;
	struct buf got = BUF_INIT;
	int rc;

	if (f->no_referrers_api)
		return error_set(err, IG_ENOTFOUND, "registry: no referrers API");
	rc = registry_get_referrers(&got, f->client, f->target, digest, cap(body), err);
	if (rc == IG_ENOTFOUND)
		f->no_referrers_api = true;
	else if (rc == 0)
		move(body, &got);
	buf_release(&got);
	return rc;
}

static int cmp_tag(const void *key, const void *item)
{
	return strcmp(key, *(char *const *)item);
}

int sigfetch_has_tag(void *ctx, const char *tag)
{
	const struct sigfetch *f = ctx;

	if (!f->tags)
		return -1;
	if (f->tags_len == 0)
		return 0;
	return bsearch(tag, f->tags, f->tags_len, sizeof(char *), cmp_tag) ? 1 : 0;
}
