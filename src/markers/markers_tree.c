/* Marker scanning over a directory tree: every *.yaml / *.yml / Kustomization below
 * root/subpath in sorted path order, skipping .git and symbolic links, names relative to root.
 * The tree is untrusted (a clone): everything is opened relative to directory descriptors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/strvec.h"
#include "markers_private.h"

#define MAX_FILES MARKERS_MAX_FILES
#define MAX_DEPTH MARKERS_MAX_DEPTH

bool markers_is_yaml_name(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
	       (n > 4 && strcmp(name + n - 4, ".yml") == 0) || strcmp(name, "Kustomization") == 0;
}

/* "./a//b/" -> "a/b"; "" for the root itself. Absolute paths and ".." are refused. */
static int normalise_subpath(struct buf *out, const char *subpath, struct error *err)
{
	const char *p = subpath ? subpath : "";

	if (*p == '/')
		return error_set(err, IG_EINVALID, "path '%s': must be relative", subpath);
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return error_set(err, IG_EINVALID, "path '%s': must not contain '..'",
			                 subpath);
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if ((out->len > 0 && buf_append(out, "/", 1) < 0) ||
			    buf_append(out, p, n) < 0)
				return error_oom(err);
		}
		p += n;
		while (*p == '/')
			p++;
	}
	if (!out->data && buf_puts(out, "") < 0)
		return error_oom(err);
	return 0;
}

static int join(char **out, const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;

	*out = malloc(n);
	if (!*out)
		return IG_EFAIL;
	snprintf(*out, n, "%s%s%s", a, *a && *b ? "/" : "", b);
	return 0;
}

static int walk(struct strvec *files, int dirfd, const char *rel, int depth, struct marker_set *out,
                struct error *err);

/* One entry of a directory: lstat-like (a link is neither a file nor a directory here). */
static int walk_entry(struct strvec *files, int dirfd, const char *name, const char *child,
                      int depth, struct marker_set *out, struct error *err)
{
	struct stat st;
	int sub, rc = 0;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
		sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			char msg[256];
			snprintf(msg, sizeof(msg), "cannot read directory: %s", strerror(errno));
			return markers_add_problem(out, child, 0, msg);
		}
		rc = walk(files, sub, child, depth + 1, out, err);
	} else if (S_ISREG(st.st_mode) && markers_is_yaml_name(name)) {
		if (files->len >= MAX_FILES)
			rc = error_set(err, IG_ETOOBIG, "more than %d YAML files", MAX_FILES);
		else if (strvec_push(files, child) < 0)
			rc = error_oom(err);
	}
	return rc;
}

/* Collects the relative names of YAML files below the directory dirfd (named rel; the walk
 * owns and closes dirfd). Only openat/fstatat relative to it: no path is ever re-resolved. */
static int walk(struct strvec *files, int dirfd, const char *rel, int depth, struct marker_set *out,
                struct error *err)
{
	DIR *dir = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0;

	if (!dir) {
		close(dirfd);
		return error_set(err, IG_EFAIL, "'%s': cannot read directory: %s", rel,
		                 strerror(errno));
	}
	while (rc == 0 && (de = readdir(dir)) != NULL) {
		char *child = NULL;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		if (join(&child, rel, de->d_name) < 0)
			rc = error_oom(err);
		else
			rc = walk_entry(files, dirfd, de->d_name, child, depth, out, err);
		free(child);
	}
	closedir(dir);
	return rc;
}

/* Scans rel below the open root: read without following links, regular files only. */
int markers_scan_file_at(struct marker_set *out, int rootfd, const char *name, bool *read_ok,
                         struct error *err)
{
	struct buf data = BUF_INIT_MAX(MARKERS_MAX_FILE_SIZE);
	struct error e = ERROR_INIT;
	int rc = safefile_read_at(&data, rootfd, name, &e);

	/* an oversized file's problem depends on its size alone: as its bytes */
	*read_ok = rc == 0 || rc == IG_ETOOBIG;
	if (rc == IG_ETOOBIG) {
		/* The scanner words the problem; it only needs to see a length over the cap. */
		rc = markers_scan_buffer(out, name, "", MARKERS_MAX_FILE_SIZE + 1, err);
	} else if (rc < 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "cannot read file: %s", safefile_reason(&e));
		rc = markers_add_problem(out, name, 0, msg);
	} else {
		rc = markers_scan_buffer(out, name, data.data ? data.data : "", data.len, err);
	}
	buf_release(&data);
	return rc;
}

int markers_scan_file(struct marker_set *out, const char *root, const char *name, struct error *err)
{
	struct error e = ERROR_INIT;
	int rootfd, rc;

	if (safefile_open_root(&rootfd, root, &e) < 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "cannot read file: %s", safefile_reason(&e));
		return markers_add_problem(out, name, 0, msg);
	}
	rc = markers_scan_file_at(out, rootfd, name, &(bool){false}, err);
	close(rootfd);
	return rc;
}

int markers_tree_open(int *rootfd, int *dirfd, struct buf *sub, const char *root,
                      const char *subpath, struct error *err)
{
	int rc;

	*rootfd = *dirfd = -1;
	if ((rc = normalise_subpath(sub, subpath, err)) < 0)
		return rc;
	if ((rc = safefile_open_root(rootfd, root, err)) < 0 ||
	    (rc = safefile_open_dir(dirfd, *rootfd, sub->data, err)) < 0) {
		if (errno == EACCES) { /* as an absent tree: nothing the caller can scan */
			rc = IG_ENOTFOUND;
			if (err)
				err->code = rc;
		}
		if (*rootfd >= 0)
			close(*rootfd);
		*rootfd = -1;
	}
	return rc;
}

/* root may be a symbolic link (the user named it); no component of subpath may be one. */
int markers_scan_tree(struct marker_set *out, const char *root, const char *subpath,
                      struct error *err)
{
	struct buf sub = BUF_INIT;
	struct strvec files = STRVEC_INIT;
	int rootfd = -1, dirfd = -1, rc;

	if ((rc = markers_tree_open(&rootfd, &dirfd, &sub, root, subpath, err)) < 0)
		goto done;
	if ((rc = walk(&files, dirfd, sub.data, 0, out, err)) < 0)
		goto done;
	strvec_sort(&files);
	for (size_t i = 0; i < files.len && rc == 0; i++)
		rc = markers_scan_file_at(out, rootfd, files.items[i], &(bool){false}, err);
done:
	if (rootfd >= 0)
		close(rootfd);
	strvec_release(&files);
	buf_release(&sub);
	return rc;
}
