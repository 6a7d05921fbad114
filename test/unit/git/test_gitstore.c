/* The Git store against real peers: bare repositories over file:// and paths, sshd on loopback
 * (right, wrong and unknown keys), git http-backend with basic auth and bearer tokens, a racing
 * writer, broken caches and processes killed mid-clone, mid-edit and mid-push. */
#define _GNU_SOURCE /* strcasestr */
#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <git2.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/git/gitauth.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/git/knownhosts.h"
#include "support/gitrepo.h"

/* The ssh tests need LeakSanitizer to unwind through libgit2 (test/support/sanitizer.c). */
const int sanitizer_slow_unwind = 1;

static char peers[256]; /* sshd and http server of this suite */
static char ssh_port[64];
static char http_port[64];
static char https_port[64];

/* First line of a command's output, in out. */
static void sh_out(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sh_out(char *out, size_t cap, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	out[0] = '\0';
	f = popen(b.data, "r");
	if (f) {
		if (!fgets(out, (int)cap, f))
			out[0] = '\0';
		pclose(f);
	}
	out[strcspn(out, "\n")] = '\0';
	buf_release(&b);
}

static void read_small(char *out, size_t cap, const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(out, 1, cap - 1, f);
		fclose(f);
	}
	out[n] = '\0';
}

/* A temp dir with remote.git seeded with app.yaml (image v1) and other.txt; state/ for caches. */
static void fx_init(struct gitrepo *f)
{
	static const char *const seed[] = {"apps/app.yaml", "image: app:v1\n", "other.txt", "x\n",
	                                   NULL};

	ck_assert_int_eq(gitrepo_init(f, "ig-gitstore", seed), 0);
}

static void remote_head(char out[64], const struct gitrepo *f, const char *branch)
{
	sh_out(out, 64, "git --git-dir=%s rev-parse --verify -q refs/heads/%s", f->remote, branch);
}

static int remote_count(const struct gitrepo *f, const char *branch)
{
	char out[64];

	sh_out(out, sizeof(out), "git --git-dir=%s rev-list --count refs/heads/%s", f->remote,
	       branch);
	return (int)strtol(out, NULL, 10);
}

/* The edit: sets app.yaml's image to `value`, re-reading the file each time (a no-op when it
 * already holds the value). `hook` runs before it on every call (a racing writer, a crash). */
struct edit {
	const char *value;
	int calls;
	void (*hook)(struct edit *e, const char *workdir);
	const struct gitrepo *f;
	char extra[64]; /* a second file to write, "" for none */
};

/* When set, do_edit's message ends in imageguard's trailer block (commitmsg_render's form). */
static bool edit_trailers;

static int do_edit(void *ctx, const char *workdir, struct buf *message, struct error *err)
{
	struct edit *e = ctx;
	char path[512], content[256], want[128];
	FILE *fp;

	e->calls++;
	if (e->hook)
		e->hook(e, workdir);
	snprintf(path, sizeof(path), "%sapps/app.yaml", workdir);
	read_small(content, sizeof(content), path);
	snprintf(want, sizeof(want), "image: app:%s\n", e->value);
	if (strcmp(content, want) != 0) {
		if (!(fp = fopen(path, "w")))
			return error_set(err, IG_EFAIL, "cannot write '%s'", path);
		fputs(want, fp);
		fclose(fp);
	}
	if (e->extra[0]) {
		snprintf(path, sizeof(path), "%s%s", workdir, e->extra);
		if ((fp = fopen(path, "w"))) {
			fputs("new\n", fp);
			fclose(fp);
		}
	}
	buf_printf(message, "default/app: -> %s (apps/app.yaml)", e->value);
	if (edit_trailers)
		buf_printf(message, "\n\nImageguard-Policy: default/app\n"
		                    "Imageguard-Decision: default/app update/forward\n");
	return 0;
}

static struct gitstore_options opts_for(const struct gitrepo *f)
{
	struct gitstore_options o = {.url = f->url,
	                             .branch = "main",
	                             .state_dir = f->state,
	                             .author_name = "Robot",
	                             .author_email = "robot@example.com"};

	return o;
}

static void check_remote_app(const struct gitrepo *f, const char *branch, const char *value)
{
	char out[128], want[128];

	sh_out(out, sizeof(out), "git --git-dir=%s show refs/heads/%s:apps/app.yaml", f->remote,
	       branch);
	snprintf(want, sizeof(want), "image: app:%s", value);
	ck_assert_str_eq(out, want);
}

/* --- file:// and local paths --------------------------------------------------------------- */

START_TEST(file_clone_commit_push)
{
	static const char *forms[] = {"file://%s", "%s"};
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], head[64], out[256];

	fx_init(&f);
	snprintf(f.url, sizeof(f.url), forms[_i], f.remote);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	remote_head(head, &f, "main");
	ck_assert_str_eq(gitstore_head(g), head);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	remote_head(head, &f, "main");
	ck_assert_str_eq(commit, head);
	ck_assert_str_eq(gitstore_head(g), head);
	check_remote_app(&f, "main", "v2");
	sh_out(out, sizeof(out), "git --git-dir=%s log -1 --format='%%an <%%ae>|%%cn|%%s' main",
	       f.remote);
	ck_assert_str_eq(out, "Robot <robot@example.com>|Robot|default/app: -> v2 (apps/app.yaml)");
	sh_out(out, sizeof(out), "git --git-dir=%s show --format= --name-only main | tr '\\n' ' '",
	       f.remote);
	ck_assert_str_eq(out, "apps/app.yaml ");
	gitstore_free(g);

	/* warm: fetch + reset; nothing to change means no commit */
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), head);
	ck_assert_int_eq(gitstore_commit_push(commit, g, do_edit, &e, &err), 0);
	ck_assert_str_eq(commit, "");
	ck_assert_int_eq(remote_count(&f, "main"), 2);
	gitstore_free(g);
	gitrepo_done(&f);
}
END_TEST

/* A stop flag (SIGTERM in `run`) ends a clone and a fetch at libgit2's next progress callback
 * (issue 12 item 4): "stopping", and a warm cache is kept, not recloned. */
START_TEST(stop_ends_clone_and_fetch)
{
	static volatile sig_atomic_t stop;
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	char head[64];

	fx_init(&f);
	o = opts_for(&f);
	o.stop = &stop;
	stop = 1;
	ck_assert_int_lt(gitstore_open(&g, &o, &err), 0);
	ck_assert_msg(strstr(err.msg, "stopping"), "%s", err.msg);
	ck_assert_ptr_null(g);
	stop = 0;
	error_clear(&err);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	g = NULL;
	ck_assert_int_eq(
	    gitrepo_sh("git clone -q %s %s/more && cd %s/more && printf 'y\\n' >more.txt && "
	               "git add -A && git -c user.name=s -c user.email=s@s commit -qm more && "
	               "git push -q origin HEAD:main",
	               f.remote, f.dir, f.dir),
	    0);
	stop = 1;
	ck_assert_int_lt(gitstore_open(&g, &o, &err), 0);
	ck_assert_msg(strstr(err.msg, "stopping"), "%s", err.msg);
	stop = 0;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	remote_head(head, &f, "main");
	ck_assert_str_eq(gitstore_head(g), head);
	gitstore_free(g);
	gitrepo_done(&f);
}
END_TEST

static volatile sig_atomic_t lock_stop;

/* The stop after 0.3 s; the holder killed after 3 s, so that a wait deaf to the stop ends
 * with the lock, and the test fails instead of hanging. */
static void *stop_later(void *arg)
{
	usleep(300 * 1000);
	lock_stop = 1;
	usleep(2700 * 1000);
	kill(*(pid_t *)arg, SIGKILL);
	return NULL;
}

/* A cache's lock: a second open of a cache this process holds is refused at once (the thread
 * that holds it would otherwise wait on itself for ever), and a wait for another process's
 * hold ends at a stop (SIGTERM in `run`, which a blocking flock never saw). */
START_TEST(cache_lock_refused_or_stopped)
{
	struct gitrepo f;
	struct gitstore *g = NULL, *g2 = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct timespec t0, t1;
	char lock[512];
	int ready[2], fd;
	pthread_t th;
	pid_t pid;

	fx_init(&f);
	o = opts_for(&f);
	o.stop = &lock_stop;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_int_lt(gitstore_open(&g2, &o, &err), 0);
	ck_assert_msg(strstr(err.msg, "already open in this process"), "%s", err.msg);
	ck_assert_ptr_null(g2);
	gitstore_free(g);
	error_clear(&err);

	/* another process holds the lock: the open waits until the stop */
	sh_out(lock, sizeof(lock), "ls %s/git/*.lock", f.state);
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fd = open(lock, O_RDWR);
		if (fd < 0 || flock(fd, LOCK_EX) != 0 || write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], lock, 1), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(pthread_create(&th, NULL, stop_later, &pid), 0);
	ck_assert_int_lt(gitstore_open(&g, &o, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(th, NULL);
	ck_assert_msg(strstr(err.msg, "stopping"), "%s", err.msg);
	ck_assert_int_ge((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 250);
	/* once it lets go the cache opens: the refused and the stopped opens held nothing */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	lock_stop = 0;
	error_clear(&err);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	close(ready[0]);
	close(ready[1]);
	gitrepo_done(&f);
}
END_TEST

START_TEST(new_file_and_remote_moves_between_opens)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v3", 0, NULL, NULL, "apps/new.yaml"};
	char commit[41], out[256];

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	/* someone else commits between passes; the next open must see it */
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && git clone -q %s other && cd other && echo y >other.txt && "
	               "git -c user.name=o -c user.email=o@x commit -qam other && git push -q",
	               f.dir, f.remote),
	    0);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	sh_out(out, sizeof(out), "git --git-dir=%s show main:other.txt", f.remote);
	ck_assert_str_eq(out, "y");
	sh_out(out, sizeof(out),
	       "git --git-dir=%s show --format= --name-only main | sort | tr '\\n' ' '", f.remote);
	ck_assert_str_eq(out, "apps/app.yaml apps/new.yaml ");
	gitstore_free(g);
	gitrepo_done(&f);
}
END_TEST

/* Another writer's commit between two opens, and what the sync does with it: content changes
 * alone are written by gitstore itself (write_changes), anything else by libgit2's checkout.
 * Either way the work tree and index are then exactly the remote's head, and the pass's own
 * commit on top holds its edit and nothing else. */
static const struct {
	const char *what, *change;
} syncs[] = {
    {"one file's content", "echo y >other.txt"},
    {"two files' content", "echo y >other.txt && echo 'image: app:v2' >apps/app.yaml"},
    {"a mode", "chmod +x other.txt"},
    {"a new file", "mkdir -p new/dir && echo n >new/dir/f.txt"},
    {"a removed file", "git rm -q other.txt"},
    {"a renamed file", "git mv other.txt renamed.txt"},
    {"content and a new file", "echo y >other.txt && echo n >apps/n.yaml"},
    {"a file becomes a directory", "git rm -q other.txt && mkdir other.txt && echo d >other.txt/f"},
    {"a file becomes a link", "rm other.txt && ln -s apps/app.yaml other.txt"},
};

START_TEST(remote_change_synced)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v9", 0, NULL, NULL, ""};
	char commit[41], out[512], other[64];

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && git clone -q %s other && cd other && %s && git add -A && "
	               "git -c user.name=o -c user.email=o@x commit -qm other && git push -q",
	               f.dir, f.remote, syncs[_i].change),
	    0);
	remote_head(other, &f, "main");
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s: %s", syncs[_i].what, err.msg);
	ck_assert_str_eq(gitstore_head(g), other);
	/* the work tree and index are the head's: nothing staged, changed or untracked */
	sh_out(out, sizeof(out), "cd %s && git status --porcelain --untracked-files=all | wc -l",
	       gitstore_workdir(g));
	ck_assert_msg(strcmp(out, "0") == 0, "%s: status not clean", syncs[_i].what);
	sh_out(out, sizeof(out), "cd %s && git diff --quiet HEAD && echo same",
	       gitstore_workdir(g));
	ck_assert_str_eq(out, "same");
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	sh_out(out, sizeof(out), "git --git-dir=%s diff --name-only %s main | tr '\\n' ' '",
	       f.remote, other);
	ck_assert_msg(strcmp(out, "apps/app.yaml ") == 0, "%s: the commit changed [%s]",
	              syncs[_i].what, out);
	check_remote_app(&f, "main", "v9");
	gitstore_free(g);
	gitrepo_done(&f);
}
END_TEST

/* The staging after an edit looks only where directories moved since the clean check, and the
 * next open reuses the clean check's directories (saved beside the index): a file the edit
 * adds in an existing subdirectory is still staged, in this open and in the next. Every
 * directory must be recorded, not only the root: the clone ages first, so that no directory
 * is young enough to be read again on that ground alone. */
START_TEST(new_file_in_old_subdirectory_staged)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v4", 0, NULL, NULL, "apps/added.yaml"};
	char commit[41], out[256], dirs[512];

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	snprintf(dirs, sizeof(dirs), "%s.git/imageguard-dirs", gitstore_workdir(g));
	gitstore_free(g);
	sleep(3);
	/* the clone's own were taken while its directories were young: a full walk now */
	ck_assert_int_eq(unlink(dirs), 0);
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
		ck_assert_msg(access(dirs, F_OK) == 0, "no directories saved for the next open");
		ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s",
		              err.msg);
		sh_out(out, sizeof(out),
		       "git --git-dir=%s show --format= --name-only main | sort | tr '\\n' ' '",
		       f.remote);
		ck_assert_msg(strcmp(out, pass ? "apps/app.yaml apps/more.yaml "
		                               : "apps/added.yaml apps/app.yaml ") == 0,
		              "pass %d committed [%s]", pass, out);
		gitstore_free(g);
		e.value = "v5";
		snprintf(e.extra, sizeof(e.extra), "apps/more.yaml");
		sleep(2);
	}
	gitrepo_done(&f);
}
END_TEST

static bool mtime_after(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec > b->st_mtim.tv_sec ||
	       (a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec > b->st_mtim.tv_nsec);
}

/* A file as new as Git's index (a checkout's last files often are: the kernel stamps both
 * with its coarse clock) is racy: its stat data cannot show it clean, so it is hashed. The
 * open that hashes it writes its stat data back, and later opens take the stat-only path. */
START_TEST(racy_entries_refreshed)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct stat file, index;
	char path[512], ipath[512];

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	snprintf(path, sizeof(path), "%sapps/app.yaml", gitstore_workdir(g));
	snprintf(ipath, sizeof(ipath), "%s.git/index", gitstore_workdir(g));
	gitstore_free(g);
	usleep(20000);
	ck_assert_int_eq(gitrepo_sh("touch %s && touch -r %s %s", path, path, ipath), 0);
	ck_assert_int_eq(stat(path, &file), 0);
	ck_assert_int_eq(stat(ipath, &index), 0);
	ck_assert(!mtime_after(&index, &file)); /* racy */
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(stat(ipath, &index), 0);
	ck_assert_msg(mtime_after(&index, &file), "the index was not written back");
	gitrepo_done(&f);
}
END_TEST

START_TEST(push_branch_created_then_extended)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], main_before[64], main_after[64], out[128];

	fx_init(&f);
	o = opts_for(&f);
	o.push_branch = "imageguard/updates";
	remote_head(main_before, &f, "main");
	/* a warm cache first: the fetch then asks for a push branch the remote lacks */
	o.push_branch = NULL;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	o.push_branch = "imageguard/updates";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), main_before);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	remote_head(main_after, &f, "main");
	ck_assert_str_eq(main_before, main_after);
	check_remote_app(&f, "imageguard/updates", "v2");
	sh_out(out, sizeof(out), "git --git-dir=%s rev-parse imageguard/updates^", f.remote);
	ck_assert_str_eq(out, main_before);

	/* the branch exists now: the next change goes on top of it, never forced */
	e.value = "v3";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	check_remote_app(&f, "imageguard/updates", "v3");
	ck_assert_int_eq(remote_count(&f, "imageguard/updates"), 3);
	gitrepo_done(&f);
}
END_TEST

/* Signed commits (spec.git.commit.signingKey): a key made with gpg, exported as the Secret's
 * git.asc with its passphrase; the pushed head passes `git verify-commit` against the public
 * key, the unsigned seed commit fails it; a wrong passphrase is an error naming the Secret and
 * nothing is pushed. */
START_TEST(signed_commit_verifies)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], head[64], before[64], sec[256];

	fx_init(&f);
	ck_assert_int_eq(
	    gitrepo_sh(
	        "cd %s && mkdir -m 700 keys verify sec && export GNUPGHOME=$PWD/keys && "
	        "gpg -q --batch --pinentry-mode loopback --passphrase 'pass phrase' "
	        "--quick-gen-key "
	        "'Robot <robot@example.com>' ed25519 sign never 2>/dev/null && "
	        "gpg -q --batch --pinentry-mode loopback --passphrase 'pass phrase' --armor "
	        "--export-secret-keys robot@example.com >sec/git.asc && "
	        "printf 'pass phrase\n' >sec/passphrase && "
	        "gpg --batch --armor --export robot@example.com >pub.asc && "
	        "gpgconf --kill gpg-agent && GNUPGHOME=$PWD/verify gpg -q --batch --import pub.asc "
	        "2>/dev/null && GNUPGHOME=$PWD/verify gpgconf --kill gpg-agent",
	        f.dir),
	    0);
	snprintf(sec, sizeof(sec), "%s/sec", f.dir);
	o = opts_for(&f);
	o.signing_dir = sec;
	o.signing_name = "gpg-key";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	remote_head(head, &f, "main");
	ck_assert_str_eq(commit, head);
	check_remote_app(&f, "main", "v2");
	ck_assert_int_eq(
	    gitrepo_sh("GNUPGHOME=%s/verify git --git-dir=%s verify-commit main 2>/dev/null", f.dir,
	               f.remote),
	    0);
	ck_assert_int_ne(
	    gitrepo_sh("GNUPGHOME=%s/verify git --git-dir=%s verify-commit main^ 2>/dev/null",
	               f.dir, f.remote),
	    0);

	/* a passphrase that does not unlock the key: an error naming the Secret, no push */
	ck_assert_int_eq(gitrepo_sh("printf 'wrong\n' >%s/sec/passphrase", f.dir), 0);
	e.value = "v3";
	remote_head(before, &f, "main");
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_int_lt(gitstore_commit_push(commit, g, do_edit, &e, &err), 0);
	ck_assert_msg(strstr(err.msg, "signing key secret 'gpg-key'") &&
	                  strstr(err.msg, "nothing is pushed") && !strstr(err.msg, "wrong"),
	              "%s", err.msg);
	ck_assert_str_eq(commit, "");
	gitstore_free(g);
	remote_head(head, &f, "main");
	ck_assert_str_eq(head, before);
	check_remote_app(&f, "main", "v2");
	gitrepo_done(&f);
}
END_TEST

/* spec.git.push.refspec as Flux pushes it: with a push branch, the commit goes to the branch
 * and to the refspec's destination; with the refspec only, to the destination alone (main is
 * untouched). Both source forms; a forced refspec and a foreign source are refused at open. */
static const struct refspec_case {
	const char *spec;
	bool only;
	const char *dst; /* the ref that must hold the commit */
	bool main_moves;
} refspec_cases[] = {
    {"refs/heads/main:refs/heads/mirror", false, "refs/heads/mirror", true},
    {"HEAD:refs/review/main", true, "refs/review/main", false},
    {"main:refs/heads/auto", true, "refs/heads/auto", false},
};

START_TEST(push_refspec)
{
	const struct refspec_case *c = &refspec_cases[_i];
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], main_before[64], out[64];

	fx_init(&f);
	remote_head(main_before, &f, "main");
	o = opts_for(&f);
	o.push_refspec = c->spec;
	o.refspec_only = c->only;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	sh_out(out, sizeof(out), "git --git-dir=%s rev-parse --verify -q %s", f.remote, c->dst);
	ck_assert_str_eq(out, commit);
	remote_head(out, &f, "main");
	ck_assert_str_eq(out, c->main_moves ? commit : main_before);
	gitrepo_done(&f);
}
END_TEST

START_TEST(push_refspec_refused)
{
	static const char *const bad[][2] = {
	    {"+refs/heads/main:refs/heads/mirror", "forced; imageguard never forces a push"},
	    {"refs/heads/other:refs/heads/mirror", "the source must be HEAD or the branch"},
	    {"HEAD:heads/x", "the destination must be a ref under refs/"},
	};
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	size_t i;

	fx_init(&f);
	o = opts_for(&f);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct error err = ERROR_INIT;

		o.push_refspec = bad[i][0];
		ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EINVALID);
		ck_assert_ptr_null(g);
		ck_assert_msg(strstr(err.msg, "spec.git.push.refspec") &&
		                  strstr(err.msg, bad[i][1]),
		              "%s", err.msg);
	}
	gitrepo_done(&f);
}
END_TEST

/* A person's commit (subject, body, no trailers) on branch of the bare remote, by a clone. */
/* A commit on the remote's branch by name <email>; msg: git commit's -m arguments. */
static void commit_as(const struct gitrepo *f, const char *branch, const char *file,
                      const char *name, const char *email, const char *msg)
{
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && rm -rf person && git clone -q -b '%s' %s person && cd person && "
	               "echo mine >%s && git add -A && git -c user.name='%s' -c user.email='%s' "
	               "commit -q %s && git push -q origin HEAD:%s",
	               f->dir, branch, f->remote, file, name, email, msg, branch),
	    0);
}

static void person_commits(const struct gitrepo *f, const char *branch, const char *file)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "-m 'person: %s' -m 'Signed-off-by: p <p@x>'", file);
	commit_as(f, branch, file, "p", "p@x", msg);
}

static void rev(char out[64], const struct gitrepo *f, const char *spec)
{
	sh_out(out, 64, "git --git-dir=%s rev-parse --verify -q '%s'", f->remote, spec);
}

/* Flux's review flow (CONTRACT §4): a push branch with only imageguard's commits beyond the
 * checkout branch is rebuilt on the checkout head plus this pass's commit (the old commit
 * leaves the branch, replaced by compare-and-swap); one where a person added a commit is
 * appended to, the person's commit kept. */
START_TEST(push_branch_rebuilt_or_appended)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char c1[41], c2[41], c3[41], main_now[64], out[64], person[64];

	edit_trailers = true;
	fx_init(&f);
	o = opts_for(&f);
	o.push_branch = "imageguard/updates";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(c1, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);

	/* main moves on (the review was not merged yet): the push branch is rebuilt on it */
	person_commits(&f, "main", "more.txt");
	remote_head(main_now, &f, "main");
	e.value = "v3";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), main_now); /* decided against the checkout head */
	ck_assert_msg(gitstore_commit_push(c2, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	rev(out, &f, "refs/heads/imageguard/updates");
	ck_assert_str_eq(out, c2);
	rev(out, &f, "imageguard/updates^");
	ck_assert_str_eq(out, main_now);
	ck_assert_int_ne(
	    gitrepo_sh("git --git-dir=%s merge-base --is-ancestor %s imageguard/updates", f.remote,
	               c1),
	    0); /* the old imageguard commit is gone from the branch */
	check_remote_app(&f, "imageguard/updates", "v3");

	/* a person amends imageguard's commit (same message and trailers, the person as
	 * committer): a person's commit, appended to, never dropped */
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && rm -rf amend && git clone -q -b imageguard/updates %s amend && "
	               "cd amend && echo mine >amended.txt && git add -A && git -c "
	               "user.name=p -c user.email=p@x commit -q --amend --no-edit && git push "
	               "-qf origin HEAD:imageguard/updates",
	               f.dir, f.remote),
	    0);
	rev(person, &f, "refs/heads/imageguard/updates");
	e.value = "v3b";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), person);
	ck_assert_msg(gitstore_commit_push(c3, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	rev(out, &f, "imageguard/updates^");
	ck_assert_str_eq(out, person);

	/* a person adds a commit to the push branch: appended to, never dropped */
	person_commits(&f, "imageguard/updates", "review.txt");
	rev(person, &f, "refs/heads/imageguard/updates");
	e.value = "v4";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), person);
	ck_assert_msg(gitstore_commit_push(c3, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	rev(out, &f, "imageguard/updates^");
	ck_assert_str_eq(out, person);
	check_remote_app(&f, "imageguard/updates", "v4");
	edit_trailers = false;
	gitrepo_done(&f);
}
END_TEST

/* Commits by imageguard's own identity (author and committer Robot) whose messages are not
 * imageguard's: a Signed-off-by alone (a job sharing the bot's identity), an
 * Imageguard-Policy line in a paragraph that is not a trailer block, a subject alone. Each is
 * a person's commit all the same: the push branch is appended to, never rebuilt without it. */
static const char *const not_own_messages[] = {
    "-m 'job: update' -m 'Signed-off-by: Robot <robot@example.com>'",
    "-m 'job: update' -m 'Imageguard-Policy: default/app\nsee the review for why'",
    "-m 'job: update'",
};

START_TEST(own_identity_without_policy_trailer_is_kept)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char c1[41], c2[41], out[64], bot[64];

	edit_trailers = true;
	fx_init(&f);
	o = opts_for(&f);
	o.push_branch = "imageguard/updates";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(c1, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	person_commits(&f, "main", "more.txt"); /* main moves: a rebuild if all were own */
	commit_as(&f, "imageguard/updates", "job.txt", o.author_name, o.author_email,
	          not_own_messages[_i]);
	rev(bot, &f, "refs/heads/imageguard/updates");
	e.value = "v3";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), bot);
	ck_assert_msg(gitstore_commit_push(c2, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	rev(out, &f, "imageguard/updates^");
	ck_assert_str_eq(out, bot);
	check_remote_app(&f, "imageguard/updates", "v3");
	edit_trailers = false;
	gitrepo_done(&f);
}
END_TEST

/* The own-commit walk is bounded: a push branch more than 1000 commits beyond the checkout
 * branch, all imageguard's own (git fast-import writes them), is taken as a person's: appended
 * to, never rebuilt. 1001 commits (this pass's first and 1000 more) are one past the bound. */
START_TEST(own_walk_bounded)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char c1[41], tip[64];

	edit_trailers = true;
	fx_init(&f);
	o = opts_for(&f);
	o.push_branch = "imageguard/updates";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(c1, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	person_commits(&f, "main", "more.txt");
	ck_assert_int_eq(
	    gitrepo_sh("from='from refs/heads/imageguard/updates^0'; i=0; while [ $i -lt 1000 ]; "
	               "do printf 'commit refs/heads/imageguard/updates\\ncommitter Robot "
	               "<robot@example.com> 1700000000 +0000\\ndata 46\\nimageguard: "
	               "update\\n\\nImageguard-Policy: apps/x\\n%%s\\n' \"$from\"; from=; "
	               "i=$((i + 1)); done | git --git-dir=%s fast-import --quiet",
	               f.remote),
	    0);
	rev(tip, &f, "refs/heads/imageguard/updates");
	ck_assert_int_eq(gitrepo_sh("test \"$(git --git-dir=%s rev-list --count main..%s)\" = 1001",
	                            f.remote, tip),
	                 0);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), tip);
	gitstore_free(g);
	edit_trailers = false;
	gitrepo_done(&f);
}
END_TEST

/* The rebuild's own check: the push branch moves after the open read it (a person pushes
 * between open and commit): the advertisement on the push connection no longer shows the head
 * seen, so nothing is forced; the retry finds the person's commit and appends to it. */
START_TEST(push_branch_rebuild_sees_moved_head)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char c1[41], c2[41], out[64], person[64], main_now[64];

	edit_trailers = true;
	fx_init(&f);
	o = opts_for(&f);
	o.push_branch = "imageguard/updates";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(c1, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	person_commits(&f, "main", "more.txt");
	remote_head(main_now, &f, "main");
	e.value = "v3";
	e.calls = 0;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), main_now); /* a rebuild is planned */
	person_commits(&f, "imageguard/updates", "review.txt");
	rev(person, &f, "refs/heads/imageguard/updates");
	ck_assert_msg(gitstore_commit_push(c2, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(e.calls, 2);
	rev(out, &f, "imageguard/updates^");
	ck_assert_str_eq(out, person);
	check_remote_app(&f, "imageguard/updates", "v3");
	edit_trailers = false;
	gitrepo_done(&f);
}
END_TEST

START_TEST(missing_branch_and_bad_options)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;

	fx_init(&f);
	o = opts_for(&f);
	o.branch = "nope";
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_ENOTFOUND);
	ck_assert_msg(strstr(err.msg, "branch 'nope' not found"), "%s", err.msg);
	ck_assert_ptr_null(g);
	/* a typo after a good pass: the cache stays (no reclone on every pass), the error says
	 * which branch */
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	g = NULL;
	ck_assert_int_eq(
	    gitrepo_sh("for d in %s/state/git/*/; do touch \"$d/.imageguard-test-kept\"; done",
	               f.dir),
	    0);
	o.branch = "typo";
	error_clear(&err);
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_ENOTFOUND);
	ck_assert_msg(strstr(err.msg, "branch 'typo' not found"), "%s", err.msg);
	ck_assert_msg(!strstr(err.msg, "reclon"), "%s", err.msg);
	ck_assert_int_eq(gitrepo_sh("ls %s/state/git/*/.imageguard-test-kept >/dev/null", f.dir),
	                 0);
	o.branch = "bad..name";
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "'bad..name'"), "%s", err.msg);
	o = opts_for(&f);
	o.url = "ftp://example.com/x.git";
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "unsupported"), "%s", err.msg);
	o = opts_for(&f);
	snprintf(f.url, sizeof(f.url), "file://%s/none.git", f.dir);
	o.url = f.url;
	ck_assert_int_lt(gitstore_open(&g, &o, &err), 0);
	ck_assert_msg(strstr(err.msg, "git clone"), "%s", err.msg);
	gitrepo_done(&f);
}
END_TEST

/* --- the racing writer ----------------------------------------------------------------------- */

static void racer(struct edit *e, const char *workdir)
{
	const struct gitrepo *f = e->f;

	(void)workdir;
	if (e->calls > 1 && e->value[0] != '!')
		return;
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && rm -rf racer && git clone -q %s racer && cd racer && "
	               "date +%%s%%N >>other.txt && git -c user.name=racer -c user.email=r@x "
	               "commit -qam 'racer %d' && git push -q",
	               f->dir, f->remote, e->calls),
	    0);
}

START_TEST(race_reapplies_on_new_head)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, racer, NULL, ""};
	char commit[41], out[128];

	fx_init(&f);
	e.f = &f;
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(e.calls, 2);
	gitstore_free(g);
	/* seed, racer, ours on top */
	ck_assert_int_eq(remote_count(&f, "main"), 3);
	sh_out(out, sizeof(out), "git --git-dir=%s log -1 --format=%%s main^", f.remote);
	ck_assert_str_eq(out, "racer 1");
	sh_out(out, sizeof(out), "git --git-dir=%s rev-parse main", f.remote);
	ck_assert_str_eq(out, commit);
	check_remote_app(&f, "main", "v2");
	gitrepo_done(&f);
}
END_TEST

/* gitstore_push_start and _finish: the first attempt's edit and commit on the caller's thread,
 * the push on its own; a moved remote is re-applied when the push lands; nothing to commit is
 * nothing in flight; gitstore_free finishes a push never landed. */
START_TEST(push_in_flight_lands)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, racer, NULL, ""};
	char commit[41] = "x", out[128];

	fx_init(&f);
	e.f = &f;
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(gitstore_push_finish(commit, g, do_edit, &e, &err), 0); /* none started */
	ck_assert_str_eq(commit, "");
	ck_assert_msg(gitstore_push_start(g, do_edit, &e, &err) == 1, "%s", err.msg);
	ck_assert_int_eq(e.calls, 1); /* the racer pushed first: this push is refused */
	ck_assert_msg(gitstore_push_finish(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(e.calls, 2); /* re-applied on the racer's head, as it landed */
	sh_out(out, sizeof(out), "git --git-dir=%s log -1 --format=%%s main^", f.remote);
	ck_assert_str_eq(out, "racer 1");
	sh_out(out, sizeof(out), "git --git-dir=%s rev-parse main", f.remote);
	ck_assert_str_eq(out, commit);
	check_remote_app(&f, "main", "v2");
	/* the same value again: no commit, nothing in flight */
	e.hook = NULL;
	ck_assert_int_eq(gitstore_push_start(g, do_edit, &e, &err), 0);
	ck_assert_int_eq(gitstore_push_finish(commit, g, do_edit, &e, &err), 0);
	ck_assert_str_eq(commit, "");
	/* started and never landed: gitstore_free waits for it */
	e.value = "v3";
	ck_assert_msg(gitstore_push_start(g, do_edit, &e, &err) == 1, "%s", err.msg);
	gitstore_free(g);
	check_remote_app(&f, "main", "v3");
	gitrepo_done(&f);
}
END_TEST

/* An edit in parts (gitstore_edit_fn returning 1): each part its own commit, every part in one
 * push; a part that changes nothing (here the last) makes no commit but does not stop the push;
 * after a race the whole edit runs again. */
struct parts_edit {
	struct edit e; /* e.calls counts every part; e.hook races the first one */
	int part;      /* of the current attempt */
};

static int parts_edit(void *ctx, const char *workdir, struct buf *message, struct error *err)
{
	struct parts_edit *p = ctx;
	char path[512];
	FILE *fp;

	p->e.calls++;
	if (p->e.hook && p->e.calls == 1)
		p->e.hook(&p->e, workdir);
	if (p->part != 2) { /* the last part writes nothing */
		snprintf(path, sizeof(path), "%sapps/part-%d.yaml", workdir, p->part);
		if (!(fp = fopen(path, "w")))
			return error_set(err, IG_EFAIL, "cannot write '%s'", path);
		fprintf(fp, "part: %d\n", p->part);
		fclose(fp);
	}
	buf_printf(message, "part %d", p->part);
	if (++p->part < 3)
		return 1;
	p->part = 0;
	return 0;
}

START_TEST(edit_in_parts_one_push)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct parts_edit p = {{"v2", 0, racer, NULL, ""}, 0};
	char commit[41], out[256];

	fx_init(&f);
	p.e.f = &f;
	/* the remote's reflog counts pushes (libgit2 runs no hooks over file://) */
	ck_assert_int_eq(
	    gitrepo_sh("git --git-dir=%s config core.logAllRefUpdates always", f.remote), 0);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, parts_edit, &p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(p.e.calls, 6); /* three parts, again after the racer's push */
	gitstore_free(g);
	/* seed, racer, part 0 and part 1: one push of ours (the racer's is the other) */
	ck_assert_int_eq(remote_count(&f, "main"), 4);
	sh_out(out, sizeof(out), "git --git-dir=%s log -3 --format=%%s main | tr '\\n' ,",
	       f.remote);
	ck_assert_str_eq(out, "part 1,part 0,racer 1,");
	sh_out(out, sizeof(out), "git --git-dir=%s rev-parse main", f.remote);
	ck_assert_str_eq(out, commit);
	sh_out(out, sizeof(out), "git --git-dir=%s reflog show main | wc -l", f.remote);
	ck_assert_str_eq(out, "2");
	gitrepo_done(&f);
}
END_TEST

START_TEST(race_forever_is_a_conflict)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"!v2", 0, racer, NULL, ""};
	char commit[41];

	fx_init(&f);
	e.f = &f;
	o = opts_for(&f);
	o.max_attempts = 3;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(gitstore_commit_push(commit, g, do_edit, &e, &err), IG_ECONFLICT);
	ck_assert_msg(strstr(err.msg, "3 attempts") && strstr(err.msg, "non-fast-forward"), "%s",
	              err.msg);
	ck_assert_str_eq(commit, "");
	ck_assert_int_eq(e.calls, 3);
	gitstore_free(g);
	/* every racer commit is there, nothing of ours */
	ck_assert_int_eq(remote_count(&f, "main"), 4);
	check_remote_app(&f, "main", "v1");
	gitrepo_done(&f);
}
END_TEST

/* --- broken caches --------------------------------------------------------------------------- */

static const struct {
	const char *what;
	const char *damage; /* shell, run in the cache dir */
	int keeps_clone;    /* the warm clone survives (a marker file in .git stays) */
} damages[] = {
    {"stale locks",
     "touch .git/index.lock .git/HEAD.lock .git/refs/heads/main.lock "
     ".git/config.lock .git/packed-refs.lock",
     1},
    {"dirty tree", "echo junk >apps/app.yaml && echo junk >stray.txt && mkdir -p d && echo j >d/f",
     1},
    {"garbage HEAD", "echo garbage >.git/HEAD", 0},
    {"no objects", "rm -rf .git/objects", 0},
    {"no .git", "rm -rf .git", 0},
    {"truncated index", "head -c 20 .git/index >i && mv i .git/index", 0},
    {"leftover temp clone", "mkdir -p ../$(basename $PWD).tmp-99999/.git && rm -rf .git", 0},
};

START_TEST(broken_cache_recovers)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], cache[512], out[256];

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	snprintf(cache, sizeof(cache), "%s", gitstore_workdir(g));
	gitstore_free(g);
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && touch .git/ig-marker && %s", cache, damages[_i].damage), 0);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s: %s", damages[_i].what, err.msg);
	ck_assert_str_eq(gitstore_workdir(g), cache);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s: %s",
	              damages[_i].what, err.msg);
	gitstore_free(g);
	ck_assert_int_eq(remote_count(&f, "main"), 2);
	check_remote_app(&f, "main", "v2");
	sh_out(out, sizeof(out), "git --git-dir=%s show --format= --name-only main | tr '\\n' ' '",
	       f.remote);
	ck_assert_str_eq(out, "apps/app.yaml ");
	ck_assert_int_eq(gitrepo_sh("test -f %s.git/ig-marker", cache) == 0,
	                 damages[_i].keeps_clone);
	/* no leftovers beside the cache and its lock */
	sh_out(out, sizeof(out), "ls %s/git | wc -l", f.state);
	ck_assert_str_eq(out, "2");
	gitrepo_done(&f);
}
END_TEST

/* A test's first pass: open, commit v2, close; the clone's work tree into cache. */
static void commit_once(const struct gitstore_options *o, char *cache, size_t cap)
{
	struct gitstore *g = NULL;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41];

	ck_assert_msg(gitstore_open(&g, o, &err) == 0, "%s", err.msg);
	snprintf(cache, cap, "%s", gitstore_workdir(g));
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
}

/* The clean check skips comparing HEAD's tree with the index when .git/imageguard-tree names
 * this index (its checksum) as that tree: written after the commit's staging. An index that
 * something else rewrote (a staged change the work tree does not have) has another checksum:
 * compared again, found not clean, and reset, so the next commit carries nothing of it. */
START_TEST(index_changed_outside_is_reset)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], cache[512], out[256];

	fx_init(&f);
	o = opts_for(&f);
	commit_once(&o, cache, sizeof(cache));
	/* the record: this index's checksum (its last 20 bytes) and the commit's tree */
	sh_out(out, sizeof(out),
	       "cd %s && test \"$(cat .git/imageguard-tree)\" = \"$(tail -c 20 .git/index | od -An "
	       "-tx1 | tr -d ' \\n') $(git rev-parse HEAD^{tree})\" && echo recorded",
	       cache);
	ck_assert_str_eq(out, "recorded");
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && b=$(echo 'image: app:staged' | git hash-object -w "
	               "--stdin) && git update-index --cacheinfo 100644,$b,apps/app.yaml",
	               cache),
	    0);
	snprintf(e.extra, sizeof(e.extra), "apps/new.txt");
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	sh_out(out, sizeof(out), "cd %s && git diff --cached --quiet && echo same", cache);
	ck_assert_str_eq(out, "same");
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	check_remote_app(&f, "main", "v2");
	ck_assert_int_eq(gitrepo_sh("git --git-dir=%s cat-file -e main:apps/new.txt", f.remote), 0);
	gitrepo_done(&f);
}
END_TEST

/* One loose object of a real clone goes missing while HEAD still reads: the next open must
 * notice (any object-level error marks the cache broken) and reclone atomically. */
static const struct {
	const char *what;
	const char *object; /* rev whose object is deleted from .git/objects */
} lost[] = {
    {"the marked file's blob", "HEAD:apps/app.yaml"},
    {"a tree", "HEAD:apps"},
    {"the root tree", "HEAD^{tree}"},
    {"the head commit", "HEAD"},
};

START_TEST(missing_object_recovers)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], cache[512], out[256];

	fx_init(&f);
	o = opts_for(&f);
	commit_once(&o, cache, sizeof(cache)); /* our own commit leaves loose objects */
	ck_assert_int_eq(
	    gitrepo_sh(
	        "cd %s && o=$(git rev-parse '%s') && test -f .git/objects/${o%%${o#??}}/${o#??} "
	        "&& rm -f .git/objects/${o%%${o#??}}/${o#??}",
	        cache, lost[_i].object),
	    0);
	/* the next edits leave app.yaml as it is: its index entry still names the lost blob */
	for (int pass = 0; pass < 2; pass++) {
		snprintf(e.extra, sizeof(e.extra), "apps/new%d.txt", pass);
		ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s: pass %d: %s", lost[_i].what,
		              pass, err.msg);
		ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0,
		              "%s: pass %d: %s", lost[_i].what, pass, err.msg);
		gitstore_free(g);
		check_remote_app(&f, "main", "v2");
		ck_assert_int_eq(
		    gitrepo_sh("git --git-dir=%s cat-file -e main:%s", f.remote, e.extra), 0);
	}
	sh_out(out, sizeof(out), "cd %s && git fsck --no-dangling 2>&1 | head -3", cache);
	ck_assert_msg(out[0] == '\0', "%s: the cache is still damaged: %s", lost[_i].what, out);
	sh_out(out, sizeof(out), "ls %s/git | wc -l", f.state);
	ck_assert_str_eq(out, "2");
	gitrepo_done(&f);
}
END_TEST

/* The blob of an unchanged file goes missing while a pass runs (after open's check): the
 * commit reads only the trees above the changed paths, so it still lands (the remote has the
 * blob); the next open finds the loss, reclones and commits. */
static void lose_blob(struct edit *e, const char *workdir)
{
	(void)e;
	gitrepo_sh("cd %s && o=$(git rev-parse HEAD:apps/app.yaml) && rm -f "
	           ".git/objects/${o%%${o#??}}/${o#??}",
	           workdir);
}

START_TEST(object_lost_mid_pass_recovers)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], out[256];

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	e.hook = lose_blob;
	snprintf(e.extra, sizeof(e.extra), "apps/new.txt");
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(gitrepo_sh("git --git-dir=%s cat-file -e main:apps/new.txt", f.remote), 0);
	e.hook = NULL;
	snprintf(e.extra, sizeof(e.extra), "apps/new2.txt");
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(gitrepo_sh("git --git-dir=%s cat-file -e main:apps/new2.txt", f.remote),
	                 0);
	ck_assert_int_eq(
	    gitrepo_sh("git --git-dir=%s fsck --no-dangling >/dev/null 2>&1", f.remote), 0);
	sh_out(out, sizeof(out),
	       "cd %s/git && for d in */; do git -C $d fsck --no-dangling >/dev/null 2>&1 || "
	       "echo $d; done",
	       f.state);
	ck_assert_msg(out[0] == '\0', "the cache is still damaged: %s", out);
	sh_out(out, sizeof(out), "ls %s/git | wc -l", f.state);
	ck_assert_str_eq(out, "2");
	gitrepo_done(&f);
}
END_TEST

/* The commit stages exactly what status would show, whichever way stat data finds it: each
 * edit is a shell snippet in the work tree, then a check on the remote's head. */
static const struct {
	const char *what;
	const char *edit;  /* run in the work tree */
	const char *check; /* run against the remote (GIT_DIR set); must exit 0 */
	bool commits;
} stagings[] = {
    {"deleted", "rm other.txt",
     "! git cat-file -e main:other.txt && git cat-file -e main:apps/app.yaml", true},
    {"touched only", "touch apps/app.yaml && cp -p other.txt o && mv o other.txt", "true", false},
    {"ignored by a new .gitignore",
     "printf '*.log\\n' >.gitignore && echo x >x.log && mkdir -p logs && echo y >logs/y.log",
     "git cat-file -e main:.gitignore && ! git cat-file -e main:x.log && "
     "! git cat-file -e main:logs/y.log",
     true},
    {"mode only", "chmod +x apps/app.yaml", "git ls-tree main apps/app.yaml | grep -q '^100755 '",
     true},
    {"new directory", "mkdir -p apps/new/deep && echo d >apps/new/deep/d.yaml",
     "git show main:apps/new/deep/d.yaml | grep -qx d", true},
    {"file to link", "rm other.txt && ln -s apps/app.yaml other.txt",
     "git ls-tree main other.txt | grep -q '^120000 '", true},
    {"in place, same size", "printf 'image: app:v9\\n' >apps/app.yaml",
     "git show main:apps/app.yaml | grep -q v9", true},
    {"replaced by a rename", "printf 'image: app:v8\\n' >apps/.t && mv apps/.t apps/app.yaml",
     "git show main:apps/app.yaml | grep -q v8", true},
    {"new file at the root and in a new nested directory",
     "echo r >root.txt && mkdir -p apps/a/b/c && echo n >apps/a/b/c/n.yaml",
     "git cat-file -e main:root.txt && git cat-file -e main:apps/a/b/c/n.yaml", true},
    {"directory removed", "rm -r apps", "! git cat-file -e main:apps/app.yaml", true},
    {"file becomes a directory", "rm other.txt && mkdir other.txt && echo f >other.txt/f",
     "git show main:other.txt/f | grep -qx f", true},
};

static int sh_edit(void *ctx, const char *workdir, struct buf *message, struct error *err)
{
	const char *script = ctx;

	if (gitrepo_sh("cd %s && %s", workdir, script) != 0)
		return error_set(err, IG_EFAIL, "edit failed: %s", script);
	return buf_puts(message, "edit");
}

START_TEST(stages_exactly_what_changed)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	char commit[41];
	size_t c = (size_t)_i / 3;

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	if (_i % 2) {
		/* a commit first, then a pause: the index is newer than every file, so stat data
		 * decides (gitwalk); right after the clone they are as new as it (libgit2 decides)
		 */
		ck_assert_msg(gitstore_commit_push(commit, g, sh_edit,
		                                   (void *)"echo p >prep.txt && sleep 0.05",
		                                   &err) == 0,
		              "%s", err.msg);
		gitstore_free(g);
		usleep(_i % 3 == 2 ? 2100000 : 50000);
		ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	}
	ck_assert_msg(gitstore_commit_push(commit, g, sh_edit, (void *)stagings[c].edit, &err) == 0,
	              "%s: %s", stagings[c].what, err.msg);
	ck_assert_msg((commit[0] != '\0') == stagings[c].commits, "%s: commit '%s'",
	              stagings[c].what, commit);
	gitstore_free(g);
	ck_assert_msg(gitrepo_sh("GIT_DIR=%s sh -c \"%s\"", f.remote, stagings[c].check) == 0, "%s",
	              stagings[c].what);
	/* and the next open finds the tree clean: nothing to commit */
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, sh_edit, (void *)"true", &err) == 0, "%s",
	              err.msg);
	ck_assert_str_eq(commit, "");
	gitstore_free(g);
	gitrepo_done(&f);
}
END_TEST

/* --- crashes: a child process is killed with SIGKILL, then a fresh run converges ------------ */

static void die_in_edit(struct edit *e, const char *workdir)
{
	char path[512];
	FILE *fp;

	(void)e;
	snprintf(path, sizeof(path), "%sapps/app.yaml", workdir);
	if ((fp = fopen(path, "w"))) {
		fputs("image: app:v", fp); /* half-written */
		fclose(fp);
	}
	snprintf(path, sizeof(path), "%s.git/index.lock", workdir);
	if ((fp = fopen(path, "w")))
		fclose(fp);
	raise(SIGKILL);
}

static void run_child(const struct gitstore_options *o, struct edit *e)
{
	struct gitstore *g = NULL;
	struct error err = ERROR_INIT;
	char commit[41];

	if (gitstore_open(&g, o, &err) == 0)
		gitstore_commit_push(commit, g, do_edit, e, &err);
	_exit(0);
}

static void converge(const struct gitrepo *f, const struct gitstore_options *o)
{
	struct gitstore *g = NULL;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], out[64];

	ck_assert_msg(gitstore_open(&g, o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(remote_count(f, "main"), 2);
	check_remote_app(f, "main", "v2");
	sh_out(out, sizeof(out), "ls %s/git | grep -c -e '\\.tmp-' -e '\\.old-'", f->state);
	ck_assert_str_eq(out, "0");
}

START_TEST(killed_mid_edit_converges)
{
	struct gitrepo f;
	struct gitstore_options o;
	struct edit e = {"v2", 0, die_in_edit, NULL, ""};
	int status = 0;
	pid_t pid;

	fx_init(&f);
	o = opts_for(&f);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		run_child(&o, &e);
	waitpid(pid, &status, 0);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_eq(remote_count(&f, "main"), 1);
	converge(&f, &o);
	gitrepo_done(&f);
}
END_TEST

/* Waits up to 20 s for a file; true when it appeared. */
static int wait_file(const char *path)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	int i;

	for (i = 0; i < 1000; i++) {
		if (access(path, F_OK) == 0)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* --- ssh --------------------------------------------------------------------------------- */

static void peers_up(void)
{
	char out[64];

	snprintf(peers, sizeof(peers), "/tmp/ig-gitpeers.XXXXXX");
	if (!mkdtemp(peers))
		abort();
	sh_out(out, sizeof(out), "%s/test/fixtures/gitpeers.sh sshd %s/ssh", gitrepo_src_dir(),
	       peers);
	snprintf(ssh_port, sizeof(ssh_port), "%s", out);
	sh_out(out, sizeof(out), "%s/test/fixtures/gitpeers.sh http %s/http / user 's3cret-pw'",
	       gitrepo_src_dir(), peers);
	snprintf(http_port, sizeof(http_port), "%s", out);
	sh_out(out, sizeof(out), "%s/test/fixtures/gitpeers.sh https %s/https / user 's3cret-pw'",
	       gitrepo_src_dir(), peers);
	snprintf(https_port, sizeof(https_port), "%s", out);
	if (!ssh_port[0] || !http_port[0] || !https_port[0])
		abort();
}

static void peers_down(void)
{
	gitrepo_sh(
	    "%s/test/fixtures/gitpeers.sh stop %s/ssh; %s/test/fixtures/gitpeers.sh stop %s/http; "
	    "%s/test/fixtures/gitpeers.sh stop %s/https; rm -rf %s",
	    gitrepo_src_dir(), peers, gitrepo_src_dir(), peers, gitrepo_src_dir(), peers, peers);
}

struct ssh_case {
	const char *what;
	const char *secret; /* under the sshd dir */
	int rc;
	const char *msg;
};

static const struct ssh_case ssh_cases[] = {
    {"right key", "secret", 0, NULL},
    {"encrypted key with passphrase", "passphrase", 0, NULL},
    {"wrong key", "wrong", IG_EAUTH, "ssh key refused"},
    {"changed host key", "unknown", IG_EAUTH, "does not match known_hosts"},
    {"no secret", NULL, IG_EAUTH, "no known_hosts"},
    {"no identity", "noidentity", IG_EAUTH, "identity"},
};

START_TEST(ssh_transport)
{
	const struct ssh_case *c = &ssh_cases[_i];
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], secret[320], key[8192];

	fx_init(&f);
	o = opts_for(&f);
	snprintf(f.url, sizeof(f.url), "ssh://root@127.0.0.1:%s%s", ssh_port, f.remote);
	snprintf(secret, sizeof(secret), "%s/ssh/%s", peers, c->secret ? c->secret : "");
	o.secret_dir = c->secret ? secret : NULL;
	ck_assert_int_eq(gitstore_open(&g, &o, &err), c->rc);
	if (c->rc == 0) {
		ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s",
		              err.msg);
		gitstore_free(g);
		check_remote_app(&f, "main", "v2");
	} else {
		ck_assert_msg(strstr(err.msg, c->msg) && strstr(err.msg, "ssh://root@127.0.0.1:"),
		              "%s: %s", c->what, err.msg);
		read_small(key, sizeof(key), secret);
		snprintf(secret, sizeof(secret), "%s/ssh/wrong/identity", peers);
		read_small(key, sizeof(key), secret);
		ck_assert(strstr(err.msg, "PRIVATE") == NULL);
		/* a refused host leaves no clone behind */
		ck_assert_int_ne(gitrepo_sh("ls %s/git | grep -q -v '\\.lock$'", f.state), 0);
	}
	gitrepo_done(&f);
}
END_TEST

START_TEST(ssh_unknown_host)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	char secret[320];

	fx_init(&f);
	o = opts_for(&f);
	/* known_hosts that names only another host: an unknown host, never a prompt */
	snprintf(secret, sizeof(secret), "%s/secret", f.dir);
	ck_assert_int_eq(gitrepo_sh("mkdir -p %s && cp %s/ssh/secret/identity %s/ && sed "
	                            "'s/^\\[127.0.0.1\\]/[127.0.0.2]/' "
	                            "%s/ssh/secret/known_hosts >%s/known_hosts",
	                            secret, peers, secret, peers, secret),
	                 0);
	snprintf(f.url, sizeof(f.url), "ssh://root@127.0.0.1:%s%s", ssh_port, f.remote);
	o.secret_dir = secret;
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "unknown host"), "%s", err.msg);
	/* and none at all */
	ck_assert_int_eq(gitrepo_sh("rm %s/known_hosts", secret), 0);
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "no known_hosts"), "%s", err.msg);
	gitrepo_done(&f);
}
END_TEST

START_TEST(ssh_killed_mid_clone_converges)
{
	struct gitrepo f;
	struct gitstore_options o;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char secret[320], path[320];
	int status = 0;
	pid_t pid;

	fx_init(&f);
	o = opts_for(&f);
	snprintf(f.url, sizeof(f.url), "ssh://root@127.0.0.1:%s%s", ssh_port, f.remote);
	snprintf(secret, sizeof(secret), "%s/ssh/secret", peers);
	o.secret_dir = secret;
	/* a per-test sshd switch would race with parallel cases; the delay file is keyed by the
	 * peers dir, which only this suite uses, and the cases of a tcase run one at a time */
	ck_assert_int_eq(gitrepo_sh("rm -f %s/ssh/started && echo 10 >%s/ssh/delay", peers, peers),
	                 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		run_child(&o, &e);
	snprintf(path, sizeof(path), "%s/ssh/started", peers);
	ck_assert(wait_file(path));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(gitrepo_sh("rm -f %s/ssh/delay", peers), 0);
	ck_assert_int_eq(gitrepo_sh("ls -d %s/git/*.tmp-* >/dev/null 2>&1", f.state),
	                 0); /* it was mid-way */
	converge(&f, &o);
	gitrepo_done(&f);
}
END_TEST

START_TEST(ssh_killed_mid_push_converges)
{
	struct gitrepo f;
	struct gitstore_options o;
	struct gitstore *g = NULL;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char secret[320], path[320];
	int status = 0;
	pid_t pid;

	fx_init(&f);
	o = opts_for(&f);
	snprintf(f.url, sizeof(f.url), "ssh://root@127.0.0.1:%s%s", ssh_port, f.remote);
	snprintf(secret, sizeof(secret), "%s/ssh/secret", peers);
	o.secret_dir = secret;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg); /* warm clone */
	gitstore_free(g);
	/* the server stalls after receiving the pack, before updating the branch */
	ck_assert_int_eq(
	    gitrepo_sh("printf '#!/bin/sh\\ntouch %s/started\\nsleep 2\\ntouch %s/hook-done\\n' "
	               ">%s/hooks/pre-receive && chmod +x %s/hooks/pre-receive",
	               f.dir, f.dir, f.remote, f.remote),
	    0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		run_child(&o, &e);
	snprintf(path, sizeof(path), "%s/started", f.dir);
	ck_assert(wait_file(path));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_assert(WIFSIGNALED(status));
	snprintf(path, sizeof(path), "%s/hook-done", f.dir);
	ck_assert(wait_file(path));
	gitrepo_sh("rm -f %s/hooks/pre-receive", f.remote);
	converge(&f, &o); /* whether the killed push landed or not: one commit with v2 */
	gitrepo_done(&f);
}
END_TEST

/* --- smart HTTP ------------------------------------------------------------------------------ */

static const struct {
	const char *what;
	const char *username, *password, *token, *userinfo;
	int rc;
} http_cases[] = {
    {"basic auth", "user", "s3cret-pw", NULL, "", 0},
    {"bearer token", NULL, NULL, "s3cret-pw", "", 0},
    {"wrong password", "user", "wrong-pw-123", NULL, "", IG_EAUTH},
    {"no credentials", NULL, NULL, NULL, "", IG_EAUTH},
    {"password in url", NULL, NULL, NULL, "user:bad-url-pw@", IG_EAUTH},
};

static void write_secret(const char *dir, const char *name, const char *value)
{
	char path[512];
	FILE *fp;

	if (!value)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp, "%s\n", value);
	fclose(fp);
}

START_TEST(http_transport)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], secret[320], out[256];

	fx_init(&f);
	o = opts_for(&f);
	snprintf(secret, sizeof(secret), "%s/secret", f.dir);
	mkdir(secret, 0700);
	write_secret(secret, "username", http_cases[_i].username);
	write_secret(secret, "password", http_cases[_i].password);
	write_secret(secret, "bearerToken", http_cases[_i].token);
	o.secret_dir = secret;
	snprintf(f.url, sizeof(f.url), "http://%s127.0.0.1:%s%s", http_cases[_i].userinfo,
	         http_port, f.remote);
	ck_assert_int_eq(gitstore_open(&g, &o, &err), http_cases[_i].rc);
	if (http_cases[_i].rc == 0) {
		ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s",
		              err.msg);
		gitstore_free(g);
		check_remote_app(&f, "main", "v2");
	} else {
		ck_assert_msg(strstr(err.msg, "http://127.0.0.1:"), "%s", err.msg);
		ck_assert_msg(!strstr(err.msg, "-pw"), "%s: leaks: %s", http_cases[_i].what,
		              err.msg);
	}
	/* the cache dir name never holds credentials (each ends in "-pw", which the random
	 * name of the test's directory, in the URL's path, cannot hold) */
	sh_out(out, sizeof(out), "ls %s/git 2>/dev/null | grep -c -e -pw", f.state);
	ck_assert_str_eq(out, "0");
	gitrepo_done(&f);
}
END_TEST

/* A password in the Git URL over git http-backend with basic auth: clone, push, a warm
 * fetch and a reclone work, and afterwards nothing under the state dir holds the password
 * (reflogs, FETCH_HEAD, config), every file there is 0600 and every directory 0700. */
START_TEST(http_password_in_url_not_at_rest)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], cache[512], out[256];

	fx_init(&f);
	o = opts_for(&f);
	snprintf(f.url, sizeof(f.url), "http://user:s3cret-pw@127.0.0.1:%s%s", http_port, f.remote);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	snprintf(cache, sizeof(cache), "%s", gitstore_workdir(g));
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	check_remote_app(&f, "main", "v2");
	e.value = "v3";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg); /* warm: fetch */
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(gitrepo_sh("rm -rf %s", cache), 0);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg); /* reclone */
	gitstore_free(g);
	check_remote_app(&f, "main", "v3");
	sh_out(out, sizeof(out), "grep -rl 's3cret' %s | head -3", f.state);
	ck_assert_msg(out[0] == '\0', "the password is at rest in: %s", out);
	sh_out(out, sizeof(out), "grep -rl 'user:' %s/git | head -3", f.state);
	ck_assert_msg(out[0] == '\0', "userinfo is at rest in: %s", out);
	sh_out(out, sizeof(out),
	       "find %s/git \\( -type f -perm /077 \\) -o \\( -type d -perm /077 \\) "
	       "| head -3",
	       f.state);
	ck_assert_msg(out[0] == '\0', "readable by others: %s", out);
	gitrepo_done(&f);
}
END_TEST

/* A Git host that 302-redirects every request to a recorder on another loopback port (same
 * host: the case libgit2 counts as on-site), which asks for basic auth. Whatever the secret
 * holds, the recorder must see no credential: no Authorization header, no secret bytes. */
static const struct {
	const char *what;
	const char *username, *password, *token, *userinfo;
} redirect_cases[] = {
    {"secret username/password", "user", "s3cret-redir-pw", NULL, ""},
    {"bearer token", NULL, NULL, "s3cret-redir-tok", ""},
    {"url userinfo", NULL, NULL, NULL, "user:s3cret-redir-url@"},
    {"url userinfo and secret", "user", "s3cret-redir-pw", "s3cret-redir-tok",
     "other:s3cret-redir-url@"},
};

START_TEST(http_redirect_keeps_credentials)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	char secret[320], rec[320], red[320], rec_port[64], red_port[64], out[400];
	struct buf seen = BUF_INIT_MAX(1 << 20);

	fx_init(&f);
	o = opts_for(&f);
	snprintf(secret, sizeof(secret), "%s/secret", f.dir);
	snprintf(rec, sizeof(rec), "%s/recorder", f.dir);
	snprintf(red, sizeof(red), "%s/redirect", f.dir);
	mkdir(secret, 0700);
	write_secret(secret, "username", redirect_cases[_i].username);
	write_secret(secret, "password", redirect_cases[_i].password);
	write_secret(secret, "bearerToken", redirect_cases[_i].token);
	sh_out(rec_port, sizeof(rec_port), "%s/test/fixtures/gitpeers.sh recorder %s",
	       gitrepo_src_dir(), rec);
	sh_out(red_port, sizeof(red_port),
	       "%s/test/fixtures/gitpeers.sh redirect %s http://127.0.0.1:%s", gitrepo_src_dir(),
	       red, rec_port);
	ck_assert(rec_port[0] && red_port[0]);
	o.secret_dir = secret;
	snprintf(f.url, sizeof(f.url), "http://%s127.0.0.1:%s%s", redirect_cases[_i].userinfo,
	         red_port, f.remote);
	ck_assert_int_lt(gitstore_open(&g, &o, &err), 0);
	ck_assert_msg(!strstr(err.msg, "s3cret"), "%s: leaks: %s", redirect_cases[_i].what,
	              err.msg);
	gitrepo_sh("%s/test/fixtures/gitpeers.sh stop %s; %s/test/fixtures/gitpeers.sh stop %s",
	           gitrepo_src_dir(), red, gitrepo_src_dir(), rec);
	snprintf(out, sizeof(out), "%s/recorded", rec);
	ck_assert_int_eq(buf_read_file(&seen, out), 0);
	ck_assert_msg(!strcasestr(seen.data, "authorization") && !strstr(seen.data, "s3cret"),
	              "%s: the recorder saw a credential:\n%s", redirect_cases[_i].what, seen.data);
	buf_release(&seen);
	gitrepo_done(&f);
}
END_TEST

/* Another push lands while ours is in receive-pack (git http-backend runs the pre-receive hook
 * after the advertisement): the ref update fails with "failed to update ref", as it does on a
 * real server. gitstore must take it as a moved remote and re-apply on the new head. The
 * refusal's words are never what decides: the remote ref is read again. Cases: a racer's commit
 * pushed from the hook; a ref lock held (receive-pack's "failed to update ref" / "cannot lock
 * ref") with nothing moved: the server's refusal, an error without retry; a racer pushed, then a
 * refusal in other words (the remote is seen moved: the same race); a plain refusal with nothing
 * moved (an error, no retry). */
#define RACER                                                                                      \
	"env -u GIT_DIR -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY "                           \
	"-u GIT_ALTERNATE_OBJECT_DIRECTORIES sh -c \"cd '%1$s' && rm -rf racer && "                \
	"git clone -q '%2$s' racer && cd racer && echo raced >>other.txt && "                      \
	"git -c user.name=racer -c user.email=r@x commit -qam 'racer' && git push -q\"\n"
static const struct {
	const char *hook;       /* printf format: %1$s the test dir, %2$s the bare remote */
	int rc, calls, commits; /* commits on the remote afterwards */
	const char *racer;      /* subject of main^ , NULL: not checked */
	const char *why;        /* in the error, when rc is one */
} moved_cases[] = {
    {"[ -f '%1$s/armed' ] || exit 0\nrm -f '%1$s/armed'\n" RACER, 0, 2, 3, "racer", NULL},
    {"if [ -f '%1$s/armed' ]; then rm -f '%1$s/armed'; : >'%2$s/refs/heads/main.lock'; "
     "else rm -f '%2$s/refs/heads/main.lock'; fi\n",
     IG_EFAIL, 1, 1, NULL, "rejected by the remote: "},
    {"[ -f '%1$s/armed' ] || exit 0\nrm -f '%1$s/armed'\n" RACER "exit 1\n", 0, 2, 3, "racer",
     NULL},
    {"[ -f '%1$s/armed' ] || exit 0\nrm -f '%1$s/armed'\nexit 1\n", IG_EFAIL, 1, 1, NULL,
     "rejected by the remote: pre-receive hook declined"},
};

START_TEST(http_remote_moved_during_push)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], secret[320], path[512], out[128];
	FILE *fp;

	fx_init(&f);
	o = opts_for(&f);
	snprintf(secret, sizeof(secret), "%s/secret", f.dir);
	mkdir(secret, 0700);
	write_secret(secret, "username", "user");
	write_secret(secret, "password", "s3cret-pw");
	o.secret_dir = secret;
	snprintf(f.url, sizeof(f.url), "http://127.0.0.1:%s%s", http_port, f.remote);
	snprintf(path, sizeof(path), "%s/hooks/pre-receive", f.remote);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs("#!/bin/sh\ncat >/dev/null\n", fp);
	fprintf(fp, moved_cases[_i].hook, f.dir, f.remote);
	fclose(fp);
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_int_eq(gitrepo_sh("touch %s/armed", f.dir), 0);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == moved_cases[_i].rc,
	              "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(gitrepo_sh("test ! -e %s/armed", f.dir),
	                 0); /* the hook did run its race */
	ck_assert_int_eq(e.calls, moved_cases[_i].calls);
	ck_assert_int_eq(remote_count(&f, "main"), moved_cases[_i].commits);
	if (moved_cases[_i].rc == 0) {
		remote_head(out, &f, "main");
		ck_assert_str_eq(out, commit);
		check_remote_app(&f, "main", "v2");
	} else {
		ck_assert_msg(strstr(err.msg, moved_cases[_i].why), "%s", err.msg);
		ck_assert_str_eq(commit, "");
		check_remote_app(&f, "main", "v1");
	}
	if (moved_cases[_i].racer) { /* the other writer's commit is kept under ours */
		sh_out(out, sizeof(out), "git --git-dir=%s log -1 --format=%%s main^", f.remote);
		ck_assert_str_eq(out, moved_cases[_i].racer);
	}
	gitrepo_done(&f);
}
END_TEST

/* The rebuild's compare-and-swap failing: git http-backend's pre-receive hook (after the
 * advertisement imageguard checked) has a person's commit pushed to the push branch, so
 * receive-pack's old-value check refuses the forced update. That is a conflict: the pass
 * re-reads the branch, finds the person's commit and appends to it; nothing is lost. */
START_TEST(http_rebuild_cas_fails_when_branch_moves)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char c1[41], c2[41], secret[320], path[512], out[64], side[64], main_now[64];
	FILE *fp;

	edit_trailers = true;
	fx_init(&f);
	o = opts_for(&f);
	o.push_branch = "imageguard/updates";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(c1, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	person_commits(&f, "main", "more.txt"); /* main moves: the next pass rebuilds */
	remote_head(main_now, &f, "main");
	/* the person's commit on top of c1, kept on a side branch until the hook pushes it */
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && rm -rf side && git clone -q -b imageguard/updates %s side && "
	               "cd side && echo mine >review.txt && git add -A && git -c user.name=p "
	               "-c user.email=p@x commit -qm 'person: review' && git push -q origin "
	               "HEAD:refs/heads/side",
	               f.dir, f.remote),
	    0);
	rev(side, &f, "refs/heads/side");
	snprintf(secret, sizeof(secret), "%s/secret", f.dir);
	mkdir(secret, 0700);
	write_secret(secret, "username", "user");
	write_secret(secret, "password", "s3cret-pw");
	o.secret_dir = secret;
	snprintf(f.url, sizeof(f.url), "http://127.0.0.1:%s%s", http_port, f.remote);
	snprintf(path, sizeof(path), "%s/hooks/pre-receive", f.remote);
	ck_assert_ptr_nonnull(fp = fopen(path, "w"));
	fprintf(fp,
	        "#!/bin/sh\ncat >/dev/null\n[ -f '%s/armed' ] || exit 0\nrm -f '%s/armed'\n"
	        "env -u GIT_DIR -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY "
	        "-u GIT_ALTERNATE_OBJECT_DIRECTORIES sh -c \"cd '%s/side' && git push -q origin "
	        "HEAD:refs/heads/imageguard/updates\"\n",
	        f.dir, f.dir, f.dir);
	fclose(fp);
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_int_eq(gitrepo_sh("touch %s/armed", f.dir), 0);
	e.value = "v3";
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(gitstore_head(g), main_now);
	ck_assert_msg(gitstore_commit_push(c2, g, do_edit, &e, &err) == 0, "%s", err.msg);
	gitstore_free(g);
	ck_assert_int_eq(gitrepo_sh("test ! -e %s/armed", f.dir), 0); /* the hook did push */
	ck_assert_int_eq(e.calls, 3); /* v2, v3 refused, v3 appended */
	rev(out, &f, "refs/heads/imageguard/updates");
	ck_assert_str_eq(out, c2);
	rev(out, &f, "imageguard/updates^");
	ck_assert_str_eq(out, side); /* the person's commit is kept */
	check_remote_app(&f, "imageguard/updates", "v3");
	edit_trailers = false;
	gitrepo_done(&f);
}
END_TEST

/* HTTPS with the test CA in the secret's ca.crt; without it the server is not trusted. The
 * CA location is process-global in libgit2: the trusted run must not leak into the next. */
START_TEST(https_ca)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v2", 0, NULL, NULL, ""};
	char commit[41], secret[320], other[320], cache[512];

	fx_init(&f);
	o = opts_for(&f);
	snprintf(secret, sizeof(secret), "%s/secret", f.dir);
	snprintf(other, sizeof(other), "%s/noca", f.dir);
	mkdir(secret, 0700);
	mkdir(other, 0700);
	write_secret(secret, "username", "user");
	write_secret(secret, "password", "s3cret-pw");
	write_secret(other, "username", "user");
	write_secret(other, "password", "s3cret-pw");
	ck_assert_int_eq(gitrepo_sh("cp %s/https/ca.crt %s/ca.crt", peers, secret), 0);
	snprintf(f.url, sizeof(f.url), "https://127.0.0.1:%s%s", https_port, f.remote);
	o.secret_dir = secret;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s", err.msg);
	snprintf(cache, sizeof(cache), "%s", gitstore_workdir(g));
	gitstore_free(g);
	check_remote_app(&f, "main", "v2");

	/* warm: a refused fetch is a remote failure, the cache is kept */
	ck_assert_int_eq(gitrepo_sh("touch %s.git/ig-marker", cache), 0);
	o.secret_dir = other;
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "not trusted"), "%s", err.msg);
	ck_assert_int_eq(gitrepo_sh("test -f %s.git/ig-marker", cache), 0);
	o.state_dir = other; /* cold */
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "not trusted"), "%s", err.msg);
	gitrepo_done(&f);
}
END_TEST

/* --- pure functions: URL scrubbing and known_hosts ------------------------------------------ */

static const struct {
	const char *in, *out;
} scrubs[] = {
    {"https://user:tok@github.com/o/r.git", "https://github.com/o/r.git"},
    {"https://tok@github.com/o/r.git", "https://github.com/o/r.git"},
    {"ssh://git:pw@host:2222/r.git", "ssh://git@host:2222/r.git"},
    {"ssh://git@host/r.git", "ssh://git@host/r.git"},
    {"git@github.com:o/r.git", "git@github.com:o/r.git"},
    {"/srv/git/r.git", "/srv/git/r.git"},
    {"file:///srv/r.git", "file:///srv/r.git"},
};

START_TEST(scrub_url)
{
	char *s = gitauth_scrub_url(scrubs[_i].in);

	ck_assert_str_eq(s, scrubs[_i].out);
	free(s);
}
END_TEST

static const struct {
	const char *url;
	int rc;
	enum gitauth_transport t;
	const char *host;
	unsigned port;
} classes[] = {
    {"ssh://git@example.com/r.git", 0, GITAUTH_SSH, "example.com", 22},
    {"ssh://git@[::1]:2222/r.git", 0, GITAUTH_SSH, "::1", 2222},
    {"git@github.com:o/r.git", 0, GITAUTH_SSH, "github.com", 22},
    {"https://u:p@h.example:8443/r.git", 0, GITAUTH_HTTP, "h.example", 8443},
    {"http://h.example/r.git", 0, GITAUTH_HTTP, "h.example", 80},
    {"file:///x", 0, GITAUTH_LOCAL, NULL, 0},
    {"./rel/path", 0, GITAUTH_LOCAL, NULL, 0},
    {"/abs/path", 0, GITAUTH_LOCAL, NULL, 0},
    {"ssh://h:99999/r", IG_EINVALID, GITAUTH_SSH, NULL, 0},
    {"gopher://h/r", IG_EINVALID, GITAUTH_LOCAL, NULL, 0},
    {".a:b", 0, GITAUTH_LOCAL, NULL, 0}, /* a relative path, not host ".a" */
    {"HTTPS://h/r", IG_EINVALID, GITAUTH_LOCAL, NULL, 0},
    {"ssh://[::1]x/r", IG_EINVALID, GITAUTH_LOCAL, NULL, 0},
    {"https://h:+443/r", IG_EINVALID, GITAUTH_LOCAL, NULL, 0},
    {"git@[::1]:r", IG_EINVALID, GITAUTH_LOCAL, NULL, 0},
};

START_TEST(classify_url)
{
	struct gitauth a;
	struct error err = ERROR_INIT;
	int rc = gitauth_load(&a, classes[_i].url, NULL, &err);

	ck_assert_msg(rc == classes[_i].rc, "%s: %d %s", classes[_i].url, rc, err.msg);
	if (rc == 0) {
		ck_assert_int_eq(a.transport, classes[_i].t);
		ck_assert_pstr_eq(a.host, classes[_i].host);
		ck_assert_uint_eq(a.port, classes[_i].port);
	} else {
		ck_assert(strstr(err.msg, "p@") == NULL);
	}
	gitauth_release(&a);
}
END_TEST

START_TEST(scrub_messages)
{
	struct gitauth a;
	struct error err = ERROR_INIT;
	char msg[256];
	char dir[] = "/tmp/ig-scrub.XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	write_secret(dir, "password", "hunter22");
	write_secret(dir, "bearerToken", "tok-abc");
	ck_assert_int_eq(gitauth_load(&a, "https://bob:urlpw@h/r", dir, &err), 0);
	snprintf(msg, sizeof(msg),
	         "failed hunter22 and tok-abc at https://bob:urlpw@h/r or x://a:b@c/d");
	gitauth_scrub(&a, msg, sizeof(msg));
	ck_assert_str_eq(msg, "failed *** and *** at https://h/r or x://c/d");
	gitauth_release(&a);
	gitrepo_sh("rm -rf %s", dir);
}
END_TEST

/* Scrubbing keeps ordinary text: the SSH user is no secret, a short password only goes where
 * it stands alone (once, `git` made github.com read ***hub.com). */
static const struct {
	const char *url, *password, *in, *want;
} keeps[] = {
    {"git@github.com:o/r.git", NULL, "git 'git@github.com:o/r.git': github.com: git says no",
     "git 'git@github.com:o/r.git': github.com: git says no"},
    {"ssh://git@github.com/o/r.git", "gitpw", "github.com refused gitpw for git",
     "github.com refused *** for git"},
    {"https://u:pw@github.com/o/r.git", NULL, "pw wrong at https://u:pw@github.com/o/r.git upwards",
     "** wrong at https://github.com/o/r.git upwards"},
};

START_TEST(scrub_keeps_text)
{
	struct gitauth a;
	struct error err = ERROR_INIT;
	char msg[256];
	char dir[] = "/tmp/ig-scrub.XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	write_secret(dir, "password", keeps[_i].password);
	ck_assert_int_eq(gitauth_load(&a, keeps[_i].url, dir, &err), 0);
	snprintf(msg, sizeof(msg), "%s", keeps[_i].in);
	gitauth_scrub(&a, msg, sizeof(msg));
	ck_assert_str_eq(msg, keeps[_i].want);
	gitauth_release(&a);
	gitrepo_sh("rm -rf %s", dir);
}
END_TEST

/* A fixed 32-byte ed25519-like blob, and a second one. */
static const unsigned char blob_a[] = {0,   0,   0,   11,  's', 's', 'h', '-', 'e',
                                       'd', '2', '5', '5', '1', '9', 1,   2,   3};
static const unsigned char blob_b[] = {0,   0,   0,   11,  's', 's', 'h', '-', 'e',
                                       'd', '2', '5', '5', '1', '9', 9,   9,   9};

static void b64(char *out, const unsigned char *in, size_t n)
{
	EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

static void hashed(char *out, size_t cap, const char *name)
{
	unsigned char salt[20] = "0123456789abcdefghi", mac[20];
	char s64[64], m64[64];
	unsigned len = 0;

	HMAC(EVP_sha1(), salt, sizeof(salt), (const unsigned char *)name, strlen(name), mac, &len);
	b64(s64, salt, sizeof(salt));
	b64(m64, mac, sizeof(mac));
	snprintf(out, cap, "|1|%s|%s", s64, m64);
}

static const struct {
	const char *hosts; /* "HASH:name" means the hashed form of name */
	const char *marker;
	int key_b; /* the line holds blob_b instead of blob_a */
	const char *host;
	unsigned port;
	int rc;
} khs[] = {
    {"example.com", "", 0, "example.com", 22, 0},
    {"other.com,example.com", "", 0, "example.com", 22, 0},
    {"[example.com]:2222", "", 0, "example.com", 2222, 0},
    {"example.com", "", 0, "example.com", 2222, IG_ENOTFOUND},
    {"HASH:example.com", "", 0, "example.com", 22, 0},
    {"HASH:[example.com]:2222", "", 0, "example.com", 2222, 0},
    {"HASH:example.org", "", 0, "example.com", 22, IG_ENOTFOUND},
    {"*.example.com", "", 0, "git.example.com", 22, 0},
    {"*.example.com,!git.example.com", "", 0, "git.example.com", 22, IG_ENOTFOUND},
    {"example.com", "", 1, "example.com", 22, IG_EAUTH},
    {"example.com", "@revoked", 0, "example.com", 22, IG_EAUTH},
    {"example.com", "@cert-authority", 0, "example.com", 22, IG_ENOTFOUND},
};

START_TEST(known_hosts)
{
	char line[512], hosts[256], key64[128], data[1200];
	struct knownhosts_key key = {blob_a, sizeof(blob_a), NULL};
	unsigned char digest[32];
	struct error err = ERROR_INIT;
	int rc;

	if (strncmp(khs[_i].hosts, "HASH:", 5) == 0)
		hashed(hosts, sizeof(hosts), khs[_i].hosts + 5);
	else
		snprintf(hosts, sizeof(hosts), "%s", khs[_i].hosts);
	b64(key64, khs[_i].key_b ? blob_b : blob_a, sizeof(blob_a));
	snprintf(line, sizeof(line), "%s %s ssh-ed25519 %s comment", khs[_i].marker, hosts, key64);
	/* malformed lines and comments around it are skipped */
	snprintf(data, sizeof(data),
	         "# comment\n\nbroken-line\nx ssh-ed25519 !!notbase64\r\n%s\r\n", line);
	rc = knownhosts_check(data, strlen(data), khs[_i].host, khs[_i].port, &key, &err);
	ck_assert_msg(rc == khs[_i].rc, "%s: %d %s", line, rc, err.msg);
	/* the fingerprint path agrees */
	SHA256(blob_a, sizeof(blob_a), digest);
	key.raw = NULL;
	key.sha256 = digest;
	ck_assert_int_eq(
	    knownhosts_check(data, strlen(data), khs[_i].host, khs[_i].port, &key, &err),
	    khs[_i].rc);
}
END_TEST

/* --- a content-only sync attacked between the clean check and the write ------------------ */

/* git_blob_lookup, interposed for this suite: write_change (gitstore.c) looks up each new blob
 * after the clean check and right before safefile_replace writes its file, so an attack armed
 * for that blob runs once, inside that window, on the clone's work tree (git_repository_workdir).
 * Calls from libgit2 itself, and every call while unarmed, pass straight through. */
static git_oid attack_blob;
static void (*attack)(const char *workdir);

int git_blob_lookup(git_blob **out, git_repository *repo, const git_oid *id)
{
	int (*real)(git_blob **, git_repository *, const git_oid *);
	void (*run)(const char *) = attack;
	Dl_info caller;

	*(void **)&real = dlsym(RTLD_NEXT, "git_blob_lookup");
	if (run && git_oid_equal(id, &attack_blob) &&
	    (!dladdr(__builtin_return_address(0), &caller) || !caller.dli_fname ||
	     !strstr(caller.dli_fname, "libgit2"))) {
		attack = NULL;
		run(git_repository_workdir(repo));
	}
	return real(out, repo, id);
}

/* The outside of the clone: <tmp>/outside, beside state/ and remote.git. */
static char outside_dir[256];

/* apps/ moved out of the clone (with the old app.yaml in it) and a link left in its place. */
static void parent_to_link(const char *workdir)
{
	ck_assert_int_eq(gitrepo_sh("mv %sapps %s/apps && ln -s %s/apps %sapps", workdir,
	                            outside_dir, outside_dir, workdir),
	                 0);
}

static void file_to_link(const char *workdir)
{
	ck_assert_int_eq(gitrepo_sh("rm %sapps/app.yaml && ln -s %s/sentinel %sapps/app.yaml",
	                            workdir, outside_dir, workdir),
	                 0);
}

static void file_to_fifo(const char *workdir)
{
	ck_assert_int_eq(
	    gitrepo_sh("rm %sapps/app.yaml && mkfifo %sapps/app.yaml", workdir, workdir), 0);
}

static const struct {
	const char *what;
	void (*attack)(const char *workdir);
	bool in_window;      /* between the clean check and the write; else before the open */
	const char *outside; /* what outside/ must hold afterwards, name:content */
} sync_attacks[] = {
    {"apps/ a link out, mid-sync", parent_to_link, true,
     "apps/app.yaml:image: app:v1 sentinel:outside "},
    {"apps/app.yaml a link out, mid-sync", file_to_link, true, "sentinel:outside "},
    {"apps/app.yaml a FIFO, mid-sync", file_to_fifo, true, "sentinel:outside "},
    {"apps/ a link out, before the sync", parent_to_link, false,
     "apps/app.yaml:image: app:v1 sentinel:outside "},
};

/* Every file below outside/ as name:content, sorted. */
static void outside_files(char *out, size_t cap)
{
	sh_out(out, cap,
	       "cd %s && find . -mindepth 1 ! -type d | sort | while read -r p; do "
	       "printf '%%s:%%s ' \"${p#./}\" \"$(cat \"$p\")\"; done",
	       outside_dir);
}

/* The clone's work tree is exactly the remote's: apps/ a directory, app.yaml a regular file
 * holding value, nothing staged, changed or untracked. */
static void check_clone(const char *what, const char *workdir, const char *value)
{
	char p[600], content[128], want[128], out[64];
	struct stat st;

	snprintf(p, sizeof(p), "%sapps", workdir);
	ck_assert_msg(lstat(p, &st) == 0 && S_ISDIR(st.st_mode), "%s: apps/ is no directory", what);
	snprintf(p, sizeof(p), "%sapps/app.yaml", workdir);
	ck_assert_msg(lstat(p, &st) == 0 && S_ISREG(st.st_mode), "%s: app.yaml is no file", what);
	read_small(content, sizeof(content), p);
	snprintf(want, sizeof(want), "image: app:%s\n", value);
	ck_assert_msg(strcmp(content, want) == 0, "%s: app.yaml holds [%s]", what, content);
	sh_out(out, sizeof(out), "cd %s && git status --porcelain --untracked-files=all | wc -l",
	       workdir);
	ck_assert_msg(strcmp(out, "0") == 0, "%s: the clone is not clean", what);
}

/* A sync whose diff is one file's content (write_changes) meets a link out of the clone in
 * place of the file's directory or the file, or a FIFO: nothing outside is written or
 * followed (no temporary left there either), the sync falls back to the hard reset or fails
 * naming the problem, and the next pass finds the clone whole and commits. */
START_TEST(sync_never_follows_links)
{
	struct gitrepo f;
	struct gitstore *g = NULL;
	struct gitstore_options o;
	struct error err = ERROR_INIT;
	struct edit e = {"v3", 0, NULL, NULL, ""};
	char commit[41], workdir[512], blob[64], out[512];
	const char *what = sync_attacks[_i].what;
	int rc;

	fx_init(&f);
	o = opts_for(&f);
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	snprintf(workdir, sizeof(workdir), "%s", gitstore_workdir(g));
	gitstore_free(g);
	snprintf(outside_dir, sizeof(outside_dir), "%s/outside", f.dir);
	ck_assert_int_eq(
	    gitrepo_sh("mkdir %s && echo outside >%s/sentinel", outside_dir, outside_dir), 0);
	ck_assert_int_eq(gitrepo_sh("cd %s && git clone -q %s other && cd other && "
	                            "echo 'image: app:v2' >apps/app.yaml && git -c user.name=o "
	                            "-c user.email=o@x commit -qam v2 && git push -q",
	                            f.dir, f.remote),
	                 0);
	sh_out(blob, sizeof(blob), "git --git-dir=%s rev-parse main:apps/app.yaml", f.remote);
	ck_assert_int_eq(git_oid_fromstr(&attack_blob, blob), 0);
	if (sync_attacks[_i].in_window)
		attack = sync_attacks[_i].attack;
	else
		sync_attacks[_i].attack(workdir);
	rc = gitstore_open(&g, &o, &err);
	ck_assert_msg(attack == NULL, "%s: the sync never wrote a file (write_changes)", what);
	outside_files(out, sizeof(out));
	ck_assert_msg(strcmp(out, sync_attacks[_i].outside) == 0, "%s: outside/ holds [%s]", what,
	              out);
	if (rc == 0)
		check_clone(what, workdir, "v2");
	else
		ck_assert_msg(err.msg[0] != '\0', "%s: failed without a message", what);
	gitstore_free(g);
	/* the next pass */
	err = (struct error)ERROR_INIT;
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s: next pass: %s", what, err.msg);
	check_clone(what, workdir, "v2");
	ck_assert_msg(gitstore_commit_push(commit, g, do_edit, &e, &err) == 0, "%s: %s", what,
	              err.msg);
	gitstore_free(g);
	check_remote_app(&f, "main", "v3");
	sh_out(out, sizeof(out), "git --git-dir=%s ls-tree main apps/app.yaml | cut -c1-11",
	       f.remote);
	ck_assert_str_eq(out, "100644 blob");
	outside_files(out, sizeof(out));
	ck_assert_msg(strcmp(out, sync_attacks[_i].outside) == 0, "%s: outside/ holds [%s]", what,
	              out);
	gitrepo_done(&f);
}
END_TEST

static Suite *gitstore_suite(void)
{
	Suite *s = suite_create("gitstore");
	TCase *pure = tcase_create("pure"), *file = tcase_create("file"),
	      *net = tcase_create("net");

	tcase_add_loop_test(pure, scrub_url, 0, sizeof(scrubs) / sizeof(scrubs[0]));
	tcase_add_loop_test(pure, classify_url, 0, sizeof(classes) / sizeof(classes[0]));
	tcase_add_test(pure, scrub_messages);
	tcase_add_loop_test(pure, scrub_keeps_text, 0, sizeof(keeps) / sizeof(keeps[0]));
	tcase_add_loop_test(pure, known_hosts, 0, sizeof(khs) / sizeof(khs[0]));
	suite_add_tcase(s, pure);

	tcase_set_timeout(file, 120);
	tcase_add_loop_test(file, file_clone_commit_push, 0, 2);
	tcase_add_test(file, stop_ends_clone_and_fetch);
	tcase_add_test(file, cache_lock_refused_or_stopped);
	tcase_add_test(file, index_changed_outside_is_reset);
	tcase_add_test(file, new_file_and_remote_moves_between_opens);
	tcase_add_test(file, racy_entries_refreshed);
	tcase_add_loop_test(file, remote_change_synced, 0, sizeof(syncs) / sizeof(syncs[0]));
	tcase_add_test(file, new_file_in_old_subdirectory_staged);
	tcase_add_test(file, push_branch_created_then_extended);
	tcase_add_test(file, signed_commit_verifies);
	tcase_add_test(file, push_branch_rebuilt_or_appended);
	tcase_add_test(file, push_branch_rebuild_sees_moved_head);
	tcase_add_loop_test(file, own_identity_without_policy_trailer_is_kept, 0,
	                    sizeof(not_own_messages) / sizeof(not_own_messages[0]));
	tcase_add_test(file, own_walk_bounded);
	tcase_add_loop_test(file, push_refspec, 0,
	                    sizeof(refspec_cases) / sizeof(refspec_cases[0]));
	tcase_add_test(file, push_refspec_refused);
	tcase_add_test(file, missing_branch_and_bad_options);
	tcase_add_test(file, race_reapplies_on_new_head);
	tcase_add_test(file, push_in_flight_lands);
	tcase_add_test(file, edit_in_parts_one_push);
	tcase_add_test(file, race_forever_is_a_conflict);
	tcase_add_loop_test(file, broken_cache_recovers, 0, sizeof(damages) / sizeof(damages[0]));
	tcase_add_test(file, killed_mid_edit_converges);
	tcase_add_loop_test(file, missing_object_recovers, 0, sizeof(lost) / sizeof(lost[0]));
	tcase_add_loop_test(file, stages_exactly_what_changed, 0,
	                    3 * sizeof(stagings) / sizeof(stagings[0]));
	tcase_add_test(file, object_lost_mid_pass_recovers);
	tcase_add_loop_test(file, sync_never_follows_links, 0,
	                    sizeof(sync_attacks) / sizeof(sync_attacks[0]));
	suite_add_tcase(s, file);

	tcase_set_timeout(net, 300);
	tcase_add_unchecked_fixture(net, peers_up, peers_down);
	tcase_add_loop_test(net, ssh_transport, 0, sizeof(ssh_cases) / sizeof(ssh_cases[0]));
	tcase_add_test(net, ssh_unknown_host);
	tcase_add_test(net, ssh_killed_mid_clone_converges);
	tcase_add_test(net, ssh_killed_mid_push_converges);
	tcase_add_test(net, https_ca);
	tcase_add_test(net, http_rebuild_cas_fails_when_branch_moves);
	tcase_add_loop_test(net, http_transport, 0, sizeof(http_cases) / sizeof(http_cases[0]));
	tcase_add_test(net, http_password_in_url_not_at_rest);
	tcase_add_loop_test(net, http_redirect_keeps_credentials, 0,
	                    sizeof(redirect_cases) / sizeof(redirect_cases[0]));
	tcase_add_loop_test(net, http_remote_moved_during_push, 0,
	                    sizeof(moved_cases) / sizeof(moved_cases[0]));
	suite_add_tcase(s, net);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gitstore_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
