/* Marker scans of a Git store's checkout: Git's index names each file's blob, the marker
 * index (markerindex.c, persisted as .git/imageguard-markers) holds each blob's results. */
#include <stdlib.h>
#include <string.h>

#include "imageguard/pass/gitmarkers.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/markers/markerindex.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define INDEX_FILE "imageguard-markers"

/* Git's index as the marker index reads it (paths borrowed from the store). */
static int list_files(struct markerindex_file **out, size_t *n, struct gitstore *g,
                      struct error *err)
{
	struct gitstore_entry *e = NULL;
	struct markerindex_file *f;
	size_t count = 0;

	if (gitstore_list_index(&e, &count, g, err) < 0)
		return IG_EFAIL;
	if (!(f = malloc((count ? count : 1) * sizeof(*f)))) {
		free(e);
		return IG_EFAIL;
	}
	for (size_t i = 0; i < count; i++) {
		f[i].path = e[i].path;
		memcpy(f[i].oid, e[i].oid, MARKERINDEX_OID_LEN);
		f[i].mode = e[i].mode;
	}
	free(e);
	*out = f;
	*n = count;
	return 0;
}

/* The persisted index, emptied (file removed) when the work tree was rewritten wholesale since
 * the caller's last scan. */
static int load(struct markerindex **ix, struct gitstore *g, uint64_t *epoch, struct error *err)
{
	struct buf root = BUF_INIT;
	int rc;

	if (buf_printf(&root, "%s/.git", gitstore_dir(g)) < 0)
		return error_oom(err);
	rc = markerindex_load(ix, root.data, INDEX_FILE, err);
	buf_release(&root);
	if (rc == 0 && *epoch != gitstore_worktree_epoch(g)) {
		markerindex_clear(*ix);
		*epoch = gitstore_worktree_epoch(g);
	}
	return rc;
}

int gitmarkers_scan(struct marker_set *out, struct gitstore *g, const char *subpath,
                    uint64_t *epoch, struct error *err)
{
	struct markerindex_file *files = NULL;
	struct markerindex *ix = NULL;
	struct error e = ERROR_INIT;
	size_t n = 0;
	int rc;

	if (list_files(&files, &n, g, &e) < 0) {
		log_warn("git.markers.index", "'%s': Git's index is unreadable, walking the tree",
		         gitstore_dir(g));
		return markers_scan_tree(out, gitstore_workdir(g), subpath, err);
	}
	if ((rc = load(&ix, g, epoch, err)) < 0)
		goto done;
	rc = markerindex_scan(ix, out, gitstore_workdir(g), subpath, files, n, err);
	if (rc == 0 && markerindex_save(ix, &e) < 0)
		log_warn("git.markers.index", "'%s': cannot save the marker index: %s",
		         gitstore_dir(g), e.msg);
done:
	/* the file holds what memory did: the next scan loads it again, and the pass decides
	 * without it (a record a marker, 1 MiB at 5,000 markers) */
	markerindex_free(ix);
	free(files);
	return rc;
}
