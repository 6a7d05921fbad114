/* gitsign against real gpg: a key made with gpg --quick-gen-key (with and without a
 * passphrase) signs, and gpg verifies the detached signature over the same bytes; a wrong
 * passphrase, a public key only, a missing git.asc are one-line errors naming the secret and
 * never its content; the throwaway GNUPGHOME is gone after gitsign_free. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/git/gitsign.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static char dir[64];

static int sh(const char *fmt, const char *arg)
{
	char cmd[2048], line[2200];

	snprintf(cmd, sizeof(cmd), fmt, arg, arg, arg, arg);
	snprintf(line, sizeof(line), "cd '%s' && (%s) >/dev/null 2>&1", dir, cmd);
	return system(line);
}

static void write_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* keys/: GNUPGHOME with two keys; secret-pw/ (git.asc + passphrase), secret-open/ (git.asc,
 * no passphrase), secret-public/ (a public key only), secret-empty/ (nothing). */
static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/imageguard-test-gitsign.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(
	    sh("mkdir -m 700 keys secret-pw secret-open secret-public secret-empty state && "
	       "export GNUPGHOME=$PWD/keys && "
	       "gpg --batch --pinentry-mode loopback --passphrase 's3cret phrase' --quick-gen-key "
	       "'Bot <bot@example.com>' ed25519 sign never && "
	       "gpg --batch --pinentry-mode loopback --passphrase '' --quick-gen-key "
	       "'Open <open@example.com>' ed25519 sign never && "
	       "gpg --batch --pinentry-mode loopback --passphrase 's3cret phrase' --armor "
	       "--export-secret-keys bot@example.com > secret-pw/git.asc && "
	       "gpg --batch --pinentry-mode loopback --passphrase '' --armor "
	       "--export-secret-keys open@example.com > secret-open/git.asc && "
	       "gpg --batch --armor --export bot@example.com > secret-public/git.asc && "
	       "gpg --batch --armor --export bot@example.com open@example.com > pub.asc && "
	       "gpgconf --kill gpg-agent%s",
	       ""),
	    0);
	write_file("secret-pw/passphrase", "s3cret phrase\n");
}

static void teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Signs data with the secret in dir/<secret>; verifies with gpg when it should work. */
static int sign_with(const char *secret, const char *data, struct error *err)
{
	struct gitsign *s = NULL;
	struct buf sig = BUF_INIT;
	char sdir[128], state[128];
	int rc;

	snprintf(sdir, sizeof(sdir), "%s/%s", dir, secret);
	snprintf(state, sizeof(state), "%s/state/gnupg", dir);
	if ((rc = gitsign_new(&s, sdir, state, err)) == 0 &&
	    (rc = gitsign_sign(s, data, strlen(data), &sig, err)) == 0) {
		ck_assert_ptr_nonnull(strstr(sig.data, "-----BEGIN PGP SIGNATURE-----"));
		ck_assert_uint_eq(strlen(gitsign_fingerprint(s)), 40);
		write_file("data", data);
		write_file("data.sig", sig.data);
		ck_assert_int_eq(sh("export GNUPGHOME=$(mktemp -d) && gpg --batch --import pub.asc "
		                    "&& gpg --batch --verify data.sig data && gpgconf --kill "
		                    "gpg-agent%s",
		                    ""),
		                 0);
		/* the signature covers these bytes only */
		write_file("data", "tree 0000\n");
		ck_assert_int_ne(sh("export GNUPGHOME=$(mktemp -d) && gpg --batch --import pub.asc "
		                    "&& gpg --batch --verify data.sig data%s",
		                    ""),
		                 0);
	}
	buf_release(&sig);
	gitsign_free(s);
	/* the throwaway home is gone, whatever happened */
	ck_assert_int_eq(sh("test -z \"$(ls -A state/gnupg 2>/dev/null)\"%s", ""), 0);
	return rc;
}

START_TEST(signs_with_passphrase)
{
	struct error err = ERROR_INIT;

	ck_assert_msg(sign_with("secret-pw", "tree abc\nauthor x\n\nmsg\n", &err) == 0, "%s",
	              err.msg);
}
END_TEST

START_TEST(signs_without_passphrase)
{
	struct error err = ERROR_INIT;

	ck_assert_msg(sign_with("secret-open", "tree abc\n", &err) == 0, "%s", err.msg);
}
END_TEST

START_TEST(wrong_passphrase)
{
	struct error err = ERROR_INIT;

	write_file("secret-pw/passphrase", "not it");
	ck_assert_int_eq(sign_with("secret-pw", "tree abc\n", &err), IG_EAUTH);
	ck_assert_ptr_nonnull(strstr(err.msg, "passphrase does not unlock"));
	ck_assert_ptr_null(strstr(err.msg, "not it"));
}
END_TEST

START_TEST(no_usable_key)
{
	struct error err = ERROR_INIT;

	ck_assert_int_eq(sign_with("secret-public", "x", &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "secret-public"));
	ck_assert_ptr_nonnull(strstr(err.msg, "no secret key"));
	error_clear(&err);
	ck_assert_int_eq(sign_with("secret-empty", "x", &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "no git.asc"));
	ck_assert_ptr_null(strstr(err.msg, "PGP"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gitsign");
	TCase *tc = tcase_create("gpg");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, signs_with_passphrase);
	tcase_add_test(tc, signs_without_passphrase);
	tcase_add_test(tc, wrong_passphrase);
	tcase_add_test(tc, no_usable_key);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
