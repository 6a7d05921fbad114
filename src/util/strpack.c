/* Several strings in one block. */
#include <stdint.h>
#include <string.h>

#include "imageguard/util/strpack.h"

static const char *source(const char *const *v, size_t k, unsigned flags)
{
	return v[k] || !(flags & STRPACK_NULL_EMPTY) ? v[k] : "";
}

static size_t length(const char *const *v, const size_t *len, size_t k, const char *s)
{
	return len && v[k] ? len[k] : strlen(s);
}

size_t strpack_size(const char *const *v, const size_t *len, size_t n, unsigned flags)
{
	size_t bytes = 0;

	for (size_t k = 0; k < n; k++) {
		const char *s = source(v, k, flags);
		size_t l = s ? length(v, len, k, s) : 0;

		if (s && l >= SIZE_MAX - bytes)
			return SIZE_MAX;
		bytes += s ? l + 1 : 0;
	}
	return bytes;
}

char *strpack_copy(char *at, const char *const *v, const size_t *len, size_t n, unsigned flags,
                   char **out)
{
	for (size_t k = 0; k < n; k++) {
		const char *s = source(v, k, flags);
		size_t l;

		if (!s) {
			out[k] = NULL;
			continue;
		}
		l = length(v, len, k, s);
		out[k] = memcpy(at, s, l);
		at[l] = '\0';
		at += l + 1;
	}
	return at;
}
