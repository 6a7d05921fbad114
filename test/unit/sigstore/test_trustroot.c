/* Trust material from a Secret folder (trustroot): the key names a platform admin writes with
 * `kubectl create secret generic`, a mounted Secret's links, one-line errors naming the Secret
 * and the key, and a fingerprint over the material, not over names or layout. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define KEYS "test/data/sigstore/cimage-keys/"

static void data_path(char *out, size_t n, const char *rel)
{
	const char *root = getenv("IMAGEGUARD_SRC");

	snprintf(out, n, "%s/%s", root && *root ? root : ".", rel);
}

static void copy_into(const char *dir, const char *name, const char *rel)
{
	struct buf b = BUF_INIT;
	char src[512], dst[512];
	FILE *f;

	data_path(src, sizeof(src), rel);
	ck_assert_int_eq(buf_read_file(&b, src), 0);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	ck_assert_ptr_nonnull(f = fopen(dst, "wb"));
	ck_assert_uint_eq(fwrite(b.data, 1, b.len, f), b.len);
	fclose(f);
	buf_release(&b);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char dst[512];
	FILE *f;

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	ck_assert_ptr_nonnull(f = fopen(dst, "wb"));
	fputs(text, f);
	fclose(f);
}

static char *tempdir(void)
{
	char *d = strdup("/tmp/imageguard-trust.XXXXXX");

	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void remove_dir(char *d)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	ck_assert_int_eq(system(cmd), 0);
	free(d);
}

/* A mounted Secret: the keys are links into ..data, a link to a timestamped folder. */
START_TEST(mounted_secret_with_links)
{
	char *d = tempdir(), sub[512], link[512];
	struct trustroot *tr;
	struct error err = ERROR_INIT;

	snprintf(sub, sizeof(sub), "%s/..2026_01_01", d);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	copy_into(sub, "cosign.pub", KEYS "cosign.pub");
	copy_into(sub, "fulcio.crt.pem", KEYS "fulcio_v1.crt.pem");
	copy_into(sub, "rekor.pub", KEYS "rekor.pub");
	snprintf(link, sizeof(link), "%s/..data", d);
	ck_assert_int_eq(symlink("..2026_01_01", link), 0);
	for (const char *const *n =
	         (const char *const[]){"cosign.pub", "fulcio.crt.pem", "rekor.pub", NULL};
	     *n; n++) {
		char target[256];

		snprintf(target, sizeof(target), "..data/%s", *n);
		snprintf(link, sizeof(link), "%s/%s", d, *n);
		ck_assert_int_eq(symlink(target, link), 0);
	}
	ck_assert_msg(trustroot_load(&tr, d, "cosign-keys", &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(trustroot_count(tr, TRUSTROOT_SIGNER), 1);
	ck_assert_str_eq(trustroot_key(tr, TRUSTROOT_SIGNER, 0)->name, "cosign.pub");
	ck_assert_uint_eq(trustroot_count(tr, TRUSTROOT_REKOR), 1);
	ck_assert_uint_eq(trustroot_ca_count(tr), 1);
	ck_assert(trustroot_has_keyless(tr));
	ck_assert_str_eq(trustroot_secret(tr), "cosign-keys");
	ck_assert_int_eq(strncmp(trustroot_fingerprint(tr), "sha256:", 7), 0);
	ck_assert_uint_eq(strlen(trustroot_fingerprint(tr)), 71);
	trustroot_free(tr);
	remove_dir(d);
}
END_TEST

/* The public-good Rekor key's ID is the log ID Rekor writes (c0d23d6a...). */
START_TEST(rekor_key_id_is_the_log_id)
{
	char *d = tempdir();
	struct trustroot *tr;
	struct error err = ERROR_INIT;
	const unsigned char want[4] = {0xc0, 0xd2, 0x3d, 0x6a};

	copy_into(d, "rekor.pub", KEYS "rekor.pub");
	copy_into(d, "fulcio_v1.crt.pem", KEYS "fulcio_v1.crt.pem");
	ck_assert_msg(trustroot_load(&tr, d, "s", &err) == 0, "%s", err.msg);
	ck_assert_int_eq(memcmp(trustroot_key(tr, TRUSTROOT_REKOR, 0)->id, want, 4), 0);
	ck_assert_ptr_nonnull(
	    trustroot_find(tr, TRUSTROOT_REKOR, trustroot_key(tr, TRUSTROOT_REKOR, 0)->id));
	trustroot_free(tr);
	remove_dir(d);
}
END_TEST

struct bad_case {
	const char *name, *content; /* content NULL: a copy of KEYS rel */
	const char *rel;
	int code;
	const char *msg;
};

static const struct bad_case bad[] = {
    {"cosign.pub", "not a key\n", NULL, IG_EINVALID,
     "secret 'team-keys' key 'cosign.pub': not a PEM or DER public key"},
    {"cosign.pub", "", NULL, IG_EINVALID, "secret 'team-keys' key 'cosign.pub': empty"},
    {"release.pub",
     "-----BEGIN PRIVATE "
     "KEY-----\nMC4CAQAwBQYDK2VwBCIEIHhQ2G6J3dVnD4dKMhV9KrU0J5sR6LQmEwFT4aaz7bJu\n"
     "-----END PRIVATE KEY-----\n",
     NULL, IG_EINVALID, "secret 'team-keys' key 'release.pub': not a PEM or DER public key"},
    {"rekor.pub", "garbage", NULL, IG_EINVALID, "secret 'team-keys' key 'rekor.pub':"},
    {"fulcio.crt.pem", NULL, KEYS "cosign.pub", IG_EINVALID,
     "secret 'team-keys' key 'fulcio.crt.pem': no PEM certificate"},
    {"trusted_root.json", "{\"tlogs\": 5}", NULL, IG_EINVALID,
     "secret 'team-keys' key 'trusted_root.json': malformed trusted root"},
    {"trusted_root.json", "[]", NULL, IG_EINVALID,
     "secret 'team-keys' key 'trusted_root.json': not a JSON object"},
    /* a 1024-bit RSA key is refused */
    {"old.pub",
     "-----BEGIN PUBLIC "
     "KEY-----\nMIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC0noz61Zk+hAJVIJVx5DvO+3NS\n"
     "5M1N1H1mYfCnf5NvOn4VjeiAPmBXLcUAgvZ0q3spERBMyb9pib+bX3mXTc3hJAFB\n"
     "8s/nHM/nQiFSDbm5nO9soVZuxI3ZaywfMzxIgIp4/PMwrQFTumJ778DY+De3btva\n"
     "76f3lKRj+Q5+viRRiwIDAQAB\n-----END PUBLIC KEY-----\n",
     NULL, IG_EINVALID, "secret 'team-keys' key 'old.pub': RSA key shorter than 2048 bits"},
};

START_TEST(unparseable_keys_name_secret_and_key)
{
	const struct bad_case *c = &bad[_i];
	char *d = tempdir();
	struct trustroot *tr = NULL;
	struct error err = ERROR_INIT;

	copy_into(d, "a-good.pub", KEYS "cosign.pub");
	if (c->content)
		write_text(d, c->name, c->content);
	else
		copy_into(d, c->name, c->rel);
	ck_assert_int_eq(trustroot_load(&tr, d, "team-keys", &err), c->code);
	ck_assert_ptr_null(tr);
	ck_assert_msg(strncmp(err.msg, c->msg, strlen(c->msg)) == 0, "'%s' not '%s'", err.msg,
	              c->msg);
	ck_assert_ptr_null(strchr(err.msg, '\n'));
	remove_dir(d);
}
END_TEST

START_TEST(missing_and_empty_secrets)
{
	char *d = tempdir(), missing[600];
	struct trustroot *tr;
	struct error err = ERROR_INIT;

	snprintf(missing, sizeof(missing), "%s/nope", d);
	ck_assert_int_eq(trustroot_load(&tr, missing, "gone", &err), IG_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "secret 'gone'"));
	write_text(d, "README", "not a key name\n");
	copy_into(d, "rekor.pub", KEYS "rekor.pub"); /* a Rekor key alone trusts no signer */
	ck_assert_int_eq(trustroot_load(&tr, d, "empty", &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "secret 'empty': no public key"), "%s", err.msg);
	remove_dir(d);
}
END_TEST

/* Key names do not change the fingerprint; the material does. RSA and trusted_root.json too. */
START_TEST(fingerprint_is_the_material)
{
	char *a = tempdir(), *b = tempdir(), *c = tempdir(), *j = tempdir();
	struct trustroot *ta, *tb, *tc, *tj;
	struct error err = ERROR_INIT;

	copy_into(a, "cosign.pub", KEYS "cosign.pub");
	copy_into(a, "rsa.pub", KEYS "some-rsa-key.pub");
	copy_into(b, "team-b.pub", KEYS "some-rsa-key.pub");
	copy_into(b, "team-a.pub", KEYS "cosign.pub");
	copy_into(c, "cosign.pub", KEYS "cosign2.pub");
	copy_into(c, "rsa.pub", KEYS "some-rsa-key.pub");
	copy_into(j, "trusted_root.json", "test/data/sigstore/sgo-provenance/trusted_root.json");
	ck_assert_int_eq(trustroot_load(&ta, a, "a", &err), 0);
	ck_assert_int_eq(trustroot_load(&tb, b, "b", &err), 0);
	ck_assert_int_eq(trustroot_load(&tc, c, "c", &err), 0);
	ck_assert_msg(trustroot_load(&tj, j, "j", &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(trustroot_count(ta, TRUSTROOT_SIGNER), 2);
	ck_assert_str_eq(trustroot_fingerprint(ta), trustroot_fingerprint(tb));
	ck_assert_str_ne(trustroot_fingerprint(ta), trustroot_fingerprint(tc));
	ck_assert(trustroot_has_keyless(tj));
	ck_assert_uint_eq(trustroot_count(tj, TRUSTROOT_CTLOG), 2);
	ck_assert_uint_eq(trustroot_ca_count(tj), 3); /* a root, and a root with its intermediate */
	ck_assert(trustroot_ca(tj, 0)->not_before > INT64_MIN);
	trustroot_free(ta);
	trustroot_free(tb);
	trustroot_free(tc);
	trustroot_free(tj);
	remove_dir(a);
	remove_dir(b);
	remove_dir(c);
	remove_dir(j);
}
END_TEST

START_TEST(too_many_keys)
{
	char *d = tempdir(), name[32];
	struct trustroot *tr;
	struct error err = ERROR_INIT;

	for (int i = 0; i < TRUSTROOT_MAX_FILES + 1; i++) {
		snprintf(name, sizeof(name), "k%02d.pub", i);
		copy_into(d, name, KEYS "cosign.pub");
	}
	ck_assert_int_eq(trustroot_load(&tr, d, "many", &err), IG_ETOOBIG);
	remove_dir(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trustroot");
	TCase *tc = tcase_create("secret");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, mounted_secret_with_links);
	tcase_add_test(tc, rekor_key_id_is_the_log_id);
	tcase_add_loop_test(tc, unparseable_keys_name_secret_and_key, 0,
	                    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, missing_and_empty_secrets);
	tcase_add_test(tc, fingerprint_is_the_material);
	tcase_add_test(tc, too_many_keys);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
