/* imageguard's entry point: global library initialisation and the command table (git's
 * commands[]). Everything else lives in the library. */
#include <curl/curl.h>
#include <git2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/commands.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* libgit2's global init loads the TLS trust store: 7-40 ms that a command which never touches
 * Git (`tags`, benchmarked against curl) should not pay. */
static const char *const without_git[] = {"tags"};

static bool needs_git(const char *name)
{
	for (size_t i = 0; i < sizeof(without_git) / sizeof(without_git[0]); i++)
		if (strcmp(name, without_git[i]) == 0)
			return false;
	return true;
}

static const struct command commands[] = {
	{"version", cmd_version, "print the version"},
	{"eval", cmd_eval, "pick the tag a policy selects from tags on stdin"},
	{"check-config", cmd_check_config, "validate the configuration"},
	{"markers", cmd_markers, "list the image policy markers under a path"},
	{"lint", cmd_lint, "mutable tags, missing digests, pull policies in manifests"},
	{"plan", cmd_plan, "show every decision of a pass, write nothing"},
	{"reconcile", cmd_reconcile, "one pass: decide and commit forward moves"},
	{"run", cmd_run, "reconcile on the configured intervals (controller)"},
	{"tags", cmd_tags, "list the tags of an image repository"},
};

/* Commands that touch neither the network nor Git skip the libraries' global init: it costs
 * ~5 MB of RSS and milliseconds (OpenSSL tables), which matters for `eval` in scripts. */
static bool needs_global_init(const char *name)
{
	return strcmp(name, "eval") != 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: imageguard <command> [options]\n\n"
		     "Downgrade-protected image automation for GitOps.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-13s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n`imageguard <command> --help` describes a command.\n");
}

int main(int argc, char **argv)
{
	int rc = 2;

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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		if (!needs_global_init(commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
		bool git = needs_git(commands[i].name);

		curl_global_init(CURL_GLOBAL_DEFAULT);
		if (git)
			git_libgit2_init();
		rc = commands[i].fn(argc - 1, argv + 1);
		if (git)
			git_libgit2_shutdown();
		curl_global_cleanup();
		return rc;
	}
	fprintf(stderr, "imageguard: '%s': unknown command (see imageguard --help)\n", argv[1]);
	return 2;
}
