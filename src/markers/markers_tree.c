/* Marker scanning over a directory tree: every *.yaml / *.yml below root/subpath in sorted
 * path order, skipping .git and symbolic links, names relative to root. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/strvec.h"

#define MAX_FILES 200000
#define MAX_DEPTH 64

/* strerror, in the lower case our messages use. */
static const char *why(int e)
{
	switch (e) {
	case ENOENT:
		return "no such file or directory";
	case EACCES:
		return "permission denied";
	case ENOTDIR:
		return "not a directory";
	case ELOOP:
		return "too many levels of symbolic links";
	default:
		return strerror(e);
	}
}

static bool is_yaml_name(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
	       (n > 4 && strcmp(name + n - 4, ".yml") == 0);
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
				return error_set(err, IG_EFAIL, "out of memory");
		}
		p += n;
		while (*p == '/')
			p++;
	}
	if (!out->data && buf_puts(out, "") < 0)
		return error_set(err, IG_EFAIL, "out of memory");
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

/* Collects the relative names of YAML files under root/rel into files. */
static int walk(struct strvec *files, const char *root, const char *rel, int depth,
                struct marker_set *out, struct error *err)
{
	char *dirpath = NULL;
	DIR *dir = NULL;
	struct dirent *de;
	int rc = 0;

	if (join(&dirpath, root, rel) < 0)
		return error_set(err, IG_EFAIL, "out of memory");
	dir = opendir(dirpath);
	if (!dir && depth == 0) {
		rc = error_set(err, IG_ENOTFOUND, "'%s': cannot read directory: %s", dirpath,
		               why(errno));
		goto done;
	}
	if (!dir) {
		char msg[256];
		snprintf(msg, sizeof(msg), "cannot read directory: %s", why(errno));
		rc = markers_add_problem(out, rel, 0, msg);
		goto done;
	}
	while (rc == 0 && (de = readdir(dir)) != NULL) {
		char *child = NULL, *full = NULL;
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		if (join(&child, rel, de->d_name) < 0 || join(&full, root, child) < 0) {
			free(child);
			rc = error_set(err, IG_EFAIL, "out of memory");
			break;
		}
		if (lstat(full, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH)
				rc = walk(files, root, child, depth + 1, out, err);
			else if (S_ISREG(st.st_mode) && is_yaml_name(de->d_name)) {
				if (files->len >= MAX_FILES)
					rc = error_set(err, IG_ETOOBIG,
					               "'%s': more than %d YAML files", root,
					               MAX_FILES);
				else if (strvec_push(files, child) < 0)
					rc = error_set(err, IG_EFAIL, "out of memory");
			}
		}
		free(child);
		free(full);
	}
done:
	if (dir)
		closedir(dir);
	free(dirpath);
	return rc;
}

int markers_scan_file(struct marker_set *out, const char *root, const char *name, struct error *err)
{
	struct buf data = BUF_INIT_MAX(MARKERS_MAX_FILE_SIZE);
	char *path = NULL;
	int rc;

	if (join(&path, root, name) < 0)
		return error_set(err, IG_EFAIL, "out of memory");
	rc = buf_read_file(&data, path);
	if (rc == IG_ETOOBIG) {
		/* The scanner words the problem; it only needs to see a length over the cap. */
		rc = markers_scan_buffer(out, name, "", MARKERS_MAX_FILE_SIZE + 1, err);
	} else if (rc < 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "cannot read file: %s", why(errno));
		rc = markers_add_problem(out, name, 0, msg);
	} else {
		rc = markers_scan_buffer(out, name, data.data ? data.data : "", data.len, err);
	}
	buf_release(&data);
	free(path);
	return rc;
}

/* root may be a symbolic link (the user named it); no component of subpath may be one. */
static int check_start(const char *root, const char *sub, struct error *err)
{
	struct buf path = BUF_INIT;
	struct stat st;
	const char *p = sub;
	int rc = 0;

	if (buf_puts(&path, root) < 0) {
		rc = error_set(err, IG_EFAIL, "out of memory");
		goto done;
	}
	if (stat(root, &st) < 0) {
		rc = error_set(err, errno == ENOENT || errno == ENOTDIR ? IG_ENOTFOUND : IG_EFAIL,
		               "'%s': %s", root, why(errno));
		goto done;
	}
	while (S_ISDIR(st.st_mode) && *p) {
		size_t n = strcspn(p, "/");
		if (buf_append(&path, "/", 1) < 0 || buf_append(&path, p, n) < 0) {
			rc = error_set(err, IG_EFAIL, "out of memory");
			goto done;
		}
		if (lstat(path.data, &st) < 0) {
			rc = error_set(err, errno == ENOENT ? IG_ENOTFOUND : IG_EFAIL, "'%s': %s",
			               path.data, why(errno));
			goto done;
		}
		p += n + (p[n] == '/');
	}
	if (!S_ISDIR(st.st_mode))
		rc = error_set(err, IG_EINVALID, "'%s': not a directory", path.data);
done:
	buf_release(&path);
	return rc;
}

int markers_scan_tree(struct marker_set *out, const char *root, const char *subpath,
                      struct error *err)
{
	struct buf sub = BUF_INIT;
	struct strvec files = STRVEC_INIT;
	int rc;

	if ((rc = normalise_subpath(&sub, subpath, err)) < 0)
		goto done;
	if ((rc = check_start(root, sub.data, err)) < 0)
		goto done;
	if ((rc = walk(&files, root, sub.data, 0, out, err)) < 0)
		goto done;
	strvec_sort(&files);
	for (size_t i = 0; i < files.len && rc == 0; i++)
		rc = markers_scan_file(out, root, files.items[i], err);
done:
	strvec_release(&files);
	buf_release(&sub);
	return rc;
}
