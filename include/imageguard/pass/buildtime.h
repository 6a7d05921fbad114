/* Build times (image config `created`) of images by digest, read from the registry at most
 * once per pass and handed to the guard as struct guard_created. A digest's config never
 * changes, so one answer serves every marker and every push attempt of the pass. */
#ifndef IMAGEGUARD_BUILDTIME_H
#define IMAGEGUARD_BUILDTIME_H

#include <stddef.h>

#include "imageguard/guard/guard.h"

struct registry_client;
struct registry_target;

struct buildtime; /* not thread-safe: one per pass, used from its deciding thread */

/* Returns 0 or IG_EFAIL (out of memory). */
int buildtime_new(struct buildtime **out);
void buildtime_free(struct buildtime *b); /* NULL-safe */

/* The build time of digest in repository `repo` (the caller's index, a cache key with
 * platform, NULL meaning linux/amd64) as the guard wants it: KNOWN, MISSING (why in detail),
 * NOT_FOUND or FAILED (the error in detail). A failure is logged once. *out is borrowed from
 * b until buildtime_free. Returns 0, or IG_EFAIL when out of memory. */
int buildtime_get(const struct guard_created **out, struct buildtime *b, struct registry_client *c,
                  const struct registry_target *t, size_t repo, const char *digest,
                  const char *platform);

#endif
