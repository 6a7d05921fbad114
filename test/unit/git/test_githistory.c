/* githistory_first_message over a real Git repository (made with git), as the fencing head
 * check uses it on a fetched head, whose history the Git host controls: the newest match on
 * the first-parent line is found under commits that do not match; a match only on a merged
 * side branch is not; the walk stops after max_commits (a host can hang any number of
 * commits on top); a message over the buffer's cap is IG_ETOOBIG, not a truncated match. */
#include <check.h>
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/git/githistory.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static char repo[64];

static void sh(const char *fmt, const char *arg)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cd '%s' && ", repo);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), fmt, arg);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

#define COMMIT "git -c user.name=t -c user.email=t@t commit -q --allow-empty "

static bool has_mark(void *ctx, const char *msg)
{
	(*(unsigned *)ctx)++;
	return strstr(msg, "\n\nMark: ") != NULL;
}

/* main: root, "Mark: 1", a merge of a side branch holding "Mark: side", then n commits
 * without a mark. */
static void make(const char *n)
{
	snprintf(repo, sizeof(repo), "/tmp/imageguard-test-gh.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(repo));
	sh("git init -q -b main . && " COMMIT "-m root%s", "");
	sh(COMMIT "-m 'first' -m 'Mark: 1'%s", "");
	sh("git checkout -q -b side && " COMMIT "-m 'side' -m 'Mark: side' && git checkout -q main"
	   "%s",
	   "");
	sh(COMMIT "-m person && git -c user.name=t -c user.email=t@t merge -q --no-ff "
	          "--no-edit side%s",
	   "");
	sh("for i in $(seq %s); do " COMMIT "-m \"person $i\" || exit 1; done", n);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", repo);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(newest_first_parent_match)
{
	struct buf out = BUF_INIT_MAX(1 << 20);
	struct error err = ERROR_INIT;
	unsigned seen = 0;

	make("3");
	ck_assert_int_eq(githistory_first_message(&out, repo, 256, has_mark, &seen, &err), 0);
	ck_assert_ptr_nonnull(out.data);
	/* the merge's second parent ("Mark: side") is not on the first-parent line */
	ck_assert_str_eq(out.data, "first\n\nMark: 1\n");
	ck_assert_uint_eq(seen, 6); /* 3 people, the merge, "person", then "first" */
	buf_release(&out);
}
END_TEST

START_TEST(walk_is_bounded)
{
	struct buf out = BUF_INIT_MAX(1 << 20);
	struct error err = ERROR_INIT;
	unsigned seen = 0;

	make("300");
	ck_assert_int_eq(githistory_first_message(&out, repo, 256, has_mark, &seen, &err), 0);
	ck_assert_uint_eq(seen, 256);
	ck_assert_uint_eq(out.len, 0);
	seen = 0;
	ck_assert_int_eq(githistory_first_message(&out, repo, 0, has_mark, &seen, &err), 0);
	ck_assert_uint_eq(seen, 0);
	buf_release(&out);
}
END_TEST

START_TEST(message_over_the_cap)
{
	struct buf out = BUF_INIT_MAX(8);
	struct error err = ERROR_INIT;
	unsigned seen = 0;

	make("1");
	ck_assert_int_eq(githistory_first_message(&out, repo, 256, has_mark, &seen, &err),
	                 IG_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "too long"));
	buf_release(&out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("githistory");
	TCase *tc = tcase_create("git");
	SRunner *sr;
	int failed;

	git_libgit2_init();
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, newest_first_parent_match);
	tcase_add_test(tc, walk_is_bounded);
	tcase_add_test(tc, message_over_the_cap);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	git_libgit2_shutdown();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
