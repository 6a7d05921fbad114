/* Unit tests for markers: scanning tables (lines, byte ranges, values, problems), bad input,
 * value helpers, splicing, tree walking, and the golden files (original/ -> expected/). */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/markers/markers.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"

/* ---- scanning: one marker per input, its line, range and value ---- */

static const struct {
	const char *in;
	size_t line;
	const char *policy;
	enum marker_part part;
	enum marker_style style;
	const char *range; /* the bytes [start, end) must equal this */
	const char *value;
} scans[] = {
    {"image: a/b:1 # {\"$imagepolicy\": \"ns:p\"}\n", 1, "ns/p", MARKER_IMAGE, MARKER_PLAIN,
     "a/b:1", "a/b:1"},
    {"x: 1\nimage: 'a/b:1' #{\"$imagepolicy\":\"ns:p:tag\"}", 2, "ns/p", MARKER_TAG,
     MARKER_SINGLE_QUOTED, "a/b:1", "a/b:1"},
    {"- \"a\\tb\"   # {\"$imagepolicy\" : \"ns:p:name\"}  \n", 1, "ns/p", MARKER_NAME,
     MARKER_DOUBLE_QUOTED, "a\\tb", "a\tb"},
    {"a: b\r\nc:\r\n  d: 'it''s' # {\"$imagepolicy\": \"ns:p:digest\"}\r\n", 3, "ns/p",
     MARKER_DIGEST, MARKER_SINGLE_QUOTED, "it''s", "it's"},
    {"\xef\xbb\xbf"
     "k\xc3\xa9: \xc3\xa9t\xc3\xa9 # {\"$imagepolicy\": \"ns:p\"}\n",
     1, "ns/p", MARKER_IMAGE, MARKER_PLAIN, "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9"},
    {"---\n...\n---\n# c\nk: &a !!str v1 ## {\"$imagepolicy\": \"ns:p:tag\"}\n", 5, "ns/p",
     MARKER_TAG, MARKER_PLAIN, "v1", "v1"},
    {"k: [x, y, # {\"$imagepolicy\": \"ns:p:tag\"}\n  z]\n", 1, "ns/p", MARKER_TAG, MARKER_PLAIN,
     "y", "y"},
    {"k: \"a # b\" # {\"$imagepolicy\": \"ns:p:tag\"}\n", 1, "ns/p", MARKER_TAG,
     MARKER_DOUBLE_QUOTED, "a # b", "a # b"},
    {"k: a\n  b # {\"$imagepolicy\": \"ns:p:tag\"}\n", 1, "ns/p", MARKER_TAG, MARKER_PLAIN,
     "a\n  b", "a b"},
    {"k: v\rk2: w # {\"$imagepolicy\": \"ns:p:tag\"}\r", 2, "ns/p", MARKER_TAG, MARKER_PLAIN, "w",
     "w"},
    {"%YAML 1.1\n--- v # {\"$imagepolicy\": \"ns:p:tag\"}\n", 2, "ns/p", MARKER_TAG, MARKER_PLAIN,
     "v", "v"},
};

START_TEST(scan_table)
{
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	const char *in = scans[_i].in;
	const struct marker *m;

	ck_assert_int_eq(markers_scan_buffer(&s, "f.yaml", in, strlen(in), &err), 0);
	ck_assert_msg(s.problems_len == 0, "%d: %s", _i,
	              s.problems_len ? s.problems[0].message : "");
	ck_assert_int_eq((int)s.len, 1);
	m = &s.items[0];
	ck_assert_str_eq(m->file, "f.yaml");
	ck_assert_int_eq((int)m->line, (int)scans[_i].line);
	ck_assert_str_eq(m->policy, scans[_i].policy);
	ck_assert_int_eq(m->part, scans[_i].part);
	ck_assert_int_eq(m->style, scans[_i].style);
	ck_assert_int_eq((int)(m->end - m->start), (int)strlen(scans[_i].range));
	ck_assert(memcmp(in + m->start, scans[_i].range, m->end - m->start) == 0);
	ck_assert_str_eq(m->value, scans[_i].value);
	markers_release(&s);
}
END_TEST

/* ---- scanning: problems (and no marker) ---- */

static const struct {
	const char *in;
	size_t len; /* 0: strlen */
	size_t markers;
	size_t line;          /* of the one problem; (size_t)-1: no problem expected */
	const char *contains; /* in its message */
} problems[] = {
    {"a: b # {\"$imagepolicy\": ns:p}\n", 0, 0, 1, "malformed marker comment"},
    {"a: b # {\"$imagepolicy\": 3}\n", 0, 0, 1, "must be a string"},
    {"a: b # {\"$imagepolicy\": \"nsp\"}\n", 0, 0, 1, "expected NS:NAME"},
    {"a: b # {\"$imagepolicy\": \"ns:p:version\"}\n", 0, 0, 1, "expected NS:NAME"},
    {"a: b # {\"$imagepolicy\": \"ns/p\"}\n", 0, 0, 1, "expected NS:NAME"},
    {"a: b # {\"$imagepolicy\": \"ns:p\"} trailing\n", 0, 0, 1, "malformed marker comment"},
    {"a: b # see the $imagepolicy docs\n", 0, 0, (size_t)-1, ""},
    {"a:\n  # {\"$imagepolicy\": \"ns:p\"}\n  b\n", 0, 0, 2, "line of its own"},
    {"a: # {\"$imagepolicy\": \"ns:p\"}\n  b: c\n", 0, 0, 1, "not on a scalar"},
    {"a: [b] # {\"$imagepolicy\": \"ns:p\"}\n", 0, 0, 1, "flow sequence"},
    {"a: {b: c}, # {\"$imagepolicy\": \"ns:p\"}\n", 0, 0, 1, "invalid YAML"},
    {"a: >- # {\"$imagepolicy\": \"ns:p\"}\n  b\n", 0, 0, 1, "block scalar"},
    {"a: &x b\nc: *x # {\"$imagepolicy\": \"ns:p\"}\n", 0, 0, 2, "alias"},
    {"? a # {\"$imagepolicy\": \"ns:p\"}\n: b\n", 0, 0, 1, "mapping key"},
    {"a: \"\\0\" # {\"$imagepolicy\": \"ns:p\"}\n", 0, 0, 1, "NUL"},
    /* bad input: never a crash, one problem naming the line, no markers */
    {"a: \"open # {\"$imagepolicy\": \"ns:p\"}\nb: c\n", 0, 0, 1, "invalid YAML"},
    {"ok: v # {\"$imagepolicy\": \"ns:p\"}\nb: 'never closed\n", 0, 0, 3, "invalid YAML"},
    {"ok: v # {\"$imagepolicy\": \"ns:p\"}\nb: x\0y\n", 39, 0, 2, "invalid YAML"},
    {"ok: v # {\"$imagepolicy\": \"ns:p\"}\nb: \xff\xfe\n", 0, 0, 2, "invalid YAML"},
    {"ok: v # {\"$imagepolicy\": \"ns:p\"}\nb: \xc3\n", 0, 0, 2, "invalid YAML"},
    {"\xff\xfe"
     "a\0:\0 \0b\0",
     10, 0, 1, "UTF-16"},
    {"ok: v # {\"$imagepolicy\": \"ns:p\"}\n- b\n", 0, 0, 2, "invalid YAML"},
    {"ok: v # {\"$imagepolicy\": \"ns:p\"}\n\tb: c\n", 0, 0, 2, "invalid YAML"},
    /* one good marker, one problem */
    {"a: v # {\"$imagepolicy\": \"ns:p\"}\nb: [v] # {\"$imagepolicy\": \"ns:p\"}\n", 0, 1, 2,
     "flow sequence"},
    /* files without the key are not parsed at all (as Flux screens them) */
    {"a: \"broken\n", 0, 0, (size_t)-1, ""},
};

START_TEST(scan_problems)
{
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	const char *in = problems[_i].in;
	size_t len = problems[_i].len ? problems[_i].len : strlen(in);

	ck_assert_int_eq(markers_scan_buffer(&s, "f.yaml", in, len, &err), 0);
	ck_assert_msg(s.len == problems[_i].markers, "%d: %zu markers", _i, s.len);
	if (problems[_i].line == (size_t)-1) {
		ck_assert_msg(s.problems_len == 0, "%d: %s", _i, s.problems[0].message);
	} else {
		ck_assert_msg(s.problems_len == 1, "%d: %zu problems", _i, s.problems_len);
		ck_assert_str_eq(s.problems[0].file, "f.yaml");
		ck_assert_msg(s.problems[0].line == problems[_i].line, "%d: line %zu: %s", _i,
		              s.problems[0].line, s.problems[0].message);
		ck_assert_msg(strstr(s.problems[0].message, problems[_i].contains), "%d: %s", _i,
		              s.problems[0].message);
		ck_assert(strchr(s.problems[0].message, '\n') == NULL);
	}
	markers_release(&s);
}
END_TEST

START_TEST(scan_huge)
{
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	size_t n = MARKERS_MAX_FILE_SIZE + 1;
	char *big = malloc(n);

	ck_assert_ptr_nonnull(big);
	memset(big, ' ', n);
	memcpy(big, "a: b # {\"$imagepolicy\": \"ns:p\"}\n", 33);
	ck_assert_int_eq(markers_scan_buffer(&s, "big.yaml", big, n, &err), 0);
	ck_assert_int_eq((int)s.len, 0);
	ck_assert_int_eq((int)s.problems_len, 1);
	ck_assert(strstr(s.problems[0].message, "larger than 8 MiB"));
	markers_release(&s);
	free(big);
}
END_TEST

START_TEST(scan_deep)
{
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;

	for (int i = 0; i < 20000; i++)
		ck_assert_int_eq(buf_puts(&b, "["), 0);
	ck_assert_int_eq(buf_puts(&b, "v # {\"$imagepolicy\": \"ns:p\"}\n"), 0);
	for (int i = 0; i < 20000; i++)
		ck_assert_int_eq(buf_puts(&b, "]"), 0);
	ck_assert_int_eq(markers_scan_buffer(&s, "deep.yaml", b.data, b.len, &err), 0);
	ck_assert_int_eq((int)s.len, 0);
	ck_assert_int_eq((int)s.problems_len, 1);
	ck_assert(strstr(s.problems[0].message, "nested deeper"));
	markers_release(&s);
	buf_release(&b);
}
END_TEST

/* Many markers in one file: every one found, each range holding its value. */
START_TEST(scan_many)
{
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;

	for (int i = 0; i < 500; i++)
		ck_assert_int_eq(
		    buf_printf(&b, "- k%d: r/i:%d # {\"$imagepolicy\": \"ns:p%d\"}\n", i, i, i), 0);
	ck_assert_int_eq(markers_scan_buffer(&s, "m.yaml", b.data, b.len, &err), 0);
	ck_assert_int_eq((int)s.len, 500);
	for (int i = 0; i < 500; i++) {
		char want[32];
		snprintf(want, sizeof(want), "r/i:%d", i);
		ck_assert_str_eq(s.items[i].value, want);
		ck_assert_int_eq((int)s.items[i].line, i + 1);
		ck_assert(memcmp(b.data + s.items[i].start, want, strlen(want)) == 0);
	}
	markers_release(&s);
	buf_release(&b);
}
END_TEST

/* Truncated and corrupted variants of a real file: problems or markers, never a crash, and
 * every marker found can be rewritten or is refused cleanly. */
START_TEST(scan_mutations)
{
	static const char corrupt[] = {'"', '\'', '#', ':', '\0', '\xff', '[', '\r', '&', '|'};
	const char *src = getenv("IMAGEGUARD_SRC");
	struct buf orig = BUF_INIT, b = BUF_INIT, out = BUF_INIT;
	char p[512];

	snprintf(p, sizeof(p), "%s/test/golden/markers/comments/original/deploy.yaml",
	         src ? src : ".");
	orig.max = MARKERS_MAX_FILE_SIZE;
	ck_assert_int_eq(buf_read_file(&orig, p), 0);
	for (size_t at = 0; at < orig.len; at += 7) {
		for (size_t k = 0; k <= sizeof(corrupt); k++) {
			struct marker_set s = MARKER_SET_INIT;
			struct error err = ERROR_INIT;
			size_t len = k == sizeof(corrupt) ? at : orig.len;
			buf_reset(&b);
			ck_assert_int_eq(buf_append(&b, orig.data, orig.len), 0);
			if (k < sizeof(corrupt))
				b.data[at] = corrupt[k];
			ck_assert_int_eq(markers_scan_buffer(&s, "m.yaml", b.data, len, &err), 0);
			for (size_t i = 0; i < s.len; i++) {
				struct marker_edit e = {&s.items[i], "v9.9.9"};
				int rc = markers_apply(&out, b.data, len, &e, 1, &err);
				ck_assert(rc == 0 || rc == IG_EINVALID);
			}
			markers_release(&s);
		}
	}
	buf_release(&orig);
	buf_release(&b);
	buf_release(&out);
}
END_TEST

/* ---- value helpers ---- */

static struct marker mk(enum marker_part part, const char *value)
{
	struct marker m = {(char *)"f.yaml", 1,    (char *)"ns/p", part, MARKER_PLAIN, 0,    0,
	                   (char *)value,    NULL, NULL,           NULL, NULL,         NULL, false};
	return m;
}

static const struct {
	enum marker_part part;
	const char *value, *name, *tag, *digest;
	const char *want; /* NULL: IG_EINVALID */
} values[] = {
    /* the policy's name, whatever the marker held (Flux's setter writes the whole reference) */
    {MARKER_IMAGE, "ghcr.io/o/app:1.0", "x/y", "2.0", NULL, "x/y:2.0"},
    {MARKER_IMAGE, "ghcr.io/o/app:1.0", "ghcr.io/o/app", "2.0", NULL, "ghcr.io/o/app:2.0"},
    {MARKER_IMAGE, "localhost:5000/app:1.0", "localhost:5000/app", "2.0", D1,
     "localhost:5000/app:2.0@" D1},
    {MARKER_IMAGE, "localhost:5000/app:1.0@sha256:ab", "localhost:5000/app", "2.0", NULL,
     "localhost:5000/app:2.0"},
    {MARKER_IMAGE, "localhost:5000/app", "localhost:5001/app", "2.0", NULL,
     "localhost:5001/app:2.0"},
    {MARKER_IMAGE, "", "ghcr.io/o/app", "2.0", NULL, "ghcr.io/o/app:2.0"},
    {MARKER_IMAGE, "", NULL, "2.0", NULL, NULL},
    {MARKER_IMAGE, "a:1", "a", NULL, NULL, NULL},
    {MARKER_IMAGE, "a:1", "a", "", NULL, NULL}, /* an empty tag is no tag */
    {MARKER_TAG, "1.0", "n", "", NULL, NULL},
    {MARKER_NAME, "old/name", "new/name", "2.0", NULL, "new/name"},
    {MARKER_TAG, "1.0", "n", "2.0", D1, "2.0"},
    {MARKER_DIGEST, "sha256:00", "n", "2.0", D1, D1},
    {MARKER_DIGEST, "sha256:00", "n", "2.0", NULL, NULL},
};

START_TEST(value_for)
{
	struct marker m = mk(values[_i].part, values[_i].value);
	struct error err = ERROR_INIT;
	char *out = NULL;
	int rc =
	    markers_value_for(&out, &m, values[_i].name, values[_i].tag, values[_i].digest, &err);

	if (values[_i].want) {
		ck_assert_int_eq(rc, 0);
		ck_assert_str_eq(out, values[_i].want);
	} else {
		ck_assert_int_eq(rc, IG_EINVALID);
		ck_assert_ptr_null(out);
		ck_assert(strstr(err.msg, "f.yaml:1"));
	}
	free(out);
}
END_TEST

/* What each part holds; `:digest` and `:name` take the tag of the nearest `:tag` sibling of
 * the same policy in the same file (lines 1, 9 and 40 of f.yaml below; 2 is another policy's). */
static const struct {
	enum marker_part part;
	size_t line;
	const char *value, *want_tag, *want_digest;
} currents[] = {
    {MARKER_IMAGE, 5, "ghcr.io/o/app:1.0", "1.0", NULL},
    {MARKER_IMAGE, 5, "localhost:5000/app", NULL, NULL},
    {MARKER_IMAGE, 5, "localhost:5000/app:v2@" D1, "v2", D1},
    {MARKER_IMAGE, 5, "app@" D1, NULL, D1},
    {MARKER_TAG, 5, "1.2.3", "1.2.3", NULL},
    {MARKER_NAME, 7, "ghcr.io/o/app", "1.9", NULL},
    {MARKER_NAME, 30, "ghcr.io/o/app", "4.0", NULL},
    {MARKER_DIGEST, 3, D1, "1.1", D1},
    {MARKER_DIGEST, 3, "", "1.1", NULL},
};

START_TEST(current_value)
{
	struct marker sib[4] = {mk(MARKER_TAG, "1.1"), mk(MARKER_TAG, "9.9"), mk(MARKER_TAG, "1.9"),
	                        mk(MARKER_TAG, "4.0")};
	struct marker_set set = MARKER_SET_INIT;
	struct marker m = mk(currents[_i].part, currents[_i].value);
	struct marker_current cur;

	sib[0].line = 1;
	sib[1].line = 2;
	sib[1].policy = (char *)"ns/other";
	sib[2].line = 9;
	sib[3].line = 40;
	set.items = sib;
	set.len = 4;
	m.line = currents[_i].line;
	ck_assert_int_eq(markers_current(&cur, &set, &m), 0);
	ck_assert_pstr_eq(cur.tag, currents[_i].want_tag);
	ck_assert_pstr_eq(cur.digest, currents[_i].want_digest);
	markers_current_release(&cur);
}
END_TEST

/* ---- splicing ---- */

#define UNWRITABLE "cannot be written as a" /* refused before writing, not at the read-back */
static const struct {
	const char *in, *value;
	const char *want; /* NULL: IG_EINVALID */
	const char *why;  /* with want NULL: in the error, or NULL */
} applies[] = {
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "v2",
     "a: v2 # {\"$imagepolicy\": \"ns:p:tag\"}\n", NULL},
    {"a: 'v1' # {\"$imagepolicy\": \"ns:p:tag\"}\n", "it's",
     "a: 'it''s' # {\"$imagepolicy\": \"ns:p:tag\"}\n", NULL},
    {"a: \"v1\" # {\"$imagepolicy\": \"ns:p:tag\"}\n", "q\"b\\\x01",
     "a: \"q\\\"b\\\\\\x01\" # {\"$imagepolicy\": \"ns:p:tag\"}\n", NULL},
    {"a: \"v1\" # {\"$imagepolicy\": \"ns:p:tag\"}\n", "\xc3\xa9",
     "a: \"\xc3\xa9\" # {\"$imagepolicy\": \"ns:p:tag\"}\n", NULL},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "x: y", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "x #y", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "*x", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "x,y", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", " x", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "x\ny", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "\xc3", NULL, NULL},
    {"a: 'v1' # {\"$imagepolicy\": \"ns:p:tag\"}\n", "x\ty", NULL, UNWRITABLE},
    {"a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n", "-x", NULL, UNWRITABLE},
    {"a: [v1, # {\"$imagepolicy\": \"ns:p:tag\"}\n b]\n", "v2",
     "a: [v2, # {\"$imagepolicy\": \"ns:p:tag\"}\n b]\n", NULL},
    {"a: \"v1\r\n  more\" # {\"$imagepolicy\": \"ns:p:tag\"}\r\n", "v2",
     "a: \"v2\" # {\"$imagepolicy\": \"ns:p:tag\"}\r\n", NULL},
};

START_TEST(apply_table)
{
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	struct buf out = BUF_INIT;
	const char *in = applies[_i].in;
	struct marker_edit e;
	int rc;

	ck_assert_int_eq(markers_scan_buffer(&s, "f.yaml", in, strlen(in), &err), 0);
	ck_assert_int_eq((int)s.len, 1);
	e.marker = &s.items[0];
	e.value = applies[_i].value;
	rc = markers_apply(&out, in, strlen(in), &e, 1, &err);
	if (applies[_i].want) {
		ck_assert_msg(rc == 0, "%d: %s", _i, err.msg);
		ck_assert_str_eq(out.data, applies[_i].want);
	} else {
		ck_assert_msg(rc == IG_EINVALID, "%d: rc %d", _i, rc);
		ck_assert_msg(strstr(err.msg, "'f.yaml:1'") == err.msg, "%s", err.msg);
		ck_assert_msg(!applies[_i].why || strstr(err.msg, applies[_i].why), "%d: %s", _i,
		              err.msg);
	}
	buf_release(&out);
	markers_release(&s);
}
END_TEST

START_TEST(apply_rejects_stale_and_overlapping)
{
	const char *in = "a: 'v1' # {\"$imagepolicy\": \"ns:p:tag\"}\n";
	const char *plain = "a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n";
	const char *unquoted = "a: xv1x # {\"$imagepolicy\": \"ns:p:tag\"}\n";
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	struct buf out = BUF_INIT;
	struct marker_edit e[2];

	ck_assert_int_eq(markers_scan_buffer(&s, "f.yaml", in, strlen(in), &err), 0);
	e[0].marker = e[1].marker = &s.items[0];
	e[0].value = e[1].value = "v2";
	ck_assert_int_eq(markers_apply(&out, in, strlen(in), e, 2, &err), IG_EINVALID);
	ck_assert(strstr(err.msg, "overlapping"));
	ck_assert_int_eq(markers_apply(&out, "a: v1\n", 6, e, 1, &err), IG_EINVALID);
	ck_assert(strstr(err.msg, "changed since"));
	markers_release(&s);
	/* a plain marker whose range ends past the data (the file shrank since the scan) */
	ck_assert_int_eq(markers_scan_buffer(&s, "f.yaml", plain, strlen(plain), &err), 0);
	e[0].marker = &s.items[0];
	ck_assert_int_eq(markers_apply(&out, plain, 4, e, 1, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "changed since"), "%s", err.msg);
	markers_release(&s);
	ck_assert_int_eq(markers_scan_buffer(&s, "f.yaml", in, strlen(in), &err), 0);
	e[0].marker = &s.items[0];
	/* the quotes the scan saw are gone, the length is the same */
	ck_assert_int_eq(markers_apply(&out, unquoted, strlen(unquoted), e, 1, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "changed since"), "%s", err.msg);
	ck_assert_int_eq(markers_apply(&out, in, strlen(in), e, 0, &err), 0);
	ck_assert_str_eq(out.data, in);
	buf_release(&out);
	markers_release(&s);
}
END_TEST

/* One rewrite is one file: edits of markers scanned from two files are refused. */
START_TEST(apply_rejects_two_files)
{
	const char *in = "a: v1 # {\"$imagepolicy\": \"ns:p:tag\"}\n";
	struct marker_set f = MARKER_SET_INIT, g = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	struct buf out = BUF_INIT;
	struct marker_edit e[2];

	ck_assert_int_eq(markers_scan_buffer(&f, "f.yaml", in, strlen(in), &err), 0);
	ck_assert_int_eq(markers_scan_buffer(&g, "g.yaml", in, strlen(in), &err), 0);
	e[0].marker = &f.items[0];
	e[1].marker = &g.items[0];
	e[0].value = e[1].value = "v2";
	ck_assert_int_eq(markers_apply(&out, in, strlen(in), e, 2, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "edits span files"), "%s", err.msg);
	buf_release(&out);
	markers_release(&f);
	markers_release(&g);
}
END_TEST

/* ---- tree walking ---- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq((int)fwrite(text, 1, strlen(text), f), (int)strlen(text));
	fclose(f);
}

static char *tree_fixture(void)
{
	char tmpl[] = "/tmp/ig-markers.XXXXXX";
	char *root = strdup(mkdtemp(tmpl));
	char p[512];
	static const char *const dirs[] = {"a-b", "a", "a/.git", ".git", "z", "outside"};
	static const char *const files[] = {"a-b/x.yaml",  "a/x.yml",        "a/.git/x.yaml",
	                                    ".git/x.yaml", "z/x.yaml",       "z/x.json",
	                                    "top.yaml",    "outside/o.yaml", "z/X.YAML"};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		ck_assert_int_eq(mkdir(p, 0700), 0);
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, files[i]);
		write_file(p, "i: r/i:1 # {\"$imagepolicy\": \"ns:p\"}\n");
	}
	snprintf(p, sizeof(p), "%s/z/link.yaml", root);
	ck_assert_int_eq(symlink("../outside/o.yaml", p), 0);
	snprintf(p, sizeof(p), "%s/z/linkdir", root);
	ck_assert_int_eq(symlink("../outside", p), 0);
	return root;
}

static void rm_tree(const char *root)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(tree_walk)
{
	char *root = tree_fixture();
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	static const char *const want[] = {"a-b/x.yaml", "a/x.yml", "outside/o.yaml", "top.yaml",
	                                   "z/x.yaml"};
	static const char *const want_z[] = {"z/x.yaml"};

	ck_assert_int_eq(markers_scan_tree(&s, root, NULL, &err), 0);
	ck_assert_int_eq((int)s.len, 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_str_eq(s.items[i].file, want[i]);
	markers_release(&s);

	ck_assert_int_eq(markers_scan_tree(&s, root, "./z/", &err), 0);
	ck_assert_int_eq((int)s.len, 1);
	ck_assert_str_eq(s.items[0].file, want_z[0]);
	markers_release(&s);

	ck_assert_int_eq(markers_scan_tree(&s, root, "z/linkdir", &err), IG_EINVALID);
	ck_assert_int_eq(markers_scan_tree(&s, root, "../x", &err), IG_EINVALID);
	ck_assert_int_eq(markers_scan_tree(&s, root, "/etc", &err), IG_EINVALID);
	ck_assert_int_eq(markers_scan_tree(&s, root, "missing", &err), IG_ENOTFOUND);
	ck_assert(strstr(err.msg, "missing"));
	ck_assert_int_eq(markers_scan_tree(&s, "/nonexistent-ig", NULL, &err), IG_ENOTFOUND);
	ck_assert_int_eq(markers_scan_tree(&s, root, "top.yaml", &err), IG_EINVALID);
	ck_assert_int_eq((int)s.len, 0);
	rm_tree(root);
	free(root);
}
END_TEST

START_TEST(tree_problems)
{
	char tmpl[] = "/tmp/ig-markers.XXXXXX";
	char *root = mkdtemp(tmpl);
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/big.yaml", root);
	f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(ftruncate(fileno(f), (off_t)MARKERS_MAX_FILE_SIZE + 10), 0);
	fclose(f);
	snprintf(p, sizeof(p), "%s/ok.yaml", root);
	write_file(p, "i: r/i:1 # {\"$imagepolicy\": \"ns:p\"}\n");
	ck_assert_int_eq(markers_scan_tree(&s, root, NULL, &err), 0);
	ck_assert_int_eq((int)s.len, 1);
	ck_assert_int_eq((int)s.problems_len, 1);
	ck_assert_str_eq(s.problems[0].file, "big.yaml");
	ck_assert(strstr(s.problems[0].message, "larger than"));
	markers_release(&s);
	rm_tree(root);
}
END_TEST

/* The clone is untrusted: files named Kustomization are scanned as Flux's reader scans them
 * (issue 11 item 4), while a FIFO, a link named like a YAML file or a Kustomization, and a
 * linked parent are neither followed nor opened (a FIFO would block a plain open forever). */
START_TEST(tree_untrusted)
{
	char tmpl[] = "/tmp/ig-markers.XXXXXX";
	char *root = mkdtemp(tmpl);
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	static const char *const want[] = {"Kustomization", "k/Kustomization", "ok.yml"};
	char p[512];

	snprintf(p, sizeof(p), "%s/k", root);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/out", root);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	static const char *const files[] = {"Kustomization", "k/Kustomization",   "ok.yml",
	                                    "kustomization", "Kustomization.bak", "out/o.yaml"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, files[i]);
		write_file(p, "i: r/i:1 # {\"$imagepolicy\": \"ns:p\"}\n");
	}
	snprintf(p, sizeof(p), "%s/fifo.yaml", root);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/out/Kustomization", root);
	ck_assert_int_eq(symlink("o.yaml", p), 0);
	snprintf(p, sizeof(p), "%s/out/link.yaml", root);
	ck_assert_int_eq(symlink("o.yaml", p), 0);
	ck_assert_int_eq(markers_scan_tree(&s, root, "k", &err), 0);
	ck_assert_int_eq((int)s.len, 1);
	markers_release(&s);
	/* "out" holds o.yaml: scanned; its links are not */
	ck_assert_int_eq(markers_scan_tree(&s, root, NULL, &err), 0);
	ck_assert_int_eq((int)s.len, 4);
	for (size_t i = 0; i < 3; i++)
		ck_assert_str_eq(s.items[i].file, want[i]);
	ck_assert_str_eq(s.items[3].file, "out/o.yaml");
	ck_assert_int_eq((int)s.problems_len, 0);
	markers_release(&s);
	/* naming them directly: a problem each, never a read through the link or a blocked open */
	ck_assert_int_eq(markers_scan_file(&s, root, "fifo.yaml", &err), 0);
	ck_assert_int_eq(markers_scan_file(&s, root, "out/link.yaml", &err), 0);
	snprintf(p, sizeof(p), "%s/lnk", root);
	ck_assert_int_eq(symlink("out", p), 0);
	ck_assert_int_eq(markers_scan_file(&s, root, "lnk/o.yaml", &err), 0);
	ck_assert_int_eq((int)s.len, 0);
	ck_assert_int_eq((int)s.problems_len, 3);
	ck_assert_str_eq(s.problems[0].message, "cannot read file: not a regular file");
	ck_assert_str_eq(s.problems[1].message,
	                 "cannot read file: is a symbolic link, not followed");
	ck_assert_msg(strstr(s.problems[2].message, "cannot read file: "), "%s",
	              s.problems[2].message);
	markers_release(&s);
	ck_assert_int_eq(markers_scan_tree(&s, root, "lnk", &err), IG_EINVALID);
	rm_tree(root);
}
END_TEST

/* ---- golden files ---- */

static const char *const golden[] = {
    "comments", "documents", "crlf",    "kustomize",      "helmrelease", "containers",
    "flow",     "quoted",    "anchors", "unknown-policy", "non-scalar",  "parse-error",
};

static void read_all(struct buf *b, const char *path)
{
	b->max = MARKERS_MAX_FILE_SIZE;
	ck_assert_msg(buf_read_file(b, path) == 0, "cannot read %s", path);
}

static void list_files(struct buf *names, const char *root, const char *rel)
{
	char p[2048];
	DIR *d;
	struct dirent *de;

	snprintf(p, sizeof(p), "%s%s%s", root, *rel ? "/" : "", rel);
	d = opendir(p);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		char child[1024];
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		snprintf(p, sizeof(p), "%s/%s", root, child);
		ck_assert_int_eq(stat(p, &st), 0);
		if (S_ISDIR(st.st_mode))
			list_files(names, root, child);
		else
			ck_assert_int_eq(buf_printf(names, "%s\n", child), 0);
	}
	closedir(d);
}

/* The property: scanning the result finds the same markers in the same order, the edited ones
 * holding their new values, and every byte outside the marked ranges is unchanged. */
static void check_property(const char *file, const struct buf *orig, const struct buf *out,
                           const struct marker **fm, char **vals, size_t n)
{
	struct marker_set back = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	size_t o = 0, w = 0;

	ck_assert_int_eq(markers_scan_buffer(&back, file, out->data, out->len, &err), 0);
	ck_assert_int_eq((int)back.len, (int)n);
	for (size_t i = 0; i < n; i++) {
		const struct marker *b = &back.items[i];
		ck_assert_str_eq(b->policy, fm[i]->policy);
		ck_assert_int_eq(b->part, fm[i]->part);
		ck_assert_int_eq(b->style, fm[i]->style);
		ck_assert_str_eq(b->value, vals[i] ? vals[i] : fm[i]->value);
		ck_assert_int_eq((int)(fm[i]->start - o), (int)(b->start - w));
		ck_assert(memcmp(orig->data + o, out->data + w, fm[i]->start - o) == 0);
		o = fm[i]->end;
		w = b->end;
	}
	ck_assert_int_eq((int)(orig->len - o), (int)(out->len - w));
	ck_assert(memcmp(orig->data + o, out->data + w, orig->len - o) == 0);
	markers_release(&back);
}

static void golden_file(const char *dir, const char *file, json_t *policies,
                        const struct marker_set *s, struct buf *unknown)
{
	struct buf orig = BUF_INIT, want = BUF_INIT, out = BUF_INIT;
	struct marker_edit e[64];
	const struct marker *fm[64];
	char *vals[64];
	size_t n = 0, nfm = 0;
	struct error err = ERROR_INIT;
	char p[1024];

	snprintf(p, sizeof(p), "%s/original/%s", dir, file);
	read_all(&orig, p);
	snprintf(p, sizeof(p), "%s/expected/%s", dir, file);
	read_all(&want, p);
	for (size_t i = 0; i < s->len; i++) {
		const struct marker *m = &s->items[i];
		json_t *pol;
		if (strcmp(m->file, file) != 0)
			continue;
		ck_assert(nfm < 64);
		fm[nfm] = m;
		vals[nfm] = NULL;
		pol = json_object_get(policies, m->policy);
		if (!pol) {
			ck_assert_int_eq(
			    buf_printf(unknown, "%s:%zu %s\n", m->file, m->line, m->policy), 0);
			nfm++;
			continue;
		}
		ck_assert_msg(markers_value_for(
		                  &vals[nfm], m, json_string_value(json_object_get(pol, "name")),
		                  json_string_value(json_object_get(pol, "tag")),
		                  json_string_value(json_object_get(pol, "digest")), &err) == 0,
		              "%s", err.msg);
		e[n].marker = m;
		e[n].value = vals[nfm];
		n++;
		nfm++;
	}
	ck_assert_msg(markers_apply(&out, orig.data, orig.len, e, n, &err) == 0, "%s: %s", file,
	              err.msg);
	if (out.len != want.len || memcmp(out.data, want.data, out.len) != 0) {
		size_t at = 0;
		while (at < out.len && at < want.len && out.data[at] == want.data[at])
			at++;
		ck_abort_msg("%s/%s: differs from expected at byte %zu:\n%s", dir, file, at,
		             out.data);
	}
	check_property(file, &orig, &out, fm, vals, nfm);
	for (size_t i = 0; i < nfm; i++)
		free(vals[i]);
	buf_release(&orig);
	buf_release(&want);
	buf_release(&out);
}

static void golden_case(const char *name)
{
	const char *src = getenv("IMAGEGUARD_SRC");
	char dir[512], p[600];
	struct marker_set s = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	struct buf names = BUF_INIT, expected_names = BUF_INIT, unknown = BUF_INIT,
	           want_unknown = BUF_INIT;
	json_error_t jerr;
	json_t *spec, *v;
	size_t i;
	char *line, *nl;

	snprintf(dir, sizeof(dir), "%s/test/golden/markers/%s", src ? src : ".", name);
	snprintf(p, sizeof(p), "%s/edits.json", dir);
	spec = json_load_file(p, 0, &jerr);
	ck_assert_msg(spec != NULL, "%s: %s", p, jerr.text);
	snprintf(p, sizeof(p), "%s/original", dir);
	ck_assert_msg(markers_scan_tree(&s, p, NULL, &err) == 0, "%s", err.msg);

	/* problems: exactly those listed, in order */
	v = json_object_get(spec, "problems");
	ck_assert_msg(json_array_size(v) == s.problems_len, "%s: %zu problems (first: %s:%zu: %s)",
	              name, s.problems_len, s.problems_len ? s.problems[0].file : "",
	              s.problems_len ? s.problems[0].line : 0,
	              s.problems_len ? s.problems[0].message : "");
	for (i = 0; i < s.problems_len; i++) {
		json_t *want = json_array_get(v, i);
		char at[512];
		snprintf(at, sizeof(at), "%s:%zu", s.problems[i].file, s.problems[i].line);
		ck_assert_str_eq(at, json_string_value(json_object_get(want, "at")));
		ck_assert_msg(strstr(s.problems[i].message,
		                     json_string_value(json_object_get(want, "contains"))),
		              "%s: %s", at, s.problems[i].message);
	}

	/* every file: original -> expected byte for byte; the same file set on both sides */
	list_files(&names, p, "");
	snprintf(p, sizeof(p), "%s/expected", dir);
	list_files(&expected_names, p, "");
	ck_assert_str_eq(names.data, expected_names.data);
	for (line = names.data; line && (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		golden_file(dir, line, json_object_get(spec, "policies"), &s, &unknown);
	}

	/* markers naming policies absent from edits.json: reported, left untouched */
	json_array_foreach(json_object_get(spec, "unknown"), i, v)
	    ck_assert_int_eq(buf_printf(&want_unknown, "%s\n", json_string_value(v)), 0);
	ck_assert_str_eq(unknown.data ? unknown.data : "",
	                 want_unknown.data ? want_unknown.data : "");

	json_decref(spec);
	markers_release(&s);
	buf_release(&names);
	buf_release(&expected_names);
	buf_release(&unknown);
	buf_release(&want_unknown);
}

START_TEST(golden_files)
{
	golden_case(golden[_i]);
}
END_TEST

/* Each marker carries Flux's setter name and the identity of its YAML document (Flux's
 * ObjectIdentifier for messageTemplate), per document of a multi-document file. */
START_TEST(document_identity)
{
	static const char doc[] = "apiVersion: apps/v1\n"
	                          "kind: Deployment\n"
	                          "spec:\n"
	                          "  template:\n"
	                          "    metadata:\n"
	                          "      name: inner\n"
	                          "    spec:\n"
	                          "      containers:\n"
	                          "      - image: a:1 # {\"$imagepolicy\": \"ns:web\"}\n"
	                          "metadata:\n"
	                          "  namespace: apps\n"
	                          "  labels: {name: label}\n"
	                          "  name: web\n"
	                          "---\n"
	                          "apiVersion: kustomize.config.k8s.io/v1beta1\n"
	                          "kind: Kustomization\n"
	                          "images:\n"
	                          "- newTag: \"1\" # {\"$imagepolicy\": \"ns:web:tag\"}\n";
	struct marker_set set = MARKER_SET_INIT;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(markers_scan_buffer(&set, "f.yaml", doc, strlen(doc), &err), 0);
	ck_assert_int_eq(set.len, 2);
	ck_assert_str_eq(set.items[0].setter, "ns:web");
	ck_assert_str_eq(set.items[0].api_version, "apps/v1");
	ck_assert_str_eq(set.items[0].kind, "Deployment");
	ck_assert_str_eq(set.items[0].name, "web");
	ck_assert_str_eq(set.items[0].namespace, "apps");
	ck_assert_str_eq(set.items[1].setter, "ns:web:tag");
	ck_assert_str_eq(set.items[1].api_version, "kustomize.config.k8s.io/v1beta1");
	ck_assert_str_eq(set.items[1].kind, "Kustomization");
	ck_assert_ptr_null(set.items[1].name);
	ck_assert_ptr_null(set.items[1].namespace);
	markers_release(&set);
}
END_TEST

static Suite *markers_suite(void)
{
	Suite *s = suite_create("markers");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, scan_table, 0, sizeof(scans) / sizeof(scans[0]));
	tcase_add_loop_test(tc, scan_problems, 0, sizeof(problems) / sizeof(problems[0]));
	tcase_add_test(tc, scan_huge);
	tcase_add_test(tc, scan_deep);
	tcase_add_test(tc, scan_many);
	tcase_add_test(tc, scan_mutations);
	tcase_add_loop_test(tc, value_for, 0, sizeof(values) / sizeof(values[0]));
	tcase_add_loop_test(tc, current_value, 0, sizeof(currents) / sizeof(currents[0]));
	tcase_add_loop_test(tc, apply_table, 0, sizeof(applies) / sizeof(applies[0]));
	tcase_add_test(tc, apply_rejects_stale_and_overlapping);
	tcase_add_test(tc, apply_rejects_two_files);
	tcase_add_test(tc, tree_walk);
	tcase_add_test(tc, tree_problems);
	tcase_add_test(tc, tree_untrusted);
	tcase_add_loop_test(tc, golden_files, 0, sizeof(golden) / sizeof(golden[0]));
	tcase_add_test(tc, document_identity);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(markers_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
