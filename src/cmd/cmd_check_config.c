/* `imageguard check-config --config PATH [--secrets-dir DIR] [--watch-label-selector SEL]
 * [--shards N] [--kube]`: load and validate the
 * configuration (with DIR, every secret it names too), print "configuration OK" or every error,
 * one per line (CONTRACT §3, §4). With --shards N, which shard owns each automation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/pass/shard.h"
#include "imageguard/cmd/cmdopts.h"
#include "imageguard/cmd/commands.h"
#include "imageguard/config/config.h"
#include "imageguard/config/labelsel.h"
#include "imageguard/util/error.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: imageguard check-config --config PATH [--secrets-dir DIR]\n"
	    "                               [--watch-label-selector SEL] [--shards N] [--kube]\n"
	    "                               [--no-cross-namespace-refs]\n\n"
	    "Validates the configuration: a YAML file, or every *.yaml / *.yml below a\n"
	    "directory (ImageRepository, ImagePolicy, GitRepository, ImageUpdateAutomation,\n"
	    "Flux's apiVersions or imageguard.io/v1alpha1; other documents are ignored).\n"
	    "With --secrets-dir, every secret an object names must be a folder DIR/NAME\n"
	    "holding what its use needs, parsed (.dockerconfigjson, identity and\n"
	    "known_hosts for SSH, ca.crt, ...).\n"
	    "With --kube, the objects are checked as run --kube reads them from the\n"
	    "Kubernetes API: spec.serviceAccountName is accepted.\n"
	    "Prints \"configuration OK\" (exit 0; warnings on stderr) or every error as\n"
	    "file:line: message on stderr (exit 2).\n"
	    "With --watch-label-selector, only the objects whose metadata.labels match SEL\n"
	    "are read (Kubernetes selector syntax, as run, reconcile and plan take it).\n"
	    "With --shards N (1-1024), one line per automation before \"configuration OK\":\n"
	    "ImageUpdateAutomation 'ns/name': shard I/N (URL BRANCH), the shard that owns\n"
	    "its normalised (Git URL, push branch) pair (FNV-1a 64 + fmix64 mod N); above one\n"
	    "shard, an automation whose push.refspec writes a second branch is an error.\n"
	    "With --no-cross-namespace-refs (Flux's lockdown flag), an ImagePolicy's\n"
	    "imageRepositoryRef and an ImageUpdateAutomation's sourceRef to another namespace\n"
	    "are errors. Without it, an ImageRepository of another namespace is used only when\n"
	    "its spec.accessFrom.namespaceSelectors admit the policy's namespace (its labels\n"
	    "from a `kind: Namespace` document; a namespace without one has only the label\n"
	    "kubernetes.io/metadata.name=<name>).\n");
}

/* --shards N: the owner of each automation, and the unit it was hashed from. */
static int print_shards(const struct config *cfg, unsigned shards)
{
	for (size_t i = 0; i < cfg->automations_len; i++) {
		const struct config_automation *a = &cfg->automations[i];
		struct error err = ERROR_INIT;
		char *url = NULL;
		unsigned owner;

		if (shard_normalize_url(&url, a->source->url, &err) < 0 ||
		    shard_of(&owner, a, shards, &err) < 0) {
			fprintf(stderr, "imageguard: ImageUpdateAutomation '%s': %s\n", a->id,
			        err.msg);
			free(url);
			return err.code == IG_EFAIL ? 1 : 2;
		}
		printf("ImageUpdateAutomation '%s': shard %u/%u (%s %s)\n", a->id, owner, shards,
		       url, shard_push_branch(a));
		free(url);
	}
	return 0;
}

/* The values of --watch-label-selector and --shards (check-config's own parser). */
static int shard_flags(struct labelsel **sel, unsigned *shards, const char *sel_text,
                       const char *shards_text)
{
	struct error err = ERROR_INIT;
	char *end;
	unsigned long n;

	if (sel_text && labelsel_parse(sel, sel_text, &err) < 0) {
		fprintf(stderr, "imageguard: check-config: option '--watch-label-selector': %s\n",
		        err.msg);
		return err.code == IG_EFAIL ? 1 : 2;
	}
	if (!shards_text)
		return 0;
	n = strtoul(shards_text, &end, 10);
	if (*shards_text < '0' || *shards_text > '9' || *end || n < 1 || n > CMDOPTS_MAX_SHARDS) {
		fprintf(stderr,
		        "imageguard: check-config: option '--shards': expected a number from 1 to "
		        "%u, got '%s'\n",
		        CMDOPTS_MAX_SHARDS, shards_text);
		return 2;
	}
	*shards = (unsigned)n;
	return 0;
}

int cmd_check_config(int argc, char **argv)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct config *cfg = NULL;
	struct error err = ERROR_INIT;
	struct config_load_options lo = {0};
	struct labelsel *sel = NULL;
	const char *path = NULL, *sel_text = NULL, *shards_text = NULL;
	unsigned shards = 0;
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
		} else if (!strcmp(argv[i], "--no-cross-namespace-refs") ||
		           !strcmp(argv[i], "--no-cross-namespace-refs=true")) {
			lo.no_cross_namespace_refs = true;
		} else if (!strcmp(argv[i], "--no-cross-namespace-refs=false")) {
			lo.no_cross_namespace_refs = false;
		} else if (!strcmp(argv[i], "--secrets-dir") && i + 1 < argc) {
			lo.secrets_dir = argv[++i];
		} else if (!strncmp(argv[i], "--secrets-dir=", 14)) {
			lo.secrets_dir = argv[i] + 14;
		} else if (!strcmp(argv[i], "--watch-label-selector") && i + 1 < argc) {
			sel_text = argv[++i];
		} else if (!strncmp(argv[i], "--watch-label-selector=", 23)) {
			sel_text = argv[i] + 23;
		} else if (!strcmp(argv[i], "--shards") && i + 1 < argc) {
			shards_text = argv[++i];
		} else if (!strncmp(argv[i], "--shards=", 9)) {
			shards_text = argv[i] + 9;
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
	if ((rc = shard_flags(&sel, &shards, sel_text, shards_text)) != 0)
		goto done;
	rc = 2;
	lo.selector = sel;
	lo.shards = shards;
	if (config_load_with(&cfg, path, &lo, &diags, &err) < 0) {
		config_diags_print(&diags, false);
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = err.code == IG_EFAIL ? 1 : 2;
		goto done;
	}
	config_diags_print(&diags, false);
	if (cfg->policies_len == 0)
		fprintf(stderr, "imageguard: config '%s': warning: no ImagePolicy found\n", path);
	if (shards && (rc = print_shards(cfg, shards)) != 0)
		goto done;
	printf("configuration OK\n");
	rc = 0;
done:
	labelsel_free(sel);
	config_free(cfg);
	config_diags_release(&diags);
	return rc;
}
