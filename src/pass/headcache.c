/* The pass's manifest HEADs in a hash table keyed by (target, reference): O(1) per lookup
 * however many markers a pass decides. */
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

struct headcache_entry *headcache_get(struct headcache *c, struct registry_client *client,
                                      const struct registry_target *t, const char *key,
                                      const char *reference)
{
	struct error err = ERROR_INIT;
	char *k = join(key, reference);
	struct slot *s;

	if (!k)
		return NULL;
	if ((c->len + 1) * 2 > c->cap && grow(c) < 0) {
		free(k);
		return NULL;
	}
	s = find(c->slots, c->cap, k);
	if (s->key) {
		free(k);
		return &s->e;
	}
	s->e.rc = registry_head_manifest(&s->e.digest, client, t, reference, &err);
	if (s->e.rc < 0 && !(s->e.error = strdup(err.msg))) {
		free(k);
		return NULL;
	}
	s->key = k;
	c->len++;
	return &s->e;
}
