/* Real fleets read as Flux reads them (issue 35, point 4): a file that a kustomization.yaml
 * names under patchesStrategicMerge or patches (path form) is a patch, skipped with one info
 * line, never a second object; every kind of Flux's five API groups is read past silently. */
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
	snprintf(tmpdir, sizeof(tmpdir), "%s", "/tmp/imageguard-test-patches.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Writes text to tmpdir/name, creating its folders. */
static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	for (char *s = path + strlen(tmpdir) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

#define GIT_SOURCE                                                                                 \
	"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"                \
	"  name: flux-system\n  namespace: flux-system\nspec:\n  url: https://example.com/f\n"

#define SECRET_PATCH                                                                               \
	"apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"                \
	"  name: flux-system\n  namespace: flux-system\nspec:\n  secretRef:\n    name: git\n"

static size_t count(const struct config_diags *d, enum config_severity sev)
{
	size_t n = 0;

	for (size_t i = 0; i < d->len; i++)
		n += d->items[i].severity == sev;
	return n;
}

static const struct config_diag *find_info(const struct config_diags *d, const char *file_end)
{
	for (size_t i = 0; i < d->len; i++) {
		const char *f = d->items[i].file;
		size_t n = strlen(f), m = strlen(file_end);

		if (d->items[i].severity == CONFIG_INFO && n >= m && !strcmp(f + n - m, file_end))
			return &d->items[i];
	}
	return NULL;
}

static void dump(const struct config_diags *d)
{
	for (size_t i = 0; i < d->len; i++)
		fprintf(stderr, "  %d %s:%zu: %s\n", (int)d->items[i].severity, d->items[i].file,
		        d->items[i].line, d->items[i].message);
}

/* The fleet shape of fluxcd/flux2-multi-tenancy: the secretRef patched into flux-system's
 * GitRepository, in both spellings, one of them through "../". */
START_TEST(patches_are_skipped)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	const struct config_diag *i1, *i2;
	char dir[128];

	write_file("fleet/flux-system/gotk-sync.yaml", GIT_SOURCE);
	write_file("fleet/flux-system/kustomization.yaml",
	           "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	           "resources:\n  - gotk-sync.yaml\n"
	           "patchesStrategicMerge:\n  - ./secret-patch.yaml\n"    /* 6 */
	           "  - |\n    apiVersion: v1\n    kind: inline\n"        /* an inline patch */
	           "patches:\n  - path: ../flux-system/json-patch.yaml\n" /* 11 */
	           "    target:\n      kind: GitRepository\n"
	           "  - patch: |\n      - op: remove\n");
	write_file("fleet/flux-system/secret-patch.yaml", SECRET_PATCH);
	write_file("fleet/flux-system/json-patch.yaml", SECRET_PATCH);
	write_file("fleet/apps/policy.yaml",
	           "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"
	           "  name: app\n  namespace: flux-system\nspec:\n  image: ghcr.io/acme/app\n");
	snprintf(dir, sizeof(dir), "%s/fleet", tmpdir);
	ck_assert_msg(config_load(&c, dir, &diags, &err) == 0, "%s", err.msg);
	if (diags.errors || count(&diags, CONFIG_INFO) != 2)
		dump(&diags);
	ck_assert_uint_eq(diags.errors, 0);
	ck_assert_uint_eq(count(&diags, CONFIG_INFO), 2);
	ck_assert_uint_eq(diags.infos, 2);
	ck_assert_uint_eq(c->git_sources_len, 1);
	ck_assert_ptr_null(c->git_sources[0].secret_ref); /* the patch was not read */
	ck_assert_ptr_nonnull(i1 = find_info(&diags, "/flux-system/secret-patch.yaml"));
	ck_assert_ptr_nonnull(i2 = find_info(&diags, "/flux-system/json-patch.yaml"));
	ck_assert_ptr_nonnull(
	    strstr(i1->message, "kustomization.yaml:6 ('patchesStrategicMerge')"));
	ck_assert_ptr_nonnull(strstr(i2->message, "kustomization.yaml:11 ('patches')"));
	ck_assert_ptr_nonnull(strstr(i1->message, "not an object (skipped)"));
	for (size_t i = 0; i < c->files.len; i++)
		ck_assert_ptr_null(strstr(c->files.items[i], "patch.yaml"));
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* Without the kustomization naming it, the same file is an object: a second GitRepository. */
START_TEST(unnamed_patch_is_an_object)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char dir[128];

	write_file("fleet/gotk-sync.yaml", GIT_SOURCE);
	write_file("fleet/kustomization.yaml",
	           "kind: Kustomization\npatchesStrategicMerge:\n  - ../elsewhere.yaml\n"
	           "  - /abs.yaml\n  - ../../../x.yaml\npatches: oops\n");
	write_file("fleet/secret-patch.yaml", SECRET_PATCH);
	snprintf(dir, sizeof(dir), "%s/fleet/", tmpdir);
	ck_assert_int_eq(config_load(&c, dir, &diags, &err), IG_EINVALID);
	ck_assert_uint_eq(diags.infos, 0);
	ck_assert_uint_eq(diags.errors, 2); /* a GitRepository without url, and its duplicate */
	ck_assert_ptr_nonnull(strstr(diags.items[diags.len - 1].message, "is already defined at"));
	config_diags_release(&diags);
}
END_TEST

/* A file given alone is read whatever a kustomization beside it says (no walk, no kustomize);
 * a kustomization that does not parse skips nothing and is reported by the object reader. */
START_TEST(single_file_and_broken_kustomization)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char path[160];

	write_file("f/kustomization.yaml", "patchesStrategicMerge:\n  - patch.yaml\n");
	write_file("f/patch.yaml", GIT_SOURCE);
	snprintf(path, sizeof(path), "%s/f/patch.yaml", tmpdir);
	ck_assert_msg(config_load(&c, path, &diags, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(c->git_sources_len, 1);
	ck_assert_uint_eq(diags.infos, 0);
	config_free(c);
	config_diags_release(&diags);

	write_file("g/kustomization.yaml", "patchesStrategicMerge: [patch.yaml\n");
	write_file("g/patch.yaml", GIT_SOURCE);
	snprintf(path, sizeof(path), "%s/g", tmpdir);
	ck_assert_int_eq(config_load(&c, path, &diags, &err), IG_EINVALID);
	ck_assert_uint_eq(diags.infos, 0);
	ck_assert_uint_eq(diags.errors, 1);
	ck_assert_ptr_nonnull(strstr(diags.items[0].file, "kustomization.yaml"));
	ck_assert_ptr_nonnull(strstr(diags.items[0].message, "invalid YAML"));
	config_diags_release(&diags);
}
END_TEST

/* Every kind of image, source, kustomize, helm and notification.toolkit.fluxcd.io (their CRDs
 * in the controllers' config/crd/bases) is known: no warning, no "did you mean". */
static const char *const flux_kinds[][2] = {
    {"source.toolkit.fluxcd.io/v1", "OCIRepository"},
    {"source.toolkit.fluxcd.io/v1beta2", "OCIRepository"},
    {"source.toolkit.fluxcd.io/v1", "HelmRepository"},
    {"source.toolkit.fluxcd.io/v1", "HelmChart"},
    {"source.toolkit.fluxcd.io/v1", "Bucket"},
    {"source.toolkit.fluxcd.io/v1", "ExternalArtifact"},
    {"kustomize.toolkit.fluxcd.io/v1", "Kustomization"},
    {"helm.toolkit.fluxcd.io/v2", "HelmRelease"},
    {"helm.toolkit.fluxcd.io/v2beta1", "HelmRelease"},
    {"notification.toolkit.fluxcd.io/v1beta3", "Alert"},
    {"notification.toolkit.fluxcd.io/v1beta3", "Provider"},
    {"notification.toolkit.fluxcd.io/v1", "Receiver"},
};

START_TEST(flux_kinds_are_silent)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char yaml[512], path[128];

	snprintf(yaml, sizeof(yaml),
	         "apiVersion: %s\nkind: %s\nmetadata:\n  name: x\nspec:\n  url: oci://x/y\n---\n"
	         "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"
	         "  name: app\nspec:\n  image: ghcr.io/acme/app\n",
	         flux_kinds[_i][0], flux_kinds[_i][1]);
	write_file("k.yaml", yaml);
	snprintf(path, sizeof(path), "%s/k.yaml", tmpdir);
	ck_assert_msg(config_load(&c, path, &diags, &err) == 0, "%s", err.msg);
	for (size_t i = 0; i < diags.len; i++)
		ck_assert_msg(!strstr(diags.items[i].message, flux_kinds[_i][1]), "%s: %s",
		              flux_kinds[_i][1], diags.items[i].message);
	ck_assert_uint_eq(diags.errors, 0);
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

/* A near miss in our groups is still a mistake worth a hint. */
START_TEST(near_misses_still_warn)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	char path[128];

	write_file("n.yaml", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepositry\n---\n"
	                     "apiVersion: image.toolkit.fluxcd.io/v1\nkind: OCIRepository\n---\n"
	                     "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\n"
	                     "metadata:\n  name: app\nspec:\n  image: ghcr.io/acme/app\n");
	snprintf(path, sizeof(path), "%s/n.yaml", tmpdir);
	ck_assert_msg(config_load(&c, path, &diags, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(count(&diags, CONFIG_WARNING), 2);
	ck_assert_ptr_nonnull(strstr(diags.items[0].message, "did you mean 'GitRepository'?"));
	ck_assert_ptr_nonnull(strstr(diags.items[1].message, "'OCIRepository' is not a kind of"));
	config_free(c);
	config_diags_release(&diags);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config_patches");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, patches_are_skipped);
	tcase_add_test(tc, unnamed_patch_is_an_object);
	tcase_add_test(tc, single_file_and_broken_kustomization);
	tcase_add_loop_test(tc, flux_kinds_are_silent, 0,
	                    (int)(sizeof(flux_kinds) / sizeof(flux_kinds[0])));
	tcase_add_test(tc, near_misses_still_warn);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
