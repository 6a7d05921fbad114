/* settle: the settle window's memory in the state dir: a candidate keeps its first-seen time
 * while it stays with the same digest, restarts when it changes, vanishes or is re-pointed,
 * survives a reopen (a restart), is written 0600 through a temporary file, and a damaged
 * file only restarts clocks. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/pass/settle.h"
#include "imageguard/util/error.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/imageguard-test-settle.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(clock_rules)
{
	struct settle *s;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(settle_open(&s, dir, &err), 0);
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:aa", 1000), 1000);
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:aa", 1300), 1000);
	/* another policy has its own clock */
	ck_assert_int_eq(settle_since(s, "ns/b", "1.1.0", "sha256:aa", 1300), 1300);
	/* re-pointed (another digest) or another candidate: the clock restarts */
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:bb", 1400), 1400);
	ck_assert_int_eq(settle_since(s, "ns/a", "1.2.0", "sha256:bb", 1500), 1500);
	/* the earlier candidate back again (it had vanished): from scratch */
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:bb", 1600), 1600);
	/* listed without it (it vanished): forgotten, so it starts again */
	{
		const char *const without[] = {"1.0.0", "1.2.0"}, *const with[] = {"1.1.0"};

		settle_keep_listed(s, "ns/a", with, 1);
		ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:bb", 1610), 1600);
		settle_keep_listed(s, "ns/a", without, 2);
		ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:bb", 1620), 1620);
		settle_keep_listed(s, "ns/none", without, 2); /* no entry: nothing to forget */
	}
	/* no digest confirmed is a value of its own */
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", NULL, 1700), 1700);
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", NULL, 1800), 1700);
	/* a clock from the future (a wrong clock before a restart) is not trusted */
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", NULL, 1650), 1650);
	settle_free(s);
}
END_TEST

START_TEST(survives_restart)
{
	struct settle *s;
	struct error err = ERROR_INIT;
	struct stat st;
	char path[128];

	ck_assert_int_eq(settle_open(&s, dir, &err), 0);
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:aa", 1000), 1000);
	ck_assert_int_eq(settle_save(s, &err), 0);
	settle_free(s);
	snprintf(path, sizeof(path), "%s/settle.json", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(settle_open(&s, dir, &err), 0);
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", "sha256:aa", 5000), 1000);
	ck_assert_int_eq(settle_save(s, &err), 0); /* unchanged: nothing written */
	settle_free(s);
}
END_TEST

START_TEST(damaged_file_restarts_clocks)
{
	static const char *const damaged[] = {"{not json", "[]", "{\"policies\": 3}", ""};
	struct settle *s;
	struct error err = ERROR_INIT;
	char path[128];

	snprintf(path, sizeof(path), "%s/settle.json", dir);
	for (size_t i = 0; i < sizeof(damaged) / sizeof(damaged[0]); i++) {
		FILE *f = fopen(path, "w");

		ck_assert_ptr_nonnull(f);
		fputs(damaged[i], f);
		fclose(f);
		ck_assert_int_eq(settle_open(&s, dir, &err), 0);
		ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", NULL, 2000), 2000);
		ck_assert_int_eq(settle_save(s, &err), 0);
		settle_free(s);
	}
}
END_TEST

START_TEST(unwritable_dir_is_an_error)
{
	struct settle *s;
	struct error err = ERROR_INIT;
	char missing[96];

	snprintf(missing, sizeof(missing), "%s/no/such/dir", dir);
	ck_assert_int_eq(settle_open(&s, missing, &err), 0);
	ck_assert_int_eq(settle_since(s, "ns/a", "1.1.0", NULL, 2000), 2000);
	ck_assert_int_lt(settle_save(s, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "settle.json"));
	settle_free(s);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("settle");
	TCase *tc = tcase_create("state");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, clock_rules);
	tcase_add_test(tc, survives_restart);
	tcase_add_test(tc, damaged_file_restarts_clocks);
	tcase_add_test(tc, unwritable_dir_is_an_error);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
