/* A hash index from string keys to positions in an array the caller owns: O(1) lookups by
 * name where a linear search would make a pass quadratic in its objects. The index stores only
 * positions; keys are read back through the caller's function, so nothing is copied. */
#ifndef IMAGEGUARD_STRINDEX_H
#define IMAGEGUARD_STRINDEX_H

#include <stddef.h>
#include <stdint.h>

/* The key of item i of ctx's array (borrowed, NUL-terminated, never NULL). */
typedef const char *(*strindex_key_fn)(const void *ctx, size_t i);

struct strindex {
	size_t *slots; /* position + 1; 0: empty */
	size_t cap;    /* a power of two, or 0 */
	size_t len;
};

#define STRINDEX_INIT                                                                              \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}
#define STRINDEX_NONE SIZE_MAX

/* Indexes item i under key(ctx, i). When an item with an equal key is indexed already, nothing
 * is added and *dup gets its position; else *dup is STRINDEX_NONE. Returns 0 or IG_EFAIL (out
 * of memory). */
int strindex_add(struct strindex *ix, size_t i, strindex_key_fn key, const void *ctx, size_t *dup);

/* The position indexed under the key a + sep + b (sep NULL: a alone), or STRINDEX_NONE. So
 * that a lookup by (namespace, name) needs no concatenated copy. */
size_t strindex_find(const struct strindex *ix, const char *a, const char *sep, const char *b,
                     strindex_key_fn key, const void *ctx);

void strindex_release(struct strindex *ix);

#endif
