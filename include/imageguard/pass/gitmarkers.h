/* Markers of a Git store's checkout through the marker index: a pass reads only the files
 * whose blob changed since the clone's last scan (the index persists in the clone's .git). */
#ifndef IMAGEGUARD_GITMARKERS_H
#define IMAGEGUARD_GITMARKERS_H

#include <stdint.h>

struct error;
struct gitstore;
struct marker_set;

/* markers_scan_tree(out, gitstore_workdir(g), subpath, err), byte for byte, from the clone's
 * Git index (path, blob, mode of each checked-out file) and the marker index: only files
 * whose (path, blob) the marker index lacks are read. The work tree must be as gitstore_open
 * or the last sync left it (an edit scans before it writes). *epoch is the caller's memory of
 * gitstore_worktree_epoch at its last scan of this open store (0 after gitstore_open): when the
 * store's differs, the work tree was rewritten wholesale and the marker index is emptied. Any
 * trouble with Git's index falls back to the full walk. Returns as markers_scan_tree. */
int gitmarkers_scan(struct marker_set *out, struct gitstore *g, const char *subpath,
                    uint64_t *epoch, struct error *err);

#endif
