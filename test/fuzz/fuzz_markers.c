/* Marker scanning and the byte-exact rewrite. Property: scan, give every marker a new value,
 * rewrite; when the rewrite is accepted, a second scan finds the same markers holding exactly
 * the new values, and every byte outside the value ranges is unchanged. */
#include "fuzz.h"

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/markers/markers.h"

/* Values a policy could produce, per part, then values that need quoting or escaping. */
static const char *safe_value(enum marker_part part)
{
	switch (part) {
	case MARKER_IMAGE:
		return "registry.example:5000/org/app:1.2.3";
	case MARKER_NAME:
		return "registry.example/org/app";
	case MARKER_TAG:
		return "v1.2.3-rc.1";
	case MARKER_DIGEST:
		return "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	}
	return "x";
}

static const char *const tricky[] = {
    "",        "a b",       "it's",      "say \"hi\"",  "back\\slash",  "colon: space",
    "hash #x", "tab\there", "new\nline", "caf\xc3\xa9", "-dash",        "@at",
    "[x]",     "{y}",       "trail ",    " lead",       "x:",           "%p",
    "'",       "\"",        "\\",        "a,b",         "!tag",         "*alias",
    "&anchor", "null",      "~",         "'q'",         "\xe2\x80\xa8",
};

static int by_start(const void *a, const void *b)
{
	const struct marker *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static bool segment_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static void check_rewrite(const struct marker_set *old, const char *data, size_t len,
                          const struct buf *out, const char *const *values)
{
	struct marker_set back = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	size_t prev_old = 0, prev_new = 0;

	FUZZ_CHECK(markers_scan_buffer(&back, "fuzz.yaml", out->data, out->len, &err) == 0);
	FUZZ_CHECK(back.len == old->len);
	qsort(back.items, back.len, sizeof(*back.items), by_start);
	for (size_t i = 0; i < old->len; i++) {
		const struct marker *a = &old->items[i], *b = &back.items[i];

		FUZZ_CHECK(strcmp(a->policy, b->policy) == 0);
		FUZZ_CHECK(a->part == b->part && a->style == b->style);
		FUZZ_CHECK(strcmp(b->value, values[i]) == 0);
		FUZZ_CHECK(a->start >= prev_old && b->start >= prev_new);
		FUZZ_CHECK(segment_equal(data + prev_old, a->start - prev_old, out->data + prev_new,
		                         b->start - prev_new));
		prev_old = a->end;
		prev_new = b->end;
	}
	FUZZ_CHECK(segment_equal(data + prev_old, len - prev_old, out->data + prev_new,
	                         out->len - prev_new));
	markers_release(&back);
}

static void rewrite(const struct marker_set *set, const char *data, size_t len, size_t round)
{
	struct marker_edit *edits = calloc(set->len, sizeof(*edits));
	const char **values = calloc(set->len, sizeof(*values));
	struct buf out = BUF_INIT_MAX(2 * MARKERS_MAX_FILE_SIZE);
	struct error err = ERROR_INIT;
	int rc;

	FUZZ_CHECK(edits && values);
	for (size_t i = 0; i < set->len; i++) {
		values[i] = round == 0 ? safe_value(set->items[i].part)
		                       : tricky[(round + i) % (sizeof(tricky) / sizeof(tricky[0]))];
		edits[i].marker = &set->items[i];
		edits[i].value = values[i];
	}
	rc = markers_apply(&out, data, len, edits, set->len, &err);
	FUZZ_CHECK(rc == 0 ||
	           ((rc == IG_EINVALID || rc == IG_ETOOBIG || rc == IG_EFAIL) && err.msg[0]));
	if (rc == 0)
		check_rewrite(set, data, len, &out, values);
	buf_release(&out);
	free(edits);
	free(values);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct marker_set set = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	const char *d = (const char *)data;

	FUZZ_CHECK(markers_scan_buffer(&set, "fuzz.yaml", d, size, &err) == 0);
	for (size_t i = 0; i < set.len; i++) {
		const struct marker *m = &set.items[i];

		FUZZ_CHECK(m->start <= m->end && m->end <= size && m->line >= 1);
		FUZZ_CHECK(m->value && m->policy && strchr(m->policy, '/'));
	}
	for (size_t i = 0; i < set.problems_len; i++)
		FUZZ_CHECK(set.problems[i].message && !strchr(set.problems[i].message, '\n'));
	if (set.len) {
		qsort(set.items, set.len, sizeof(*set.items), by_start);
		rewrite(&set, d, size, 0);
		rewrite(&set, d, size, 1 + size % 29);
	}
	markers_release(&set);
	return 0;
}
