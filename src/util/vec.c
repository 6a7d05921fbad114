/* The doubling rule of growable arrays, with its overflow checks in one place. */
#include <stdint.h>
#include <stdlib.h>

#include "imageguard/util/vec.h"

void *vec_reserve(void *items, size_t *cap, size_t len, size_t size, size_t min_cap)
{
	size_t n = *cap ? *cap : (min_cap ? min_cap : 1);
	void *p;

	if (len < *cap)
		return items;
	while (n <= len) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (size && n > SIZE_MAX / size)
		return NULL;
	if (!(p = realloc(items, n * size)))
		return NULL;
	*cap = n;
	return p;
}
