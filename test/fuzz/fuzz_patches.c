/* A kustomization.yaml beside config files (config_patches.c): any bytes give a config or
 * one-line diagnostics, at most one info line per file it names as a patch, never a crash or a
 * leak; a file named as a patch is not read. */
#include "fuzz.h"

#include "imageguard/config/config.h"
#include "imageguard/util/error.h"

static char side_paths[2][340];

static void side_cleanup(void)
{
	for (int i = 0; i < 2; i++)
		if (side_paths[i][0])
			unlink(side_paths[i]);
}

/* Two files beside the kustomization: a GitRepository (patch.yaml, the usual patch target) and
 * an ImageRepository (repo.yaml). */
static void write_side_files(const char *dir)
{
	static const char *const names[2] = {"patch.yaml", "repo.yaml"};
	static const char *const texts[2] = {
	    "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: g\n"
	    "spec:\n  url: https://example.com/f\n",
	    "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n"
	    "  name: r\nspec:\n  image: ghcr.io/acme/app\n"};

	for (int i = 0; i < 2; i++) {
		FILE *f;

		snprintf(side_paths[i], sizeof(side_paths[i]), "%s/%s", dir, names[i]);
		if (!(f = fopen(side_paths[i], "w")) || fputs(texts[i], f) < 0 || fclose(f) != 0)
			abort();
	}
	atexit(side_cleanup);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *kfile = fuzz_write("kustomization.yaml", data, size);
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	int rc;

	if (!side_paths[0][0])
		write_side_files(fuzz_dir_path);
	rc = config_load(&c, fuzz_dir_path, &diags, &err);
	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
	FUZZ_CHECK(diags.errors + diags.warnings + diags.infos == diags.len);
	FUZZ_CHECK(diags.infos <= 2); /* the kustomization never skips itself */
	for (size_t i = 0; i < diags.len; i++) {
		FUZZ_CHECK(diags.items[i].severity != CONFIG_INFO ||
		           strcmp(diags.items[i].file, kfile) != 0);
		for (const char *m = diags.items[i].message; *m; m++)
			FUZZ_CHECK((unsigned char)*m >= 0x20 || *m == '\t');
	}
	if (c)
		FUZZ_CHECK(c->git_sources_len + c->repositories_len + diags.infos == 2);
	config_free(c);
	config_diags_release(&diags);
	return 0;
}
