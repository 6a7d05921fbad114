/* Several strings copied into one allocation: a record is one malloc and one free, not one
 * each (markers from the index, report items, metric series). */
#ifndef IMAGEGUARD_STRPACK_H
#define IMAGEGUARD_STRPACK_H

#include <stddef.h>

/* A NULL string is copied as "" instead of staying NULL. */
#define STRPACK_NULL_EMPTY 1u

/* The bytes strpack_copy needs for v[0..n): v[k] is len[k] bytes long, or NUL-terminated when
 * len is NULL, plus its terminator; a NULL v[k] takes nothing (one byte with
 * STRPACK_NULL_EMPTY). SIZE_MAX when the sum overflows. */
size_t strpack_size(const char *const *v, const size_t *len, size_t n, unsigned flags);

/* Copies v[0..n) to at, each NUL-terminated, pointing out[k] at its copy (NULL for a NULL v[k]
 * without STRPACK_NULL_EMPTY). at holds strpack_size bytes. Returns the end of the copies. */
char *strpack_copy(char *at, const char *const *v, const size_t *len, size_t n, unsigned flags,
                   char **out);

#endif
