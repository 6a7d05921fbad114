/* The signature gate's configuration (CONTRACT §12): the imageguard.io/verify-* annotations of
 * Flux's ImagePolicy and spec.verify of imageguard.io/v1alpha1 read into policy->verify, each
 * error with its line, and the Secret's folder checked (keys present, PEM framing) with one line
 * naming the Secret and key, the policy invalid. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "imageguard/config/config.h"
#include "imageguard/util/error.h"

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s", "/tmp/imageguard-test-verify.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_at(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

#define PEM_KEY "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"
#define FLUX_HEAD                                                                                  \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app\n"  \
	"spec:\n  image: ghcr.io/acme/app\n---\n"                                /* 1-7 */         \
	"apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n" /* 8-10 */        \
	"  name: app\n  annotations:\n"                                          /* 11-12 */
#define IG_HEAD                                                                                    \
	"apiVersion: imageguard.io/v1alpha1\nkind: ImageRepository\nmetadata:\n  name: app\n"      \
	"spec:\n  image: ghcr.io/acme/app\n---\n"                            /* 1-7 */             \
	"apiVersion: imageguard.io/v1alpha1\nkind: ImagePolicy\nmetadata:\n" /* 8-10 */            \
	"  name: app\n"                                                      /* 11 */
#define SPEC "spec:\n  imageRepositoryRef: {name: app}\n  policy: {semver: {range: '>=1.0.0'}}\n"

static const struct verify_case {
	const char *name, *yaml;
	size_t line;       /* of the error, 0: valid */
	const char *error; /* a part of it */
	const char *secret;
	size_t identities;
} cases[] = {
    {"annotations key-based",
     FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
               "    imageguard.io/verify-secret: keys\n" SPEC,
     0, NULL, "keys", 0},
    {"annotations keyless",
     FLUX_HEAD
     "    imageguard.io/verify-provider: cosign\n"
     "    imageguard.io/verify-secret: root\n"
     "    imageguard.io/verify-issuer: '^https://token\\.actions\\.githubusercontent\\.com$'\n"
     "    imageguard.io/verify-subject: '^https://github\\.com/acme/.*$'\n" SPEC,
     0, NULL, "root", 1},
    {"spec.verify",
     IG_HEAD SPEC "  verify:\n    provider: cosign\n    secretRef: {name: root}\n"
                  "    matchOIDCIdentity:\n    - {issuer: '^https://a$', subject: 'x'}\n"
                  "    - {issuer: 'b', subject: 'y'}\n",
     0, NULL, "root", 2},
    {"no provider", FLUX_HEAD "    imageguard.io/verify-secret: keys\n" SPEC, 13,
     "imageguard.io/verify-* annotations need 'imageguard.io/verify-provider'", NULL, 0},
    {"no secret", FLUX_HEAD "    imageguard.io/verify-provider: cosign\n" SPEC, 13,
     "'metadata.annotations.imageguard.io/verify-secret': a Secret with the public keys", NULL, 0},
    {"notation", FLUX_HEAD "    imageguard.io/verify-provider: notation\n" SPEC, 13,
     "verification provider 'notation' is not supported (cosign)", NULL, 0},
    {"issuer without subject",
     FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
               "    imageguard.io/verify-secret: root\n"
               "    imageguard.io/verify-issuer: 'x'\n" SPEC,
     15,
     "annotation 'imageguard.io/verify-issuer' needs 'imageguard.io/verify-subject' (keyless "
     "identity)",
     NULL, 0},
    {"bad regex",
     FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
               "    imageguard.io/verify-secret: root\n"
               "    imageguard.io/verify-issuer: 'x'\n"
               "    imageguard.io/verify-subject: '(unclosed'\n" SPEC,
     16, "annotation 'imageguard.io/verify-subject': '(unclosed' is not a valid regex: ", NULL, 0},
    {"spec.verify on Flux's kind",
     FLUX_HEAD "    a: b\n" SPEC "  verify: {provider: cosign, secretRef: {name: keys}}\n", 17,
     "'spec.verify' needs apiVersion imageguard.io/v1alpha1", NULL, 0},
    {"both",
     IG_HEAD "  annotations:\n    imageguard.io/verify-provider: cosign\n" SPEC
             "  verify: {provider: cosign, secretRef: {name: keys}}\n",
     17, "'spec.verify' and imageguard.io/verify-* annotations: set one", NULL, 0},
    {"identity without subject",
     IG_HEAD SPEC "  verify:\n    provider: cosign\n    secretRef: {name: root}\n"
                  "    matchOIDCIdentity:\n    - {issuer: 'a'}\n",
     19, "'spec.verify.matchOIDCIdentity.subject' is required", NULL, 0},
    {"identity not a list",
     IG_HEAD SPEC "  verify:\n    provider: cosign\n    secretRef: {name: root}\n"
                  "    matchOIDCIdentity: {issuer: a}\n",
     18, "'spec.verify.matchOIDCIdentity' must be a list of {issuer, subject}", NULL, 0},
};

static struct config *load(const char *yaml, struct config_diags *diags)
{
	struct config_load_options o = {true, true, NULL, NULL, false, false, 0, false, NULL, NULL};
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char sdir[128], path[128];

	snprintf(sdir, sizeof(sdir), "%s/secrets", tmpdir);
	snprintf(path, sizeof(path), "%s/p.yaml", tmpdir);
	o.secrets_dir = sdir;
	write_at("p.yaml", yaml);
	ck_assert_msg(config_load_with(&c, path, &o, diags, &err) == 0, "%s", err.msg);
	return c;
}

static void make_secrets(void)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/secrets", tmpdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/secrets/keys", tmpdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/secrets/root", tmpdir);
	mkdir(path, 0755);
	write_at("secrets/keys/cosign.pub", PEM_KEY);
	write_at("secrets/root/fulcio.crt.pem",
	         "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n");
	write_at("secrets/root/rekor.pub", PEM_KEY);
}

START_TEST(settings)
{
	const struct verify_case *t = &cases[_i];
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	const struct config_policy *p;
	bool found = false;

	make_secrets();
	c = load(t->yaml, &diags);
	for (size_t i = 0; i < diags.len; i++) {
		if (t->error && strstr(diags.items[i].message, t->error) &&
		    (!t->line || diags.items[i].line == t->line))
			found = true;
		if (!found)
			fprintf(stderr, "%s: %zu: %s\n", t->name, diags.items[i].line,
			        diags.items[i].message);
	}
	if (!t->error) {
		ck_assert_uint_eq(diags.len, 0);
		ck_assert_ptr_nonnull(p = config_find_policy(c, "default", "app"));
		ck_assert_str_eq(p->verify.provider, "cosign");
		ck_assert_str_eq(p->verify.secret, t->secret);
		ck_assert_uint_eq(p->verify.identities_len, t->identities);
		for (size_t i = 0; i < t->identities; i++)
			ck_assert(p->verify.identities[i].issuer &&
			          p->verify.identities[i].subject);
	} else {
		ck_assert_msg(found, "%s: no error '%s' at line %zu", t->name, t->error, t->line);
		ck_assert_ptr_null(config_find_policy(c, "default", "app"));
		ck_assert_ptr_nonnull(config_find_invalid(c, CONFIG_KIND_POLICY, "default", "app"));
	}
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(no_verify_is_none)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = load(FLUX_HEAD "    imageguard.io/settle: 1m\n" SPEC, &diags);
	const struct config_policy *p = config_find_policy(c, "default", "app");

	ck_assert_uint_eq(diags.len, 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_null(p->verify.provider);
	ck_assert_uint_eq(p->verify.identities_len, 0);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* The Secret's folder: what it must hold, each problem naming the Secret and the key. */
static const struct folder_case {
	const char *files[3][2]; /* name, content */
	bool keyless;
	const char *problem; /* NULL: usable */
} folders[] = {
    {{{"cosign.pub", PEM_KEY}}, false, NULL},
    {{{"cosign.pub", "not a key\n"}}, false, "key 'cosign.pub': not PEM (no BEGIN/END block)"},
    {{{"rekor.pub", PEM_KEY}}, false, "no public key ('*.pub', PEM)"},
    {{{"README", "x"}}, false, "no public key ('*.pub', PEM)"},
    {{{"fulcio.crt.pem", PEM_KEY}, {"rekor.pub", PEM_KEY}}, true, NULL},
    {{{"trusted_root.json", "{}"}}, true, NULL},
    {{{"cosign.pub", PEM_KEY}},
     true,
     "keyless identities need the trust root: 'fulcio*.crt.pem' and 'rekor*.pub', or "
     "'trusted_root.json'"},
    {{{"fulcio.crt.pem", "garbage"}, {"rekor.pub", PEM_KEY}},
     true,
     "key 'fulcio.crt.pem': not PEM (no BEGIN/END block)"},
};

START_TEST(secret_folder)
{
	const struct folder_case *t = &folders[_i];
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	char path[256], want[600];

	snprintf(path, sizeof(path), "%s/secrets", tmpdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/secrets/s", tmpdir);
	mkdir(path, 0755);
	for (size_t i = 0; i < 3 && t->files[i][0]; i++) {
		snprintf(path, sizeof(path), "secrets/s/%s", t->files[i][0]);
		write_at(path, t->files[i][1]);
	}
	c = load(t->keyless ? FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
	                                "    imageguard.io/verify-secret: s\n"
	                                "    imageguard.io/verify-issuer: a\n"
	                                "    imageguard.io/verify-subject: b\n" SPEC
	                    : FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
	                                "    imageguard.io/verify-secret: s\n" SPEC,
	         &diags);
	if (!t->problem) {
		ck_assert_uint_eq(diags.len, 0);
		ck_assert_ptr_nonnull(config_find_policy(c, "default", "app"));
	} else {
		snprintf(want, sizeof(want),
		         "ImagePolicy 'default/app': "
		         "'metadata.annotations.imageguard.io/verify-secret': secret 's' "
		         "('%s/secrets/s'): "
		         "%s",
		         tmpdir, t->problem);
		ck_assert_uint_eq(diags.errors, 1);
		ck_assert_str_eq(diags.items[0].message, want);
		ck_assert_uint_eq(diags.items[0].line, 14);
		ck_assert_ptr_null(config_find_policy(c, "default", "app"));
		ck_assert_ptr_nonnull(config_find_invalid(c, CONFIG_KIND_POLICY, "default", "app"));
	}
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

START_TEST(secret_missing)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	char want[400];

	c = load(FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
	                   "    imageguard.io/verify-secret: gone\n" SPEC,
	         &diags);
	snprintf(want, sizeof(want),
	         "ImagePolicy 'default/app': 'metadata.annotations.imageguard.io/verify-secret': "
	         "secret 'gone' not found: '%s/secrets/gone' is not a folder",
	         tmpdir);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert_str_eq(diags.items[0].message, want);
	ck_assert_ptr_nonnull(config_find_invalid(c, CONFIG_KIND_POLICY, "default", "app"));
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* Policies sharing a Secret: a usable one is read once, a broken one fails each of them. */
START_TEST(shared_secret)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c;
	const char *second = "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\n"
	                     "metadata:\n  name: two\n  annotations:\n"
	                     "    imageguard.io/verify-provider: cosign\n"
	                     "    imageguard.io/verify-secret: %s\n" SPEC;
	char yaml[2048], two[600];

	make_secrets();
	snprintf(two, sizeof(two), second, "keys");
	snprintf(yaml, sizeof(yaml), "%s%s",
	         FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
	                   "    imageguard.io/verify-secret: keys\n" SPEC,
	         two);
	c = load(yaml, &diags);
	ck_assert_uint_eq(diags.len, 0);
	ck_assert_uint_eq(c->policies_len, 2);
	config_free(c);
	config_diags_release(&diags);

	snprintf(two, sizeof(two), second, "gone");
	snprintf(yaml, sizeof(yaml), "%s%s",
	         FLUX_HEAD "    imageguard.io/verify-provider: cosign\n"
	                   "    imageguard.io/verify-secret: gone\n" SPEC,
	         two);
	c = load(yaml, &diags);
	ck_assert_uint_eq(diags.errors, 2);
	ck_assert_uint_eq(c->policies_len, 0);
	ck_assert_ptr_nonnull(config_find_invalid(c, CONFIG_KIND_POLICY, "default", "app"));
	ck_assert_ptr_nonnull(config_find_invalid(c, CONFIG_KIND_POLICY, "default", "two"));
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

static Suite *verify_suite(void)
{
	Suite *s = suite_create("config_verify");
	TCase *tc = tcase_create("verify");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, settings, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, no_verify_is_none);
	tcase_add_loop_test(tc, secret_folder, 0, (int)(sizeof(folders) / sizeof(folders[0])));
	tcase_add_test(tc, secret_missing);
	tcase_add_test(tc, shared_secret);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(verify_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
