/* An informer for one kind: list, then watch from the list's resourceVersion on its own
 * thread, keeping a cache of the objects by "ns/name". Bookmarks advance the version, 410
 * Gone relists, a dropped stream reconnects from the last version, failures back off
 * (0.5 s doubling to 30 s). The cache is read through snapshots under a lock. */
#ifndef IMAGEGUARD_KUBEWATCH_H
#define IMAGEGUARD_KUBEWATCH_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct error;
struct kubeconfig;
struct kubewatch;

/* Starts watching path (a collection: "/apis/G/V/PLURAL" or ".../namespaces/NS/PLURAL")
 * with label_selector (NULL: all) on a thread with its own client for cfg. The thread ends
 * when *stop is set (within about a second) or at kubewatch_free. Returns 0, or the errors of
 * kube_client_new, IG_EFAIL. */
int kubewatch_start(struct kubewatch **out, const struct kubeconfig *cfg, const char *path,
                    const char *label_selector, const volatile sig_atomic_t *stop,
                    struct error *err);

/* What a watch keeps of an object it listed or was sent: NULL to keep nothing (an object it
 * held leaves, as if deleted), else a new reference to store (obj itself, incref'd, or a
 * smaller copy). Called on the watch's thread, without the watch's lock; obj is borrowed. */
typedef json_t *(*kubewatch_admit_fn)(void *ctx, json_t *obj);

/* Whether a and b, two objects a watch keeps, are the same to it (a MODIFIED event that
 * changes neither is no change): objects are compared without status, resourceVersion and
 * managedFields; a string (what an admit function may keep instead) up to its first NUL. */
bool kubewatch_same(const json_t *a, const json_t *b);

/* kubewatch_start keeping only what admit(ctx, obj) returns (admit NULL: everything). A list
 * hands admit each page's objects as the page arrives, so the objects admit drops are never
 * all in memory at once; page_limit objects a page (0: the client's 500), for kinds whose
 * objects are large: a page is parsed whole. */
int kubewatch_start_admit(struct kubewatch **out, const struct kubeconfig *cfg, const char *path,
                          const char *label_selector, kubewatch_admit_fn admit, void *ctx,
                          size_t page_limit, const volatile sig_atomic_t *stop, struct error *err);

/* The admit function's answers changed: the watch ends its stream in flight and lists again,
 * so that what it now admits arrives and what it no longer admits leaves (the change count
 * grows when the cache differs). Returns at once; thread-safe. */
void kubewatch_refilter(struct kubewatch *w);

/* Stops the thread (it ends its request within about a second) and frees. NULL-safe. */
void kubewatch_free(struct kubewatch *w);
/* Tells w's thread to end its request and stop (within about a second), without waiting:
 * cancel every watch, then free each, and their ends overlap. Safe with NULL. */
void kubewatch_cancel(struct kubewatch *w);

/* True once the first list has been taken in. */
bool kubewatch_synced(struct kubewatch *w);

/* True once a list begun after the last kubewatch_refilter has been taken in (and the first
 * list): the cache holds what the admit function's current answers keep. */
bool kubewatch_settled(struct kubewatch *w);

/* A count that grows with every change of an object other than its status (and its
 * resourceVersion and managedFields): what a new configuration depends on. */
uint64_t kubewatch_changes(struct kubewatch *w);

/* The cached objects, sorted by "ns/name", as a new JSON array (json_decref it) of the cache's
 * own objects, shared and read-only: the watch replaces an object, never changes one (jansson
 * counts references atomically). NULL when out of memory. */
json_t *kubewatch_snapshot(struct kubewatch *w);
/* The same, and (names non-NULL) in *names a new array of their "ns/name" keys, in the same
 * order: a caller that names each object need not parse it. */
json_t *kubewatch_snapshot_named(struct kubewatch *w, json_t **names);

/* What the cache holds of "ns/name" (as the admit function kept it), a new reference; NULL
 * when it holds nothing of that name. Thread-safe. */
json_t *kubewatch_get(struct kubewatch *w, const char *key);

/* The last failure of the list or watch in *err (one line), or an empty one; cleared by a
 * successful list. */
void kubewatch_last_error(struct kubewatch *w, struct error *err);

#endif
