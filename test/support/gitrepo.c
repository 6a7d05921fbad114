/* Bare Git remotes for the Git suites (see gitrepo.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitrepo.h"
#include "imageguard/util/buf.h"

/* Temp dirs of this process, removed at exit too. Crash-test children _exit and skip it. */
static char cleanup_dirs[32][128];
static int cleanup_len;

static void cleanup_all(void)
{
	for (int i = 0; i < cleanup_len; i++)
		gitrepo_sh("rm -rf '%s'", cleanup_dirs[i]);
	cleanup_len = 0;
}

const char *gitrepo_src_dir(void)
{
	const char *s = getenv("IMAGEGUARD_SRC");

	return s && *s ? s : ".";
}

int gitrepo_sh(const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(&b, fmt, ap);
	va_end(ap);
	rc = rc < 0 ? -1 : system(b.data);
	buf_release(&b);
	return rc;
}

/* dir/path with content, the parents of path made first. */
static int put_file(const char *dir, const char *path, const char *content)
{
	char full[512];
	FILE *f;

	if ((size_t)snprintf(full, sizeof(full), "%s/%s", dir, path) >= sizeof(full))
		return -1;
	for (char *p = full + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(full, 0700) < 0 && access(full, F_OK) < 0)
			return -1;
		*p = '/';
	}
	if (!(f = fopen(full, "w")))
		return -1;
	fputs(content, f);
	return fclose(f) == 0 ? 0 : -1;
}

int gitrepo_init(struct gitrepo *r, const char *prefix, const char *const seed[])
{
	char seed_dir[160];

	snprintf(r->dir, sizeof(r->dir), "/tmp/%s.XXXXXX", prefix);
	if (!mkdtemp(r->dir))
		return -1;
	if (cleanup_len == 0)
		atexit(cleanup_all);
	if (cleanup_len < 32)
		memcpy(cleanup_dirs[cleanup_len++], r->dir, sizeof(r->dir));
	snprintf(r->remote, sizeof(r->remote), "%s/remote.git", r->dir);
	snprintf(r->url, sizeof(r->url), "file://%s", r->remote);
	snprintf(r->state, sizeof(r->state), "%s/state", r->dir);
	snprintf(seed_dir, sizeof(seed_dir), "%s/seed", r->dir);
	if (mkdir(seed_dir, 0700) < 0)
		return -1;
	for (size_t i = 0; seed && seed[i]; i += 2)
		if (put_file(seed_dir, seed[i], seed[i + 1]) < 0)
			return -1;
	return gitrepo_sh("%s/test/fixtures/gitpeers.sh bare %s %s >/dev/null", gitrepo_src_dir(),
	                  r->remote, seed_dir) == 0
	           ? 0
	           : -1;
}

void gitrepo_done(struct gitrepo *r)
{
	gitrepo_sh("rm -rf '%s'", r->dir);
}
