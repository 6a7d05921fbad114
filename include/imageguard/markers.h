/* Flux setter markers (`# {"$imagepolicy": "NS:NAME[:tag|:name|:digest]"}`) in YAML files:
 * find the scalar each marks with libyaml's marks, and splice new values in byte-exact. */
#ifndef IMAGEGUARD_MARKERS_H
#define IMAGEGUARD_MARKERS_H

#include <stddef.h>

struct buf;
struct error;

enum marker_part { MARKER_IMAGE, MARKER_NAME, MARKER_TAG, MARKER_DIGEST };
enum marker_style { MARKER_PLAIN, MARKER_SINGLE_QUOTED, MARKER_DOUBLE_QUOTED };

struct marker {
	char *file;       /* owned; relative to the scan root ("apps/web.yaml") */
	size_t line;      /* 1-based line of the marked value */
	char *policy;     /* owned; "ns/name" */
	enum marker_part part;
	enum marker_style style;
	size_t start;     /* byte range of the value's content in the file, inside any quotes */
	size_t end;
	char *value;      /* owned; the current value (unescaped) */
};

/* Something the user should hear about: a marker on a non-scalar, a file that does not parse
 * (file untouched, others still processed), an unreadable file. */
struct marker_problem {
	char *file; /* owned */
	size_t line;
	char *message; /* owned; one line */
};

struct marker_set {
	struct marker *items;
	size_t len, cap;
	struct marker_problem *problems;
	size_t problems_len, problems_cap;
};

#define MARKER_SET_INIT {NULL, 0, 0, NULL, 0, 0}

/* Scans one file's bytes (named `file` in results). Problems are appended, not fatal;
 * the return is negative only for out-of-memory or a cap exceeded. */
int markers_scan_buffer(struct marker_set *out, const char *file, const char *data, size_t len,
			struct error *err);
/* Scans every *.yaml / *.yml under root/subpath (subpath may be NULL or "./"), in sorted path
 * order; file names in results are relative to root. */
int markers_scan_tree(struct marker_set *out, const char *root, const char *subpath,
		      struct error *err);
void markers_release(struct marker_set *s);

const char *markers_part_name(enum marker_part part); /* "image", "name", "tag", "digest" */

struct marker_edit {
	const struct marker *marker; /* borrowed; all edits of one call are in the same file */
	const char *value;           /* the new value, unescaped */
};

/* Writes data with each edit's value spliced in (quoting style kept, escaped as the style
 * needs; every other byte identical) to out. Edits must not overlap. */
int markers_apply(struct buf *out, const char *data, size_t len, const struct marker_edit *edits,
		  size_t n, struct error *err);

#endif
