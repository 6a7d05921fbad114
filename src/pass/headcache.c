/* The pass's manifest HEADs in a hash table keyed by (target, reference): O(1) per lookup
 * however many markers a pass decides. A batch of them can be made at once on a few threads
 * (headcache_prefetch), the table itself is filled on the caller's. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/pass/headcache.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/error.h"

struct slot {
	char *key; /* "<target>\n<reference>", NULL: empty */
	struct headcache_entry e;
};

struct headcache {
	struct slot *slots;
	size_t len, cap; /* cap a power of two, len at most cap / 2 */
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct slot *find(struct slot *slots, size_t cap, const char *key)
{
	size_t i = (size_t)hash(key) & (cap - 1);

	while (slots[i].key && strcmp(slots[i].key, key) != 0)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow(struct headcache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 64;
	struct slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return IG_EFAIL;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].key)
			*find(slots, cap, c->slots[i].key) = c->slots[i];
	free(c->slots);
	c->slots = slots;
	c->cap = cap;
	return 0;
}

int headcache_new(struct headcache **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : IG_EFAIL;
}

void headcache_free(struct headcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++) {
		free(c->slots[i].key);
		free(c->slots[i].e.digest);
		free(c->slots[i].e.error);
	}
	free(c->slots);
	free(c);
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);

	if (s) {
		memcpy(s, a, la);
		s[la] = '\n';
		memcpy(s + la + 1, b, lb + 1);
	}
	return s;
}

struct headcache_entry *headcache_find(struct headcache *c, const char *key, const char *reference)
{
	char *k;
	struct slot *s;

	if (!c->cap || !(k = join(key, reference)))
		return NULL;
	s = find(c->slots, c->cap, k);
	free(k);
	return s->key ? &s->e : NULL;
}

/* Where (key, reference) goes: its slot, empty or not. k is kept by the table when the slot
 * is empty and the caller fills it, else the caller frees it. NULL when out of memory. */
static struct slot *slot_for(struct headcache *c, const char *k)
{
	if ((c->len + 1) * 2 > c->cap && grow(c) < 0)
		return NULL;
	return find(c->slots, c->cap, k);
}

/* Fills empty slot s with one HEAD's answer (rc, digest owned, err's text on failure). 0, or
 * IG_EFAIL when out of memory (k then is the caller's to free). */
static int fill(struct headcache *c, struct slot *s, char *k, int rc, char *digest,
                const struct error *err)
{
	char *msg = NULL;

	if (rc < 0 && !(msg = strdup(err->msg)))
		return IG_EFAIL;
	s->e.rc = rc;
	s->e.digest = digest;
	s->e.error = msg;
	s->key = k;
	c->len++;
	return 0;
}

struct headcache_entry *headcache_get(struct headcache *c, struct registry_client *client,
                                      const struct registry_target *t, const char *key,
                                      const char *reference)
{
	struct error err = ERROR_INIT;
	char *k = join(key, reference), *digest = NULL;
	struct slot *s;
	int rc;

	if (!k || !(s = slot_for(c, k))) {
		free(k);
		return NULL;
	}
	if (s->key) {
		free(k);
		return &s->e;
	}
	rc = registry_head_manifest(&digest, client, t, reference, &err);
	if (fill(c, s, k, rc, digest, &err) < 0) {
		free(digest);
		free(k);
		return NULL;
	}
	return &s->e;
}

/* ---- a batch at once ---- */

struct job {
	const struct headcache_want *w;
	char *k; /* owned until moved into the table; NULL: nothing to do (known or a repeat) */
	int rc;
	char *digest;
	struct error err;
};

struct batch {
	pthread_mutex_t mu;
	struct registry_client *client;
	struct job *jobs;
	size_t n, next;
};

static void *batch_worker(void *arg)
{
	struct batch *b = arg;

	for (;;) {
		struct job *j;

		pthread_mutex_lock(&b->mu);
		while (b->next < b->n && !b->jobs[b->next].k)
			b->next++;
		j = b->next < b->n ? &b->jobs[b->next++] : NULL;
		pthread_mutex_unlock(&b->mu);
		if (!j)
			return NULL;
		j->rc = registry_head_manifest(&j->digest, b->client, j->w->target, j->w->reference,
		                               &j->err);
	}
}

/* The jobs' keys, NULL for what the table holds or an earlier job repeats. Returns how many
 * HEADs are left to make, or -1 when out of memory. */
static long batch_keys(struct job *jobs, struct headcache *c, const struct headcache_want *w,
                       size_t n)
{
	long todo = 0;

	for (size_t i = 0; i < n; i++) {
		jobs[i].w = &w[i];
		jobs[i].err = (struct error)ERROR_INIT;
		if (!(jobs[i].k = join(w[i].key, w[i].reference)))
			return -1;
		for (size_t j = 0; j < i && jobs[i].k; j++)
			if (jobs[j].k && strcmp(jobs[j].k, jobs[i].k) == 0) {
				free(jobs[i].k);
				jobs[i].k = NULL;
			}
		if (jobs[i].k && c->cap && find(c->slots, c->cap, jobs[i].k)->key) {
			free(jobs[i].k);
			jobs[i].k = NULL;
		}
		todo += jobs[i].k != NULL;
	}
	return todo;
}

/* Runs the batch on up to threads threads (this one among them). */
static void batch_run(struct batch *b, unsigned threads)
{
	pthread_t th[HEADCACHE_THREADS_MAX];
	unsigned started = 0;

	while (started + 1 < threads && started < HEADCACHE_THREADS_MAX &&
	       pthread_create(&th[started], NULL, batch_worker, b) == 0)
		started++;
	batch_worker(b);
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

void headcache_prefetch(struct headcache *c, struct registry_client *client,
                        const struct headcache_want *w, size_t n, unsigned threads)
{
	struct batch b = {.mu = PTHREAD_MUTEX_INITIALIZER, .client = client, .n = n};
	long todo;

	if (n < 2 || threads < 2 || !(b.jobs = calloc(n, sizeof(*b.jobs))))
		return;
	if ((todo = batch_keys(b.jobs, c, w, n)) > 1)
		batch_run(&b, (unsigned)todo < threads ? (unsigned)todo : threads);
	for (size_t i = 0; i < n; i++) {
		struct job *j = &b.jobs[i];
		struct slot *s;

		/* todo <= 1: nothing was made, the keys only go; out of memory: the entry is
		 * left out, and headcache_get makes that HEAD again */
		if (todo > 1 && j->k && (s = slot_for(c, j->k)) &&
		    fill(c, s, j->k, j->rc, j->digest, &j->err) == 0)
			continue;
		free(j->k);
		free(j->digest);
	}
	free(b.jobs);
}
