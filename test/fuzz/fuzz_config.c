/* Configuration YAML (Flux and imageguard kinds) loaded from a file: any bytes give a config
 * or one-line diagnostics with file:line, never a crash or a leak. */
#include "fuzz.h"

#include "imageguard/config/config.h"
#include "imageguard/util/error.h"

static void check_config(const struct config *c)
{
	for (size_t i = 0; i < c->policies_len; i++) {
		const struct config_policy *p = &c->policies[i];

		FUZZ_CHECK(p->repository && p->policy);
		FUZZ_CHECK(config_find_policy_id(c, p->id) != NULL);
		FUZZ_CHECK(config_find_policy(c, p->ns, p->name) != NULL);
		(void)config_override_active(&p->override, 0);
	}
	for (size_t i = 0; i < c->repositories_len; i++) {
		const struct config_repository *r = &c->repositories[i];
		struct error err = ERROR_INIT;
		char *path = NULL;

		FUZZ_CHECK(config_find_repository(c, r->ns, r->name) != NULL);
		FUZZ_CHECK(r->ref.registry && r->ref.repository);
		if (r->secret_ref) {
			FUZZ_CHECK(config_secret_path(&path, "/secrets", r->secret_ref, &err) == 0);
			FUZZ_CHECK(strncmp(path, "/secrets/", 9) == 0 && !strstr(path, ".."));
			free(path);
		}
	}
	for (size_t i = 0; i < c->automations_len; i++) {
		const struct config_automation *a = &c->automations[i];

		FUZZ_CHECK(a->source && a->checkout_branch && a->push_branch && a->update_path);
		FUZZ_CHECK(config_find_automation(c, a->ns, a->name) != NULL);
	}
	for (size_t i = 0; i < c->git_sources_len; i++)
		FUZZ_CHECK(config_find_git_source(c, c->git_sources[i].ns, c->git_sources[i].name));
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
	const char *path = fuzz_write("config.yaml", data, size);
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *c = NULL;
	struct error err = ERROR_INIT;
	int rc = config_load(&c, path, &diags, &err);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
	FUZZ_CHECK((rc == 0) == (c != NULL));
	FUZZ_CHECK(rc != IG_EINVALID || diags.errors > 0);
	FUZZ_CHECK(rc != 0 || diags.errors == 0);
	FUZZ_CHECK(diags.errors + diags.warnings + diags.infos == diags.len);
	for (size_t i = 0; i < diags.len; i++) {
		const char *m = diags.items[i].message;

		FUZZ_CHECK(diags.items[i].file && m && m[0]);
		/* Diagnostics are printed as one line each. */
		for (; *m; m++)
			FUZZ_CHECK((unsigned char)*m >= 0x20 || *m == '\t');
	}
	if (c)
		check_config(c);
	config_free(c);
	config_diags_release(&diags);
	return 0;
}
