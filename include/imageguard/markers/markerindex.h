/* The marker index: each YAML file's scan results kept by (path, blob id), so that a scan of a
 * checked-out tree reads only the files whose blob changed since the last scan, and yields
 * exactly what markers_scan_tree would on the same work tree. Persisted next to the clone. */
#ifndef IMAGEGUARD_MARKERINDEX_H
#define IMAGEGUARD_MARKERINDEX_H

#include <stddef.h>

struct error;
struct marker_set;

/* Bump when markers_scan_buffer's results for the same bytes change (a new rule, a field, a
 * message): an index written under another stamp reads as empty. The stamp also holds the caps
 * the results depend on (MARKERS_MAX_FILE_SIZE, YAMLDEPTH_MAX). */
#define MARKERINDEX_SCANNER_VERSION 1

#define MARKERINDEX_OID_LEN 20 /* a SHA-1 blob id, raw */

/* One file of the checked-out tree as Git records it (the clone's index). */
struct markerindex_file {
	const char *path; /* borrowed; relative to the work tree, '/'-separated */
	unsigned char oid[MARKERINDEX_OID_LEN];
	unsigned mode; /* Git's: 0100644 and 0100755 regular, 0120000 link, 0160000 gitlink */
};

struct markerindex;

/* Reads the index persisted at root/rel (rel: no symbolic link followed). A missing, corrupt
 * or truncated file, or one of another scanner version, is an empty index. *out is the
 * caller's (markerindex_free); IG_EFAIL only when out of memory. */
int markerindex_load(struct markerindex **out, const char *root, const char *rel,
                     struct error *err);
void markerindex_free(struct markerindex *ix);

/* Forgets every entry (the work tree was rewritten wholesale: bytes may differ for the same
 * blob, e.g. under changed .gitattributes) and removes the persisted file. */
void markerindex_clear(struct markerindex *ix);

/* Scans markers as markers_scan_tree(out, root, subpath) does, given the n files of the tree
 * checked out at root (any order): the same files picked (regular *.yaml / *.yml /
 * Kustomization below subpath, at most MARKERS depth, no .git component), the same order,
 * the same errors, byte-identical results. A file whose (path, blob) the index holds is not
 * read; every other is read from root with safefile's guards (no link followed, regular
 * files only, size cap) and its results kept. The caller must know that root's files are
 * those of `files` (a clean checkout). Returns 0 or negative as markers_scan_tree. */
int markerindex_scan(struct markerindex *ix, struct marker_set *out, const char *root,
                     const char *subpath, const struct markerindex_file *files, size_t n,
                     struct error *err);

/* Writes the index back to where it was loaded from when a scan changed it: atomically (a
 * temporary renamed over it, safefile_replace). Returns 0 or negative; a failure loses only
 * speed, the caller may log it and go on. */
int markerindex_save(struct markerindex *ix, struct error *err);

#endif
