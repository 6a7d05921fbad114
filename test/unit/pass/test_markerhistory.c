/* markerhistory over a real Git repository (made with git): a digest held before and replaced
 * is found; one held now (at any marker of the policy) or never held is not; other policies'
 * markers, other files, and a version of the file that is a symbolic link do not count. */
#include <check.h>
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/pass/markerhistory.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/error.h"

#define D(c)                                                                                       \
	"sha256:" c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c  \
	    c c c c c c c c c c c c c c c c c c c c c c c c
#define D1 D("1")
#define D2 D("2")
#define D3 D("3")
#define D4 D("4")
#define D5 D("5")

static char repo[64];

static void sh(const char *fmt, const char *arg)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cd '%s' && ", repo);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), fmt, arg);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

static void commit_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", repo, name);
	unlink(path);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	sh("git add -A && git -c user.name=t -c user.email=t@t commit -qm %s", name);
}

static void setup(void)
{
	snprintf(repo, sizeof(repo), "/tmp/imageguard-test-mh.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(repo));
	sh("git init -q -b main .%s", "");
	/* app.yaml: D1, then D4 (another policy's marker holds D5), then D2 + a second marker D3 */
	commit_file("app.yaml", "image: r/app:latest@" D1 " # {\"$imagepolicy\": \"ns:app\"}\n");
	commit_file("other.yaml", "image: r/app:latest@" D1 " # {\"$imagepolicy\": \"ns:app\"}\n");
	commit_file("app.yaml", "image: r/app:latest@" D4 " # {\"$imagepolicy\": \"ns:app\"}\n"
	                        "b: r/b:1@" D5 " # {\"$imagepolicy\": \"ns:b\"}\n");
	commit_file("app.yaml", "image: r/app:latest@" D2 " # {\"$imagepolicy\": \"ns:app\"}\n"
	                        "side: r/app:latest@" D3 " # {\"$imagepolicy\": \"ns:app\"}\n");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", repo);
	ck_assert_int_eq(system(cmd), 0);
}

static const struct {
	const char *file, *digest;
	bool replaced;
} rows[] = {
    {"app.yaml", D1, true},      /* held first, replaced by D4 */
    {"app.yaml", D4, true},      /* held, replaced by D2 */
    {"app.yaml", D2, false},     /* held now */
    {"app.yaml", D3, false},     /* held now by the policy's other marker */
    {"app.yaml", D5, false},     /* another policy's digest */
    {"app.yaml", D("9"), false}, /* never held */
    {"other.yaml", D1, false},   /* held now in its own file */
    {"missing.yaml", D1, false}, /* a file that never existed */
};

START_TEST(replaced_table)
{
	struct marker m = {(char *)rows[_i].file,
	                   1,
	                   (char *)"ns/app",
	                   MARKER_IMAGE,
	                   MARKER_PLAIN,
	                   0,
	                   0,
	                   (char *)"",
	                   NULL,
	                   NULL,
	                   NULL,
	                   NULL,
	                   NULL,
	                   false};
	struct error err = ERROR_INIT;
	bool out = !rows[_i].replaced;

	ck_assert_msg(markerhistory_replaced(&out, repo, &m, rows[_i].digest, &err) == 0, "%s",
	              err.msg);
	ck_assert_msg(out == rows[_i].replaced, "%s %s", rows[_i].file, rows[_i].digest);
}
END_TEST

/* A version of the file that is a symbolic link is never read through. */
START_TEST(link_version_ignored)
{
	struct marker m = {(char *)"app.yaml",
	                   1,
	                   (char *)"ns/app",
	                   MARKER_IMAGE,
	                   MARKER_PLAIN,
	                   0,
	                   0,
	                   (char *)"",
	                   NULL,
	                   NULL,
	                   NULL,
	                   NULL,
	                   NULL,
	                   false};
	struct error err = ERROR_INIT;
	bool out = true;

	sh("rm app.yaml && ln -s other.yaml app.yaml && git add -A && "
	   "git -c user.name=t -c user.email=t@t commit -qm link%s",
	   "");
	ck_assert_int_eq(markerhistory_replaced(&out, repo, &m, D2, &err), 0);
	ck_assert(out); /* D2 is no longer held at HEAD (a link is no version), and was before */
	ck_assert_int_eq(markerhistory_replaced(&out, repo, &m, D1, &err), 0);
	ck_assert(out); /* other.yaml's D1, reached through the link, does not count as held now */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("markerhistory");
	TCase *tc = tcase_create("git");
	SRunner *sr;
	int failed;

	git_libgit2_init();
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, replaced_table, 0, sizeof(rows) / sizeof(rows[0]));
	tcase_add_test(tc, link_version_ignored);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	git_libgit2_shutdown();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
