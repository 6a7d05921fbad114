/* The work tree against Git's index by stat data alone, in one walk of directory descriptors
 * (one short lookup per entry, no ignore files read): what libgit2's status would find for
 * the usual clone, and a plain "ask libgit2" whenever stat data cannot decide (an entry as
 * new as the index file, a gitlink, a conflict, a flag, a nested repository). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gitwalk.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/strvec.h"

#define WALK_MAX_FILES 1000000
#define WALK_MAX_DEPTH 256
/* Racy entries a walk decides by content (Git's way): a file written in the same tick of the
 * kernel's coarse clock as the index is one, and gitstore writes a few such files (a sync, an
 * edit) just before an index. Beyond this many, or for a larger file, libgit2's status. */
#define RACY_MAX 16
#define RACY_BYTES (4 * 1024 * 1024)

struct file {
	char *path; /* owned, relative */
	struct stat st;
};

/* Where racy entries are read from, how many more may be, how many were found unchanged. */
struct racy {
	const char *workdir;
	size_t left, hashed;
};

struct walk {
	struct file *items;
	size_t len, cap;
	bool undecided;            /* something only libgit2 can judge */
	struct gitwalk_dirs *dirs; /* NULL, or where each directory is recorded */
};

/* The directories of a clean walk with their stat data, sorted by path ("" the root). */
struct gitwalk_dirs {
	struct walk list; /* items: one per directory */
	time_t start;     /* when the walk began: younger directories are read again */
	size_t moved;     /* directories the last gitwalk_changes_since read again */
};

static int add_file(struct walk *w, const char *path, const struct stat *st);

static int add_dir(struct walk *w, const char *path, const struct stat *st)
{
	return w->dirs ? add_file(&w->dirs->list, path, st) : 0;
}

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
		else if ((rc = add_dir(w, rel->data, &st)) == 0)
			rc = walk_dir(w, sub, rel, depth + 1);
		else
			close(sub);
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

/* Whether a racy entry's file holds the entry's blob: its bytes hashed as one (the clone's
 * attributes are pinned raw, gitraw: staging stores a file's bytes as they are). A link, a
 * file too large, or one racy entry too many: *undecided. */
static bool same_content(struct racy *r, const git_index_entry *e, bool *undecided)
{
	struct buf data = BUF_INIT_MAX(RACY_BYTES);
	git_oid id;
	bool same = false;

	if (e->mode == 0120000 || r->left == 0 ||
	    safefile_read(&data, r->workdir, e->path, &(struct error)ERROR_INIT) < 0 ||
	    git_odb_hash(&id, data.len ? data.data : "", data.len, GIT_OBJECT_BLOB) < 0) {
		*undecided = true;
	} else {
		r->left--;
		same = git_oid_equal(&id, &e->id);
		r->hashed += same;
	}
	buf_release(&data);
	return same;
}

/* Whether the entry's stat data says the file is as indexed; one as new as the index file
 * (Git's racy entry) only its content can tell (same_content). */
static bool same_stat(const git_index_entry *e, const struct stat *st,
                      const struct timespec *index_mtime, struct racy *r, bool *undecided)
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
		return same_content(r, e, undecided);
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
                   const struct timespec *index_mtime, struct racy *r)
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
		if (c == 0 && same_stat(e, &f->st, index_mtime, r, undecided)) {
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

static void walk_release(struct walk *w)
{
	for (size_t i = 0; i < w->len; i++)
		free(w->items[i].path);
	free(w->items);
}

void gitwalk_dirs_free(struct gitwalk_dirs *d)
{
	if (!d)
		return;
	walk_release(&d->list);
	free(d);
}

/* Starts a walk of workdir recording its directories in *dirs (NULL: none wanted). */
static int walk_root(struct walk *w, struct gitwalk_dirs **dirs, const char *workdir)
{
	struct buf rel = BUF_INIT;
	struct stat st;
	int rootfd = -1, rc;

	if (dirs && !(w->dirs = *dirs = calloc(1, sizeof(**dirs))))
		return IG_EFAIL;
	if (w->dirs)
		w->dirs->start = time(NULL);
	if (buf_puts(&rel, "") < 0)
		return IG_EFAIL;
	if (safefile_open_root(&rootfd, workdir, &(struct error)ERROR_INIT) < 0 ||
	    fstat(rootfd, &st) < 0) {
		w->undecided = true;
		rc = 0;
	} else if ((rc = add_dir(w, "", &st)) == 0) {
		rc = walk_dir(w, rootfd, &rel, 0);
		rootfd = -1;
	}
	if (rootfd >= 0)
		close(rootfd);
	buf_release(&rel);
	return rc;
}

int gitwalk_changes(struct strvec *out, bool *undecided, size_t *hashed, struct gitwalk_dirs **dirs,
                    git_index *index, const char *workdir, const char *index_file)
{
	struct racy r = {workdir, RACY_MAX, 0};
	struct walk w = {0};
	struct stat ist;
	int rc = 0;

	*undecided = true;
	if (dirs)
		*dirs = NULL;
	if (stat(index_file, &ist) < 0)
		goto done;
	if ((rc = walk_root(&w, dirs, workdir)) < 0 || w.undecided) {
		rc = rc == IG_ETOOBIG ? 0 : rc;
		goto done;
	}
	*undecided = false;
	qsort(w.items, w.len, sizeof(*w.items), cmp_file);
	if (w.dirs)
		qsort(w.dirs->list.items, w.dirs->list.len, sizeof(*w.items), cmp_file);
	rc = compare(out, undecided, &w, index, &ist.st_mtim, &r);
done:
	if (hashed)
		*hashed = r.hashed;
	walk_release(&w);
	if (dirs && (rc < 0 || *undecided)) {
		gitwalk_dirs_free(*dirs);
		*dirs = NULL;
	}
	return rc;
}

/* ---- later in the same open: only what stat data says moved ---- */

/* Every indexed file, one lookup each: missing or changed ones go to out. */
static int check_entries(struct strvec *out, bool *undecided, git_index *index, int rootfd,
                         const struct timespec *index_mtime, struct racy *r)
{
	size_t n = git_index_entrycount(index);

	for (size_t i = 0; i < n && !*undecided; i++) {
		const git_index_entry *e = git_index_get_byindex(index, i);
		struct stat st;

		if (!is_plain(e)) {
			*undecided = true;
		} else if (fstatat(rootfd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && errno != ENOTDIR)
				*undecided = true;
			else if (strvec_push(out, e->path) < 0)
				return IG_EFAIL;
		} else if ((S_ISDIR(st.st_mode) || !same_stat(e, &st, index_mtime, r, undecided)) &&
		           strvec_push(out, e->path) < 0) {
			return IG_EFAIL;
		}
	}
	return 0;
}

static bool is_known_dir(const struct gitwalk_dirs *d, const char *path)
{
	struct file key = {(char *)path, {0}};

	return bsearch(&key, d->list.items, d->list.len, sizeof(key), cmp_file) != NULL;
}

/* Whether a directory is as the walk saw it, and old enough that an entry added since would
 * have moved its times. */
static bool dir_unchanged(const struct gitwalk_dirs *d, const struct file *dir, int rootfd)
{
	struct stat st;

	return fstatat(rootfd, dir->path[0] ? dir->path : ".", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode) && st.st_ino == dir->st.st_ino &&
	       st.st_mtim.tv_sec == dir->st.st_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == dir->st.st_mtim.tv_nsec &&
	       st.st_ctim.tv_sec == dir->st.st_ctim.tv_sec &&
	       st.st_ctim.tv_nsec == dir->st.st_ctim.tv_nsec && st.st_mtim.tv_sec < d->start - 1 &&
	       st.st_ctim.tv_sec < d->start - 1;
}

/* Files below a directory that moved and that the index lacks: its own entries, and the
 * whole of any subdirectory the walk did not see. */
static int new_files(struct strvec *out, bool *undecided, const struct gitwalk_dirs *d,
                     const char *dir, git_index *index, int rootfd)
{
	struct walk w = {0};
	struct buf rel = BUF_INIT;
	int fd, rc = 0;

	/* one component at a time: a directory replaced by a link (or a saved path through one)
	 * is never followed out of the tree */
	if (safefile_open_dir(&fd, rootfd, dir, &(struct error)ERROR_INIT) < 0)
		return 0; /* gone: its indexed files are missing, nothing new is in it */
	if (buf_puts(&rel, dir) < 0) {
		close(fd);
		return IG_EFAIL;
	}
	rc = walk_dir(&w, fd, &rel, (int)(dir[0] != '\0'));
	*undecided = *undecided || w.undecided;
	for (size_t i = 0; rc == 0 && i < w.len; i++) {
		const char *p = w.items[i].path, *slash = strrchr(p, '/');
		size_t parent = slash ? (size_t)(slash - p) : 0;
		char *sub = strndup(p, parent);

		/* a file below a known subdirectory is that directory's to report */
		if (!sub)
			rc = IG_EFAIL;
		else if ((strcmp(sub, dir) == 0 || !is_known_dir(d, sub)) &&
		         !git_index_get_bypath(index, p, 0) && strvec_push(out, p) < 0)
			rc = IG_EFAIL;
		free(sub);
	}
	walk_release(&w);
	buf_release(&rel);
	return rc;
}

int gitwalk_changes_since(struct strvec *out, bool *undecided, size_t *hashed,
                          struct gitwalk_dirs *dirs, git_index *index, const char *workdir,
                          const char *index_file)
{
	struct racy r = {workdir, RACY_MAX, 0};
	struct stat ist;
	int rootfd = -1, rc = 0;

	*undecided = true;
	if (stat(index_file, &ist) < 0 ||
	    safefile_open_root(&rootfd, workdir, &(struct error)ERROR_INIT) < 0)
		return 0;
	*undecided = false;
	dirs->moved = 0;
	rc = check_entries(out, undecided, index, rootfd, &ist.st_mtim, &r);
	for (size_t i = 0; rc == 0 && !*undecided && i < dirs->list.len; i++)
		if (!dir_unchanged(dirs, &dirs->list.items[i], rootfd)) {
			dirs->moved++;
			rc = new_files(out, undecided, dirs, dirs->list.items[i].path, index,
			               rootfd);
		}
	close(rootfd);
	strvec_sort_unique(out);
	if (hashed)
		*hashed = r.hashed;
	return rc;
}

size_t gitwalk_dirs_moved(const struct gitwalk_dirs *d)
{
	return d->moved;
}

/* ---- before a hard reset: nothing but files and directories ---- */

static int scrub_dir(int dirfd, int depth, size_t *left);

/* One entry of a scrub: a directory entered, anything but a file removed. */
static int scrub_entry(int dirfd, const char *name, int depth, size_t *left)
{
	struct stat st;
	int sub;

	if ((*left)-- == 0)
		return IG_ETOOBIG;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : IG_EFAIL;
	if (S_ISDIR(st.st_mode)) {
		if (depth >= WALK_MAX_DEPTH)
			return IG_ETOOBIG;
		sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		return sub < 0 ? IG_EFAIL : scrub_dir(sub, depth + 1, left);
	}
	if (!S_ISREG(st.st_mode) && unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return IG_EFAIL;
	return 0;
}

/* Scrubs below dirfd (owned, closed here). */
static int scrub_dir(int dirfd, int depth, size_t *left)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(dirfd);
		return IG_EFAIL;
	}
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    !(depth == 0 && strcmp(de->d_name, ".git") == 0))
			rc = scrub_entry(dirfd, de->d_name, depth, left);
	closedir(d);
	return rc;
}

int gitwalk_remove_specials(const char *workdir)
{
	size_t left = WALK_MAX_FILES;
	int rootfd = -1;

	if (safefile_open_root(&rootfd, workdir, &(struct error)ERROR_INIT) < 0)
		return IG_EFAIL;
	return scrub_dir(rootfd, 0, &left);
}

/* ---- across opens: the directories saved beside the index they were taken with ---- */

/* The file: MAGIC, the index checksum, the walk's start, the count, then per directory its
 * path's length and bytes, inode, mtime and ctime. Host byte order: the cache's own file. */
static const char MAGIC[8] = "igwalk1\n";

struct dir_record {
	uint64_t ino;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
	uint32_t path_len;
};

static int put_dir(struct buf *b, const struct file *f)
{
	struct dir_record r;

	memset(&r, 0, sizeof(r)); /* the padding too: the file is written whole */
	r.ino = (uint64_t)f->st.st_ino;
	r.mtime_s = f->st.st_mtim.tv_sec;
	r.mtime_ns = f->st.st_mtim.tv_nsec;
	r.ctime_s = f->st.st_ctim.tv_sec;
	r.ctime_ns = f->st.st_ctim.tv_nsec;
	r.path_len = (uint32_t)strlen(f->path);

	return buf_append(b, &r, sizeof(r)) < 0 || buf_append(b, f->path, r.path_len) < 0 ? IG_EFAIL
	                                                                                  : 0;
}

int gitwalk_dirs_save(const struct gitwalk_dirs *d, const char *path, const git_oid *checksum)
{
	struct buf b = BUF_INIT;
	int64_t start = d->start;
	uint64_t n = d->list.len;
	int rc = IG_EFAIL;

	if (buf_append(&b, MAGIC, sizeof(MAGIC)) < 0 ||
	    buf_append(&b, checksum->id, GIT_OID_RAWSZ) < 0 ||
	    buf_append(&b, &start, sizeof(start)) < 0 || buf_append(&b, &n, sizeof(n)) < 0)
		goto done;
	for (size_t i = 0; i < d->list.len; i++)
		if (put_dir(&b, &d->list.items[i]) < 0)
			goto done;
	if (safefile_write_cache(path, b.data, b.len) == 0)
		rc = 0;
done:
	buf_release(&b);
	return rc;
}

/* Whether a saved path has the form the walk records: "" (the root) or names joined by single
 * slashes, none of them ".", ".." or ".git" (the walk never enters those). */
static bool is_walk_path(const char *p)
{
	if (*p == '\0')
		return true;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && memcmp(p, "..", 2) == 0) ||
		    (n == 4 && memcmp(p, ".git", 4) == 0))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

/* One directory of a saved walk at *pos, in path order after prev. */
static int get_dir(struct walk *w, const struct buf *b, size_t *pos, const char *prev)
{
	struct dir_record r;
	struct stat st = {0};
	char *p;
	int rc;

	if (b->len - *pos < sizeof(r))
		return IG_EINVALID;
	memcpy(&r, b->data + *pos, sizeof(r));
	*pos += sizeof(r);
	if (r.path_len > 4096 || b->len - *pos < r.path_len)
		return IG_EINVALID;
	if (!(p = strndup(b->data + *pos, r.path_len)))
		return IG_EFAIL;
	*pos += r.path_len;
	st.st_mode = S_IFDIR;
	st.st_ino = (ino_t)r.ino;
	st.st_mtim.tv_sec = (time_t)r.mtime_s;
	st.st_mtim.tv_nsec = (long)r.mtime_ns;
	st.st_ctim.tv_sec = (time_t)r.ctime_s;
	st.st_ctim.tv_nsec = (long)r.ctime_ns;
	rc = strlen(p) == r.path_len && (!prev || strcmp(prev, p) < 0) && is_walk_path(p)
	         ? add_file(w, p, &st)
	         : IG_EINVALID;
	free(p);
	return rc;
}

int gitwalk_dirs_load(struct gitwalk_dirs **out, const char *path, const git_oid *checksum)
{
	struct buf b = BUF_INIT_MAX(64 * 1024 * 1024);
	struct gitwalk_dirs *d = NULL;
	size_t pos = sizeof(MAGIC) + GIT_OID_RAWSZ + 2 * sizeof(uint64_t);
	int64_t start;
	uint64_t n;
	int rc = IG_ENOTFOUND;

	*out = NULL;
	if (buf_read_file(&b, path) < 0 || b.len < pos || memcmp(b.data, MAGIC, sizeof(MAGIC)) ||
	    memcmp(b.data + sizeof(MAGIC), checksum->id, GIT_OID_RAWSZ))
		goto done;
	memcpy(&start, b.data + sizeof(MAGIC) + GIT_OID_RAWSZ, sizeof(start));
	memcpy(&n, b.data + sizeof(MAGIC) + GIT_OID_RAWSZ + sizeof(start), sizeof(n));
	/* a walk starts after 1970: anything else is damage (and d->start - 1 must not wrap) */
	if (n == 0 || n > WALK_MAX_FILES || start <= 0 || !(d = calloc(1, sizeof(*d))))
		goto done;
	d->start = (time_t)start;
	for (uint64_t i = 0; i < n; i++)
		if (get_dir(&d->list, &b, &pos, i ? d->list.items[i - 1].path : NULL) < 0)
			goto done;
	if (pos == b.len && d->list.items[0].path[0] == '\0') {
		*out = d;
		d = NULL;
		rc = 0;
	}
done:
	gitwalk_dirs_free(d);
	buf_release(&b);
	return rc;
}
