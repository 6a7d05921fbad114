/* imageguard's entry point: global library initialisation and the command table (git's
 * commands[]). Everything else lives in the library.
 *
 * Built twice. The full binary (imageguard-full) runs every command. The front binary
 * (imageguard, IMAGEGUARD_FRONT) links only pcre2, libyaml and jansson: it runs the commands
 * that need nothing more (eval, check-config, markers, lint) and execs the full binary for the
 * rest, so `imageguard eval` in a script does not load libcurl's and libgit2's dependency
 * chain (OpenSSL, GnuTLS, Kerberos, ...: ~8 MB of RSS before main). */
#include <curl/curl.h>
#include <errno.h>
#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/cmd/commands.h"

/* Which libraries' global init a command needs: libgit2's loads the TLS trust store (7-40 ms)
 * and curl's the OpenSSL tables (~5 MB RSS), costs that `eval` in a script or `tags`
 * benchmarked against curl should not pay. */
enum {
	USES_CURL = 1,
	USES_GIT = 2,
	USES_FULL = 4, /* links the network stack for another reason (version strings) */
};

#ifdef IMAGEGUARD_FRONT
#define FULL(fn) NULL /* run by the full binary */
#else
#define FULL(fn) fn
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	unsigned uses;
	const char *summary;
};

static const struct command commands[] = {
    {"version", FULL(cmd_version), USES_FULL, "print the version"},
    {"eval", cmd_eval, 0, "pick the tag a policy selects from tags on stdin"},
    {"tags", FULL(cmd_tags), USES_CURL, "list the tags of an image repository"},
    {"check-config", cmd_check_config, 0, "validate the configuration"},
    {"plan", FULL(cmd_plan), USES_CURL | USES_GIT, "show every decision of a pass, write nothing"},
    {"reconcile", FULL(cmd_reconcile), USES_CURL | USES_GIT,
     "one pass: decide and commit forward moves"},
    {"run", FULL(cmd_run), USES_CURL | USES_GIT,
     "reconcile on the configured intervals (controller)"},
    {"markers", cmd_markers, 0, "list the image policy markers under a path"},
    {"lint", cmd_lint, 0, "mutable tags, missing digests, pull policies in manifests"},
    {"verify", FULL(cmd_verify), USES_CURL | USES_GIT, "compare running images with what Git pins"},
};

#ifdef IMAGEGUARD_FRONT
/* Replaces this process with the full binary, beside this one (the build tree) or in
 * ../libexec/imageguard/ (make install), with the same argv (the whole command line).
 * Returns only on failure. */
static int exec_full(char **argv)
{
	static const char *const places[] = {"%s/imageguard-full",
	                                     "%s/../libexec/imageguard/imageguard-full"};
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		goto fail;
	self[n] = '\0';
	if (!(slash = strrchr(self, '/')))
		goto fail;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		snprintf(path, sizeof(path), places[i], self);
		if (access(path, X_OK) == 0) {
			execv(path, argv);
			break;
		}
	}
fail:
	fprintf(stderr,
	        "imageguard: %s: cannot run imageguard-full (installed beside imageguard or in "
	        "../libexec/imageguard/): %s\n",
	        argv[1], strerror(errno ? errno : ENOENT));
	return 1;
}

static int run_command(const struct command *c, int argc, char **argv)
{
	if (!c->fn)
		return exec_full(argv);
	return c->fn(argc - 1, argv + 1);
}
#else
static int run_command(const struct command *c, int argc, char **argv)
{
	int rc;

	if (c->uses & USES_CURL)
		curl_global_init(CURL_GLOBAL_DEFAULT);
	if (c->uses & USES_GIT)
		git_libgit2_init();
	rc = c->fn(argc - 1, argv + 1);
	if (c->uses & USES_GIT)
		git_libgit2_shutdown();
	if (c->uses & USES_CURL)
		curl_global_cleanup();
	return rc;
}
#endif

static void usage(FILE *out)
{
	fprintf(out, "usage: imageguard <command> [options]\n\n"
	             "Downgrade-protected image automation for GitOps.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-13s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
	        "\n`imageguard <command> --help` describes a command.\n"
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
			return run_command(&commands[i], argc, argv);
	fprintf(stderr, "imageguard: '%s': unknown command (see imageguard --help)\n", argv[1]);
	return 2;
}
