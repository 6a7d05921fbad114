/* Newline-separated tag lists: split in place, validate each line, fold duplicates with an
 * open-addressing hash set of line indexes (no per-line allocation). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/util/error.h"
#include "imageguard/policy/taglines.h"

#define READ_BLOCK (1 << 20)

/* NULL when the line is a valid UTF-8 tag candidate, else why it is not. */
static const char *line_problem(const unsigned char *s, size_t len)
{
	size_t i = 0;

	if (len > TAGLINES_LINE_MAX)
		return "longer than 4096 bytes";
	while (i < len) {
		unsigned char c = s[i];
		size_t w;
		uint32_t cp;

		if (c == 0)
			return "NUL byte";
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			w = 2, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			w = 3, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			w = 4, cp = c & 0x07;
		else
			return "invalid UTF-8";
		if (i + w > len)
			return "invalid UTF-8";
		for (size_t k = 1; k < w; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return "invalid UTF-8";
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		/* overlong forms, surrogates and code points past U+10FFFF */
		if ((w == 3 && cp < 0x800) || (w == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return "invalid UTF-8";
		i += w;
	}
	return NULL;
}

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	/* FNV's low bits mix poorly and the table is indexed by them: finish with murmur3's fmix */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

/* A set of the tags seen so far, sized once for every line (no rehash). A slot holds 8 bits of
 * the hash above a 24-bit index + 1 (0 is empty), so a probe touches the tag bytes only when the
 * hash bits agree: one cache miss per line instead of several. */
#define SLOT_INDEX_BITS 24
#define SLOT_INDEX_MASK ((1u << SLOT_INDEX_BITS) - 1)

struct set {
	uint32_t *slots;
	size_t mask;
};

static bool set_init(struct set *s, size_t lines)
{
	size_t cap = 1024;

	while (cap < lines * 2)
		cap *= 2;
	s->slots = calloc(cap, sizeof(*s->slots));
	s->mask = cap - 1;
	return s->slots != NULL;
}

/* Adds line (NUL-terminated, len bytes) unless present. False when out of memory. */
static bool add_unique(struct taglines *t, struct set *s, size_t *tcap, const char *line,
                       size_t len)
{
	uint64_t hash = hash_bytes(line, len);
	uint32_t tagbits = (uint32_t)(hash >> 56) << SLOT_INDEX_BITS;
	size_t h = hash & s->mask;

	for (; s->slots[h]; h = (h + 1) & s->mask) {
		uint32_t v = s->slots[h];

		if ((v & ~SLOT_INDEX_MASK) == tagbits &&
		    memcmp(t->tags[(v & SLOT_INDEX_MASK) - 1], line, len + 1) == 0)
			return true;
	}
	if (t->n == *tcap) {
		size_t cap = *tcap ? *tcap * 2 : 1024;
		const char **p = realloc(t->tags, cap * sizeof(*p));

		if (!p)
			return false;
		t->tags = p;
		*tcap = cap;
	}
	t->tags[t->n++] = line;
	s->slots[h] = tagbits | (uint32_t)t->n;
	return true;
}

static size_t count_lines(const char *data, size_t len)
{
	size_t n = 1;

	for (const char *p = data; (p = memchr(p, '\n', len - (size_t)(p - data))) != NULL; p++)
		n++;
	return n;
}

static bool is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

/* Ends the line at data (*len bytes, less a final CR after) with a NUL and says whether it is a
 * tag: false for a blank line, and for an unreadable one, which is counted (the first
 * remembered). */
static bool keep_line(char *data, size_t *len, size_t lineno, size_t *unreadable, size_t *first_bad,
                      const char **first_bad_why)
{
	const char *why;
	size_t n = *len;

	if (n > 0 && data[n - 1] == '\r')
		n--;
	data[n] = '\0';
	*len = n;
	if (n == 0 || is_blank(data, n))
		return false;
	if ((why = line_problem((unsigned char *)data, n)) != NULL) {
		if ((*unreadable)++ == 0) {
			*first_bad = lineno;
			*first_bad_why = why;
		}
		return false;
	}
	return true;
}

int taglines_parse(struct taglines *t, char *data, size_t len, struct error *err)
{
	struct set set = {NULL, 0};
	size_t tcap = 0, lineno = 0, pos = 0;
	int rc = 0;

	t->data = data;
	t->len = len;
	data[len] = '\0';
	if (!set_init(&set, count_lines(data, len)))
		return error_oom(err);
	while (pos < len) {
		char *nl = memchr(data + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - data) : len, n = end - pos;

		lineno++;
		if (!keep_line(data + pos, &n, lineno, &t->unreadable, &t->first_bad,
		               &t->first_bad_why)) {
			/* blank or unreadable */
		} else if (t->n >= SLOT_INDEX_MASK) {
			rc = error_set(err, IG_ETOOBIG, "tag list: more than %u distinct tags",
			               SLOT_INDEX_MASK);
			break;
		} else if (!add_unique(t, &set, &tcap, data + pos, n)) {
			rc = error_oom(err);
			break;
		}
		pos = end + 1;
	}
	free(set.slots);
	return rc;
}

int taglines_read_fd(struct taglines *t, int fd, size_t max, struct error *err)
{
	char *data = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t r;

		if (cap - len < READ_BLOCK + 1) {
			size_t ncap = cap ? cap * 2 : READ_BLOCK * 2;
			char *p;

			if (ncap > max + 1 + READ_BLOCK)
				ncap = max + 1 + READ_BLOCK;
			if (!(p = realloc(data, ncap))) {
				free(data);
				return error_oom(err);
			}
			data = p;
			cap = ncap;
		}
		r = read(fd, data + len, cap - len - 1 < READ_BLOCK ? cap - len - 1 : READ_BLOCK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(data);
			return error_set(err, IG_EFAIL, "tag list: read: %s", strerror(errno));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max) {
			free(data);
			return error_set(err, IG_ETOOBIG, "tag list: input exceeds %zu bytes", max);
		}
	}
	if (!data && !(data = malloc(1)))
		return error_oom(err);
	return taglines_parse(t, data, len, err);
}

/* The stream's buffer: a block of input after the carried start of an unfinished line (at most
 * TAGLINES_LINE_MAX + 1 bytes with its CR; a longer one is dropped as it arrives). */
struct stream {
	char *buf;
	size_t len, block;
	const char **batch;
	size_t n;
	bool overlong; /* inside a line already counted as too long: drop up to its newline */
};

/* Hands the batch to fn and empties it. */
static int flush_batch(struct stream *s, taglines_batch_fn fn, void *ctx, struct error *err)
{
	int rc = s->n ? fn(ctx, s->batch, s->n, err) : 0;

	s->n = 0;
	return rc;
}

/* Takes the complete lines at the start of s->buf (all of it at the end of input) and keeps
 * the unfinished rest at the front. */
static int stream_lines(struct stream *s, struct taglines_stats *st, bool eof, taglines_batch_fn fn,
                        void *ctx, struct error *err)
{
	size_t pos = 0;
	int rc;

	while (pos < s->len) {
		char *nl = memchr(s->buf + pos, '\n', s->len - pos);
		size_t end = nl ? (size_t)(nl - s->buf) : s->len, n = end - pos;

		if (!nl && !eof)
			break;
		if (s->overlong) {
			s->overlong = false; /* its end: counted when it passed the limit */
		} else {
			st->lines++;
			if (keep_line(s->buf + pos, &n, st->lines, &st->unreadable, &st->first_bad,
			              &st->first_bad_why)) {
				s->batch[s->n++] = s->buf + pos;
				if (s->n == TAGLINES_BATCH &&
				    (rc = flush_batch(s, fn, ctx, err)) < 0)
					return rc;
			}
		}
		pos = end + 1;
	}
	if ((rc = flush_batch(s, fn, ctx, err)) < 0)
		return rc;
	if (pos >= s->len) {
		s->len = 0;
		return 0;
	}
	/* an unfinished line: carried while it may still be a tag (its CR not yet seen) */
	s->len -= pos;
	if (s->overlong || s->len > TAGLINES_LINE_MAX + 1) {
		if (!s->overlong) {
			st->lines++;
			if (st->unreadable++ == 0) {
				st->first_bad = st->lines;
				st->first_bad_why = "longer than 4096 bytes";
			}
		}
		s->overlong = true;
		s->len = 0;
		return 0;
	}
	memmove(s->buf, s->buf + pos, s->len);
	return 0;
}

int taglines_stream_fd(struct taglines_stats *st, int fd, size_t max, size_t block,
                       taglines_batch_fn fn, void *ctx, struct error *err)
{
	struct stream s = {NULL, 0, block ? block : READ_BLOCK, NULL, 0, false};
	size_t total = 0;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	s.buf = malloc(TAGLINES_LINE_MAX + 2 + s.block + 1);
	s.batch = malloc(TAGLINES_BATCH * sizeof(*s.batch));
	if (!s.buf || !s.batch) {
		rc = error_oom(err);
		goto done;
	}
	for (;;) {
		ssize_t r = read(fd, s.buf + s.len, s.block);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = error_set(err, IG_EFAIL, "tag list: read: %s", strerror(errno));
			break;
		}
		if ((total += (size_t)r) > max) {
			rc = error_set(err, IG_ETOOBIG, "tag list: input exceeds %zu bytes", max);
			break;
		}
		s.len += (size_t)r;
		if ((rc = stream_lines(&s, st, r == 0, fn, ctx, err)) < 0 || r == 0)
			break;
	}
done:
	free(s.buf);
	free(s.batch);
	return rc;
}

void taglines_release(struct taglines *t)
{
	free(t->data);
	free(t->tags);
	memset(t, 0, sizeof(*t));
}
