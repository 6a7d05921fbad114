/* The pass's signature gate over a fake registry: a policy's trust root loaded from its
 * Secret's folder once (an unusable one an error naming the Secret and key, remembered), the
 * verdict for a digest cached per digest and policy fingerprint (a second ask, by the same or
 * another policy with the same trust, makes no request), a registry failure never cached. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/config/config.h"
#include "imageguard/guard/decide.h"
#include "imageguard/pass/verifygate.h"
#include "imageguard/sigstore/sigverify.h"
#include "imageguard/util/error.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static char tmp[64];
static struct config *cfg;

/* A registry that has no signature for anything, or fails. */
struct fake {
	bool fails;
	unsigned calls;
};

static int get_manifest(void *ctx, struct buf *body, char *type, size_t n, const char *ref,
                        struct error *err)
{
	struct fake *f = ctx;

	(void)body;
	(void)type;
	(void)n;
	f->calls++;
	return f->fails ? error_set(err, IG_EFAIL, "GET %s: 503", ref)
	                : error_set(err, IG_ENOTFOUND, "'%s': 404", ref);
}

static int get_blob(void *ctx, struct buf *body, const char *digest, struct error *err)
{
	return get_manifest(ctx, body, NULL, 0, digest, err);
}

static void write_file(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static void copy_key(const char *secret)
{
	const char *src = getenv("IMAGEGUARD_SRC");
	char path[512], dir[256], key[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/test/data/sigstore/cimage-keys/cosign.pub",
	         src ? src : ".");
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	n = fread(key, 1, sizeof(key) - 1, f);
	key[n] = '\0';
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/%s", tmp, secret);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/cosign.pub", secret);
	write_file(path, key);
}

#define POLICY(name, secret)                                                                       \
	"---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: " name \
	"\n  annotations: {imageguard.io/verify-provider: cosign, "                                \
	"imageguard.io/verify-secret: " secret                                                     \
	"}\nspec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: '*'}}\n"

static void setup(void)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct error err = ERROR_INIT;
	char path[128];

	snprintf(tmp, sizeof(tmp), "/tmp/imageguard-test-verifygate.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	copy_key("keys");
	copy_key("same");
	snprintf(path, sizeof(path), "%s/broken", tmp);
	mkdir(path, 0755);
	write_file("broken/cosign.pub",
	           "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
	write_file("config.yaml",
	           "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
	           "metadata: {name: app}\nspec: {image: ghcr.io/acme/app}\n" POLICY("a", "keys")
	               POLICY("b", "same") POLICY("c", "broken") POLICY("d", "gone"));
	snprintf(path, sizeof(path), "%s/config.yaml", tmp);
	ck_assert_msg(config_load(&cfg, path, &diags, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(cfg->policies_len, 4);
	config_diags_release(&diags);
}

static void teardown(void)
{
	char cmd[128];

	config_free(cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

static size_t policy_index(const char *name)
{
	const struct config_policy *p = config_find_policy(cfg, "default", name);

	ck_assert_ptr_nonnull(p);
	return (size_t)(p - cfg->policies);
}

START_TEST(unsigned_is_cached_per_digest_and_trust)
{
	struct fake f = {0};
	struct sigverify_source src = {get_manifest, get_blob, NULL, NULL, &f};
	struct decide_verified v;
	struct error err = ERROR_INIT;
	struct verifygate *g;
	unsigned first;

	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, &err), 0);
	ck_assert_int_eq(verifygate_check(g, policy_index("a"), D1, &src, &v, &err), 0);
	ck_assert_str_eq(v.status, "unsigned");
	ck_assert_ptr_null(v.signer);
	ck_assert_uint_gt(first = f.calls, 0);
	ck_assert_uint_eq(verifygate_checks(g), 1);
	ck_assert_uint_eq(verifygate_requests(g), first);
	/* the same digest again, and under another Secret holding the same key: no request */
	ck_assert_int_eq(verifygate_check(g, policy_index("a"), D1, &src, &v, &err), 0);
	ck_assert_int_eq(verifygate_check(g, policy_index("b"), D1, &src, &v, &err), 0);
	ck_assert_str_eq(v.status, "unsigned");
	ck_assert_uint_eq(f.calls, first);
	ck_assert_uint_eq(verifygate_checks(g), 1);
	/* another digest is asked */
	ck_assert_int_eq(verifygate_check(g, policy_index("a"), D2, &src, &v, &err), 0);
	ck_assert_uint_eq(f.calls, 2 * first);
	ck_assert_uint_eq(verifygate_checks(g), 2);
	verifygate_free(g);
}
END_TEST

START_TEST(registry_failure_is_not_cached)
{
	struct fake f = {.fails = true};
	struct sigverify_source src = {get_manifest, get_blob, NULL, NULL, &f};
	struct decide_verified v;
	struct error err = ERROR_INIT;
	struct verifygate *g;

	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, &err), 0);
	ck_assert_int_lt(verifygate_check(g, policy_index("a"), D1, &src, &v, &err), 0);
	ck_assert_msg(strstr(err.msg, "503"), "%s", err.msg);
	f.fails = false;
	error_clear(&err);
	ck_assert_int_eq(verifygate_check(g, policy_index("a"), D1, &src, &v, &err), 0);
	ck_assert_str_eq(v.status, "unsigned");
	verifygate_free(g);
}
END_TEST

START_TEST(unusable_trust_roots_name_the_secret)
{
	struct fake f = {0};
	struct sigverify_source src = {get_manifest, get_blob, NULL, NULL, &f};
	struct decide_verified v;
	struct error err = ERROR_INIT;
	struct verifygate *g;

	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, &err), 0);
	ck_assert_int_eq(verifygate_check(g, policy_index("c"), D1, &src, &v, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "secret 'broken'") && strstr(err.msg, "cosign.pub"), "%s",
	              err.msg);
	error_clear(&err);
	/* remembered: the same error without reading the folder again */
	ck_assert_int_eq(verifygate_check(g, policy_index("c"), D2, &src, &v, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "secret 'broken'"), "%s", err.msg);
	error_clear(&err);
	ck_assert_int_eq(verifygate_check(g, policy_index("d"), D1, &src, &v, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "gone"), "%s", err.msg);
	ck_assert_uint_eq(f.calls, 0);
	verifygate_free(g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verifygate");
	TCase *tc = tcase_create("gate");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, unsigned_is_cached_per_digest_and_trust);
	tcase_add_test(tc, registry_failure_is_not_cached);
	tcase_add_test(tc, unusable_trust_roots_name_the_secret);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
