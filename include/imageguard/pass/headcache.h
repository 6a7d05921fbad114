/* Manifest HEADs done once per pass: every marker, push attempt and verified workload that
 * names the same repository and reference shares one request. Not thread-safe: one pass, one
 * thread (the listings run concurrently, the decisions do not). */
#ifndef IMAGEGUARD_HEADCACHE_H
#define IMAGEGUARD_HEADCACHE_H

#include <stdbool.h>
#include <stddef.h>

struct registry_client;
struct registry_target;

/* What one HEAD answered. Strings owned by the cache, valid until headcache_free. */
struct headcache_entry {
	int rc;       /* 0 (200), IG_ENOTFOUND (404), or the registry call's other error code */
	char *digest; /* with rc 0: Docker-Content-Digest (or the body's sha256) */
	char *error;  /* with rc < 0: one line */
	bool logged;  /* the caller's: set once it has logged a failure, so it logs once */
};

struct headcache;

/* Returns 0 or IG_EFAIL (out of memory). */
int headcache_new(struct headcache **out);
void headcache_free(struct headcache *c);

/* The HEAD of reference in the repository that key names (any string that identifies the
 * target: an image name, or a config repository's id), made through client and t on the first
 * call and remembered. NULL only when out of memory. */
struct headcache_entry *headcache_get(struct headcache *c, struct registry_client *client,
                                      const struct registry_target *t, const char *key,
                                      const char *reference);

/* The entry of (key, reference) when a HEAD was made for it in this cache, else NULL: lets a
 * caller skip building the target on a hit. */
struct headcache_entry *headcache_find(struct headcache *c, const char *key, const char *reference);

#endif
