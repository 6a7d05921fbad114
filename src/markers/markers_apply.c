/* Marker rewriting: splices new values into a file's bytes in the marker's own quoting style,
 * then reads the result back to prove each value lands exactly as intended. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/markers/markers.h"

/* Conservative: a plain scalar that reads back as itself in block and flow context alike.
 * Image references, tags and digests never need more. */
static bool is_plain_safe(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || strchr("-?:,[]{}#&*!|>'\"%@` \t", v[0]) || v[n - 1] == ' ' || v[n - 1] == ':')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x20 || c == 0x7f || strchr(",[]{}", c))
			return false;
		if ((c == ':' && v[i + 1] == ' ') || (c == ' ' && v[i + 1] == '#'))
			return false;
	}
	return true;
}

static int encode_single(struct buf *b, const char *v)
{
	int rc = 0;

	for (; *v && rc == 0; v++) {
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			return IG_EINVALID;
		rc = *v == '\'' ? buf_append(b, "''", 2) : buf_append(b, v, 1);
	}
	return rc;
}

static int encode_double(struct buf *b, const char *v)
{
	int rc = 0;

	for (; *v && rc == 0; v++) {
		unsigned char c = (unsigned char)*v;
		if (c == '"' || c == '\\')
			rc = buf_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			rc = buf_printf(b, "\\x%02X", c);
		else
			rc = buf_append(b, v, 1);
	}
	return rc;
}

static int encode(struct buf *b, const struct marker_edit *e)
{
	switch (e->marker->style) {
	case MARKER_PLAIN:
		return is_plain_safe(e->value) ? buf_puts(b, e->value) : IG_EINVALID;
	case MARKER_SINGLE_QUOTED:
		return encode_single(b, e->value);
	case MARKER_DOUBLE_QUOTED:
		return encode_double(b, e->value);
	}
	return IG_EINVALID;
}

static int by_start(const void *a, const void *b)
{
	const struct marker *x = (*(const struct marker_edit *const *)a)->marker;
	const struct marker *y = (*(const struct marker_edit *const *)b)->marker;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The edit's range must still hold a value of the marker's style in this data. */
static bool range_fits(const struct marker *m, const char *data, size_t len)
{
	char q = m->style == MARKER_SINGLE_QUOTED ? '\'' : '"';

	if (m->start > m->end || m->end > len)
		return false;
	if (m->style == MARKER_PLAIN)
		return true;
	return m->start > 0 && m->end < len && data[m->start - 1] == q && data[m->end] == q;
}

static int check_edits(const struct marker_edit **sorted, size_t n, const char *data, size_t len,
                       struct error *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct marker *m = sorted[i]->marker;
		if (strcmp(m->file, sorted[0]->marker->file) != 0)
			return error_set(err, IG_EINVALID, "'%s': edits span files ('%s')",
			                 sorted[0]->marker->file, m->file);
		if (!range_fits(m, data, len))
			return error_set(err, IG_EINVALID,
			                 "'%s:%zu': marker range does not match the file (changed "
			                 "since it was scanned?)",
			                 m->file, m->line);
		if (i > 0 && m->start < sorted[i - 1]->marker->end)
			return error_set(err, IG_EINVALID, "'%s:%zu': overlapping marker edits",
			                 m->file, m->line);
	}
	return 0;
}

/* Reads the output back: every edited value must be found at its new place, unchanged. */
static int verify(const char *data, size_t len, const struct marker_edit **sorted,
                  const size_t *starts, size_t n, struct error *err)
{
	struct marker_set back = MARKER_SET_INIT;
	int rc = markers_scan_buffer(&back, sorted[0]->marker->file, data, len, err);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct marker *m = sorted[i]->marker;
		size_t j;
		for (j = 0; j < back.len; j++)
			if (back.items[j].start == starts[i] && back.items[j].part == m->part &&
			    strcmp(back.items[j].value, sorted[i]->value) == 0 &&
			    strcmp(back.items[j].policy, m->policy) == 0)
				break;
		if (j == back.len)
			rc = error_set(err, IG_EINVALID,
			               "'%s:%zu': value '%.200s' would not read back as written",
			               m->file, m->line, sorted[i]->value);
	}
	markers_release(&back);
	return rc;
}

static int splice(struct buf *out, size_t *starts, const char *data, size_t len,
                  const struct marker_edit **sorted, size_t n, struct error *err)
{
	size_t at = 0;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct marker *m = sorted[i]->marker;
		if ((rc = buf_append(out, data + at, m->start - at)) < 0)
			break;
		starts[i] = out->len;
		rc = encode(out, sorted[i]);
		if (rc == IG_EINVALID)
			return error_set(
			    err, rc,
			    "'%s:%zu': value '%.200s' cannot be written as a %s scalar "
			    "(it would need quoting or escaping)",
			    m->file, m->line, sorted[i]->value,
			    m->style == MARKER_PLAIN ? "plain" : "single-quoted");
		at = m->end;
	}
	if (rc == 0)
		rc = buf_append(out, data + at, len - at);
	if (rc < 0)
		return error_set(err, rc, "'%s': rewriting failed: %s", sorted[0]->marker->file,
		                 rc == IG_ETOOBIG ? "file too large" : "out of memory");
	return 0;
}

int markers_apply(struct buf *out, const char *data, size_t len, const struct marker_edit *edits,
                  size_t n, struct error *err)
{
	const struct marker_edit **sorted = NULL;
	size_t *starts = NULL;
	int rc = 0;

	buf_reset(out);
	if (n == 0)
		return buf_append(out, data, len) < 0 ? error_oom(err) : 0;
	sorted = calloc(n, sizeof(*sorted));
	starts = calloc(n, sizeof(*starts));
	if (!sorted || !starts) {
		rc = error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = &edits[i];
	qsort(sorted, n, sizeof(*sorted), by_start);
	if ((rc = check_edits(sorted, n, data, len, err)) < 0)
		goto done;
	if ((rc = splice(out, starts, data, len, sorted, n, err)) < 0)
		goto done;
	rc = verify(out->data, out->len, sorted, starts, n, err);
done:
	free(sorted);
	free(starts);
	return rc;
}
