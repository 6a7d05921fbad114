/* The marker's Git history for re-pointed tags: every distinct version of the marker's file,
 * newest first, scanned for the markers of its policy and the digests they held. */
#include <stdbool.h>
#include <string.h>

#include "imageguard/pass/markerhistory.h"
#include "imageguard/git/githistory.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/error.h"

/* Looks for a digest at the markers of one policy in the earlier versions of one file. */
struct history_search {
	const char *file, *policy, *digest;
	bool found;
	struct error *err;
};

static int history_version(void *ctx, const char *data, size_t len, bool at_head)
{
	struct history_search *h = ctx;
	struct marker_set set = MARKER_SET_INIT;
	bool held = false;
	int rc = markers_scan_buffer(&set, h->file, data, len, h->err);

	for (size_t i = 0; rc == 0 && !held && i < set.len; i++) {
		struct marker_current cur;

		if (strcmp(set.items[i].policy, h->policy) != 0)
			continue;
		if ((rc = markers_current(&cur, &set, &set.items[i])) == 0)
			held = cur.digest && strcmp(cur.digest, h->digest) == 0;
		markers_current_release(&cur);
	}
	markers_release(&set);
	if (rc < 0)
		return error_oom(h->err);
	/* held now (by another marker of the policy) is not replaced; held before is */
	h->found = held && !at_head;
	return held ? 1 : 0;
}

int markerhistory_replaced(bool *out, const char *workdir, const struct marker *m,
                           const char *digest, struct error *err)
{
	struct history_search h = {m->file, m->policy, digest, false, err};
	int rc = githistory_file_versions(workdir, m->file, GITHISTORY_MAX_COMMITS,
	                                  MARKERS_MAX_FILE_SIZE, history_version, &h, err);

	*out = rc == 0 && h.found;
	return rc;
}
