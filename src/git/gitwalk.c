/* The work tree against Git's index by stat data alone, in one walk of directory descriptors
 * (one short lookup per entry, no ignore files read): what libgit2's status would find for
 * the usual clone, and a plain "ask libgit2" whenever stat data cannot decide (an entry as
 * new as the index file, a gitlink, a conflict, a flag, a nested repository). */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitwalk.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/strvec.h"

#define WALK_MAX_FILES 1000000
#define WALK_MAX_DEPTH 256

struct file {
	char *path; /* owned, relative */
	struct stat st;
};

struct walk {
	struct file *items;
	size_t len, cap;
	bool undecided; /* something only libgit2 can judge */
};

static int add_file(struct walk *w, const char *path, const struct stat *st)
{
	if (w->len == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		void *n;

		if (cap > WALK_MAX_FILES)
			return IG_ETOOBIG;
		if (!(n = realloc(w->items, cap * sizeof(*w->items))))
			return IG_EFAIL;
		w->items = n;
		w->cap = cap;
	}
	if (!(w->items[w->len].path = strdup(path)))
		return IG_EFAIL;
	w->items[w->len++].st = *st;
	return 0;
}

static int walk_dir(struct walk *w, int dirfd, struct buf *rel, int depth);

static int walk_entry(struct walk *w, int dirfd, const char *name, struct buf *rel, int depth)
{
	size_t len0 = rel->len;
	struct stat st;
	int rc = 0, sub;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		w->undecided = true;
		return 0;
	}
	if ((rel->len && buf_append(rel, "/", 1) < 0) || buf_puts(rel, name) < 0)
		return IG_EFAIL;
	if (S_ISDIR(st.st_mode)) {
		/* a nested repository, or too deep: libgit2's call */
		if (depth >= WALK_MAX_DEPTH || strcmp(name, ".git") == 0 ||
		    (sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
		        0)
			w->undecided = true;
		else
			rc = walk_dir(w, sub, rel, depth + 1);
	} else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
		rc = add_file(w, rel->data, &st);
	} else {
		w->undecided = true;
	}
	rel->len = len0;
	rel->data[len0] = '\0';
	return rc;
}

/* Collects every file and link below dirfd (owned and closed here), named from rel. */
static int walk_dir(struct walk *w, int dirfd, struct buf *rel, int depth)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(dirfd);
		w->undecided = true;
		return 0;
	}
	while (rc == 0 && !w->undecided && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (depth == 0 && strcmp(de->d_name, ".git") == 0))
			continue;
		rc = walk_entry(w, dirfd, de->d_name, rel, depth);
	}
	closedir(d);
	return rc;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->path, ((const struct file *)b)->path);
}

/* Git's mode for what lstat saw, as libgit2 records it (core.filemode true). */
static unsigned mode_of(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return 0120000;
	return (st->st_mode & 0100) ? 0100755 : 0100644;
}

/* Whether the entry's stat data says the file is as indexed; *undecided when it is as new as
 * the index file (Git's racy entry: only its content can tell). */
static bool same_stat(const git_index_entry *e, const struct stat *st,
                      const struct timespec *index_mtime, bool *undecided)
{
	if (e->mode != mode_of(st) || e->file_size != (uint32_t)st->st_size ||
	    e->ino != (uint32_t)st->st_ino || e->mtime.seconds != (int32_t)st->st_mtim.tv_sec ||
	    e->mtime.nanoseconds != (uint32_t)st->st_mtim.tv_nsec ||
	    e->ctime.seconds != (int32_t)st->st_ctim.tv_sec ||
	    e->ctime.nanoseconds != (uint32_t)st->st_ctim.tv_nsec)
		return false;
	if (e->mtime.seconds > index_mtime->tv_sec ||
	    (e->mtime.seconds == index_mtime->tv_sec &&
	     e->mtime.nanoseconds >= (uint32_t)index_mtime->tv_nsec))
		*undecided = true;
	return true;
}

static bool is_plain(const git_index_entry *e)
{
	return GIT_INDEX_ENTRY_STAGE(e) == 0 && !(e->flags & GIT_INDEX_ENTRY_VALID) &&
	       !(e->flags_extended &
	         (GIT_INDEX_ENTRY_SKIP_WORKTREE | GIT_INDEX_ENTRY_INTENT_TO_ADD)) &&
	       (e->mode == 0100644 || e->mode == 0100755 || e->mode == 0120000);
}

/* Merges the sorted walk with the index: paths that differ go to out. */
static int compare(struct strvec *out, bool *undecided, const struct walk *w, git_index *index,
                   const struct timespec *index_mtime)
{
	size_t n = git_index_entrycount(index), i = 0, j = 0;

	while ((i < n || j < w->len) && !*undecided) {
		const git_index_entry *e = i < n ? git_index_get_byindex(index, i) : NULL;
		const struct file *f = j < w->len ? &w->items[j] : NULL;
		int c = !e ? 1 : !f ? -1 : strcmp(e->path, f->path);

		if (e && !is_plain(e)) {
			*undecided = true;
			break;
		}
		if (c == 0 && same_stat(e, &f->st, index_mtime, undecided)) {
			i++, j++;
			continue;
		}
		if (strvec_push(out, c <= 0 ? e->path : f->path) < 0)
			return IG_EFAIL;
		i += c <= 0;
		j += c >= 0;
	}
	return 0;
}

int gitwalk_changes(struct strvec *out, bool *undecided, git_index *index, const char *workdir,
                    const char *index_file)
{
	struct walk w = {0};
	struct buf rel = BUF_INIT;
	struct stat ist;
	int rootfd = -1, rc;

	*undecided = false;
	if (stat(index_file, &ist) < 0 || buf_puts(&rel, "") < 0 ||
	    safefile_open_root(&rootfd, workdir, &(struct error)ERROR_INIT) < 0) {
		*undecided = true;
		rc = 0;
		goto done;
	}
	if ((rc = walk_dir(&w, rootfd, &rel, 0)) < 0 || w.undecided) {
		*undecided = true;
		rc = rc == IG_ETOOBIG ? 0 : rc;
		goto done;
	}
	qsort(w.items, w.len, sizeof(*w.items), cmp_file);
	rc = compare(out, undecided, &w, index, &ist.st_mtim);
done:
	for (size_t i = 0; i < w.len; i++)
		free(w.items[i].path);
	free(w.items);
	buf_release(&rel);
	return rc;
}
