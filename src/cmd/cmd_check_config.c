/* `imageguard check-config --config PATH [--secrets-dir DIR] [--kube]`: load and validate the
 * configuration (with DIR, every secret it names too), print "configuration OK" or every error,
 * one per line (CONTRACT §3, §4). */
#include <stdio.h>
#include <string.h>

#include "imageguard/cmd/commands.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: imageguard check-config --config PATH [--secrets-dir DIR] [--kube]\n\n"
	        "Validates the configuration: a YAML file, or every *.yaml / *.yml below a\n"
	        "directory (ImageRepository, ImagePolicy, GitRepository, ImageUpdateAutomation,\n"
	        "Flux's apiVersions or imageguard.io/v1alpha1; other documents are ignored).\n"
	        "With --secrets-dir, every secret an object names must be a folder DIR/NAME\n"
	        "holding what its use needs, parsed (.dockerconfigjson, identity and\n"
	        "known_hosts for SSH, ca.crt, ...).\n"
	        "With --kube, the objects are checked as run --kube reads them from the\n"
	        "Kubernetes API: spec.serviceAccountName is accepted.\n"
	        "Prints \"configuration OK\" (exit 0; warnings on stderr) or every error as\n"
	        "file:line: message on stderr (exit 2).\n");
}

static void print_diags(const struct config_diags *d)
{
	for (size_t i = 0; i < d->len; i++) {
		const struct config_diag *g = &d->items[i];
		const char *sev = g->severity == CONFIG_WARNING ? "warning: " : "";

		if (g->line)
			fprintf(stderr, "imageguard: %s:%zu: %s%s\n", g->file, g->line, sev,
			        g->message);
		else
			fprintf(stderr, "imageguard: %s: %s%s\n", g->file, sev, g->message);
	}
}

int cmd_check_config(int argc, char **argv)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *cfg = NULL;
	struct error err = ERROR_INIT;
	struct config_load_options lo = {0};
	const char *path = NULL;
	int rc = 2;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			path = argv[i] + 9;
		} else if (!strcmp(argv[i], "--kube")) {
			lo.kube = true;
		} else if (!strcmp(argv[i], "--secrets-dir") && i + 1 < argc) {
			lo.secrets_dir = argv[++i];
		} else if (!strncmp(argv[i], "--secrets-dir=", 14)) {
			lo.secrets_dir = argv[i] + 14;
		} else {
			fprintf(stderr, "imageguard: check-config: unexpected argument '%s'\n",
			        argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (!path || !*path) {
		fprintf(stderr, "imageguard: check-config: --config PATH is required\n");
		return 2;
	}
	if (lo.secrets_dir && !*lo.secrets_dir) {
		fprintf(stderr, "imageguard: check-config: --secrets-dir must not be empty\n");
		return 2;
	}
	lo.check_secrets = lo.secrets_dir != NULL;
	if (config_load_with(&cfg, path, &lo, &diags, &err) < 0) {
		print_diags(&diags);
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = err.code == IG_EFAIL ? 1 : 2;
		goto done;
	}
	print_diags(&diags);
	if (cfg->policies_len == 0)
		fprintf(stderr, "imageguard: config '%s': warning: no ImagePolicy found\n", path);
	printf("configuration OK\n");
	rc = 0;
done:
	config_free(cfg);
	config_diags_release(&diags);
	return rc;
}
