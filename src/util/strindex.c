/* Open addressing with linear probing over FNV-1a, grown at half full. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/util/strindex.h"

#define FNV_OFFSET 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static uint64_t hash_more(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * FNV_PRIME;
	return h;
}

static uint64_t hash3(const char *a, const char *sep, const char *b)
{
	return hash_more(hash_more(hash_more(FNV_OFFSET, a), sep), b);
}

/* Whether k equals a + sep + b. */
static bool equal3(const char *k, const char *a, const char *sep, const char *b)
{
	size_t la = strlen(a), ls = sep ? strlen(sep) : 0;

	if (strncmp(k, a, la) != 0)
		return false;
	k += la;
	if (sep) {
		if (strncmp(k, sep, ls) != 0)
			return false;
		k += ls;
		return strcmp(k, b) == 0;
	}
	return *k == '\0';
}

/* The slot holding a + sep + b, or the empty slot where it would go. */
static size_t *probe(size_t *slots, size_t cap, const char *a, const char *sep, const char *b,
                     strindex_key_fn key, const void *ctx)
{
	size_t i = (size_t)hash3(a, sep, b) & (cap - 1);

	while (slots[i] && !equal3(key(ctx, slots[i] - 1), a, sep, b))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow(struct strindex *ix, strindex_key_fn key, const void *ctx)
{
	size_t cap = ix->cap ? ix->cap * 2 : 64;
	size_t *slots;

	if (cap > SIZE_MAX / sizeof(*slots) || !(slots = calloc(cap, sizeof(*slots))))
		return IG_EFAIL;
	for (size_t i = 0; i < ix->cap; i++)
		if (ix->slots[i])
			*probe(slots, cap, key(ctx, ix->slots[i] - 1), NULL, NULL, key, ctx) =
			    ix->slots[i];
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

int strindex_add(struct strindex *ix, size_t i, strindex_key_fn key, const void *ctx, size_t *dup)
{
	size_t *slot;

	*dup = STRINDEX_NONE;
	if ((ix->len + 1) * 2 > ix->cap && grow(ix, key, ctx) < 0)
		return IG_EFAIL;
	slot = probe(ix->slots, ix->cap, key(ctx, i), NULL, NULL, key, ctx);
	if (*slot) {
		*dup = *slot - 1;
		return 0;
	}
	*slot = i + 1;
	ix->len++;
	return 0;
}

size_t strindex_find(const struct strindex *ix, const char *a, const char *sep, const char *b,
                     strindex_key_fn key, const void *ctx)
{
	size_t *slot;

	if (!ix->cap)
		return STRINDEX_NONE;
	slot = probe(ix->slots, ix->cap, a, sep, b, key, ctx);
	return *slot ? *slot - 1 : STRINDEX_NONE;
}

void strindex_release(struct strindex *ix)
{
	free(ix->slots);
	*ix = (struct strindex)STRINDEX_INIT;
}
