/* A growable list of owned NUL-terminated strings. */
#ifndef IMAGEGUARD_STRVEC_H
#define IMAGEGUARD_STRVEC_H

#include <stdbool.h>
#include <stddef.h>

struct strvec {
	char **items; /* owned; items[len] is NULL when len > 0 */
	size_t len;
	size_t cap;
};

#define STRVEC_INIT                                                                                \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

/* Appends a copy of s; returns 0 or IG_EFAIL (out of memory). */
int strvec_push(struct strvec *v, const char *s);
/* Appends a copy of the n bytes at s. */
int strvec_pushn(struct strvec *v, const char *s, size_t n);
/* Appends s itself, taking ownership (freed on failure). */
int strvec_push_owned(struct strvec *v, char *s);
/* Sorts byte-wise (strcmp order). */
void strvec_sort(struct strvec *v);
/* Sorts byte-wise and folds duplicates. */
void strvec_sort_unique(struct strvec *v);
/* True when s is in v (linear scan). */
bool strvec_has(const struct strvec *v, const char *s);
/* Frees every string and the array; v may be reused. */
void strvec_release(struct strvec *v);

#endif
