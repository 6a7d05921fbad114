/* Growable arrays: the one doubling rule for every array of structs that grows from outside
 * input or from a pass, so none of them can overflow its size computation. */
#ifndef IMAGEGUARD_VEC_H
#define IMAGEGUARD_VEC_H

#include <stddef.h>

/* Room for element number len (0-based) in items, an array of *cap elements of size bytes:
 * returns items when len < *cap, else a copy with the capacity doubled (starting at min_cap),
 * updating *cap. NULL when out of memory or when the byte size would overflow; items is then
 * unchanged and still the caller's. Typical use:
 *     if (!(p = vec_reserve(a->items, &a->cap, a->len, sizeof(*a->items), 16)))
 *             return IG_EFAIL;
 *     a->items = p; */
void *vec_reserve(void *items, size_t *cap, size_t len, size_t size, size_t min_cap);

#endif
