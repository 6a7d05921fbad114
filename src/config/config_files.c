/* Which files a --config path names: itself, or every *.yaml / *.yml below it, sorted,
 * skipping hidden names (Kubernetes ConfigMap mounts keep a second copy under ..data). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static bool has_yaml_suffix(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && !strcmp(name + n - 5, ".yaml")) ||
	       (n > 4 && !strcmp(name + n - 4, ".yml"));
}

/* Appends every *.yaml / *.yml below dir (unsorted) to files. */
static int walk(struct strvec *files, const char *dir, int depth, struct error *err)
{
	DIR *dh = NULL;
	struct dirent *e;
	struct buf path = BUF_INIT;
	struct stat st;
	int rc = 0;

	if (depth > CONFIG_MAX_DEPTH)
		return error_set(err, IG_ETOOBIG, "config '%s': directories nested deeper than %d",
		                 dir, CONFIG_MAX_DEPTH);
	if (!(dh = opendir(dir)))
		return error_set(err, IG_EFAIL, "config '%s': %s", dir, strerror(errno));
	while ((e = readdir(dh))) {
		if (e->d_name[0] == '.') /* ., .., hidden files, ConfigMap's ..data */
			continue;
		buf_reset(&path);
		if ((rc = buf_printf(&path, "%s/%s", dir, e->d_name)) < 0)
			break;
		if (stat(path.data, &st) < 0)
			continue; /* a dangling symlink */
		if (S_ISDIR(st.st_mode))
			rc = walk(files, path.data, depth + 1, err);
		else if (S_ISREG(st.st_mode) && has_yaml_suffix(e->d_name))
			rc = files->len >= CONFIG_MAX_FILES
			         ? error_set(err, IG_ETOOBIG, "config '%s': more than %d files",
			                     dir, CONFIG_MAX_FILES)
			         : strvec_push(files, path.data);
		if (rc < 0)
			break;
	}
	if (rc == IG_EFAIL && !err->code)
		error_set(err, IG_EFAIL, "config '%s': out of memory", dir);
	closedir(dh);
	buf_release(&path);
	return rc;
}

int config_files_list(struct strvec *files, const char *path, struct error *err)
{
	struct stat st;
	size_t n = strlen(path);
	char *dir;
	int rc;

	if (stat(path, &st) < 0)
		return error_set(err, errno == ENOENT ? IG_ENOTFOUND : IG_EFAIL, "config '%s': %s",
		                 path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return strvec_push(files, path) < 0
		           ? error_set(err, IG_EFAIL, "config '%s': out of memory", path)
		           : 0;
	while (n > 1 && path[n - 1] == '/') /* "dir/" lists as "dir/x.yaml", not "dir//x.yaml" */
		n--;
	if (!(dir = strndup(path, n)))
		return error_set(err, IG_EFAIL, "config '%s': out of memory", path);
	rc = walk(files, dir, 0, err);
	free(dir);
	strvec_sort(files);
	return rc;
}
