/* Marker scans of a Git store's checkout: Git's index names each file's blob, the marker
 * index (markerindex.c, persisted as .git/imageguard-markers) holds each blob's results. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitstore_private.h"
#include "imageguard/git/gitmarkers.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/markers/markerindex.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define INDEX_FILE "imageguard-markers"

/* Git's index as the marker index reads it: stage-0 entries (a clean checkout has no
 * others), paths borrowed from index. */
static int list_files(struct markerindex_file **out, size_t *n, git_index *index)
{
	size_t count = git_index_entrycount(index), k = 0;
	struct markerindex_file *f = malloc((count ? count : 1) * sizeof(*f));

	if (!f)
		return IG_EFAIL;
	for (size_t i = 0; i < count; i++) {
		const git_index_entry *e = git_index_get_byindex(index, i);

		if (!e || GIT_INDEX_ENTRY_STAGE(e) != 0)
			continue;
		f[k].path = e->path;
		memcpy(f[k].oid, e->id.id, MARKERINDEX_OID_LEN);
		f[k].mode = e->mode;
		k++;
	}
	*out = f;
	*n = k;
	return 0;
}

static int load(struct gitstore *g, struct error *err)
{
	struct markerindex **ix = gitstore_markerindex(g);
	struct buf root = BUF_INIT;
	int rc;

	if (*ix)
		return 0;
	if (buf_printf(&root, "%s/.git", gitstore_dir(g)) < 0)
		return error_set(err, IG_EFAIL, "out of memory");
	rc = markerindex_load(ix, root.data, INDEX_FILE, err);
	buf_release(&root);
	return rc;
}

int gitmarkers_scan(struct marker_set *out, struct gitstore *g, const char *subpath,
                    struct error *err)
{
	struct markerindex_file *files = NULL;
	struct error e = ERROR_INIT;
	git_index *index = NULL;
	size_t n = 0;
	int rc;

	if (git_repository_index(&index, gitstore_repository(g)) < 0 ||
	    list_files(&files, &n, index) < 0) {
		log_warn("git.markers.index", "'%s': Git's index is unreadable, walking the tree",
		         gitstore_dir(g));
		git_index_free(index);
		return markers_scan_tree(out, gitstore_workdir(g), subpath, err);
	}
	if ((rc = load(g, err)) < 0)
		goto done;
	rc = markerindex_scan(*gitstore_markerindex(g), out, gitstore_workdir(g), subpath, files, n,
	                      err);
	if (rc == 0 && markerindex_save(*gitstore_markerindex(g), &e) < 0) {
		log_warn("git.markers.index", "'%s': cannot save the marker index: %s",
		         gitstore_dir(g), e.msg);
	} else if (rc == 0) {
		/* the file holds what memory does: the next scan loads it again, and the pass
		 * decides without it (a record a marker, 1 MiB at 5,000 markers) */
		markerindex_free(*gitstore_markerindex(g));
		*gitstore_markerindex(g) = NULL;
	}
done:
	free(files);
	git_index_free(index);
	return rc;
}

void gitmarkers_forget(struct gitstore *g)
{
	struct markerindex **ix = gitstore_markerindex(g);
	struct buf path = BUF_INIT;

	if (*ix) {
		markerindex_clear(*ix);
		return;
	}
	if (buf_printf(&path, "%s/.git/" INDEX_FILE, gitstore_dir(g)) == 0)
		unlink(path.data);
	buf_release(&path);
}
