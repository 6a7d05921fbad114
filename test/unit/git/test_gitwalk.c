/* gitwalk's saved directories (.git/imageguard-dirs): what gitwalk_dirs_save writes loads
 * back, damage loads as nothing (IG_ENOTFOUND), and a saved directory reached through a link
 * is never walked (the files are written here byte by byte in the loader's format); the scrub
 * before a hard reset leaves only files and directories. */
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>

#include "../../../src/git/gitwalk.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"
#include "support/gitrepo.h"

/* A scratch dir: tree/ (a/, a/b/, a/f, a/b/g, l -> ../outside), outside/d/secret. */
struct scratch {
	char dir[64], tree[128], file[128], index_file[128];
};

static void put(const char *dir, const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
}

static void scratch_init(struct scratch *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/ig-gitwalk.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(s->dir));
	snprintf(s->tree, sizeof(s->tree), "%s/tree", s->dir);
	snprintf(s->file, sizeof(s->file), "%s/dirs", s->dir);
	snprintf(s->index_file, sizeof(s->index_file), "%s/index", s->dir);
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && mkdir -p tree/a/b outside/d && ln -s ../outside tree/l", s->dir),
	    0);
	put(s->dir, "tree/a/f", "f\n");
	put(s->dir, "tree/a/b/g", "g\n");
	put(s->dir, "outside/d/secret", "s\n");
	put(s->dir, "index", "");
}

static void scratch_done(struct scratch *s)
{
	gitrepo_sh("rm -rf '%s'", s->dir);
}

/* The loader's record (src/git/gitwalk.c struct dir_record), then the path's bytes. */
struct record {
	uint64_t ino;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
	uint32_t path_len;
};

static const git_oid sum = {
    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}};

/* Writes a file of the loader's format: the root, then paths (NULL-terminated). */
static void write_dirs(const char *path, int64_t start, const char *const *paths)
{
	uint64_t n = 1;
	FILE *f = fopen(path, "wb");
	const char *root = "";

	for (size_t i = 0; paths[i]; i++)
		n++;
	ck_assert_ptr_nonnull(f);
	fwrite("igwalk1\n", 1, 8, f);
	fwrite(sum.id, 1, GIT_OID_RAWSZ, f);
	fwrite(&start, sizeof(start), 1, f);
	fwrite(&n, sizeof(n), 1, f);
	for (size_t i = 0; i < n; i++) {
		const char *p = i ? paths[i - 1] : root;
		struct record r;

		memset(&r, 0, sizeof(r));
		r.ino = 1000 + i;
		r.mtime_s = r.ctime_s = 1700000000;
		r.path_len = (uint32_t)strlen(p);
		fwrite(&r, sizeof(r), 1, f);
		fwrite(p, 1, r.path_len, f);
	}
	ck_assert_int_eq(fclose(f), 0);
}

static const struct {
	const char *what;
	int64_t start;
	const char *paths[3];
	int rc;
} loads[] = {
    {"plain paths", 1700000000, {"a", "a/b", NULL}, 0},
    {"a name starting with dots", 1700000000, {"..a", "a.git", NULL}, 0},
    {"an absolute path", 1700000000, {"/tmp", NULL}, IG_ENOTFOUND},
    {"a parent", 1700000000, {"..", NULL}, IG_ENOTFOUND},
    {"a parent below", 1700000000, {"a/../..", NULL}, IG_ENOTFOUND},
    {"a dot", 1700000000, {"./a", NULL}, IG_ENOTFOUND},
    {"an empty component", 1700000000, {"a//b", NULL}, IG_ENOTFOUND},
    {"a trailing slash", 1700000000, {"a/", NULL}, IG_ENOTFOUND},
    {"a nested .git", 1700000000, {"a/.git", NULL}, IG_ENOTFOUND},
    {"out of order", 1700000000, {"b", "a", NULL}, IG_ENOTFOUND},
    {"a start before 1970", -1, {"a", NULL}, IG_ENOTFOUND},
    {"the smallest start", INT64_MIN, {"a", NULL}, IG_ENOTFOUND},
    {"a zero start", 0, {"a", NULL}, IG_ENOTFOUND},
};

/* Damage, or a path the walk never records, loads as nothing. */
START_TEST(dirs_load_refuses_damage)
{
	struct scratch s;
	struct gitwalk_dirs *d = NULL;

	scratch_init(&s);
	write_dirs(s.file, loads[_i].start, loads[_i].paths);
	ck_assert_msg(gitwalk_dirs_load(&d, s.file, &sum) == loads[_i].rc, "%s", loads[_i].what);
	ck_assert(loads[_i].rc == 0 ? d != NULL : d == NULL);
	gitwalk_dirs_free(d);
	scratch_done(&s);
}
END_TEST

/* A real walk's directories saved, loaded back for that checksum only, and saved again the
 * same byte for byte. */
START_TEST(dirs_round_trip)
{
	struct scratch s;
	struct gitwalk_dirs *d = NULL, *back = NULL;
	struct strvec out = STRVEC_INIT;
	git_index *index = NULL;
	git_oid other = sum;
	bool undecided = true;
	char again[160];

	scratch_init(&s);
	ck_assert_int_eq(git_index_new(&index), 0);
	ck_assert_int_eq(gitwalk_changes(&out, &undecided, NULL, &d, index, s.tree, s.index_file),
	                 0);
	ck_assert(!undecided && d);
	ck_assert_int_eq(gitwalk_dirs_save(d, s.file, &sum), 0);
	other.id[0] ^= 1;
	ck_assert_int_eq(gitwalk_dirs_load(&back, s.file, &other), IG_ENOTFOUND);
	ck_assert_int_eq(gitwalk_dirs_load(&back, s.file, &sum), 0);
	snprintf(again, sizeof(again), "%s.again", s.file);
	ck_assert_int_eq(gitwalk_dirs_save(back, again, &sum), 0);
	ck_assert_int_eq(gitrepo_sh("cmp -s '%s' '%s'", s.file, again), 0);
	gitwalk_dirs_free(back);
	gitwalk_dirs_free(d);
	strvec_release(&out);
	git_index_free(index);
	scratch_done(&s);
}
END_TEST

/* A saved directory "l/d" whose parent is now a link out of the tree: the later walk reads the
 * tree's own directories and never what the link leads to (outside/d/secret). */
START_TEST(saved_path_through_link_not_walked)
{
	static const char *const paths[] = {"l/d", NULL};
	struct scratch s;
	struct gitwalk_dirs *d = NULL;
	struct strvec out = STRVEC_INIT;
	git_index *index = NULL;
	bool undecided = true;
	bool saw_tree = false;

	scratch_init(&s);
	ck_assert_int_eq(git_index_new(&index), 0);
	write_dirs(s.file, 1700000000, paths);
	ck_assert_int_eq(gitwalk_dirs_load(&d, s.file, &sum), 0);
	ck_assert_int_eq(
	    gitwalk_changes_since(&out, &undecided, NULL, d, index, s.tree, s.index_file), 0);
	for (size_t i = 0; i < out.len; i++) {
		ck_assert_msg(strncmp(out.items[i], "l/", 2) != 0, "walked through the link: %s",
		              out.items[i]);
		saw_tree = saw_tree || strcmp(out.items[i], "a/f") == 0;
	}
	ck_assert_msg(saw_tree, "the tree's own files were not reported");
	gitwalk_dirs_free(d);
	strvec_release(&out);
	git_index_free(index);
	scratch_done(&s);
}
END_TEST

/* Before a hard reset: links (to files, to directories out of the tree) and FIFOs go at any
 * depth, never followed; files, directories and the top .git stay. */
START_TEST(remove_specials)
{
	struct scratch s;
	struct stat st;

	scratch_init(&s);
	ck_assert_int_eq(
	    gitrepo_sh("cd %s && mkdir .git && ln -s ../../outside .git/keep && "
	               "mkfifo a/fifo && ln -s f a/b/to-file && ln -s ../outside/d a/d",
	               s.tree),
	    0);
	ck_assert_int_eq(gitwalk_remove_specials(s.tree), 0);
	ck_assert_int_eq(gitrepo_sh("cd %s && test -f a/f && test -f a/b/g && test -L .git/keep && "
	                            "test -f ../outside/d/secret",
	                            s.tree),
	                 0);
	ck_assert_int_eq(lstat(s.tree, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(gitrepo_sh("cd %s && test -z \"$(find . -path ./.git -prune -o ! -type f "
	                            "! -type d -print)\"",
	                            s.tree),
	                 0);
	scratch_done(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gitwalk");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	git_libgit2_init();
	tcase_add_loop_test(tc, dirs_load_refuses_damage, 0, sizeof(loads) / sizeof(loads[0]));
	tcase_add_test(tc, dirs_round_trip);
	tcase_add_test(tc, saved_path_through_link_not_walked);
	tcase_add_test(tc, remove_specials);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	git_libgit2_shutdown();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
