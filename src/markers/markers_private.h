/* What the tree walk (markers_tree.c) and the marker index (markerindex.c) share, so that a
 * scan through the index picks, opens and reads exactly the files a full walk would. */
#ifndef IMAGEGUARD_MARKERS_PRIVATE_H
#define IMAGEGUARD_MARKERS_PRIVATE_H

#include <stdbool.h>

struct buf;
struct error;
struct marker;
struct marker_set;

#define MARKERS_MAX_FILES 200000 /* YAML files in one scan; beyond: IG_ETOOBIG */
#define MARKERS_MAX_DEPTH 64     /* directories below the scanned path that are walked */

/* The names Flux's file reader picks: *.yaml, *.yml and files named exactly Kustomization. */
bool markers_is_yaml_name(const char *name);

/* Normalises subpath into sub ("./a//b/" -> "a/b", "" for the root; absolute or ".." is
 * IG_EINVALID), opens root (*rootfd, the caller closes it) and checks that root/sub is a
 * directory reached without a symbolic link (*dirfd, the caller closes it). A missing or
 * unreadable root or sub is IG_ENOTFOUND. */
int markers_tree_open(int *rootfd, int *dirfd, struct buf *sub, const char *root,
                      const char *subpath, struct error *err);

/* Reads name below rootfd (no link followed, regular files only, size capped) and scans it;
 * a file that cannot be read is a problem. *read_ok says whether the bytes were read (only
 * then do the results depend on the bytes alone). Returns 0 or negative (out of memory). */
int markers_scan_file_at(struct marker_set *out, int rootfd, const char *name, bool *read_ok,
                         struct error *err);

/* Frees what m owns (its strings, or its one block when packed). */
void markers_free_fields(struct marker *m);

#endif
