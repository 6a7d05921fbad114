/* Reading and replacing files inside an untrusted tree without following symbolic links:
 * openat(O_NOFOLLOW) per component, fstat checks, and O_EXCL random-named temporaries. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/safefile.h"

#define COMPONENTS_MAX 256
#define TEMP_TRIES 16

static const char *reason(int e)
{
	switch (e) {
	case ENOENT:
		return "no such file or directory";
	case EACCES:
		return "permission denied";
	case ENOTDIR:
		return "not a directory";
	case ELOOP:
		return "is a symbolic link, not followed";
	case ENAMETOOLONG:
		return "file name too long";
	default:
		return strerror(e);
	}
}

static int fail(struct error *err, int e, const char *rel)
{
	int code = e == ENOENT ? IG_ENOTFOUND : e == ELOOP || e == ENOTDIR ? IG_EINVALID : IG_EFAIL;

	error_set(err, code, "'%s': %s", rel, reason(e));
	errno = e;
	return code;
}

/* The next component of *p (skipping "" and "."), copied to name; false at the end. */
static bool next_component(const char **p, char name[NAME_MAX + 1], int *bad)
{
	for (;;) {
		size_t n;

		while (**p == '/')
			(*p)++;
		if (!**p)
			return false;
		n = strcspn(*p, "/");
		if (n > NAME_MAX || (n == 2 && (*p)[0] == '.' && (*p)[1] == '.')) {
			*bad = n > NAME_MAX ? ENAMETOOLONG : EINVAL;
			return false;
		}
		memcpy(name, *p, n);
		name[n] = '\0';
		*p += n;
		if (strcmp(name, ".") != 0)
			return true;
	}
}

int safefile_open_root(int *out, const char *root, struct error *err)
{
	struct stat st;

	*out = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*out < 0)
		return fail(err, errno, root);
	if (fstat(*out, &st) < 0 || !S_ISDIR(st.st_mode)) {
		close(*out);
		*out = -1;
		return error_set(err, IG_EINVALID, "'%s': not a directory", root);
	}
	return 0;
}

/* Walks the directories of rel below dirfd; with last set, stops before the final component
 * and copies it to last (refusing an empty one). */
static int walk(int *out, int dirfd, const char *rel, char *last, struct error *err)
{
	char name[NAME_MAX + 1] = "", next[NAME_MAX + 1] = "";
	const char *p = rel ? rel : "";
	int fd, bad = 0, steps = 0;
	bool have;

	if (*p == '/')
		return error_set(err, IG_EINVALID, "'%s': must be relative", rel);
	if ((fd = dup(dirfd)) < 0)
		return fail(err, errno, p);
	have = next_component(&p, name, &bad);
	while (have) {
		int sub;

		have = next_component(&p, next, &bad);
		if (!have && last && !bad)
			break;
		if (bad)
			break;
		sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (sub < 0)
			return fail(err, errno, rel);
		fd = sub;
		memcpy(name, next, sizeof(name));
		if (++steps > COMPONENTS_MAX)
			bad = ENAMETOOLONG;
	}
	if (bad || (last && !have && !name[0])) {
		close(fd);
		return error_set(err, IG_EINVALID, "'%s': %s", rel ? rel : "",
		                 bad == ENAMETOOLONG ? "path too long"
		                 : bad               ? "must not contain '..'"
		                                     : "not a file name");
	}
	if (last)
		memcpy(last, name, NAME_MAX + 1);
	*out = fd;
	return 0;
}

int safefile_open_dir(int *out, int dirfd, const char *rel, struct error *err)
{
	*out = -1;
	return walk(out, dirfd, rel, NULL, err);
}

/* Opens the final component of rel in parent: never a link, never blocking on a FIFO. */
static int open_leaf(int *out, int parent, const char *leaf, const char *rel, struct stat *st,
                     struct error *err)
{
	int fd = openat(parent, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return fail(err, errno, rel);
	if (fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		return fail(err, e, rel);
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return error_set(err, IG_EINVALID, "'%s': not a regular file", rel);
	}
	*out = fd;
	return 0;
}

int safefile_open_read(int *out, int dirfd, const char *rel, struct error *err)
{
	char leaf[NAME_MAX + 1] = "";
	struct stat st;
	int parent = -1, rc;

	*out = -1;
	if ((rc = walk(&parent, dirfd, rel, leaf, err)) < 0)
		return rc;
	rc = open_leaf(out, parent, leaf, rel, &st, err);
	close(parent);
	return rc;
}

static int read_fd(struct buf *b, int fd, const struct stat *st, const char *rel, struct error *err)
{
	char chunk[65536];
	ssize_t n;
	int rc = 0;

	if (b->max && (uintmax_t)st->st_size > b->max)
		return error_set(err, IG_ETOOBIG, "'%s': larger than %zu bytes", rel, b->max);
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(err, errno, rel);
		if ((rc = buf_append(b, chunk, (size_t)n)) < 0)
			return error_set(err, rc, "'%s': %s", rel,
			                 rc == IG_ETOOBIG ? "too large" : "out of memory");
	}
	if (!b->data && (rc = buf_append(b, "", 0)) < 0)
		return error_set(err, rc, "'%s': out of memory", rel);
	return 0;
}

int safefile_read_at(struct buf *b, int dirfd, const char *rel, struct error *err)
{
	char leaf[NAME_MAX + 1] = "";
	struct stat st;
	int parent = -1, fd = -1, rc;

	buf_reset(b);
	if ((rc = walk(&parent, dirfd, rel, leaf, err)) < 0)
		return rc;
	if ((rc = open_leaf(&fd, parent, leaf, rel, &st, err)) == 0) {
		rc = read_fd(b, fd, &st, rel, err);
		close(fd);
	}
	close(parent);
	return rc;
}

int safefile_read(struct buf *b, const char *root, const char *rel, struct error *err)
{
	int fd, rc;

	if ((rc = safefile_open_root(&fd, root, err)) < 0)
		return rc;
	rc = safefile_read_at(b, fd, rel, err);
	close(fd);
	return rc;
}

/* Creates ".<leaf>.ig-<16 hex>" with O_EXCL|O_NOFOLLOW in parent; name gets its name. */
static int create_temp(int *out, int parent, const char *leaf, mode_t mode, char *name, size_t cap,
                       const char *rel, struct error *err)
{
	for (int i = 0; i < TEMP_TRIES; i++) {
		unsigned char r[8];
		char hex[17];

		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return fail(err, errno, rel);
		for (size_t j = 0; j < sizeof(r); j++)
			snprintf(hex + 2 * j, 3, "%02x", r[j]);
		if (snprintf(name, cap, ".%.200s.ig-%s", leaf, hex) >= (int)cap)
			return error_set(err, IG_EINVALID, "'%s': file name too long", rel);
		*out = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		              mode & 07777);
		if (*out >= 0)
			return 0;
		if (errno != EEXIST)
			return fail(err, errno, rel);
	}
	return error_set(err, IG_EFAIL, "'%s': cannot create a temporary file", rel);
}

int safefile_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = EIO; /* no progress and no error: never spin on it */
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int safefile_write_cache(const char *path, const void *data, size_t len)
{
	struct buf tmp = BUF_INIT;
	int fd, rc = -1;

	if (buf_printf(&tmp, "%s.tmp-%ld", path, (long)getpid()) < 0)
		return -1;
	unlink(tmp.data);
	if ((fd = open(tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) >=
	    0) {
		if (safefile_write_all(fd, data, len) == 0 && close(fd) == 0 &&
		    rename(tmp.data, path) == 0)
			rc = 0;
		else
			unlink(tmp.data);
	}
	buf_release(&tmp);
	return rc;
}

static int replace_in(int parent, const char *leaf, const char *rel, const void *data, size_t len,
                      struct error *err)
{
	char tmp[NAME_MAX + 1];
	struct stat st;
	int fd = -1, old = -1, rc;

	/* the target must be a regular file now: never write through, or replace, a link */
	if ((rc = open_leaf(&old, parent, leaf, rel, &st, err)) < 0)
		return rc;
	close(old);
	if ((rc = create_temp(&fd, parent, leaf, st.st_mode, tmp, sizeof(tmp), rel, err)) < 0)
		return rc;
	if (fchmod(fd, st.st_mode & 07777) < 0 || safefile_write_all(fd, data, len) < 0 ||
	    fsync(fd) < 0) {
		rc = fail(err, errno, rel);
		goto done;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = fail(err, errno, rel);
		goto done;
	}
	fd = -1;
	if (renameat(parent, tmp, parent, leaf) < 0) {
		rc = fail(err, errno, rel);
		goto done;
	}
	fsync(parent);
	tmp[0] = '\0';
done:
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlinkat(parent, tmp, 0);
	return rc;
}

int safefile_replace(const char *root, const char *rel, const void *data, size_t len,
                     struct error *err)
{
	char leaf[NAME_MAX + 1] = "";
	int rootfd = -1, parent = -1, rc;

	if ((rc = safefile_open_root(&rootfd, root, err)) < 0)
		return rc;
	if ((rc = walk(&parent, rootfd, rel, leaf, err)) == 0) {
		rc = replace_in(parent, leaf, rel, data, len, err);
		close(parent);
	}
	close(rootfd);
	return rc;
}

const char *safefile_reason(const struct error *err)
{
	const char *p = strstr(err->msg, "': ");

	return p ? p + 3 : err->msg;
}
