/* `imageguard version`: the program and library versions it was built with. */
#include <curl/curl.h>
#include <git2.h>
#include <jansson.h>
#include <stdio.h>
#include <yaml.h>

#include "imageguard/commands.h"
#include "imageguard/version.h"

int cmd_version(int argc, char **argv)
{
	int major, minor, rev;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "imageguard: version: takes no arguments\n");
		return 2;
	}
	git_libgit2_version(&major, &minor, &rev);
	printf("imageguard %s\n", IMAGEGUARD_VERSION);
	printf("libgit2 %d.%d.%d, %s, jansson %s, libyaml %s\n", major, minor, rev,
	       curl_version(), JANSSON_VERSION, yaml_get_version_string());
	return 0;
}
