/* The saved directories of a clean walk (.git/imageguard-dirs, gitwalk_dirs_load): any bytes
 * load or are refused with IG_ENOTFOUND, never a crash, a leak or undefined behaviour. The
 * checksum is taken from the input itself, so mutations reach the records. What loads holds for
 * that checksum only, saves and loads back to the same bytes, and drives gitwalk_changes_since
 * over a small scratch tree (an empty index) next to a watched outside/ that a link in the tree
 * points to: every path it reports is a relative path below the tree that no link leads to,
 * and nothing outside is opened. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <git2.h>

#include "../../src/git/gitwalk.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/strvec.h"

#define HEAD_LEN (8 + GIT_OID_RAWSZ) /* the magic, then the index checksum */

static char base[256], tree[300], outside[300], input[300], saved[2][300], index_file[300];
static int watch_fd = -1;
static git_index *empty_index;

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static void remove_base(void)
{
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* base/tree: a/, a/b/, files in each, a link l -> ../outside; base/outside/d/ is watched. */
static void make_scratch(void)
{
	const char *tmp = getenv("TMPDIR");
	char p[400];

	snprintf(base, sizeof(base), "%s/ig-gitdirs.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(base) != NULL);
	atexit(remove_base);
	snprintf(tree, sizeof(tree), "%s/tree", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	snprintf(input, sizeof(input), "%s/input", base);
	snprintf(saved[0], sizeof(saved[0]), "%s/saved0", base);
	snprintf(saved[1], sizeof(saved[1]), "%s/saved1", base);
	snprintf(index_file, sizeof(index_file), "%s/index", base);
	put(index_file, "");
	FUZZ_CHECK(mkdir(tree, 0700) == 0 && mkdir(outside, 0700) == 0);
	snprintf(p, sizeof(p), "%s/d", outside);
	FUZZ_CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof(p), "%s/d/secret", outside);
	put(p, "x\n");
	snprintf(p, sizeof(p), "%s/a", tree);
	FUZZ_CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof(p), "%s/a/b", tree);
	FUZZ_CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof(p), "%s/a/f", tree);
	put(p, "f\n");
	snprintf(p, sizeof(p), "%s/a/b/g", tree);
	put(p, "g\n");
	snprintf(p, sizeof(p), "%s/l", tree);
	FUZZ_CHECK(symlink("../outside", p) == 0);
	watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	FUZZ_CHECK(watch_fd >= 0);
	FUZZ_CHECK(inotify_add_watch(watch_fd, outside, IN_ALL_EVENTS) >= 0);
	snprintf(p, sizeof(p), "%s/d", outside);
	FUZZ_CHECK(inotify_add_watch(watch_fd, p, IN_ALL_EVENTS) >= 0);
}

/* The number of events waiting (and drops them). */
static int drain(void)
{
	char events[4096];
	int n = 0;
	ssize_t r;

	while ((r = read(watch_fd, events, sizeof(events))) > 0)
		for (ssize_t off = 0; off < r;) {
			const struct inotify_event *e = (const void *)(events + off);

			off += (ssize_t)(sizeof(*e) + e->len);
			n++;
		}
	return n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_quiet();
	FUZZ_CHECK(git_libgit2_init() > 0);
	FUZZ_CHECK(git_index_new(&empty_index) == 0);
	make_scratch();
	return 0;
}

static void write_input(const uint8_t *data, size_t size)
{
	int fd;

	unlink(input);
	fd = open(input, O_WRONLY | O_CREAT | O_EXCL, 0600);
	FUZZ_CHECK(fd >= 0 && safefile_write_all(fd, data, size) == 0 && close(fd) == 0);
}

/* The file's bytes into b (a test's own file: plain reads). */
static void slurp(struct buf *b, const char *path)
{
	b->len = 0;
	FUZZ_CHECK(buf_read_file(b, path) == 0);
}

/* A reported path: relative, no empty, "." or ".." component, its parents real directories
 * below the tree (no link among them). */
static void check_reported(const char *path)
{
	char *copy = fuzz_strndup(path, strlen(path)), *slash = strrchr(copy, '/');
	struct error err = ERROR_INIT;
	int root = -1, dir = -1;

	FUZZ_CHECK(path[0] != '\0' && path[0] != '/');
	FUZZ_CHECK(!strstr(path, "//") && path[strlen(path) - 1] != '/');
	FUZZ_CHECK(strcmp(path, "..") && strncmp(path, "../", 3) && !strstr(path, "/../") &&
	           !strstr(path, "/./") && strncmp(path, "./", 2));
	if (slash)
		*slash = '\0';
	FUZZ_CHECK(safefile_open_root(&root, tree, &err) == 0);
	FUZZ_CHECK(safefile_open_dir(&dir, root, slash ? copy : "", &err) == 0);
	close(dir);
	close(root);
	free(copy);
}

/* Loaded dirs: saved and loaded back the same, and the walk from them stays inside. */
static void check_loaded(struct gitwalk_dirs *d, const git_oid *sum)
{
	struct gitwalk_dirs *again = NULL;
	struct buf first = BUF_INIT, second = BUF_INIT;
	struct strvec out = STRVEC_INIT;
	bool undecided = true;
	size_t hashed = 0;

	FUZZ_CHECK(gitwalk_dirs_save(d, saved[0], sum) == 0);
	FUZZ_CHECK(gitwalk_dirs_load(&again, saved[0], sum) == 0);
	FUZZ_CHECK(gitwalk_dirs_save(again, saved[1], sum) == 0);
	slurp(&first, saved[0]);
	slurp(&second, saved[1]);
	FUZZ_CHECK(first.len == second.len && memcmp(first.data, second.data, first.len) == 0);
	drain();
	FUZZ_CHECK(gitwalk_changes_since(&out, &undecided, &hashed, d, empty_index, tree,
	                                 index_file) == 0);
	FUZZ_CHECK(drain() == 0);
	for (size_t i = 0; i < out.len; i++)
		check_reported(out.items[i]);
	strvec_release(&out);
	gitwalk_dirs_free(again);
	buf_release(&first);
	buf_release(&second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gitwalk_dirs *d = NULL, *other = NULL;
	git_oid sum = {{0}};
	int rc;

	if (size > 1 << 20)
		return 0;
	if (size >= HEAD_LEN)
		memcpy(sum.id, data + 8, GIT_OID_RAWSZ);
	write_input(data, size);
	rc = gitwalk_dirs_load(&d, input, &sum);
	FUZZ_CHECK(rc == 0 ? d != NULL : rc == IG_ENOTFOUND && d == NULL);
	if (!d)
		return 0;
	/* another index's checksum never loads */
	sum.id[0] ^= 1;
	FUZZ_CHECK(gitwalk_dirs_load(&other, input, &sum) == IG_ENOTFOUND && other == NULL);
	sum.id[0] ^= 1;
	check_loaded(d, &sum);
	gitwalk_dirs_free(d);
	return 0;
}
