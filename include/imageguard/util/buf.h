/* A growable byte buffer with a hard cap (curl's dynbuf): every buffer that grows from outside
 * input has one, and exceeding it is IG_ETOOBIG, never a crash. Always NUL-terminated. */
#ifndef IMAGEGUARD_BUF_H
#define IMAGEGUARD_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data; /* NUL-terminated when non-NULL; owned */
	size_t len;
	size_t cap;
	size_t max; /* 0: no cap (only for data we generate ourselves) */
};

#define BUF_INIT                                                                                   \
	{                                                                                          \
		NULL, 0, 0, 0                                                                      \
	}
#define BUF_INIT_MAX(m)                                                                            \
	{                                                                                          \
		NULL, 0, 0, (m)                                                                    \
	}

/* Appends n bytes; returns 0, IG_ETOOBIG past the cap, IG_EFAIL when out of memory. */
int buf_append(struct buf *b, const void *data, size_t n);
/* Appends a NUL-terminated string. */
int buf_puts(struct buf *b, const char *s);
/* Appends formatted text. */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Empties the buffer, keeping its memory and cap. */
void buf_reset(struct buf *b);
/* Frees the memory; the buffer may be reused (the cap is kept). */
void buf_release(struct buf *b);
/* Hands the string to the caller (free() it; never NULL on success: "" for empty) and resets. */
char *buf_detach(struct buf *b);
/* Reads a whole file into b (replacing its content), respecting b->max.
 * Returns 0, IG_ENOTFOUND, IG_ETOOBIG or IG_EFAIL (errno kept). */
int buf_read_file(struct buf *b, const char *path);

#endif
