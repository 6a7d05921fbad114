/* safefile: reading and replacing files in an untrusted tree. Each case plants links, FIFOs or
 * odd paths in a temp dir and checks that nothing outside the tree is read or changed. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/safefile.h"

struct tree {
	char dir[64];     /* holds root/ and outside/ */
	char root[96];    /* the untrusted tree */
	char outside[96]; /* outside/sentinel must never change */
};

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	chmod(path, mode);
}

static void in(char *out, size_t cap, const char *base, const char *rel)
{
	snprintf(out, cap, "%s/%s", base, rel);
}

static void tree_init(struct tree *t)
{
	char p[256];

	snprintf(t->dir, sizeof(t->dir), "/tmp/ig-safefile.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	snprintf(t->root, sizeof(t->root), "%s/root", t->dir);
	snprintf(t->outside, sizeof(t->outside), "%s/outside", t->dir);
	ck_assert_int_eq(mkdir(t->root, 0700), 0);
	ck_assert_int_eq(mkdir(t->outside, 0700), 0);
	in(p, sizeof(p), t->root, "apps");
	ck_assert_int_eq(mkdir(p, 0700), 0);
	in(p, sizeof(p), t->root, "apps/app.yaml");
	put(p, "image: app:v1\n", 0640);
	in(p, sizeof(p), t->outside, "sentinel");
	put(p, "untouched\n", 0600);
	in(p, sizeof(p), t->outside, "app.yaml");
	put(p, "outside\n", 0600);
}

static void tree_done(struct tree *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void check_outside(const struct tree *t)
{
	struct buf b = BUF_INIT;
	char p[256];

	in(p, sizeof(p), t->outside, "sentinel");
	ck_assert_int_eq(buf_read_file(&b, p), 0);
	ck_assert_str_eq(b.data, "untouched\n");
	in(p, sizeof(p), t->outside, "app.yaml");
	ck_assert_int_eq(buf_read_file(&b, p), 0);
	ck_assert_str_eq(b.data, "outside\n");
	buf_release(&b);
}

/* Plants, in root: `kind` l = symlink (target outside), f = FIFO, d = directory. */
static const struct {
	const char *what;
	char kind;
	const char *path, *target; /* target relative to the outside dir */
	const char *rel;           /* what is then read and replaced */
	int rc;                    /* of both read and replace */
} plants[] = {
    {"the old temp name", 'l', "apps/app.yaml.imageguard-tmp", "sentinel", "apps/app.yaml", 0},
    {"a linked file", 'l', "apps/link.yaml", "app.yaml", "apps/link.yaml", IG_EINVALID},
    {"a linked parent", 'l', "lnk", ".", "lnk/app.yaml", IG_EINVALID},
    {"a linked grandparent", 'l', "up", "..", "up/outside/app.yaml", IG_EINVALID},
    {"a FIFO", 'f', "apps/fifo.yaml", NULL, "apps/fifo.yaml", IG_EINVALID},
    {"a directory", 'd', "apps/dir.yaml", NULL, "apps/dir.yaml", IG_EINVALID},
    {"dot-dot", 0, NULL, NULL, "../outside/app.yaml", IG_EINVALID},
    {"dot-dot inside", 0, NULL, NULL, "apps/../../outside/app.yaml", IG_EINVALID},
    {"absolute", 0, NULL, NULL, "/etc/hostname", IG_EINVALID},
    {"missing", 0, NULL, NULL, "apps/none.yaml", IG_ENOTFOUND},
    {"dot components", 0, NULL, NULL, "./apps//./app.yaml", 0},
};

START_TEST(plant)
{
	struct tree t;
	struct buf b = BUF_INIT_MAX(1024);
	struct error err = ERROR_INIT;
	char p[256], q[400];

	tree_init(&t);
	if (plants[_i].kind) {
		in(p, sizeof(p), t.root, plants[_i].path);
		if (plants[_i].kind == 'l') {
			in(q, sizeof(q), t.outside, plants[_i].target);
			ck_assert_int_eq(symlink(q, p), 0);
		} else if (plants[_i].kind == 'f') {
			ck_assert_int_eq(mkfifo(p, 0600), 0);
		} else {
			ck_assert_int_eq(mkdir(p, 0700), 0);
		}
	}
	ck_assert_int_eq(safefile_read(&b, t.root, plants[_i].rel, &err), plants[_i].rc);
	if (plants[_i].rc == 0)
		ck_assert_str_eq(b.data, "image: app:v1\n");
	ck_assert_int_eq(safefile_replace(t.root, plants[_i].rel, "image: app:v2\n", 14, &err),
	                 plants[_i].rc);
	check_outside(&t);
	if (plants[_i].rc == 0) {
		struct stat st;

		in(p, sizeof(p), t.root, "apps/app.yaml");
		ck_assert_int_eq(buf_read_file(&b, p), 0);
		ck_assert_str_eq(b.data, "image: app:v2\n");
		ck_assert_int_eq(lstat(p, &st), 0);
		ck_assert(S_ISREG(st.st_mode));
		ck_assert_int_eq(st.st_mode & 07777, 0640); /* the mode is kept */
	} else {
		ck_assert_msg(strstr(err.msg, plants[_i].rel), "%s", err.msg);
	}
	/* no temporary is left behind: apps holds what was planted and app.yaml */
	in(p, sizeof(p), t.root, "apps");
	snprintf(q, sizeof(q), "test $(ls -A '%s' | wc -l) -eq %d", p,
	         1 + (plants[_i].kind && strncmp(plants[_i].path, "apps/", 5) == 0));
	ck_assert_int_eq(system(q), 0);
	buf_release(&b);
	tree_done(&t);
}
END_TEST

START_TEST(size_cap)
{
	struct tree t;
	struct buf b = BUF_INIT_MAX(8);
	struct error err = ERROR_INIT;

	tree_init(&t);
	ck_assert_int_eq(safefile_read(&b, t.root, "apps/app.yaml", &err), IG_ETOOBIG);
	/* refused from its size, before a byte is read */
	ck_assert_msg(strstr(err.msg, "'apps/app.yaml': larger than 8 bytes"), "%s", err.msg);
	b.max = 14;
	ck_assert_int_eq(safefile_read(&b, t.root, "apps/app.yaml", &err), 0);
	ck_assert_uint_eq(b.len, 14);
	buf_release(&b);
	tree_done(&t);
}
END_TEST

/* The root itself may be a link (the caller named it), and open_dir walks below it. */
START_TEST(root_and_dirs)
{
	struct tree t;
	struct buf b = BUF_INIT_MAX(1024);
	struct error err = ERROR_INIT;
	char p[256];
	int fd = -1, sub = -1;

	tree_init(&t);
	in(p, sizeof(p), t.dir, "rootlink");
	ck_assert_int_eq(symlink(t.root, p), 0);
	ck_assert_int_eq(safefile_read(&b, p, "apps/app.yaml", &err), 0);
	ck_assert_int_eq(safefile_open_root(&fd, p, &err), 0);
	ck_assert_int_eq(safefile_open_dir(&sub, fd, "apps", &err), 0);
	close(sub);
	ck_assert_int_eq(safefile_open_dir(&sub, fd, "apps/app.yaml", &err), IG_EINVALID);
	ck_assert_int_eq(safefile_open_dir(&sub, fd, "nope", &err), IG_ENOTFOUND);
	close(fd);
	in(p, sizeof(p), t.root, "apps/app.yaml");
	ck_assert_int_eq(safefile_open_root(&fd, p, &err), IG_EINVALID);
	buf_release(&b);
	tree_done(&t);
}
END_TEST

/* A rewrite keeps the file's mode whatever the umask (here 0666 under umask 022). */
START_TEST(replace_keeps_mode)
{
	struct tree t;
	struct error err = ERROR_INIT;
	struct stat st;
	char p[256];
	mode_t old = umask(022);

	tree_init(&t);
	in(p, sizeof(p), t.root, "apps/app.yaml");
	ck_assert_int_eq(chmod(p, 0666), 0);
	ck_assert_msg(safefile_replace(t.root, "apps/app.yaml", "image: app:v2\n", 14, &err) == 0,
	              "%s", err.msg);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0666);
	umask(old);
	tree_done(&t);
}
END_TEST

/* A path is walked one directory at a time, at most 256 of them: 256 directories deep is
 * read, 257 is refused. */
START_TEST(component_cap)
{
	struct tree t;
	struct buf b = BUF_INIT_MAX(64);
	struct error err = ERROR_INIT;
	char rel[1100], cmd[1400];
	int depth = 256 + _i, n = 0;

	tree_init(&t);
	for (int i = 0; i < depth; i++)
		n += snprintf(rel + n, sizeof(rel) - (size_t)n, "d/");
	ck_assert_int_lt(snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s' && echo x >'%s/%sf'", t.root,
	                          rel, t.root, rel),
	                 (int)sizeof(cmd));
	ck_assert_int_eq(system(cmd), 0);
	snprintf(rel + n, sizeof(rel) - (size_t)n, "f");
	if (_i == 0) {
		ck_assert_msg(safefile_read(&b, t.root, rel, &err) == 0, "%s", err.msg);
		ck_assert_str_eq(b.data, "x\n");
	} else {
		ck_assert_int_eq(safefile_read(&b, t.root, rel, &err), IG_EINVALID);
		ck_assert_msg(strstr(err.msg, "path too long"), "%s", err.msg);
	}
	buf_release(&b);
	tree_done(&t);
}
END_TEST

/* The ticks that interrupt the writes: at most TICKS_MAX, so that a process slower than the
 * tick (valgrind's: every write interrupted before it moves a byte) still finishes. */
#define TICKS_MAX 500
static volatile sig_atomic_t ticks;

static void on_alarm(int sig)
{
	static const struct itimerval off = {{0, 0}, {0, 0}};

	(void)sig;
	if (++ticks >= TICKS_MAX)
		setitimer(ITIMER_REAL, &off, NULL);
}

/* Reads the pipe slowly and exits 0 when it held exactly n bytes of the pattern i % 251. */
static void slow_reader(int fd, size_t n)
{
	unsigned char chunk[4096];
	size_t got = 0;
	ssize_t r;

	while ((r = read(fd, chunk, sizeof(chunk))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			_exit(2);
		for (ssize_t k = 0; k < r; k++)
			if (chunk[k] != (unsigned char)((got + (size_t)k) % 251))
				_exit(3);
		got += (size_t)r;
		usleep(100);
	}
	_exit(got == n ? 0 : 4);
}

/* A cache file written whole: made 0600, then replaced; a link standing at its path or at its
 * temporary's is replaced, never written through (the file it names is untouched). */
START_TEST(write_cache)
{
	struct tree t;
	struct stat st;
	char p[256], tmp[300], target[256], got[64] = {0};
	int fd;

	tree_init(&t);
	in(p, sizeof(p), t.root, "cache");
	ck_assert_int_eq(safefile_write_cache(p, "one\n", 4), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(safefile_write_cache(p, "two\n", 4), 0);
	fd = open(p, O_RDONLY);
	ck_assert_int_eq(read(fd, got, sizeof(got) - 1), 4);
	close(fd);
	ck_assert_str_eq(got, "two\n");
	in(target, sizeof(target), t.outside, "sentinel");
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(symlink(target, p), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", p, (long)getpid());
	ck_assert_int_eq(symlink(target, tmp), 0);
	ck_assert_int_eq(safefile_write_cache(p, "three\n", 6), 0);
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(access(tmp, F_OK), -1);
	fd = open(target, O_RDONLY);
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(read(fd, got, sizeof(got) - 1), 10);
	close(fd);
	ck_assert_str_eq(got, "untouched\n");
	tree_done(&t);
}
END_TEST

/* safefile_write_all: a 1 MiB write into a slow pipe under a 1 ms timer (a handler without
 * SA_RESTART: write(2) returns short counts and EINTR) arrives whole; a bad fd is -1. */
START_TEST(write_all)
{
	struct sigaction sa = {0}, old;
	struct itimerval tick = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
	size_t n = 1024 * 1024;
	unsigned char *data = malloc(n);
	int fds[2], status;
	pid_t pid;

	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i % 251);
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		close(fds[1]);
		slow_reader(fds[0], n);
	}
	close(fds[0]);
	sa.sa_handler = on_alarm;
	ticks = 0;
	ck_assert_int_eq(sigaction(SIGALRM, &sa, &old), 0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &tick, NULL), 0);
	ck_assert_int_eq(safefile_write_all(fds[1], data, n), 0);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	close(fds[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	errno = 0;
	ck_assert_int_eq(safefile_write_all(-1, data, 1), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(safefile_write_all(-1, data, 0), 0);
	free(data);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("safefile");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, plant, 0, sizeof(plants) / sizeof(plants[0]));
	tcase_add_test(tc, size_cap);
	tcase_add_test(tc, root_and_dirs);
	tcase_add_test(tc, replace_keeps_mode);
	tcase_add_loop_test(tc, component_cap, 0, 2);
	tcase_add_test(tc, write_all);
	tcase_add_test(tc, write_cache);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
