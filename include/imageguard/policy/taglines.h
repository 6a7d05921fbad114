/* Tag lists read as text, one tag per line (the stdin of `imageguard eval`): CR and blank lines
 * ignored, duplicates folded, unreadable lines (too long, NUL bytes, invalid UTF-8) skipped
 * and counted. Built for millions of lines: one buffer, no per-line allocation; or streamed
 * in bounded memory when duplicates need not be folded. */
#ifndef IMAGEGUARD_TAGLINES_H
#define IMAGEGUARD_TAGLINES_H

#include <stddef.h>

struct error;

#define TAGLINES_LINE_MAX 4096            /* longer lines are skipped */
#define TAGLINES_INPUT_MAX (1024UL << 20) /* default cap on the whole input: 1 GiB */

struct taglines {
	char *data; /* owned: the input, each kept line NUL-terminated in place */
	size_t len, cap;
	const char **tags; /* owned array; unique tags in first-seen order, pointing into data */
	size_t n;
	size_t unreadable; /* lines skipped as unreadable */
	size_t first_bad;  /* 1-based line number of the first unreadable line, 0 when none */
	const char *first_bad_why; /* static text: why that line was skipped */
};

#define TAGLINES_INIT                                                                              \
	{                                                                                          \
		NULL, 0, 0, NULL, 0, 0, 0, NULL                                                    \
	}

/* Reads fd to its end (at most max bytes, IG_ETOOBIG beyond) and splits it into tags.
 * Returns 0, IG_ETOOBIG or IG_EFAIL (read error, out of memory) with err set. */
int taglines_read_fd(struct taglines *t, int fd, size_t max, struct error *err);

/* Splits len bytes at data into tags; takes ownership of data (malloc'ed, len+1 bytes at
 * least). Returns 0 or IG_EFAIL (out of memory). */
int taglines_parse(struct taglines *t, char *data, size_t len, struct error *err);

/* What a stream of tag lines held besides its tags. */
struct taglines_stats {
	size_t lines;      /* lines read, blank and unreadable included */
	size_t unreadable; /* lines skipped as unreadable */
	size_t first_bad;  /* 1-based line number of the first unreadable line, 0 when none */
	const char *first_bad_why; /* static text: why that line was skipped */
};

#define TAGLINES_BATCH 4096 /* tags handed over at a time by taglines_stream_fd */

/* Receives n tags (NUL-terminated, valid until it returns) in input order; a negative return
 * (with err set) stops the stream with that value. */
typedef int (*taglines_batch_fn)(void *ctx, const char *const *tags, size_t n, struct error *err);

/* Reads fd to its end (at most max bytes, IG_ETOOBIG beyond) in blocks of `block` bytes (0: 1
 * MiB) and hands its tags to fn in batches of at most TAGLINES_BATCH, as taglines_parse splits
 * them but without folding duplicates: memory stays at one block however long the list.
 * Returns 0, fn's error, IG_ETOOBIG or IG_EFAIL (read error, out of memory) with err set. */
int taglines_stream_fd(struct taglines_stats *st, int fd, size_t max, size_t block,
                       taglines_batch_fn fn, void *ctx, struct error *err);

/* Frees everything; t may be reused after TAGLINES_INIT. */
void taglines_release(struct taglines *t);

#endif
