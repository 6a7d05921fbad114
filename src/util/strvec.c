/* Owned string lists: tag lists, file lists, warnings. */
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"
#include "imageguard/util/vec.h"

int strvec_push_owned(struct strvec *v, char *s)
{
	char **p;

	if (!s)
		return IG_EFAIL;
	/* room for s and the NULL after it */
	if (!(p = vec_reserve(v->items, &v->cap, v->len + 1, sizeof(*p), 16))) {
		free(s);
		return IG_EFAIL;
	}
	v->items = p;
	v->items[v->len++] = s;
	v->items[v->len] = NULL;
	return 0;
}

int strvec_pushn(struct strvec *v, const char *s, size_t n)
{
	char *copy = malloc(n + 1);

	if (!copy)
		return IG_EFAIL;
	memcpy(copy, s, n);
	copy[n] = '\0';
	return strvec_push_owned(v, copy);
}

int strvec_push(struct strvec *v, const char *s)
{
	return strvec_pushn(v, s, strlen(s));
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strvec_sort(struct strvec *v)
{
	if (v->len > 1)
		qsort(v->items, v->len, sizeof(*v->items), cmp);
}

void strvec_sort_unique(struct strvec *v)
{
	size_t i, out = 0;

	strvec_sort(v);
	for (i = 0; i < v->len; i++) {
		if (out && strcmp(v->items[out - 1], v->items[i]) == 0) {
			free(v->items[i]);
			continue;
		}
		v->items[out++] = v->items[i];
	}
	v->len = out;
	if (v->items)
		v->items[out] = NULL;
}

bool strvec_has(const struct strvec *v, const char *s)
{
	for (size_t i = 0; i < v->len; i++)
		if (strcmp(v->items[i], s) == 0)
			return true;
	return false;
}

void strvec_release(struct strvec *v)
{
	for (size_t i = 0; i < v->len; i++)
		free(v->items[i]);
	free(v->items);
	v->items = NULL;
	v->len = v->cap = 0;
}
