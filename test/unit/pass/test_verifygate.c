/* The pass's signature gate over a fake registry: a policy's trust root loaded from its
 * Secret's folder once (an unusable one an error naming the Secret and key, remembered), the
 * verdict for a digest cached per digest and policy fingerprint (a second ask, by the same or
 * another policy with the same trust, makes no request), a registry failure never cached.
 * Across passes (a verifycache, as `run` keeps): `ok` is reused, a failure only while the
 * listing shows no signature tag and within the TTL, never without a listing. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/config/config.h"
#include "imageguard/guard/decide.h"
#include "imageguard/pass/verifygate.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/sigverify.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

/* containers/image's recorded cosign signature of KEY_DIGEST, by cimage-keys/cosign.pub */
#define KEY_DIGEST "sha256:634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00"
#define KEY_SIG_TAG "sha256-634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00.sig"

static char tmp[64];
static struct config *cfg;

/* A registry that has no signature for anything, or fails, or serves the recorded signature
 * of KEY_DIGEST; its listing (has_tag) lists `listed` (NULL: nothing; unknown: -1). */
struct fake {
	bool fails;
	unsigned calls;
	bool unknown;
	const char *listed;
	struct buf sig, payload; /* the .sig manifest and its payload blob, when signed */
	char payload_digest[80];
};

static int get_manifest(void *ctx, struct buf *body, char *type, size_t n, const char *ref,
                        struct error *err)
{
	struct fake *f = ctx;
	const struct buf *hit = NULL;

	f->calls++;
	if (f->fails)
		return error_set(err, IG_EFAIL, "GET %s: 503", ref);
	if (f->sig.len && !strcmp(ref, KEY_SIG_TAG))
		hit = &f->sig;
	else if (f->payload.len && !strcmp(ref, f->payload_digest))
		hit = &f->payload;
	if (!hit)
		return error_set(err, IG_ENOTFOUND, "'%s': 404", ref);
	if (type && n)
		snprintf(type, n, "application/vnd.oci.image.manifest.v1+json");
	buf_reset(body);
	return buf_append(body, hit->data, hit->len) < 0 ? IG_EFAIL : 0;
}

static int get_blob(void *ctx, struct buf *body, const char *digest, struct error *err)
{
	return get_manifest(ctx, body, NULL, 0, digest, err);
}

static int has_tag(void *ctx, const char *tag)
{
	const struct fake *f = ctx;

	return f->unknown ? -1 : f->listed && !strcmp(tag, f->listed);
}

/* Serves the recorded signature of KEY_DIGEST (containers/image's cimage-cosign-valid) in
 * cosign's `.sig` layout. */
static void sign_key_digest(struct fake *f)
{
	const char *root = getenv("IMAGEGUARD_SRC");
	char path[512], blob[80], config[80];
	struct buf rec = BUF_INIT;
	unsigned char md[32];
	const char *brace, *b64;
	json_t *j, *m;
	char *text;

	snprintf(path, sizeof(path), "%s/test/data/sigstore/cimage-cosign-valid/signature-1",
	         root && *root ? root : ".");
	ck_assert_int_eq(buf_read_file(&rec, path), 0);
	ck_assert_ptr_nonnull(brace = memchr(rec.data, '{', rec.len));
	ck_assert_ptr_nonnull(j = json_loadb(brace, rec.len - (size_t)(brace - rec.data), 0, NULL));
	b64 = json_string_value(json_object_get(j, "payload"));
	f->payload.max = 1 << 20;
	ck_assert_int_eq(sigcrypto_b64decode(&f->payload, b64, strlen(b64)), 0);
	ck_assert_int_eq(sigcrypto_sha256(md, f->payload.data, f->payload.len), 0);
	memcpy(blob, "sha256:", 7);
	sigcrypto_hex(blob + 7, md, 32);
	snprintf(f->payload_digest, sizeof(f->payload_digest), "%s", blob);
	ck_assert_int_eq(sigcrypto_sha256(md, "{}", 2), 0);
	memcpy(config, "sha256:", 7);
	sigcrypto_hex(config + 7, md, 32);
	m = json_pack("{s:i, s:s, s:{s:s, s:i, s:s}, s:[{s:s, s:I, s:s, s:O}]}", "schemaVersion", 2,
	              "mediaType", "application/vnd.oci.image.manifest.v1+json", "config",
	              "mediaType", "application/vnd.oci.image.config.v1+json", "size", 2, "digest",
	              config, "layers", "mediaType",
	              "application/vnd.dev.cosign.simplesigning.v1+json", "size",
	              (json_int_t)f->payload.len, "digest", blob, "annotations",
	              json_object_get(j, "annotations"));
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(text = json_dumps(m, JSON_COMPACT));
	ck_assert_int_eq(buf_append(&f->sig, text, strlen(text)), 0);
	free(text);
	json_decref(m);
	json_decref(j);
	buf_release(&rec);
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

	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, NULL, &err), 0);
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

/* Verifications the last pass_verdict asked of the registry (not answered by the cache). */
static size_t asked;

/* One pass's verdict for policy "a", on a gate made over cache (a new pass). */
static const char *pass_verdict(struct verifycache *cache, const char *digest, struct fake *f)
{
	struct sigverify_source src = {get_manifest, get_blob, NULL, has_tag, f};
	static char status[32];
	struct decide_verified v;
	struct error err = ERROR_INIT;
	struct verifygate *g;

	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, cache, &err), 0);
	ck_assert_msg(verifygate_check(g, policy_index("a"), digest, &src, &v, &err) == 0, "%s",
	              err.msg);
	snprintf(status, sizeof(status), "%s", v.status);
	asked = verifygate_checks(g);
	verifygate_free(g);
	return status;
}

START_TEST(verdicts_across_passes)
{
	struct verifycache *cache = verifycache_new(60 * 1000);
	struct fake f = {0};

	ck_assert_ptr_nonnull(cache);
	/* unsigned, nothing listed: asked once, then answered from the cache */
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 0);
	/* a signature tag in the listing: asked on every pass (it may be re-signed in place) */
	f.listed = "sha256-1111111111111111111111111111111111111111111111111111111111111111.sig";
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	ck_assert_uint_gt(f.calls, 0); /* the listed tag is fetched */
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	/* so with the referrers tag scheme's fallback tag */
	f.listed = "sha256-1111111111111111111111111111111111111111111111111111111111111111";
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	/* gone again: asked once more, then answered from the cache */
	f.listed = NULL;
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 0);
	/* without a listing a failure is never reused across passes */
	f.unknown = true;
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	/* ok is reused across passes, with or without a listing */
	sign_key_digest(&f);
	f.unknown = false;
	f.listed = KEY_SIG_TAG;
	f.calls = 0;
	ck_assert_str_eq(pass_verdict(cache, KEY_DIGEST, &f), "ok");
	ck_assert_uint_eq(asked, 1);
	ck_assert_uint_eq(f.calls, 2); /* the .sig manifest and its payload */
	f.unknown = true;
	ck_assert_str_eq(pass_verdict(cache, KEY_DIGEST, &f), "ok");
	ck_assert_uint_eq(asked, 0);
	ck_assert_uint_eq(f.calls, 2);
	ck_assert_uint_eq(verifycache_len(cache), 2);
	buf_release(&f.sig);
	buf_release(&f.payload);
	verifycache_free(cache);
}
END_TEST

START_TEST(failures_expire)
{
	struct verifycache *cache = verifycache_new(0); /* a failure is never reused */
	struct fake f = {0};

	ck_assert_ptr_nonnull(cache);
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	ck_assert_str_eq(pass_verdict(cache, D1, &f), "unsigned");
	ck_assert_uint_eq(asked, 1);
	ck_assert_uint_eq(verifycache_len(cache), 1); /* the entry is replaced, not added */
	verifycache_free(cache);
}
END_TEST

START_TEST(the_cache_is_bounded)
{
	struct verifycache *cache = verifycache_new(60 * 1000);
	struct fake f = {0};
	struct sigverify_source src = {get_manifest, get_blob, NULL, has_tag, &f};
	struct decide_verified v;
	struct error err = ERROR_INIT;
	struct verifygate *g;
	char digest[80];

	ck_assert_ptr_nonnull(cache);
	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, cache, &err), 0);
	for (unsigned i = 0; i <= VERIFYCACHE_MAX; i++) {
		snprintf(digest, sizeof(digest), "sha256:%064x", i);
		ck_assert_int_eq(verifygate_check(g, policy_index("a"), digest, &src, &v, &err), 0);
	}
	ck_assert_uint_eq(verifycache_len(cache), VERIFYCACHE_MAX);
	ck_assert_uint_eq(verifygate_checks(g), VERIFYCACHE_MAX + 1);
	/* the oldest went: the last digest is answered, the first is asked again */
	ck_assert_int_eq(verifygate_check(g, policy_index("a"), digest, &src, &v, &err), 0);
	ck_assert_uint_eq(verifygate_checks(g), VERIFYCACHE_MAX + 1);
	snprintf(digest, sizeof(digest), "sha256:%064x", 0);
	ck_assert_int_eq(verifygate_check(g, policy_index("a"), digest, &src, &v, &err), 0);
	ck_assert_uint_eq(verifygate_checks(g), VERIFYCACHE_MAX + 2);
	verifygate_free(g);
	verifycache_free(cache);
}
END_TEST

START_TEST(registry_failure_is_not_cached)
{
	struct fake f = {.fails = true};
	struct sigverify_source src = {get_manifest, get_blob, NULL, NULL, &f};
	struct decide_verified v;
	struct error err = ERROR_INIT;
	struct verifygate *g;

	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, NULL, &err), 0);
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

	ck_assert_int_eq(verifygate_new(&g, cfg, tmp, NULL, &err), 0);
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
	tcase_add_test(tc, verdicts_across_passes);
	tcase_add_test(tc, failures_expire);
	tcase_add_test(tc, the_cache_is_bounded);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
