/* imageguard's entry point: global library initialisation and the command table (git's
 * commands[]). Everything else lives in the library.
 *
 * Built three times, so that a command loads only the shared libraries it uses (ld.so's
 * relocations are most of a short command's start). The full binary (imageguard-full) runs
 * every command. The tags binary (imageguard-tags, IMAGEGUARD_TAGS) runs `tags` alone and links
 * libcurl, libcrypto, jansson, yajl, pcre2 and libyaml, not libgit2, gpgme or libmicrohttpd.
 * The front binary (imageguard, IMAGEGUARD_FRONT) links only pcre2, libyaml and jansson: it
 * runs the commands that need nothing more (eval, check-config, markers, lint) and execs the
 * tags binary for `tags` and the full binary for the rest, so `imageguard eval` in a script
 * does not load libcurl's and libgit2's dependency chain (OpenSSL, GnuTLS, Kerberos, ...: ~8 MB
 * of RSS before main). */
#include <curl/curl.h>
#include <errno.h>
#include <git2.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
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

/* Which commands this build runs itself (the others it execs, see exec_helper). */
#if defined(IMAGEGUARD_FRONT)
#define FRONT(fn) fn
#define TAGS(fn) NULL
#define FULL(fn) NULL
#elif defined(IMAGEGUARD_TAGS)
#define FRONT(fn) NULL
#define TAGS(fn) fn
#define FULL(fn) NULL
#else
#define FRONT(fn) fn
#define TAGS(fn) fn
#define FULL(fn) fn
#endif

#define TAGS_BIN "imageguard-tags"
#define FULL_BIN "imageguard-full"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *helper; /* the binary exec'd where fn is NULL: the smallest that runs it */
	unsigned uses;
	const char *summary;
};

static const struct command commands[] = {
    {"version", FULL(cmd_version), FULL_BIN, USES_FULL, "print the version"},
    {"eval", FRONT(cmd_eval), FULL_BIN, 0, "pick the tag a policy selects from tags on stdin"},
    {"tags", TAGS(cmd_tags), TAGS_BIN, USES_CURL, "list the tags of an image repository"},
    {"check-config", FRONT(cmd_check_config), FULL_BIN, 0, "validate the configuration"},
    {"plan", FULL(cmd_plan), FULL_BIN, USES_CURL | USES_GIT,
     "show every decision of a pass, write nothing"},
    {"reconcile", FULL(cmd_reconcile), FULL_BIN, USES_CURL | USES_GIT,
     "one pass: decide and commit forward moves"},
    {"run", FULL(cmd_run), FULL_BIN, USES_CURL | USES_GIT,
     "reconcile on the configured intervals (controller)"},
    {"markers", FRONT(cmd_markers), FULL_BIN, 0, "list the image policy markers under a path"},
    {"lint", FRONT(cmd_lint), FULL_BIN, 0,
     "mutable tags, missing digests, pull policies in manifests"},
    {"verify", FULL(cmd_verify), FULL_BIN, USES_CURL | USES_GIT,
     "compare running images with what Git pins"},
};

#if defined(IMAGEGUARD_FRONT) || defined(IMAGEGUARD_TAGS)
/* Replaces this process with the binary `name`, beside this one (the build tree; the tags
 * binary beside the full one) or in ../libexec/imageguard/ (make install), with the same argv
 * (the whole command line). Returns only on failure. */
static int exec_helper(const char *name, char **argv)
{
	static const char *const places[] = {"%s/%s", "%s/../libexec/imageguard/%s"};
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
		snprintf(path, sizeof(path), places[i], self, name);
		if (access(path, X_OK) == 0) {
			execv(path, argv);
			break;
		}
	}
fail:
	fprintf(stderr,
	        "imageguard: %s: cannot run %s (installed beside imageguard or in "
	        "../libexec/imageguard/): %s\n",
	        argv[1], name, strerror(errno ? errno : ENOENT));
	return 1;
}
#endif

#ifdef IMAGEGUARD_FRONT
/* Links neither libcurl nor libgit2: the commands it runs itself use neither. */
static int run_command(const struct command *c, int argc, char **argv)
{
	if (!c->fn)
		return exec_helper(c->helper, argv);
	return c->fn(argc - 1, argv + 1);
}
#else
static int run_command(const struct command *c, int argc, char **argv)
{
	int rc;

#ifdef IMAGEGUARD_TAGS
	if (!c->fn)
		return exec_helper(c->helper, argv);
#endif
	if (c->uses & USES_CURL)
		curl_global_init(CURL_GLOBAL_DEFAULT);
#ifndef IMAGEGUARD_TAGS /* links no libgit2: `tags` does not use it */
	if (c->uses & USES_GIT)
		git_libgit2_init();
#endif
#ifdef __GLIBC__
	/* A fixed mmap threshold (glibc's default, which a large free otherwise raises): then the
	 * trim threshold stays fixed too, and the listings a pass frees leave the scan threads'
	 * arenas instead of staying resident (0.6 MiB at 5,000 policies; docs/performance.md). */
	if (c->uses & USES_GIT)
		mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
	rc = c->fn(argc - 1, argv + 1);
#ifndef IMAGEGUARD_TAGS
	if (c->uses & USES_GIT)
		git_libgit2_shutdown();
#endif
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
