/* The Git store on libgit2: one cached clone per URL under the state dir, brought to the
 * remote head on every open, and commits pushed without force, re-applied on a moved remote. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <git2.h>
#include <openssl/sha.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/git/gitauth.h"
#include "imageguard/git/gitsign.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/git/gitstream.h"
#include "imageguard/util/log.h"
#include "imageguard/util/safefile.h"
#include "gitraw.h"
#include "gitwalk.h"
#include "imageguard/util/strvec.h"

#define MESSAGE_MAX (256 * 1024)
#define PARTS_MAX 4096u /* commits in one push: a pass's edit in parts (gitstore_edit_fn) */
#define SIGNATURE_MAX (64 * 1024)
#define KEY_NAME_MAX 48

struct gitstore {
	char *url, *branch, *push_branch, *author_name, *author_email;
	char *dir;     /* <state_dir>/git/<key> */
	char *workdir; /* dir + "/" */
	int lock_fd;   /* flock'ed <key>.lock: one user of a cache at a time, freed by the kernel */
	char *lock_path; /* set while this process counts the cache as held (lock_cache) */
	unsigned max_attempts;
	int64_t push_deadline_ms; /* set by this attempt's edit for its push (0: none) */
	git_repository *repo;
	struct gitauth auth;
	char head[GIT_OID_HEXSZ + 1];
	bool damaged; /* an object-level error since open: the next open must reclone */
	const volatile sig_atomic_t *stop; /* borrowed; NULL: none */
	char *sign_dir, *sign_name;        /* NULL: unsigned commits */
	char *gnupg_root;                  /* <state_dir>/gnupg */
	struct gitsign *signer;            /* made at the first signed commit */
	char *refspec;     /* "refs/heads/<push>:DST" of the push refspec, or NULL */
	bool refspec_only; /* push the refspec only, not the push branch */
	/* The push branch is rebuilt on the checkout branch's head: it had only imageguard's
	 * commits beyond it. The push then replaces push_seen, by compare-and-swap. */
	bool rebuild;
	git_oid push_seen;
	uint64_t epoch;            /* wholesale rewrites of the work tree since open */
	git_index *listed;         /* the index gitstore_list_index lent paths from */
	struct gitwalk_dirs *dirs; /* the directories of the last clean check, NULL: none */
	struct { /* gitstore_push_start's push, on a thread of its own until _finish */
		pthread_t th;
		bool thread;  /* th runs (or ran) it: joined by _finish or gitstore_free */
		bool pending; /* started and not landed by _finish */
		int rc;       /* push()'s */
		struct error err;
		git_oid id; /* the commit it pushes */
	} flight;
};

/* Waits for the push in flight, if any. */
static void flight_join(struct gitstore *g)
{
	if (g->flight.thread)
		pthread_join(g->flight.th, NULL);
	g->flight.thread = false;
}

#define OWN_WALK_MAX 1000 /* commits of a push branch looked at; beyond: treated as a person's */

static char *dup_or(const char *s, const char *fallback)
{
	return strdup(s && *s ? s : fallback);
}

static int oom(struct error *err)
{
	return error_oom(err);
}

/* True when libgit2's last error is about the repository's own data (objects, trees, the
 * index, refs), not the network or credentials: the cache is damaged, not the remote. */
static bool is_object_failure(void)
{
	const git_error *ge = git_error_last();

	if (!ge)
		return false;
	switch (ge->klass) {
	case GIT_ERROR_ODB:
	case GIT_ERROR_OBJECT:
	case GIT_ERROR_ZLIB:
	case GIT_ERROR_TREE:
	case GIT_ERROR_INDEX:
	case GIT_ERROR_INVALID:
	case GIT_ERROR_REFERENCE:
	case GIT_ERROR_REPOSITORY:
	case GIT_ERROR_CHECKOUT:
		return true;
	default:
		return false;
	}
}

/* gitauth_error, remembering an object-level failure so that the cache is never reused. */
static int local_error(struct gitstore *g, int rc, const char *what, struct error *err)
{
	if (is_object_failure())
		g->damaged = true;
	return gitauth_error(&g->auth, rc, what, err);
}

/* "<sanitized host/path>-<sha256 prefix>" of the scrubbed URL: readable, collision-safe, and
 * free of credentials because it is derived from the URL with userinfo removed. */
static int cache_key(struct buf *out, const char *url_safe)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	const char *s = strstr(url_safe, "://");
	size_t n = 0;
	bool dash = true;
	int i;

	SHA256((const unsigned char *)url_safe, strlen(url_safe), md);
	for (s = s ? s + 3 : url_safe; *s && n < KEY_NAME_MAX; s++) {
		char c = *s;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '.' || c == '_';

		if (ok && !(c == '.' && dash)) {
			if (buf_append(out, &c, 1) < 0)
				return IG_EFAIL;
			dash = false;
			n++;
		} else if (!dash) {
			if (buf_puts(out, "-") < 0)
				return IG_EFAIL;
			dash = true;
			n++;
		}
	}
	if (!dash && buf_puts(out, "-") < 0)
		return IG_EFAIL;
	for (i = 0; i < 8; i++)
		if (buf_printf(out, "%02x", md[i]) < 0)
			return IG_EFAIL;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes a tree; 0 when it is gone (or never was). */
static int remove_tree(const char *path)
{
	if (access(path, F_OK) != 0)
		return 0;
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int mkdir_p(const char *path)
{
	char tmp[4096];
	char *p;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -1;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Leftovers of a killed process (half-written clones, caches being replaced). We hold the
 * cache lock, so nobody else is writing them. */
static void remove_leftovers(const char *gitdir, const char *key)
{
	DIR *d = opendir(gitdir);
	struct dirent *e;
	size_t n = strlen(key);
	char path[4096];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, key, n) != 0 || (strncmp(e->d_name + n, ".tmp-", 5) != 0 &&
		                                        strncmp(e->d_name + n, ".old-", 5) != 0))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", gitdir, e->d_name) < (int)sizeof(path)) {
			log_warn("git.cache.leftover", "removing '%s' left by an interrupted run",
			         path);
			remove_tree(path);
		}
	}
	closedir(d);
}

static int lock_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t n = strlen(path);

	(void)st;
	(void)ftw;
	if (flag == FTW_F && n > 5 && strcmp(path + n - 5, ".lock") == 0) {
		log_warn("git.cache.lock", "removing stale lock '%s'", path);
		unlink(path);
	}
	return 0;
}

/* Lock files (index.lock, HEAD.lock, refs/.../x.lock) left by a killed process: stale, since
 * we hold the cache lock; removing them keeps the warm clone. */
static void remove_stale_locks(const char *dir)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s/.git", dir) < (int)sizeof(path))
		nftw(path, lock_entry, 16, FTW_PHYS);
}

/* The fetch callbacks' payload is the gitauth (gitauth_prepare): its store is around it. */
static int stop_check(void *payload)
{
	struct gitstore *g = (struct gitstore *)((char *)payload - offsetof(struct gitstore, auth));

	if (!g->stop || !*g->stop)
		return 0;
	if (!g->auth.cb_err.code)
		error_set(&g->auth.cb_err, IG_EFAIL, "stopping");
	return -1; /* libgit2 cancels the transfer */
}

static int on_fetch_progress(const git_indexer_progress *stats, void *payload)
{
	(void)stats;
	return stop_check(payload);
}

static int on_fetch_sideband(const char *text, int len, void *payload)
{
	(void)text;
	(void)len;
	return stop_check(payload);
}

static void fill_fetch(git_fetch_options *fo, struct gitstore *g)
{
	gitauth_prepare(&g->auth, &fo->callbacks, &fo->custom_headers);
	fo->callbacks.transfer_progress = on_fetch_progress;
	fo->callbacks.sideband_progress = on_fetch_sideband;
	fo->download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	/* credentials stay with their origin: a Git host's redirect is never followed */
	fo->follow_redirects = GIT_REMOTE_REDIRECT_NONE;
}

static int lookup_remote_oid(git_oid *out, git_repository *repo, const char *branch)
{
	char name[1024];

	snprintf(name, sizeof(name), "refs/remotes/origin/%s", branch);
	return git_reference_name_to_id(out, repo, name);
}

/* HEAD's tree (libgit2 1.5 leaks when revparse meets a missing commit: lookups only). */
static int head_tree(git_tree **out, struct gitstore *g)
{
	git_oid id;
	git_commit *c = NULL;
	int rc;

	*out = NULL;
	if ((rc = git_reference_name_to_id(&id, g->repo, "HEAD")) == 0 &&
	    (rc = git_commit_lookup(&c, g->repo, &id)) == 0)
		rc = git_commit_tree(out, c);
	git_commit_free(c);
	return rc;
}

/* Directories read again from a saved walk beyond which a new full walk refreshes it: each
 * pass moves the few directories it writes to, and those stay moved against the saved data. */
#define DIRS_MOVED_MAX 64

/* Saves g->dirs, when this open has them, for the next open (gitwalk_dirs_save): after each
 * index write of gitstore's own. */
static void save_dirs(struct gitstore *g, git_index *index)
{
	struct buf path = BUF_INIT;

	if (g->dirs && buf_printf(&path, "%s/.git/imageguard-dirs", g->dir) == 0)
		gitwalk_dirs_save(g->dirs, path.data, git_index_checksum(index));
	buf_release(&path);
}

/* "<index checksum> <tree>\n": the index whose content is exactly that tree. */
#define INDEX_TREE_LEN (2 * GIT_OID_HEXSZ + 2)

static void index_tree_line(char out[INDEX_TREE_LEN + 1], git_index *index, const git_oid *tree)
{
	git_oid_fmt(out, git_index_checksum(index));
	out[GIT_OID_HEXSZ] = ' ';
	git_oid_fmt(out + GIT_OID_HEXSZ + 1, tree);
	out[INDEX_TREE_LEN - 1] = '\n';
	out[INDEX_TREE_LEN] = '\0';
}

/* Records, in .git/imageguard-tree, that the index as just written is exactly tree: after
 * gitstore's own index writes that make it so (the sync's files, a commit's staging) and
 * after a clean check that compared them. The next clean check then skips comparing HEAD's
 * tree with the index, which reads and hashes every tree of the checkout (15% of a pass's
 * instructions at 5,000 directories). Anything else that writes the index changes its
 * checksum, and the comparison is made again. Best effort: a failure only costs that. */
static void save_index_tree(struct gitstore *g, git_index *index, const git_oid *tree)
{
	struct buf path = BUF_INIT;
	char line[INDEX_TREE_LEN + 1];

	index_tree_line(line, index, tree);
	if (buf_printf(&path, "%s/.git/imageguard-tree", g->dir) == 0)
		safefile_write_cache(path.data, line, INDEX_TREE_LEN);
	buf_release(&path);
}

/* Whether .git/imageguard-tree says the index, as read, is exactly tree (save_index_tree):
 * its bytes are compared, never parsed. */
static bool index_is_tree(struct gitstore *g, git_index *index, const git_oid *tree)
{
	struct buf path = BUF_INIT;
	char want[INDEX_TREE_LEN + 1], got[INDEX_TREE_LEN + 1];
	ssize_t n = -1;
	int fd;

	index_tree_line(want, index, tree);
	if (buf_printf(&path, "%s/.git/imageguard-tree", g->dir) == 0 &&
	    (fd = open(path.data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		n = read(fd, got, sizeof(got));
		close(fd);
	}
	buf_release(&path);
	return n == INDEX_TREE_LEN && memcmp(got, want, INDEX_TREE_LEN) == 0;
}

/* gitwalk's answer for the whole tree: from the directories the last open saved when they
 * hold for this index (one lookup per file and per directory, only moved directories read),
 * else from a full walk. Sets g->dirs; *hashed: racy files found unchanged by content. */
static int walk_changes(struct gitstore *g, struct strvec *changed, bool *undecided, size_t *hashed,
                        git_index *index, const char *index_file)
{
	struct buf path = BUF_INIT;
	int rc;

	if (buf_printf(&path, "%s/.git/imageguard-dirs", g->dir) == 0 &&
	    gitwalk_dirs_load(&g->dirs, path.data, git_index_checksum(index)) == 0) {
		rc = gitwalk_changes_since(changed, undecided, hashed, g->dirs, index, g->workdir,
		                           index_file);
		if (rc == 0 && !*undecided && gitwalk_dirs_moved(g->dirs) <= DIRS_MOVED_MAX) {
			buf_release(&path);
			return 0;
		}
		strvec_release(changed);
		gitwalk_dirs_free(g->dirs);
		g->dirs = NULL;
	}
	buf_release(&path);
	return gitwalk_changes(changed, undecided, hashed, &g->dirs, index, g->workdir, index_file);
}

/* The fast path of tree_is_clean: Git's index is HEAD's tree and stat data finds every file as
 * indexed and nothing else (gitwalk). false: not shown clean, libgit2's status decides. */
static bool fast_clean(struct gitstore *g)
{
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	struct strvec changed = STRVEC_INIT;
	struct buf file = BUF_INIT;
	bool undecided = true;
	size_t hashed = 0;

	gitwalk_dirs_free(g->dirs);
	g->dirs = NULL;
	if (git_repository_index(&index, g->repo) == 0 && git_index_read(index, 0) == 0 &&
	    head_tree(&tree, g) == 0 &&
	    (index_is_tree(g, index, git_tree_id(tree)) ||
	     (git_diff_tree_to_index(&diff, g->repo, tree, index, NULL) == 0 &&
	      git_diff_num_deltas(diff) == 0)) &&
	    buf_printf(&file, "%s/.git/index", g->dir) == 0 &&
	    walk_changes(g, &changed, &undecided, &hashed, index, file.data) < 0)
		undecided = true;
	undecided = undecided || changed.len > 0;
	/* racy files found unchanged by content: an index written after them settles them, as
	 * libgit2's status does for the files it hashes */
	if (!undecided && hashed && git_index_write(index) < 0)
		undecided = true;
	if (undecided) {
		gitwalk_dirs_free(g->dirs);
		g->dirs = NULL;
	} else {
		save_index_tree(g, index, git_tree_id(tree));
	}
	save_dirs(g, index);
	strvec_release(&changed);
	buf_release(&file);
	git_diff_free(diff);
	git_tree_free(tree);
	git_index_free(index);
	return !undecided;
}

/* True when index and work tree are exactly HEAD (no change, no untracked file). One walk of
 * the work tree: cheaper than the two of a hard reset plus untracked removal, and it also
 * catches damage from outside (a truncated index fails here and takes the full path).
 * libgit2's status writes back the stat data of the files it had to hash and found unchanged:
 * a checkout's last files share the index file's timestamp (the kernel's coarse clock), so
 * without it every later pass found them racy and hashed all 5,000 files again. */
static bool tree_is_clean(struct gitstore *g)
{
	git_status_options so;
	git_status_list *list = NULL;
	bool clean;

	if (fast_clean(g))
		return true;
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
	           GIT_STATUS_OPT_UPDATE_INDEX;
	clean =
	    git_status_list_new(&list, g->repo, &so) == 0 && git_status_list_entrycount(list) == 0;
	git_status_list_free(list);
	return clean;
}

/* A diff of at most this many paths, each a file whose content alone changed, is written by
 * write_changes; beyond, libgit2's checkout. */
#define WRITE_CHANGES_MAX 64

/* A file whose content alone differs between two trees (content_changes). */
struct content_change {
	char *path;
	git_oid id;
};

#define CHANGES_DEPTH_MAX 256 /* directories deep, beyond which libgit2's checkout decides */

static bool is_blob_mode(git_filemode_t m)
{
	return m == GIT_FILEMODE_BLOB || m == GIT_FILEMODE_BLOB_EXECUTABLE;
}

/* The files whose content alone differs between trees a and b (same names, each of the same
 * kind and mode), at most WRITE_CHANGES_MAX, appended to out[*n] with their paths under
 * prefix: 1; 0 when they differ otherwise (a file added, removed, of another mode or kind) or
 * in more files; <0 on a read failure. A subtree of one id on both sides is skipped unread:
 * libgit2's tree-to-tree diff reads every tree of both (5,000 directories in
 * bench/git_reconcile.sh, for the one file another writer changed). */
static int content_changes(git_repository *repo, const git_tree *a, const git_tree *b,
                           struct buf *prefix, unsigned depth, struct content_change *out,
                           size_t *n)
{
	size_t count = git_tree_entrycount(a), at = prefix->len;
	int rc = 1;

	if (count != git_tree_entrycount(b) || depth > CHANGES_DEPTH_MAX)
		return 0;
	for (size_t i = 0; rc == 1 && i < count; i++) {
		const git_tree_entry *ea = git_tree_entry_byindex(a, i);
		const git_tree_entry *eb = git_tree_entry_byindex(b, i);
		git_filemode_t ma = git_tree_entry_filemode(ea);
		git_tree *sa = NULL, *sb = NULL;

		/* both in Git's order: the same names and kinds at the same places */
		if (ma != git_tree_entry_filemode(eb) ||
		    strcmp(git_tree_entry_name(ea), git_tree_entry_name(eb)) != 0)
			return 0;
		if (git_oid_equal(git_tree_entry_id(ea), git_tree_entry_id(eb)))
			continue;
		if (buf_printf(prefix, "%s%s", git_tree_entry_name(ea),
		               ma == GIT_FILEMODE_TREE ? "/" : "") < 0)
			return -1;
		if (ma == GIT_FILEMODE_TREE) {
			if ((rc = git_tree_lookup(&sa, repo, git_tree_entry_id(ea))) == 0 &&
			    (rc = git_tree_lookup(&sb, repo, git_tree_entry_id(eb))) == 0)
				rc = content_changes(repo, sa, sb, prefix, depth + 1, out, n);
			git_tree_free(sa);
			git_tree_free(sb);
		} else if (!is_blob_mode(ma) || *n >= WRITE_CHANGES_MAX) {
			rc = 0;
		} else if (!(out[*n].path = strdup(prefix->data))) {
			rc = -1;
		} else {
			git_oid_cpy(&out[(*n)++].id, git_tree_entry_id(eb));
		}
		prefix->len = at; /* the name appended above (data is set: it was appended to) */
		prefix->data[at] = '\0';
	}
	return rc;
}

/* Replaces one file with its new blob (safefile: no link followed, an O_EXCL temporary and a
 * rename) and stages it. Staging hashes the file under the pinned raw attributes (gitraw), so
 * the index entry must name that blob: anything else is a failure. */
static int write_change(struct gitstore *g, git_index *index, const struct content_change *c)
{
	const git_index_entry *e;
	git_blob *blob = NULL;
	int rc;

	if ((rc = git_blob_lookup(&blob, g->repo, &c->id)) < 0)
		return rc;
	rc = safefile_replace(g->workdir, c->path, git_blob_rawcontent(blob),
	                      (size_t)git_blob_rawsize(blob), &(struct error)ERROR_INIT);
	git_blob_free(blob);
	if (rc < 0 || (rc = git_index_add_bypath(index, c->path)) < 0)
		return rc;
	e = git_index_get_bypath(index, c->path, 0);
	return e && git_oid_equal(&e->id, &c->id) ? 0 : -1;
}

/* The checkout from a clean HEAD (old) to commit when they differ in the content of a few
 * files (the usual pass: another writer's commit, or the remote back at a base): each file
 * written and staged, the index written once. libgit2's checkout compares the whole work
 * tree with the target, every directory read (5,000 of them in bench/git_reconcile.sh), and
 * leaves the clean check's directories stale, so the commit's staging read them all again;
 * here they stay (the directories written to have moved, and are read again). Returns 1
 * done, 0 not a diff for this path, <0 a failure midway (the caller resets hard). */
static int write_changes(struct gitstore *g, git_commit *old, git_commit *commit)
{
	git_tree *from = NULL, *to = NULL;
	git_index *index = NULL;
	struct content_change changes[WRITE_CHANGES_MAX];
	struct buf prefix = BUF_INIT;
	size_t n = 0;
	int rc;

	if ((rc = git_commit_tree(&from, old)) < 0 || (rc = git_commit_tree(&to, commit)) < 0)
		goto done;
	rc = content_changes(g->repo, from, to, &prefix, 0, changes, &n);
	if (rc != 1 || n == 0 || (rc = git_repository_index(&index, g->repo)) < 0)
		goto done;
	for (size_t i = 0; rc >= 0 && i < n; i++)
		rc = write_change(g, index, &changes[i]);
	if (rc >= 0 && (rc = git_index_write(index)) == 0) {
		save_dirs(g, index);
		save_index_tree(g, index, git_tree_id(to));
		rc = 1;
	}
done:
	if (rc == 1)
		log_debug("git.sync", "'%s': %zu file(s) written", g->auth.url_safe, n);
	for (size_t i = 0; i < n; i++)
		free(changes[i].path);
	buf_release(&prefix);
	git_index_free(index);
	git_tree_free(to);
	git_tree_free(from);
	return rc;
}

/* Makes the work tree and index exactly `commit`: from a clean HEAD (old) the few changed
 * files written directly (write_changes) or a checkout that touches only the paths that
 * differ, else a hard reset plus removal of untracked files (git_reset forces plain
 * GIT_CHECKOUT_FORCE: stray files need a second pass). */
static int make_tree(struct gitstore *g, git_object *commit, git_object *old, struct error *err)
{
	git_checkout_options co;
	git_tree *baseline = NULL;
	int rc;

	/* g->dirs: the clean check was gitwalk's, so index and work tree are exactly old */
	if (old && g->dirs &&
	    (rc = write_changes(g, (git_commit *)old, (git_commit *)commit)) != 0) {
		if (rc == 1)
			return 0;
		old = NULL; /* written in part: the hard reset below makes it whole */
	}
	gitwalk_dirs_free(g->dirs); /* the checkout moves files: the clean check's view is old */
	g->dirs = NULL;
	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	if (old && (rc = git_commit_tree(&baseline, (git_commit *)old)) == 0) {
		co.baseline = baseline;
		rc = git_checkout_tree(g->repo, commit, &co);
		git_tree_free(baseline);
	} else {
		g->epoch++; /* every file rewritten: caches of the work tree no longer hold */
		co.checkout_strategy |= GIT_CHECKOUT_REMOVE_UNTRACKED;
		/* libgit2 1.5's reset writes through a link (a directory of the clone replaced by
		 * one out of it) and blocks on a FIFO: neither may stay in the work tree */
		if (gitwalk_remove_specials(g->workdir) < 0)
			return error_set(
			    err, IG_EFAIL,
			    "'%s': git reset: cannot remove the links and special files "
			    "of the work tree",
			    g->auth.url_safe);
		if ((rc = git_reset(g->repo, commit, GIT_RESET_HARD, NULL)) == 0)
			rc = git_checkout_head(g->repo, &co);
	}
	return rc < 0 ? local_error(g, rc, "git reset", err) : 0;
}

/* True when a line is a trailer ("Token: value", the token letters, digits and '-') or a
 * trailer's continuation (leading white space). */
static bool is_trailer_line(const char *s, size_t n)
{
	size_t i = 0;

	if (n > 0 && (s[0] == ' ' || s[0] == '\t'))
		return true;
	while (i < n && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
	                 (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
		i++;
	return i > 0 && i + 1 < n && s[i] == ':' && s[i + 1] == ' ';
}

/* True when a commit message is imageguard's own: its final paragraph is a trailer block with
 * an `Imageguard-Policy:` line (commitmsg_render writes it; outside text is escaped there, so
 * no value can forge one). */
static bool is_own_message(const char *msg)
{
	size_t len = strlen(msg), start, i;
	bool policy = false;

	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
		len--;
	for (start = len; start >= 2 && !(msg[start - 1] == '\n' && msg[start - 2] == '\n');
	     start--)
		;
	if (start < 2) /* a subject alone is no trailer block */
		return false;
	for (i = start; i < len;) {
		const char *nl = memchr(msg + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (msg + i)) : len - i;

		if (!is_trailer_line(msg + i, n))
			return false;
		policy |= n > 19 && strncmp(msg + i, "Imageguard-Policy: ", 19) == 0;
		i += n + 1;
	}
	return policy;
}

/* imageguard's own commit: its trailers (is_own_message) and imageguard's committer, so that a
 * person's amend or cherry-pick of one (committer: the person) counts as a person's. */
static bool is_own_commit(const struct gitstore *g, const git_commit *c)
{
	const git_signature *who = git_commit_committer(c);

	return who && who->name && who->email && strcmp(who->name, g->author_name) == 0 &&
	       strcmp(who->email, g->author_email) == 0 && is_own_message(git_commit_message(c));
}

/* Whether every commit the push branch (tip) has beyond the checkout branch (base) is
 * imageguard's own. Returns 1 all own (*count of them), 0 a person's is among them, <0. */
static int push_branch_is_own(struct gitstore *g, const git_oid *tip, const git_oid *base,
                              size_t *count, struct error *err)
{
	git_revwalk *walk = NULL;
	git_oid id;
	int rc;

	*count = 0;
	if ((rc = git_revwalk_new(&walk, g->repo)) < 0 || (rc = git_revwalk_push(walk, tip)) < 0 ||
	    (rc = git_revwalk_hide(walk, base)) < 0) {
		rc = local_error(g, rc, "git log", err);
		goto done;
	}
	while ((rc = git_revwalk_next(&id, walk)) == 0) {
		git_commit *c = NULL;
		bool own;

		if (++*count > OWN_WALK_MAX || (rc = git_commit_lookup(&c, g->repo, &id)) < 0) {
			rc = rc < 0 ? local_error(g, rc, "git log", err) : 0;
			goto done;
		}
		own = is_own_commit(g, c);
		git_commit_free(c);
		if (!own) {
			rc = 0;
			goto done;
		}
	}
	rc = rc == GIT_ITEROVER ? 1 : local_error(g, rc, "git log", err);
done:
	git_revwalk_free(walk);
	return rc;
}

/* The base commit: the checkout branch's head; with a separate push branch on the remote,
 * that branch rebuilt on the checkout head when its own commits are all imageguard's
 * (g->rebuild), else the push branch's head (a person's commits are kept: appended to). */
static int choose_base(struct gitstore *g, git_oid *base, struct error *err)
{
	git_oid push_tip;
	size_t own = 0;
	int rc;

	g->rebuild = false;
	if (lookup_remote_oid(base, g->repo, g->branch) < 0) {
		if (lookup_remote_oid(base, g->repo, g->push_branch) == 0)
			return 0;
		return error_set(err, IG_ENOTFOUND, "git '%s': branch '%s' not found on the remote",
		                 g->auth.url_safe, g->branch);
	}
	if (strcmp(g->branch, g->push_branch) == 0 ||
	    lookup_remote_oid(&push_tip, g->repo, g->push_branch) < 0)
		return 0;
	if ((rc = push_branch_is_own(g, &push_tip, base, &own, err)) < 0)
		return rc;
	if (rc == 0) {
		log_warn(
		    "git.push-branch.person",
		    "'%s' branch '%s': a person has added commits to the push branch; imageguard "
		    "appends to it instead of rebuilding it on '%s'",
		    g->auth.url_safe, g->push_branch, g->branch);
		git_oid_cpy(base, &push_tip);
		return 0;
	}
	if (own > 0) { /* none beyond: a fast-forward from the checkout head, no rebuild */
		g->rebuild = true;
		git_oid_cpy(&g->push_seen, &push_tip);
		log_info(
		    "git.push-branch.rebuild",
		    "'%s' branch '%s': %zu commit(s) of imageguard beyond '%s', rebuilding on it",
		    g->auth.url_safe, g->push_branch, own, g->branch);
	}
	return 0;
}

/* Points the local push branch at the base (choose_base) and makes the work tree exactly that
 * commit: no stray files. */
static int sync_to_base(struct gitstore *g, struct error *err)
{
	git_oid base, head;
	git_object *commit = NULL, *old = NULL;
	git_reference *ref = NULL;
	char name[1024];
	bool clean;
	int rc = 0;

	if ((rc = choose_base(g, &base, err)) < 0)
		goto done;
	clean = git_reference_name_to_id(&head, g->repo, "HEAD") == 0 && tree_is_clean(g);
	if (clean && git_object_lookup(&old, g->repo, &head, GIT_OBJECT_COMMIT) < 0)
		old = NULL;
	snprintf(name, sizeof(name), "refs/heads/%s", g->push_branch);
	if ((rc = git_object_lookup(&commit, g->repo, &base, GIT_OBJECT_COMMIT)) < 0 ||
	    (rc = git_reference_create(&ref, g->repo, name, &base, 1, "imageguard: sync")) < 0 ||
	    (rc = git_repository_set_head(g->repo, name)) < 0) {
		rc = local_error(g, rc, "git reset", err);
		goto done;
	}
	if (!(clean && git_oid_equal(&head, &base)) && (rc = make_tree(g, commit, old, err)) < 0)
		goto done;
	git_repository_state_cleanup(g->repo);
	git_oid_tostr(g->head, sizeof(g->head), &base);
done:
	git_reference_free(ref);
	git_object_free(old);
	git_object_free(commit);
	return rc;
}

/* Deletes a remote-tracking ref so that after a fetch its presence says the remote has it. */
static void forget_remote_ref(git_repository *repo, const char *branch)
{
	git_reference *ref = NULL;
	char name[1024];

	snprintf(name, sizeof(name), "refs/remotes/origin/%s", branch);
	if (git_reference_lookup(&ref, repo, name) == 0)
		git_reference_delete(ref);
	git_reference_free(ref);
}

/* An anonymous remote for url, skipping insteadOf rewriting: the URL in the configuration is
 * the one to use (and libgit2 1.5 leaks pcre2 match data on that lookup). */
static int remote_new(git_remote **out, git_repository *repo, const char *name, const char *url)
{
	git_remote_create_options ro;

	git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
	ro.repository = repo;
	ro.name = name;
	ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF |
	           (name ? 0 : GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC);
	return git_remote_create_with_opts(out, url, &ro);
}

static int clone_remote(git_remote **out, git_repository *repo, const char *name, const char *url,
                        void *payload)
{
	(void)payload;
	return remote_new(out, repo, name, url);
}

static int fetch(struct gitstore *g, struct error *err)
{
	git_fetch_options fo;
	git_remote *remote = NULL;
	char spec1[1024], spec2[1024];
	char *specs[2] = {spec1, spec2};
	git_strarray refspecs = {specs, 1};
	int rc;

	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	snprintf(spec1, sizeof(spec1), "+refs/heads/%s:refs/remotes/origin/%s", g->branch,
	         g->branch);
	if (strcmp(g->branch, g->push_branch) != 0) {
		snprintf(spec2, sizeof(spec2), "+refs/heads/%s:refs/remotes/origin/%s",
		         g->push_branch, g->push_branch);
		refspecs.count = 2;
		forget_remote_ref(g->repo, g->push_branch);
	}
	fill_fetch(&fo, g);
	if ((rc = gitauth_begin(&g->auth, err)) < 0)
		return rc;
	if ((rc = remote_new(&remote, g->repo, NULL, g->auth.url_safe)) < 0 ||
	    (rc = git_remote_fetch(remote, &refspecs, &fo, "imageguard: fetch")) < 0)
		rc = local_error(g, rc, "git fetch", err);
	gitauth_end(&g->auth);
	git_remote_free(remote);
	return rc;
}

/* Clones into a temp dir next to the cache and renames it into place: a killed clone leaves
 * only a *.tmp-* dir, which the next open removes. */
/* The clone's first checkout, once its attributes are pinned (gitraw): every file is its
 * blob's bytes, whatever the tree's .gitattributes say (CONTRACT §5). */
static int checkout_raw(struct gitstore *g, git_repository *repo, const char *dir,
                        struct error *err)
{
	git_checkout_options co;
	bool changed;
	int rc;

	if ((rc = gitraw_pin(&changed, dir, err)) < 0)
		return rc;
	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	if ((rc = git_checkout_head(repo, &co)) < 0)
		return local_error(g, rc, "git checkout", err);
	return 0;
}

static int clone_fresh(struct gitstore *g, const char *tmp, struct error *err)
{
	git_clone_options co;
	git_repository *repo = NULL;
	int rc;

	git_clone_options_init(&co, GIT_CLONE_OPTIONS_VERSION);
	co.checkout_branch = g->branch;
	co.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE; /* checkout_raw, below */
	co.remote_cb = clone_remote;
	fill_fetch(&co.fetch_opts, g);
	co.fetch_opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	remove_tree(tmp);
	if ((rc = gitauth_begin(&g->auth, err)) < 0)
		return rc;
	/* libgit2 writes the URL it is given into reflogs ("clone: from URL"), FETCH_HEAD and the
	 * config: it gets the one without credentials, which the callback supplies instead */
	rc = git_clone(&repo, g->auth.url_safe, tmp, &co);
	gitauth_end(&g->auth);
	if (rc < 0) {
		rc = gitauth_error(&g->auth, rc, "git clone", err);
		if (rc == IG_ENOTFOUND || strstr(err->msg, "reference 'refs/remotes/origin/"))
			error_set(err, IG_ENOTFOUND,
			          "git clone '%s': branch '%s' not found on the remote",
			          g->auth.url_safe, g->branch);
		goto done;
	}
	if ((rc = checkout_raw(g, repo, tmp, err)) < 0)
		goto done;
	git_repository_free(repo);
	repo = NULL;
	if (rename(tmp, g->dir) != 0)
		rc = error_set(err, IG_EFAIL, "git cache '%s': cannot move clone into place: %s",
		               g->dir, strerror(errno));
done:
	git_repository_free(repo);
	if (rc < 0)
		remove_tree(tmp);
	return rc;
}

/* Network and credential failures say nothing about the cache: keep it. Anything else
 * (unreadable repository, missing objects, locks) means the cache is broken. */
static bool is_remote_failure(int ig_code, const struct gitauth *a)
{
	const git_error *ge = git_error_last();

	if (a->cb_err.code || ig_code == IG_EAUTH)
		return true;
	return ge && (ge->klass == GIT_ERROR_NET || ge->klass == GIT_ERROR_SSH ||
	              ge->klass == GIT_ERROR_HTTP || ge->klass == GIT_ERROR_SSL ||
	              ge->klass == GIT_ERROR_CALLBACK);
}

static int entry_present(const char *root, const git_tree_entry *e, void *payload)
{
	(void)root;
	/* a gitlink names a commit of another repository: not ours to have */
	if (git_tree_entry_type(e) == GIT_OBJECT_COMMIT)
		return 0;
	return git_odb_exists(payload, git_tree_entry_id(e)) ? 0 : -1;
}

/* Every object of the head's tree is in the cache: a lost blob would otherwise surface only
 * when a commit rebuilds its tree ("invalid object specified"), on every pass. One walk of
 * the tree with existence checks (no object is read but trees). */
static int check_objects(struct gitstore *g, const git_oid *id, struct error *err)
{
	char hex[GIT_OID_HEXSZ + 1];
	git_odb *odb = NULL;
	git_commit *c = NULL;
	git_tree *tree = NULL;
	int rc;

	git_oid_tostr(hex, sizeof(hex), id);
	if ((rc = git_repository_odb(&odb, g->repo)) < 0 ||
	    (rc = git_commit_lookup(&c, g->repo, id)) < 0 || (rc = git_commit_tree(&tree, c)) < 0) {
		rc = local_error(g, rc, "git cache check", err);
		goto done;
	}
	if (git_tree_walk(tree, GIT_TREEWALK_PRE, entry_present, odb) != 0)
		rc = error_set(err, IG_EFAIL, "git cache '%s': objects of %s are missing", g->dir,
		               hex);
done:
	git_tree_free(tree);
	git_commit_free(c);
	git_odb_free(odb);
	return rc;
}

/* Before a fetch, the cache's HEAD commit and root tree (a name lookup only: libgit2 1.5 leaks
 * when revparse meets a missing commit; the negotiation walks commits); after the sync, every
 * object of the synced head's tree (check_objects): the blobs are checked once per open, on
 * the tree the pass works on. */
static int check_head(struct gitstore *g, bool synced, struct error *err)
{
	git_oid id;
	git_commit *c = NULL;
	git_tree *tree = NULL;
	int rc =
	    synced ? git_oid_fromstr(&id, g->head) : git_reference_name_to_id(&id, g->repo, "HEAD");

	if (rc < 0)
		return local_error(g, rc, "git cache check", err);
	if (synced)
		return check_objects(g, &id, err);
	if ((rc = git_commit_lookup(&c, g->repo, &id)) == 0)
		rc = git_commit_tree(&tree, c);
	git_tree_free(tree);
	git_commit_free(c);
	return rc < 0 ? local_error(g, rc, "git cache check", err) : 0;
}

static int refresh_cache(struct gitstore *g, bool *broken, struct error *err)
{
	bool changed;
	int rc;

	*broken = true;
	remove_stale_locks(g->dir);
	if ((rc = git_repository_open_ext(&g->repo, g->dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL)) <
	    0)
		return gitauth_error(&g->auth, rc, "git cache open", err);
	if (git_repository_is_bare(g->repo))
		return error_set(err, IG_EFAIL, "git cache '%s': is bare", g->dir);
	/* a cache checked out before its attributes were pinned may hold converted files, which
	 * nothing short of a new checkout of every file rewrites: a new clone */
	if ((rc = gitraw_pin(&changed, g->dir, err)) < 0 || changed)
		return rc < 0 ? rc
		              : error_set(err, IG_EFAIL,
		                          "git cache '%s': checked out under the tree's attributes",
		                          g->dir);
	/* before the fetch too: its negotiation walks the local history (and libgit2 1.5 leaks
	 * there when a commit is missing) */
	if ((rc = check_head(g, false, err)) < 0)
		return rc;
	if ((rc = fetch(g, err)) < 0) {
		*broken = !is_remote_failure(rc, &g->auth);
		return rc;
	}
	log_debug("git.fetch", "'%s' branch '%s' fetched", g->auth.url_safe, g->branch);
	if ((rc = sync_to_base(g, err)) < 0) {
		/* a branch the remote does not have (a typo) is the configuration's fault, not the
		 * cache's: say so, and keep the cache rather than recloning it on every pass (a
		 * missing object met on the way is the cache's) */
		*broken = rc != IG_ENOTFOUND || g->damaged;
		return rc;
	}
	return check_head(g, true, err);
}

static int open_cache(struct gitstore *g, const char *gitdir, const char *key, struct error *err)
{
	struct buf tmp = BUF_INIT;
	bool broken = false;
	int rc;

	if ((rc = buf_printf(&tmp, "%s/%s.tmp-%ld", gitdir, key, (long)getpid())) < 0)
		return oom(err);
	remove_leftovers(gitdir, key);
	if (access(g->dir, F_OK) == 0) {
		if ((rc = refresh_cache(g, &broken, err)) == 0 || !broken)
			goto done;
		log_warn("git.cache.recover", "cache '%s' unusable, recloning: %s", g->dir,
		         err->msg);
		git_repository_free(g->repo);
		g->repo = NULL;
		error_clear(err);
		if (remove_tree(g->dir) != 0) {
			rc = error_set(err, IG_EFAIL, "git cache '%s': cannot remove: %s", g->dir,
			               strerror(errno));
			goto done;
		}
	}
	log_info("git.clone", "cloning '%s' branch '%s'", g->auth.url_safe, g->branch);
	if ((rc = clone_fresh(g, tmp.data, err)) < 0)
		goto done;
	if ((rc = git_repository_open_ext(&g->repo, g->dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL)) <
	    0) {
		rc = gitauth_error(&g->auth, rc, "git cache open", err);
		goto done;
	}
	rc = sync_to_base(g, err);
done:
	buf_release(&tmp);
	return rc;
}

/* The caches this process holds. flock belongs to the open file, so a second open of a held
 * cache in this process would wait as another process does: for ever when the waiting thread
 * is the holder (two automations of one pass on one cache, opened together). No pass opens a
 * cache twice at once, so that open is refused instead of waited for. */
struct held_lock {
	char *path;
	struct held_lock *next;
};
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static struct held_lock *held;

/* Adds path to the held caches; 1 when it was already there, -1 when out of memory. */
static int hold(const char *path)
{
	struct held_lock *h;
	int rc = 0;

	pthread_mutex_lock(&held_mu);
	for (h = held; h && strcmp(h->path, path) != 0; h = h->next)
		;
	if (h)
		rc = 1;
	else if (!(h = malloc(sizeof(*h))) || !(h->path = strdup(path))) {
		free(h);
		rc = -1;
	} else {
		h->next = held;
		held = h;
	}
	pthread_mutex_unlock(&held_mu);
	return rc;
}

static void release(const char *path)
{
	pthread_mutex_lock(&held_mu);
	for (struct held_lock **at = &held; *at; at = &(*at)->next)
		if (strcmp((*at)->path, path) == 0) {
			struct held_lock *h = *at;

			*at = h->next;
			free(h->path);
			free(h);
			break;
		}
	pthread_mutex_unlock(&held_mu);
}

/* The cache's lock, waited for in steps of up to LOCK_POLL_MS so that a stop (SIGTERM in
 * `run`, whose signals a thread of its own takes) ends the wait: a blocking flock would not
 * see it while another process holds the cache. */
#define LOCK_POLL_MS 100
static int lock_cache(struct gitstore *g, const char *gitdir, const char *key, struct error *err)
{
	struct buf path = BUF_INIT;
	long wait_ms = 5;
	int rc;

	if (buf_printf(&path, "%s/%s.lock", gitdir, key) < 0)
		return oom(err);
	if ((rc = hold(path.data)) != 0) {
		rc = rc < 0 ? oom(err)
		            : error_set(err, IG_EFAIL,
		                        "git cache '%s': already open in this process (a second "
		                        "user at once would wait for ever)",
		                        g->dir);
		buf_release(&path);
		return rc;
	}
	g->lock_path = buf_detach(&path);
	g->lock_fd = open(g->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (g->lock_fd < 0)
		return error_set(err, IG_EFAIL, "git cache lock '%s': %s", g->lock_path,
		                 strerror(errno));
	while (flock(g->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		struct timespec ts = {0, wait_ms * 1000000L};

		if (errno != EWOULDBLOCK && errno != EINTR)
			return error_set(err, IG_EFAIL, "git cache lock '%s': %s", g->lock_path,
			                 strerror(errno));
		if (g->stop && *g->stop)
			return error_set(err, IG_EFAIL, "git cache lock '%s': stopping",
			                 g->lock_path);
		nanosleep(&ts, NULL);
		wait_ms = wait_ms * 2 > LOCK_POLL_MS ? LOCK_POLL_MS : wait_ms * 2;
	}
	return 0;
}

static bool branch_is_valid(const char *name)
{
	int valid = 0;

	return git_branch_name_is_valid(&valid, name) == 0 && valid && strlen(name) < 900;
}

/* A refspec alone whose destination is another branch is that branch as the push branch
 * (CONTRACT §4): fetched, rebuilt or appended to like spec.git.push.branch, so the next pass
 * does not meet its own earlier commit as a non-fast-forward. */
static int refspec_as_push_branch(struct gitstore *g, const char *branch, const char *spec,
                                  struct error *err)
{
	char *b;

	if (!branch_is_valid(branch))
		return error_set(err, IG_EINVALID,
		                 "spec.git.push.refspec '%s': '%s' is not a valid branch name",
		                 spec, branch);
	if (!(b = strdup(branch)))
		return oom(err);
	free(g->push_branch);
	g->push_branch = b;
	g->refspec_only = false;
	return 0;
}

/* "SRC:DST" from the configuration as the refspec pushed: "refs/heads/<push>:DST". SRC must be
 * HEAD or the branch committed to, DST a ref under refs/; a forced refspec is refused. */
static int parse_refspec(struct gitstore *g, const char *spec, struct error *err)
{
	git_refspec *rs = NULL;
	const char *src, *dst;
	struct buf out = BUF_INIT;
	int rc = 0;

	if (spec[0] == '+')
		return error_set(
		    err, IG_EINVALID,
		    "spec.git.push.refspec '%s': forced; imageguard never forces a push", spec);
	if (git_refspec_parse(&rs, spec, 0) < 0)
		return error_set(err, IG_EINVALID,
		                 "spec.git.push.refspec '%s': not a valid refspec", spec);
	src = git_refspec_src(rs);
	dst = git_refspec_dst(rs);
	if (!src || !dst || strncmp(dst, "refs/", 5) != 0 || strchr(spec, '*')) {
		rc = error_set(err, IG_EINVALID,
		               "spec.git.push.refspec '%s': the destination must be a ref under "
		               "refs/",
		               spec);
		goto done;
	}
	if (strcmp(src, "HEAD") != 0 && strcmp(src, g->push_branch) != 0 &&
	    !(strncmp(src, "refs/heads/", 11) == 0 && strcmp(src + 11, g->push_branch) == 0)) {
		rc = error_set(err, IG_EINVALID,
		               "spec.git.push.refspec '%s': the source must be HEAD or the branch "
		               "committed to ('%s' or 'refs/heads/%s')",
		               spec, g->push_branch, g->push_branch);
		goto done;
	}
	if (g->refspec_only && strncmp(dst, "refs/heads/", 11) == 0 &&
	    strcmp(dst + 11, g->branch) != 0) {
		rc = refspec_as_push_branch(g, dst + 11, spec, err);
		goto done;
	}
	if (buf_printf(&out, "refs/heads/%s:%s", g->push_branch, dst) < 0) {
		rc = oom(err);
		goto done;
	}
	g->refspec = buf_detach(&out);
done:
	git_refspec_free(rs);
	return rc;
}

static int copy_options(struct gitstore *g, const struct gitstore_options *o, struct error *err)
{
	if (!o->url || !*o->url || !o->branch || !*o->branch || !o->state_dir || !*o->state_dir)
		return error_set(err, IG_EINVALID,
		                 "git store: url, branch and state dir are required");
	g->url = strdup(o->url);
	g->branch = strdup(o->branch);
	g->push_branch = dup_or(o->push_branch, o->branch);
	g->author_name = dup_or(o->author_name, "imageguard");
	g->author_email = dup_or(o->author_email, "imageguard@localhost");
	g->max_attempts = o->max_attempts ? o->max_attempts : 5;
	g->stop = o->stop;
	if (!g->url || !g->branch || !g->push_branch || !g->author_name || !g->author_email)
		return oom(err);
	if (o->signing_dir) {
		struct buf root = BUF_INIT;

		g->sign_dir = strdup(o->signing_dir);
		g->sign_name = dup_or(o->signing_name, o->signing_dir);
		if (buf_printf(&root, "%s/gnupg", o->state_dir) < 0 || !g->sign_dir ||
		    !g->sign_name) {
			buf_release(&root);
			return oom(err);
		}
		g->gnupg_root = buf_detach(&root);
	}
	if (!branch_is_valid(g->branch))
		return error_set(err, IG_EINVALID, "git branch '%s': not a valid branch name",
		                 g->branch);
	if (!branch_is_valid(g->push_branch))
		return error_set(err, IG_EINVALID, "git branch '%s': not a valid branch name",
		                 g->push_branch);
	g->refspec_only = o->push_refspec && o->refspec_only;
	return o->push_refspec ? parse_refspec(g, o->push_refspec, err) : 0;
}

int gitstore_open(struct gitstore **out, const struct gitstore_options *opts, struct error *err)
{
	struct gitstore *g = calloc(1, sizeof(*g));
	struct buf gitdir = BUF_INIT, key = BUF_INIT, dir = BUF_INIT;
	int rc;

	*out = NULL;
	if (!g)
		return oom(err);
	g->lock_fd = -1;
	git_libgit2_init();
	/* Objects read from the cache are not hashed again, as Git does not: every object came
	 * named by its hash (the indexer hashes a fetched pack, a loose object is written under
	 * its hash), and zlib's checksum still finds a damaged one. libgit2 hashes each object it
	 * reads by default: 18% of a pass's instructions at 5,000 directories, where the open's
	 * object check reads every tree. */
	git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
	if (gitstream_install() < 0) {
		rc = error_set(err, IG_EFAIL, "git: cannot register the network stream");
		goto done;
	}
	if ((rc = copy_options(g, opts, err)) < 0 ||
	    (rc = gitauth_load(&g->auth, opts->url, opts->secret_dir, err)) < 0 ||
	    (opts->provider && strcmp(opts->provider, "github") == 0 &&
	     (rc = gitauth_use_github_app(&g->auth, opts->secret_dir, err)) < 0))
		goto done;
	g->auth.stop = opts->stop; /* every Git wait: bounded, and ended by SIGTERM (gitstream) */
	g->auth.io_timeout_ms = opts->timeout_ms;
	if (buf_printf(&gitdir, "%s/git", opts->state_dir) < 0 ||
	    cache_key(&key, g->auth.url_safe) < 0 ||
	    buf_printf(&dir, "%s/%s", gitdir.data, key.data) < 0) {
		rc = oom(err);
		goto done;
	}
	/* caches of private repositories: files 0600, directories 0700, whatever libgit2 asks
	 * for (it creates 0644 files and 0755 directories). The umask is process-wide and only
	 * ever tightened here, so concurrent opens agree. */
	umask(umask(077) | 077);
	if (mkdir_p(gitdir.data) != 0 || chmod(gitdir.data, 0700) != 0) {
		rc = error_set(err, IG_EFAIL, "state dir '%s': %s", gitdir.data, strerror(errno));
		goto done;
	}
	g->dir = buf_detach(&dir);
	if (buf_printf(&dir, "%s/", g->dir) < 0) {
		rc = oom(err);
		goto done;
	}
	g->workdir = buf_detach(&dir);
	if ((rc = lock_cache(g, gitdir.data, key.data, err)) < 0 ||
	    (rc = open_cache(g, gitdir.data, key.data, err)) < 0)
		goto done;
	log_debug("git.open", "'%s' branch '%s' at %s", g->auth.url_safe, g->push_branch, g->head);
done:
	buf_release(&gitdir);
	buf_release(&key);
	buf_release(&dir);
	if (rc < 0)
		gitstore_free(g);
	else
		*out = g;
	return rc;
}

void gitstore_free(struct gitstore *g)
{
	if (!g)
		return;
	flight_join(g); /* a push in flight is finished, never cut */
	git_index_free(g->listed);
	gitwalk_dirs_free(g->dirs);
	git_repository_free(g->repo);
	gitauth_release(&g->auth);
	gitsign_free(g->signer);
	free(g->sign_dir);
	free(g->sign_name);
	free(g->gnupg_root);
	free(g->refspec);
	if (g->lock_fd >= 0)
		close(g->lock_fd); /* releases the flock */
	if (g->lock_path)
		release(g->lock_path);
	free(g->lock_path);
	free(g->url);
	free(g->branch);
	free(g->push_branch);
	free(g->author_name);
	free(g->author_email);
	free(g->dir);
	free(g->workdir);
	free(g);
	git_libgit2_shutdown();
}

const char *gitstore_workdir(const struct gitstore *g)
{
	return g->workdir;
}

const char *gitstore_head(const struct gitstore *g)
{
	return g->head;
}

const char *gitstore_dir(const struct gitstore *g)
{
	return g->dir;
}

uint64_t gitstore_worktree_epoch(const struct gitstore *g)
{
	return g->epoch;
}

int gitstore_list_index(struct gitstore_entry **out, size_t *n, struct gitstore *g,
                        struct error *err)
{
	struct gitstore_entry *f;
	size_t count, k = 0;

	*out = NULL;
	*n = 0;
	git_index_free(g->listed);
	g->listed = NULL;
	if (git_repository_index(&g->listed, g->repo) < 0)
		return error_set(err, IG_EFAIL, "'%s': Git's index is unreadable", g->dir);
	count = git_index_entrycount(g->listed);
	if (!(f = malloc((count ? count : 1) * sizeof(*f))))
		return oom(err);
	for (size_t i = 0; i < count; i++) {
		const git_index_entry *e = git_index_get_byindex(g->listed, i);

		if (!e || GIT_INDEX_ENTRY_STAGE(e) != 0)
			continue;
		f[k].path = e->path;
		memcpy(f[k].oid, e->id.id, GITSTORE_OID_LEN);
		f[k].mode = e->mode;
		k++;
	}
	*out = f;
	*n = k;
	return 0;
}

/* The paths an edit changed, as tree updates (paths owned). */
struct changes {
	git_tree_update *items;
	size_t len, cap;
};

static void changes_release(struct changes *c)
{
	for (size_t i = 0; i < c->len; i++)
		free((char *)c->items[i].path);
	free(c->items);
}

/* Records path's new state from the index entry (absent: removed). */
static int changes_add(struct changes *c, git_index *index, const char *path, bool removed)
{
	const git_index_entry *e = removed ? NULL : git_index_get_bypath(index, path, 0);
	git_tree_update *u;

	if (c->len == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		void *n = realloc(c->items, cap * sizeof(*c->items));

		if (!n)
			return -1;
		c->items = n;
		c->cap = cap;
	}
	u = &c->items[c->len];
	memset(u, 0, sizeof(*u));
	u->action = e ? GIT_TREE_UPDATE_UPSERT : GIT_TREE_UPDATE_REMOVE;
	if (e) {
		git_oid_cpy(&u->id, &e->id);
		u->filemode = (git_filemode_t)e->mode;
	}
	if (!(u->path = strdup(path)))
		return -1;
	c->len++;
	return 0;
}

/* Whether the work tree holds a directory at path (a file that became one: removed, and its
 * files staged on their own). */
static bool is_dir_at(struct gitstore *g, const char *path)
{
	struct buf full = BUF_INIT;
	struct stat st;
	bool dir = buf_printf(&full, "%s%s", g->workdir, path) == 0 && lstat(full.data, &st) == 0 &&
	           S_ISDIR(st.st_mode);

	buf_release(&full);
	return dir;
}

/* One path stat data found changed: staged as libgit2's status would show it (deleted,
 * untracked and not ignored, or modified in content or mode). Returns 1 staged, 0 not. */
static int stage_path(struct gitstore *g, git_index *index, const char *path, struct changes *out)
{
	const git_index_entry *e = git_index_get_bypath(index, path, 0);
	struct buf full = BUF_INIT;
	struct stat st;
	git_oid old_id;
	uint32_t old_mode = e ? e->mode : 0;
	bool exists;
	int rc, ignored = 0;

	if (buf_printf(&full, "%s%s", g->workdir, path) < 0)
		return IG_EFAIL;
	/* a directory where the index has a file: the file is gone, its new files come apart */
	exists = lstat(full.data, &st) == 0 && !S_ISDIR(st.st_mode);
	buf_release(&full);
	if (e)
		git_oid_cpy(&old_id, &e->id);
	if (!exists && !e)
		return 0;
	if (!exists)
		rc = git_index_remove_bypath(index, path);
	else if (!e && (rc = git_ignore_path_is_ignored(&ignored, g->repo, path)) == 0 && ignored)
		return 0;
	else
		rc = git_index_add_bypath(index, path);
	if (rc < 0)
		return rc;
	if (exists && e && (e = git_index_get_bypath(index, path, 0)) && e->mode == old_mode &&
	    git_oid_equal(&e->id, &old_id))
		return 0; /* touched, not changed */
	return changes_add(out, index, path, !exists) < 0 ? IG_EFAIL : 1;
}

/* Stages what gitwalk finds changed; 1 << 30 when it cannot decide (libgit2's status must). */
static int stage_fast(struct gitstore *g, git_index *index, struct changes *out)
{
	struct strvec changed = STRVEC_INIT;
	struct buf file = BUF_INIT;
	bool undecided = true;
	int rc = 0, staged = 0;

	if (buf_printf(&file, "%s/.git/index", g->dir) < 0)
		rc = IG_EFAIL;
	else if (g->dirs) /* the tree was found clean this open: look only where it moved */
		rc = gitwalk_changes_since(&changed, &undecided, NULL, g->dirs, index, g->workdir,
		                           file.data);
	else
		rc =
		    gitwalk_changes(&changed, &undecided, NULL, NULL, index, g->workdir, file.data);
	for (size_t i = 0; rc == 0 && !undecided && i < changed.len; i++)
		if ((rc = stage_path(g, index, changed.items[i], out)) > 0)
			staged++, rc = 0;
	strvec_release(&changed);
	buf_release(&file);
	return rc < 0 ? rc : undecided ? 1 << 30 : staged;
}

/* Stages exactly what the edit changed (the tree was clean before it ran) and lists it in
 * out. Returns the number of paths staged, or negative. */
static int stage_changes(struct gitstore *g, git_index *index, struct changes *out,
                         struct error *err)
{
	git_status_options so;
	git_status_list *list = NULL;
	size_t i, n;
	int rc, staged = 0;

	if ((rc = stage_fast(g, index, out)) != 1 << 30)
		return rc < 0 ? local_error(g, rc, "git stage", err) : rc;
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
	if ((rc = git_status_list_new(&list, g->repo, &so)) < 0)
		goto fail;
	n = git_status_list_entrycount(list);
	for (i = 0; i < n; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const char *path = e->index_to_workdir ? e->index_to_workdir->new_file.path : NULL;
		bool removed = (e->status & GIT_STATUS_WT_DELETED) ||
		               ((e->status & GIT_STATUS_WT_TYPECHANGE) && is_dir_at(g, path));

		if (!path)
			continue;
		if (removed)
			rc = git_index_remove_bypath(index, path);
		else
			rc = git_index_add_bypath(index, path);
		if (rc < 0)
			goto fail;
		if (changes_add(out, index, path, removed) < 0) {
			git_status_list_free(list);
			return oom(err);
		}
		staged++;
	}
	git_status_list_free(list);
	return staged;
fail:
	git_status_list_free(list);
	return local_error(g, rc, "git stage", err);
}

/* The commit's tree: the parent's with the staged paths replaced (the index is the parent's
 * tree plus them), so only the trees above them are built; libgit2's write of the whole
 * index would hash and look up every tree of the checkout. A change it cannot express (a
 * file that becomes a directory) takes the whole-index write. */
static int build_tree(git_oid *out, struct gitstore *g, git_index *index, const git_commit *parent,
                      const struct changes *c)
{
	git_tree *base = NULL;

	if (git_commit_tree(&base, parent) == 0 &&
	    git_tree_create_updated(out, g->repo, base, c->len, c->items) == 0) {
		git_tree_free(base);
		return 0;
	}
	git_tree_free(base);
	return git_index_write_tree(out, index);
}

/* A signing failure, naming the Secret (the signer's own words name its folder). */
static int sign_error(struct gitstore *g, int rc, const struct error *inner, struct error *err)
{
	return error_set(err, rc,
	                 "git commit: signing key secret '%s' "
	                 "(spec.git.commit.signingKey): %s; nothing is pushed",
	                 g->sign_name, inner->msg);
}

/* Moves the checked-out branch to id (HEAD points at it: sync_to_base set it). */
static int move_branch(struct gitstore *g, const git_oid *id, struct error *err)
{
	git_reference *ref = NULL;
	char name[1024];
	int rc;

	snprintf(name, sizeof(name), "refs/heads/%s", g->push_branch);
	rc = git_reference_create(&ref, g->repo, name, id, 1, "imageguard: commit (signed)");
	git_reference_free(ref);
	return rc < 0 ? local_error(g, rc, "git commit", err) : 0;
}

/* The commit of tree on parent, with an OpenPGP signature in its gpgsig header. */
static int create_signed(git_oid *out, struct gitstore *g, const git_signature *sig,
                         const char *message, const git_tree *tree, const git_commit *parent,
                         struct error *err)
{
	git_buf content = {0};
	struct buf asc = BUF_INIT_MAX(SIGNATURE_MAX);
	struct error inner = ERROR_INIT;
	int rc;

	if ((rc = git_commit_create_buffer(&content, g->repo, sig, sig, NULL, message, tree, 1,
	                                   &parent)) < 0) {
		rc = local_error(g, rc, "git commit", err);
		goto done;
	}
	if ((!g->signer &&
	     (rc = gitsign_new(&g->signer, g->sign_dir, g->gnupg_root, &inner)) < 0) ||
	    (rc = gitsign_sign(g->signer, content.ptr, content.size, &asc, &inner)) < 0) {
		rc = sign_error(g, rc, &inner, err);
		goto done;
	}
	if ((rc = git_commit_create_with_signature(out, g->repo, content.ptr, asc.data, "gpgsig")) <
	    0) {
		rc = local_error(g, rc, "git commit", err);
		goto done;
	}
	rc = move_branch(g, out, err);
done:
	git_buf_dispose(&content);
	buf_release(&asc);
	return rc;
}

static int commit(git_oid *out, struct gitstore *g, const char *message, struct error *err)
{
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_commit *parent = NULL;
	git_signature *sig = NULL;
	struct changes changes = {0};
	git_oid tree_id, head_id;
	int rc, staged;

	if ((rc = git_repository_index(&index, g->repo)) < 0)
		goto fail;
	if ((staged = stage_changes(g, index, &changes, err)) <= 0) {
		rc = staged;
		goto done;
	}
	if ((rc = git_reference_name_to_id(&head_id, g->repo, "HEAD")) < 0 ||
	    (rc = git_commit_lookup(&parent, g->repo, &head_id)) < 0 ||
	    (rc = build_tree(&tree_id, g, index, parent, &changes)) < 0 ||
	    (rc = git_index_write(index)) < 0)
		goto fail;
	save_dirs(g, index);
	save_index_tree(g, index, &tree_id); /* the parent's tree and the paths staged */
	if ((rc = git_tree_lookup(&tree, g->repo, &tree_id)) < 0 ||
	    (rc = git_signature_now(&sig, g->author_name, g->author_email)) < 0)
		goto fail;
	if (g->sign_dir) {
		rc = create_signed(out, g, sig, message, tree, parent, err);
		rc = rc < 0 ? rc : 1;
		goto done;
	}
	if ((rc = git_commit_create(out, g->repo, "HEAD", sig, sig, NULL, message, tree, 1,
	                            (const git_commit **)&parent)) < 0)
		goto fail;
	log_debug("git.commit.write", "'%s': %d path(s) staged", g->auth.url_safe, staged);
	rc = 1;
	goto done;
fail:
	rc = local_error(g, rc, "git commit", err);
done:
	changes_release(&changes);
	git_signature_free(sig);
	git_commit_free(parent);
	git_tree_free(tree);
	git_index_free(index);
	return rc;
}

/* After a per-ref refusal: fetches and tells whether the base moved on the remote. The
 * refusal's words are never read (servers word "non-fast-forward", "fetch first", a lost ref
 * lock... each their own way): moved is the same race, whatever was said; not moved is the
 * server's own refusal. Returns 1 moved, 0 not, <0. */
static int base_moved(struct gitstore *g, struct error *err)
{
	git_oid base;
	char hex[GIT_OID_HEXSZ + 1];
	int rc;

	if ((rc = fetch(g, err)) < 0)
		return rc;
	if (g->rebuild)
		return lookup_remote_oid(&base, g->repo, g->push_branch) < 0 ||
		       !git_oid_equal(&base, &g->push_seen);
	if (lookup_remote_oid(&base, g->repo, g->push_branch) < 0 &&
	    lookup_remote_oid(&base, g->repo, g->branch) < 0)
		return 1; /* the branch went away: the remote changed under us */
	git_oid_tostr(hex, sizeof(hex), &base);
	return strcmp(hex, g->head) != 0;
}

/* The push branch's oid in the remote's advertisement on this connection: 0, 1 absent, <0. */
static int advertised(git_oid *out, git_remote *remote, const char *branch)
{
	const git_remote_head **heads = NULL;
	size_t n = 0, i;
	char name[1024];

	snprintf(name, sizeof(name), "refs/heads/%s", branch);
	if (git_remote_ls(&heads, &n, remote) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (strcmp(heads[i]->name, name) == 0) {
			git_oid_cpy(out, &heads[i]->oid);
			return 0;
		}
	return 1;
}

/* The rebuild's push: on one connection, the advertised push branch must still be the head
 * seen (push_seen), then the upload replaces it ("+" refspec). receive-pack checks the old
 * value it advertised on this connection when it updates the ref, so a push landing between
 * the check and the update is refused: a compare-and-swap. Returns 0, IG_ECONFLICT, <0. */
static int cas_upload(struct gitstore *g, git_push_options *po, const git_strarray *specs)
{
	git_remote_connect_options co;
	git_remote *remote = NULL;
	git_oid now;
	int rc;

	git_remote_connect_options_init(&co, GIT_REMOTE_CONNECT_OPTIONS_VERSION);
	co.callbacks = po->callbacks;
	co.proxy_opts = po->proxy_opts;
	co.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	co.custom_headers = po->custom_headers;
	if ((rc = remote_new(&remote, g->repo, NULL, g->auth.url_safe)) < 0 ||
	    (rc = git_remote_connect_ext(remote, GIT_DIRECTION_PUSH, &co)) < 0)
		goto done;
	if ((rc = advertised(&now, remote, g->push_branch)) != 0 ||
	    !git_oid_equal(&now, &g->push_seen)) {
		rc = rc < 0 ? rc : IG_ECONFLICT;
		if (rc == IG_ECONFLICT)
			snprintf(g->auth.push_reject, sizeof(g->auth.push_reject),
			         "stale info: the push branch moved since it was read");
		goto done;
	}
	rc = git_remote_upload(remote, specs, po);
done:
	if (remote)
		git_remote_disconnect(remote);
	git_remote_free(remote);
	return rc;
}

/* Pushes the local branch to the push branch, never forced. Returns 0, IG_ECONFLICT when the
 * remote moved (non-fast-forward, or any refusal after which the remote ref is seen moved),
 * or another error. */
static int push(struct gitstore *g, struct error *err)
{
	git_push_options po;
	git_remote *remote = NULL;
	char spec[1024];
	char *specs[2] = {spec, g->refspec};
	git_strarray refspecs = {specs, g->refspec ? 2 : 1};
	char why[sizeof(g->auth.push_reject)];
	int rc;

	git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
	/* forced only in a rebuild, and then only by compare-and-swap (cas_upload) */
	snprintf(spec, sizeof(spec), "%srefs/heads/%s:refs/heads/%s", g->rebuild ? "+" : "",
	         g->push_branch, g->push_branch);
	if (g->refspec_only || (g->refspec && strcmp(g->refspec, spec + g->rebuild) == 0)) {
		specs[0] = g->refspec;
		refspecs.count = 1;
	}
	gitauth_prepare(&g->auth, &po.callbacks, &po.custom_headers);
	po.follow_redirects = GIT_REMOTE_REDIRECT_NONE;
	/* the commit in flight is finished on SIGTERM: a push is bounded by the host's silence
	 * (spec.timeout) alone, so a slow pre-receive hook is waited for */
	g->auth.stop = NULL;
	g->auth.deadline_ms = (long)g->push_deadline_ms;
	rc = gitauth_begin(&g->auth, err);
	g->auth.deadline_ms = 0; /* handed to gitstream, for this push only */
	if (rc < 0) {
		g->auth.stop = g->stop;
		return rc;
	}
	if (g->rebuild && !g->refspec_only)
		rc = cas_upload(g, &po, &refspecs);
	else if ((rc = remote_new(&remote, g->repo, NULL, g->auth.url_safe)) == 0)
		rc = git_remote_push(remote, &refspecs, &po);
	gitauth_end(&g->auth);
	g->auth.stop = g->stop;
	if (rc == IG_ECONFLICT)
		return rc;
	git_remote_free(remote);
	if (rc == GIT_ENONFASTFORWARD)
		return IG_ECONFLICT;
	if (rc < 0)
		return local_error(g, rc, "git push", err);
	if (!g->auth.push_reject[0])
		return 0;
	memcpy(why, g->auth.push_reject, sizeof(why));
	rc = base_moved(g, err); /* its fetch clears the refusal: keep it for the messages */
	memcpy(g->auth.push_reject, why, sizeof(why));
	if (rc != 0)
		return rc > 0 ? IG_ECONFLICT : rc;
	return error_set(err, IG_EFAIL, "git push '%s' branch '%s': rejected by the remote: %s",
	                 g->auth.url_safe, g->push_branch, g->auth.push_reject);
}

/* Moves a damaged cache aside as "<key>.old-<pid>" (one rename: the next open, holding the
 * lock, removes it with the other leftovers and clones afresh). */
static void quarantine(struct gitstore *g)
{
	struct buf aside = BUF_INIT;

	if (buf_printf(&aside, "%s.old-%ld", g->dir, (long)getpid()) == 0 &&
	    rename(g->dir, aside.data) == 0)
		log_warn("git.cache.damaged", "cache '%s' damaged, the next open reclones", g->dir);
	buf_release(&aside);
}

void gitstore_push_deadline(struct gitstore *g, int64_t deadline_ms)
{
	g->push_deadline_ms = deadline_ms > 0 ? deadline_ms : 0;
}

/* One attempt's edit, part by part, each part its own commit (edit runs on the calling thread):
 * how many commits were made (the last one in *id), or negative. */
static int commit_attempt(struct gitstore *g, gitstore_edit_fn edit, void *ctx, git_oid *id,
                          struct error *err)
{
	struct buf message = BUF_INIT_MAX(MESSAGE_MAX);
	unsigned parts = 0, made = 0;
	git_oid part;
	int more, rc = 0;

	g->push_deadline_ms = 0; /* this attempt's edit sets its own */
	do {                     /* each part its own commit; the attempt pushes them together */
		buf_reset(&message);
		if ((more = edit(ctx, g->workdir, &message, err)) < 0) {
			rc = more;
			break;
		}
		if (++parts > PARTS_MAX) {
			rc = error_set(err, IG_ETOOBIG, "one push would need more than %u commits",
			               PARTS_MAX);
			break;
		}
		if (message.len == 0 && buf_puts(&message, "imageguard: update images") < 0) {
			rc = oom(err);
			break;
		}
		if ((rc = commit(&part, g, message.data, err)) < 0)
			break;
		if (rc > 0)
			*id = part, made++;
	} while (more > 0);
	buf_release(&message);
	if (rc < 0)
		return rc;
	if (made > 1)
		log_info("git.commit.parts",
		         "'%s': %u commits, their messages within %u bytes each", g->auth.url_safe,
		         made, (unsigned)MESSAGE_MAX);
	return (int)made;
}

/* What a push attempt's rc means: 0 pushed (out_commit set), 1 the remote moved and the cache
 * is back on its new head for another attempt (why: the refusal), negative failed. */
static int after_push(char out_commit[41], struct gitstore *g, int rc, const git_oid *id,
                      unsigned attempt, char why[GITAUTH_REJECT_MAX], struct error *err)
{
	if (rc == 0) {
		git_oid_tostr(out_commit, 41, id);
		memcpy(g->head, out_commit, 41);
		log_info("git.push", "pushed %s to '%s' %s '%s'%s%s", out_commit, g->auth.url_safe,
		         g->refspec_only ? "refspec" : "branch",
		         g->refspec_only ? g->refspec : g->push_branch,
		         g->refspec && !g->refspec_only ? " and refspec " : "",
		         g->refspec && !g->refspec_only ? g->refspec : "");
		return 0;
	}
	if (rc != IG_ECONFLICT)
		return rc;
	snprintf(why, GITAUTH_REJECT_MAX, "%s",
	         g->auth.push_reject[0] ? g->auth.push_reject : "non-fast-forward");
	log_info("git.push.retry", "'%s' branch '%s' moved (%s), re-applying (attempt %u of %u)",
	         g->auth.url_safe, g->push_branch, why, attempt, g->max_attempts);
	if ((rc = fetch(g, err)) < 0 || (rc = sync_to_base(g, err)) < 0)
		return rc;
	return 1;
}

/* The attempts from `attempt` on: commit, push, and again while the remote moves. */
static int attempts(char out_commit[41], struct gitstore *g, gitstore_edit_fn edit, void *ctx,
                    unsigned attempt, char why[GITAUTH_REJECT_MAX], struct error *err)
{
	git_oid id;
	int rc;

	for (; attempt <= g->max_attempts; attempt++) {
		if ((rc = commit_attempt(g, edit, ctx, &id, err)) <= 0)
			return rc; /* nothing changed (no commit), or failed */
		if ((rc = after_push(out_commit, g, push(g, err), &id, attempt, why, err)) <= 0)
			return rc;
	}
	return error_set(err, IG_ECONFLICT,
	                 "git push '%s' branch '%s': the remote moved during each of %u attempts "
	                 "(%s); nothing was forced, the change is not pushed",
	                 g->auth.url_safe, g->push_branch, g->max_attempts, why);
}

/* After the last attempt: a damaged cache is moved aside, a half-made commit undone. */
static int attempts_done(struct gitstore *g, int rc)
{
	if (rc < 0 && g->damaged)
		quarantine(g);
	else if (rc < 0 && rc != IG_ECONFLICT && g->repo)
		sync_to_base(g, &(struct error)ERROR_INIT); /* leave no half-made commit behind */
	return rc < 0 ? rc : 0;
}

int gitstore_commit_push(char out_commit[41], struct gitstore *g, gitstore_edit_fn edit, void *ctx,
                         struct error *err)
{
	char why[GITAUTH_REJECT_MAX] = "non-fast-forward"; /* the last refusal */

	out_commit[0] = '\0';
	return attempts_done(g, attempts(out_commit, g, edit, ctx, 1, why, err));
}

static void *push_main(void *arg)
{
	struct gitstore *g = arg;

	g->flight.rc = push(g, &g->flight.err);
	return NULL;
}

int gitstore_push_start(struct gitstore *g, gitstore_edit_fn edit, void *ctx, struct error *err)
{
	int rc = commit_attempt(g, edit, ctx, &g->flight.id, err);

	if (rc <= 0)
		return attempts_done(g, rc);
	g->flight.err = (struct error)ERROR_INIT;
	g->flight.pending = true;
	g->flight.thread = pthread_create(&g->flight.th, NULL, push_main, g) == 0;
	if (!g->flight.thread) /* no thread to be had: pushed here, landed by _finish */
		push_main(g);
	return 1;
}

int gitstore_push_finish(char out_commit[41], struct gitstore *g, gitstore_edit_fn edit, void *ctx,
                         struct error *err)
{
	char why[GITAUTH_REJECT_MAX] = "non-fast-forward";
	int rc;

	out_commit[0] = '\0';
	if (!g->flight.pending)
		return 0;
	flight_join(g);
	g->flight.pending = false;
	*err = g->flight.err;
	rc = after_push(out_commit, g, g->flight.rc, &g->flight.id, 1, why, err);
	if (rc > 0)
		rc = attempts(out_commit, g, edit, ctx, 2, why, err);
	return attempts_done(g, rc);
}
