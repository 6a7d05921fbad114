/* A per-pass cache of registry_image_created answers, as the guard's struct guard_created. */
#include <stdlib.h>
#include <string.h>

#include "imageguard/pass/buildtime.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageconfig.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/util/log.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/vec.h"

struct entry {
	size_t repo;
	char *digest, *platform;
	char *detail;
	struct guard_created created; /* created.detail points at detail */
};

struct buildtime {
	struct entry **items; /* one allocation each: callers keep pointers into entries */
	size_t len, cap;
};

int buildtime_new(struct buildtime **out)
{
	return (*out = calloc(1, sizeof(**out))) ? 0 : IG_EFAIL;
}

void buildtime_free(struct buildtime *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->len; i++) {
		free(b->items[i]->digest);
		free(b->items[i]->platform);
		free(b->items[i]->detail);
		free(b->items[i]);
	}
	free(b->items);
	free(b);
}

static struct entry *find(struct buildtime *b, size_t repo, const char *digest,
                          const char *platform)
{
	for (size_t i = 0; i < b->len; i++)
		if (b->items[i]->repo == repo && !strcmp(b->items[i]->digest, digest) &&
		    !strcmp(b->items[i]->platform, platform))
			return b->items[i];
	return NULL;
}

static struct entry *add(struct buildtime *b, size_t repo, const char *digest, const char *platform)
{
	struct entry *e;

	struct entry **p = vec_reserve(b->items, &b->cap, b->len, sizeof(*p), 8);

	if (!p)
		return NULL;
	b->items = p;
	if (!(e = calloc(1, sizeof(*e))))
		return NULL;
	e->repo = repo;
	if (!(e->digest = strdup(digest)) || !(e->platform = strdup(platform))) {
		free(e->digest);
		free(e->platform);
		free(e);
		return NULL;
	}
	b->items[b->len++] = e;
	return e;
}

/* Reads the registry's answer into e. */
static int fill(struct entry *e, struct registry_client *c, const struct registry_target *t,
                const char *platform)
{
	struct imageconfig_created ic;
	struct error err = ERROR_INIT;
	int rc = registry_image_created(&ic, c, t, e->digest, platform, &err);
	const char *detail = NULL;

	if (rc == 0 && ic.known) {
		e->created.state = GUARD_CREATED_KNOWN;
		e->created.time = ic.time;
	} else if (rc == 0) {
		e->created.state = GUARD_CREATED_MISSING;
		detail = ic.why;
	} else {
		e->created.state =
		    rc == IG_ENOTFOUND ? GUARD_CREATED_NOT_FOUND : GUARD_CREATED_FAILED;
		detail = err.msg;
		log_warn("registry.created", "image '%s': %s", e->digest, err.msg);
	}
	if (detail && !(e->detail = strdup(detail)))
		return IG_EFAIL;
	e->created.detail = e->detail;
	return 0;
}

int buildtime_get(const struct guard_created **out, struct buildtime *b, struct registry_client *c,
                  const struct registry_target *t, size_t repo, const char *digest,
                  const char *platform)
{
	const char *key = platform ? platform : "";
	struct entry *e = find(b, repo, digest, key);

	*out = NULL;
	if (!e) {
		if (!(e = add(b, repo, digest, key)))
			return IG_EFAIL;
		if (fill(e, c, t, platform) < 0)
			return IG_EFAIL;
	}
	*out = &e->created;
	return 0;
}
