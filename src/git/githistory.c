/* Walks a clone's history for one file with libgit2: every distinct blob it had, newest first,
 * bounded in commits and bytes. */
#include <git2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/git/githistory.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/vec.h"

/* The blob ids already handed out (a file's versions are few; a linear scan is fine). */
struct seen {
	git_oid *ids;
	size_t len, cap;
};

static bool seen_has(const struct seen *s, const git_oid *id)
{
	for (size_t i = 0; i < s->len; i++)
		if (git_oid_equal(&s->ids[i], id))
			return true;
	return false;
}

static int seen_add(struct seen *s, const git_oid *id)
{
	git_oid *ids = vec_reserve(s->ids, &s->cap, s->len, sizeof(*ids), 16);

	if (!ids)
		return IG_EFAIL;
	s->ids = ids;
	git_oid_cpy(&s->ids[s->len++], id);
	return 0;
}

static int git_failed(struct error *err, const char *what)
{
	const git_error *e = git_error_last();

	return error_set(err, IG_EFAIL, "history: %s: %s", what,
	                 e && e->message ? e->message : "failed");
}

/* One commit: the file's blob, handed to fn when it is new. 1: stop. */
static int visit(git_repository *repo, const git_oid *commit_id, bool at_head, const char *path,
                 size_t max_bytes, struct seen *seen, githistory_fn fn, void *ctx,
                 struct error *err)
{
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	git_blob *blob = NULL;
	int rc = 0;

	if (git_commit_lookup(&commit, repo, commit_id) < 0 || git_commit_tree(&tree, commit) < 0) {
		rc = git_failed(err, "reading a commit");
		goto done;
	}
	if (git_tree_entry_bypath(&entry, tree, path) < 0)
		goto done; /* not in this commit */
	if (git_tree_entry_filemode(entry) != GIT_FILEMODE_BLOB &&
	    git_tree_entry_filemode(entry) != GIT_FILEMODE_BLOB_EXECUTABLE)
		goto done;
	if (seen_has(seen, git_tree_entry_id(entry)))
		goto done;
	if (seen_add(seen, git_tree_entry_id(entry)) < 0) {
		rc = error_oom(err);
		goto done;
	}
	if (git_blob_lookup(&blob, repo, git_tree_entry_id(entry)) < 0) {
		rc = git_failed(err, "reading a blob");
		goto done;
	}
	if ((size_t)git_blob_rawsize(blob) <= max_bytes)
		rc = fn(ctx, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), at_head);
done:
	git_blob_free(blob);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

int githistory_file_versions(const char *workdir, const char *path, size_t max_commits,
                             size_t max_bytes, githistory_fn fn, void *ctx, struct error *err)
{
	git_repository *repo = NULL;
	git_revwalk *walk = NULL;
	struct seen seen = {0};
	git_oid id;
	size_t n = 0;
	int rc = 0;

	if (git_repository_open_ext(&repo, workdir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
		rc = git_failed(err, "opening the clone");
		goto done;
	}
	if (git_revwalk_new(&walk, repo) < 0 ||
	    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME) < 0 ||
	    git_revwalk_push_head(walk) < 0) {
		rc = git_failed(err, "walking the history");
		goto done;
	}
	while (rc == 0 && n++ < max_commits && git_revwalk_next(&id, walk) == 0)
		rc = visit(repo, &id, n == 1, path, max_bytes, &seen, fn, ctx, err);
	if (rc > 0)
		rc = 0;
done:
	free(seen.ids);
	git_revwalk_free(walk);
	git_repository_free(repo);
	return rc;
}

int githistory_first_message(struct buf *out, const char *workdir, size_t max_commits,
                             bool (*match)(void *ctx, const char *msg), void *ctx,
                             struct error *err)
{
	git_repository *repo = NULL;
	git_commit *commit = NULL, *parent;
	git_oid id;
	int rc = 0;

	if (git_repository_open_ext(&repo, workdir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
		rc = git_failed(err, "opening the clone");
		goto done;
	}
	if (git_reference_name_to_id(&id, repo, "HEAD") < 0 ||
	    git_commit_lookup(&commit, repo, &id) < 0) {
		rc = git_failed(err, "reading the head commit");
		goto done;
	}
	for (size_t n = 0; commit && n < max_commits; n++) {
		const char *msg = git_commit_message(commit);

		if (match(ctx, msg ? msg : "")) {
			if (buf_append(out, msg ? msg : "", msg ? strlen(msg) : 0) < 0)
				rc = error_set(err, IG_ETOOBIG,
				               "history: a commit's message is too long");
			break;
		}
		if (git_commit_parentcount(commit) == 0)
			break;
		if (git_commit_parent(&parent, commit, 0) < 0) {
			rc = git_failed(err, "reading a first parent");
			break;
		}
		git_commit_free(commit);
		commit = parent;
	}
done:
	git_commit_free(commit);
	git_repository_free(repo);
	return rc;
}
