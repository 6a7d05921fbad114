/* Manifest HEADs done once per pass: every marker, push attempt and verified workload that
 * names the same repository and reference shares one request. Not thread-safe: one pass, one
 * thread (the listings run concurrently, the decisions do not; headcache_prefetch makes a
 * batch of HEADs on threads of its own and fills the table on the caller's). */
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

/* One HEAD a caller will ask for: the target, the key naming it, the reference. Borrowed. */
struct headcache_want {
	const struct registry_target *target;
	const char *key;
	const char *reference;
};

/* At most this many threads make a batch's HEADs. */
#define HEADCACHE_THREADS_MAX 16

/* Makes the HEADs of w[0..n) that the cache does not hold yet, each once, on up to threads
 * threads (capped at HEADCACHE_THREADS_MAX; the caller's thread is one of them), and
 * remembers their answers as headcache_get would have: a later headcache_get of the same
 * (key, reference) answers from memory. The client must be thread-safe (registry.h). Fewer
 * than two HEADs to make, or no memory: nothing is made here, and headcache_get makes them one
 * at a time as before. Repeats are found by comparing every pair: n is meant to be a chunk of
 * decisions (tens), not a whole pass. */
void headcache_prefetch(struct headcache *c, struct registry_client *client,
                        const struct headcache_want *w, size_t n, unsigned threads);

/* The entry of (key, reference) when a HEAD was made for it in this cache, else NULL: lets a
 * caller skip building the target on a hit. */
struct headcache_entry *headcache_find(struct headcache *c, const char *key, const char *reference);

#endif
