/* imageguard's entry point: global library initialisation and the command table (git's
 * commands[]). Everything else lives in the library. */
#include <curl/curl.h>
#include <git2.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/commands.h"

/* Which libraries' global init a command needs: libgit2's loads the TLS trust store (7-40 ms)
 * and curl's the OpenSSL tables (~5 MB RSS), costs that `eval` in a script or `tags`
 * benchmarked against curl should not pay. */
enum { USES_CURL = 1, USES_GIT = 2 };

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	unsigned uses;
	const char *summary;
};

static const struct command commands[] = {
	{"version", cmd_version, 0, "print the version"},
	{"eval", cmd_eval, 0, "pick the tag a policy selects from tags on stdin"},
	{"tags", cmd_tags, USES_CURL, "list the tags of an image repository"},
	{"check-config", cmd_check_config, 0, "validate the configuration"},
	{"plan", cmd_plan, USES_CURL | USES_GIT, "show every decision of a pass, write nothing"},
	{"reconcile", cmd_reconcile, USES_CURL | USES_GIT, "one pass: decide and commit forward moves"},
	{"run", cmd_run, USES_CURL | USES_GIT, "reconcile on the configured intervals (controller)"},
	{"markers", cmd_markers, 0, "list the image policy markers under a path"},
	{"lint", cmd_lint, 0, "mutable tags, missing digests, pull policies in manifests"},
	{"verify", cmd_verify, USES_CURL | USES_GIT, "compare running images with what Git pins"},
};

static int run_command(const struct command *c, int argc, char **argv)
{
	int rc;

	if (c->uses & USES_CURL)
		curl_global_init(CURL_GLOBAL_DEFAULT);
	if (c->uses & USES_GIT)
		git_libgit2_init();
	rc = c->fn(argc, argv);
	if (c->uses & USES_GIT)
		git_libgit2_shutdown();
	if (c->uses & USES_CURL)
		curl_global_cleanup();
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: imageguard <command> [options]\n\n"
		     "Downgrade-protected image automation for GitOps.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-13s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n`imageguard <command> --help` describes a command.\n"
		     "Exit status: 0 success (holds are successes), 1 a runtime failure, 2 usage or\n"
		     "invalid input. Errors go to stderr as `imageguard: <subject>: <problem>`.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		argv[1] = "version";
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return run_command(&commands[i], argc - 1, argv + 1);
	fprintf(stderr, "imageguard: '%s': unknown command (see imageguard --help)\n", argv[1]);
	return 2;
}
