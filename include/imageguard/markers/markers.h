/* Flux setter markers (`# {"$imagepolicy": "NS:NAME[:tag|:name|:digest]"}`) in YAML files:
 * find the scalar each marks with libyaml's marks, and splice new values in byte-exact. */
#ifndef IMAGEGUARD_MARKERS_H
#define IMAGEGUARD_MARKERS_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct error;

enum marker_part { MARKER_IMAGE, MARKER_NAME, MARKER_TAG, MARKER_DIGEST };
enum marker_style { MARKER_PLAIN, MARKER_SINGLE_QUOTED, MARKER_DOUBLE_QUOTED };

struct marker {
	/* owned; relative to the scan root ("apps/web.yaml"). When packed, the one block that
	 * holds every string of the marker (the marker index's records decode so): free only it */
	char *file;
	size_t line;  /* 1-based line of the marked value */
	char *policy; /* owned; "ns/name" */
	enum marker_part part;
	enum marker_style style;
	size_t start; /* byte range of the value's content in the file, inside any quotes */
	size_t end;
	char *value;  /* owned; the current value (unescaped) */
	char *setter; /* owned; the marker's setter as Flux names it: "ns:name", "ns:name:tag" */
	/* owned; the YAML document holding the marker, as its scalars read (NULL when absent):
	 * apiVersion, kind, metadata.name, metadata.namespace (Flux's ObjectIdentifier) */
	char *api_version, *kind, *name, *namespace;
	bool packed; /* the strings share file's block */
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

#define MARKER_SET_INIT                                                                            \
	{                                                                                          \
		NULL, 0, 0, NULL, 0, 0                                                             \
	}

/* Files larger than this are reported as a problem and not parsed. */
#define MARKERS_MAX_FILE_SIZE ((size_t)8 << 20)

/* Scans one file's bytes (named `file` in results). Problems are appended, not fatal;
 * the return is negative only for out-of-memory or a cap exceeded. Like Flux, a file whose
 * bytes never mention "$imagepolicy" is not parsed at all. A file that fails to parse yields
 * one problem (its file:line) and no markers, so it is never rewritten. out keeps ownership of
 * everything appended; release it with markers_release. */
int markers_scan_buffer(struct marker_set *out, const char *file, const char *data, size_t len,
                        struct error *err);
/* Scans every *.yaml / *.yml and every file named Kustomization (as Flux's reader) under
 * root/subpath (subpath may be NULL or "./"), in sorted path order; file names in results are
 * relative to root. Directories named .git, symbolic links (files and directories), FIFOs and
 * other non-regular files are skipped, and everything is opened relative to directory
 * descriptors (safefile), so nothing outside root is read or later rewritten.
 * A subpath that is absolute or has a ".." component is IG_EINVALID; a missing root or
 * subpath IG_ENOTFOUND. Unreadable or oversized files are problems, not failures. */
int markers_scan_tree(struct marker_set *out, const char *root, const char *subpath,
                      struct error *err);
/* Scans the one file root/name (read with the size cap; an unreadable or oversized file, a
 * symbolic link at any component of name, or a non-regular file is a problem), naming it
 * `name` in results. Returns 0, or negative for out of memory. */
int markers_scan_file(struct marker_set *out, const char *root, const char *name,
                      struct error *err);
void markers_release(struct marker_set *s);

/* Appends a problem (file and message copied; line 0 when none applies), e.g. a marker naming
 * a policy the configuration lacks. Returns 0 or IG_EFAIL (out of memory). */
int markers_add_problem(struct marker_set *s, const char *file, size_t line, const char *message);

const char *markers_part_name(enum marker_part part); /* "image", "name", "tag", "digest" */

struct marker_edit {
	const struct marker *marker; /* borrowed; all edits of one call are in the same file */
	const char *value;           /* the new value, unescaped */
};

/* Writes data with each edit's value spliced in (quoting style kept, escaped as the style
 * needs; every other byte identical) to out, which is reset first (its cap applies). Edits may
 * come in any order but must not overlap. A value that cannot be written in the marker's style
 * (a plain scalar that would need quoting, a control character in a single-quoted one) or that
 * would not read back as exactly that value is IG_EINVALID naming file:line; out is then
 * unspecified and nothing should be written. */
int markers_apply(struct buf *out, const char *data, size_t len, const struct marker_edit *edits,
                  size_t n, struct error *err);

/* The value to write at m for a policy whose choice is name, tag and digest (digest may be
 * NULL): IMAGE -> "name:tag" or "name:tag@digest", keeping the name as written in the current
 * value when it has one (else `name`); NAME -> name; TAG -> tag; DIGEST -> digest. A part the
 * caller did not supply (NULL) is IG_EINVALID. *out is newly allocated (free() it). */
int markers_value_for(char **out, const struct marker *m, const char *name, const char *tag,
                      const char *digest, struct error *err);

/* What a marker holds now: the tag and digest of a whole-image value, a `:tag` marker's
 * value, a `:digest` marker's value; a `:digest` or `:name` marker takes its tag from the
 * `:tag` marker of the same policy nearest to it in the same file (NULL when there is none),
 * so that forward-only holds for the parts that carry no tag. Both strings owned, NULL when
 * absent; release with markers_current_release. */
struct marker_current {
	char *tag;
	char *digest;
};

/* Fills out for m, one of s's markers. Returns 0 or IG_EFAIL (out of memory; out empty). */
int markers_current(struct marker_current *out, const struct marker_set *s, const struct marker *m);
void markers_current_release(struct marker_current *c);

#endif
