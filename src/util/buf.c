/* Capped growable buffers: outside input never grows memory without a limit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static int grow(struct buf *b, size_t need)
{
	size_t cap;
	char *p;

	if (b->max && need > b->max)
		return IG_ETOOBIG;
	if (need + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need + 1)
		cap *= 2;
	if (b->max && cap > b->max + 1)
		cap = b->max + 1;
	p = realloc(b->data, cap);
	if (!p)
		return IG_EFAIL;
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
	int error;

	if (n > (size_t)-1 / 2 - b->len)
		return IG_ETOOBIG;
	if ((error = grow(b, b->len + n)) < 0)
		return error;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, error;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return IG_EFAIL;
	if ((error = grow(b, b->len + (size_t)n)) < 0)
		return error;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int error;

	va_start(ap, fmt);
	error = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return error;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf_release(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *buf_detach(struct buf *b)
{
	char *s = b->data;

	if (!s)
		s = calloc(1, 1);
	b->data = NULL;
	b->len = b->cap = 0;
	return s;
}

int buf_read_file(struct buf *b, const char *path)
{
	char chunk[65536];
	FILE *f;
	size_t n;
	int error = 0;

	buf_reset(b);
	if (!(f = fopen(path, "rb")))
		return errno == ENOENT ? IG_ENOTFOUND : IG_EFAIL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if ((error = buf_append(b, chunk, n)) < 0)
			break;
	if (!error && ferror(f))
		error = IG_EFAIL;
	if (!error && !b->data)
		error = buf_append(b, "", 0);
	fclose(f);
	return error;
}
