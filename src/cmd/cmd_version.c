/* `imageguard version`: the program and library versions it was built with. */
#include <curl/curl.h>
#include <git2.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "imageguard/cmd/commands.h"
#include "imageguard/util/version.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: imageguard version\n\n"
	             "Prints imageguard's version and the versions of the libraries it runs with\n"
	             "(libgit2, libcurl and its TLS backend, jansson, libyaml).\n"
	             "Exit status: 0; 2 for any argument other than --help.\n");
}

int cmd_version(int argc, char **argv)
{
	int major, minor, rev;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "imageguard: version: takes no arguments\n");
		usage(stderr);
		return 2;
	}
	git_libgit2_version(&major, &minor, &rev);
	printf("imageguard %s\n", IMAGEGUARD_VERSION);
	printf("libgit2 %d.%d.%d, %s, jansson %s, libyaml %s\n", major, minor, rev, curl_version(),
	       JANSSON_VERSION, yaml_get_version_string());
	return 0;
}
