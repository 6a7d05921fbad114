/* Byte-exact blobs: Git's attribute file of the clone, above the tree's .gitattributes,
 * unsets every content conversion (end of line, ident, filter drivers, encodings). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "gitraw.h"

/* `-crlf` is the attribute `text` had before Git 1.7.2; libgit2 still reads it. */
static const char RAW_ATTRIBUTES[] =
    "# imageguard: blobs are read and written byte for byte, whatever .gitattributes say\n"
    "* -text -crlf -eol -ident -filter -working-tree-encoding\n";

/* Whether path holds exactly RAW_ATTRIBUTES (a missing or longer file does not). */
static bool holds_raw(const char *path)
{
	char got[sizeof(RAW_ATTRIBUTES) + 1];
	ssize_t n = 0, r;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return false;
	while (n < (ssize_t)sizeof(got) && (r = read(fd, got + n, sizeof(got) - (size_t)n)) > 0)
		n += r;
	close(fd);
	return n == (ssize_t)strlen(RAW_ATTRIBUTES) && memcmp(got, RAW_ATTRIBUTES, (size_t)n) == 0;
}

/* Writes RAW_ATTRIBUTES to path through a new file renamed over it (no link followed). */
static int write_raw(const char *path, struct error *err)
{
	struct buf tmp = BUF_INIT;
	size_t len = strlen(RAW_ATTRIBUTES);
	int fd = -1, rc = 0;

	if (buf_printf(&tmp, "%s.tmp-%ld", path, (long)getpid()) < 0)
		return error_oom(err);
	unlink(tmp.data);
	fd = open(tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		rc = IG_EFAIL;
	else if (write(fd, RAW_ATTRIBUTES, len) != (ssize_t)len)
		rc = IG_EFAIL, close(fd);
	else if (close(fd) != 0 || rename(tmp.data, path) != 0)
		rc = IG_EFAIL;
	if (rc < 0) {
		rc = error_set(err, IG_EFAIL, "git attributes '%s': %s", path, strerror(errno));
		if (fd >= 0)
			unlink(tmp.data);
	}
	buf_release(&tmp);
	return rc;
}

int gitraw_pin(bool *changed, const char *workdir, struct error *err)
{
	struct buf dir = BUF_INIT, file = BUF_INIT;
	int rc = 0;

	*changed = false;
	if (buf_printf(&dir, "%s/.git/info", workdir) < 0 ||
	    buf_printf(&file, "%s/attributes", dir.data) < 0) {
		rc = error_oom(err);
		goto done;
	}
	if (holds_raw(file.data))
		goto done;
	*changed = true;
	if (mkdir(dir.data, 0700) != 0 && errno != EEXIST)
		rc = error_set(err, IG_EFAIL, "git attributes '%s': %s", dir.data, strerror(errno));
	else
		rc = write_raw(file.data, err);
done:
	buf_release(&dir);
	buf_release(&file);
	return rc;
}
