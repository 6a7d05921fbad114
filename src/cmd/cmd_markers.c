/* `imageguard markers PATH [-o text|json]`: lists the Flux setter markers under PATH, a
 * migration aid; problems (bad markers, unparseable files) go to stderr as warnings. */
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "imageguard/cmd/commands.h"
#include "imageguard/util/error.h"
#include "imageguard/markers/markers.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: imageguard markers PATH [-o text|json]\n\n"
	        "Lists the Flux image policy markers (# {\"$imagepolicy\": "
	        "\"NS:NAME[:tag|:name|:digest]\"})\n"
	        "found in *.yaml and *.yml files under PATH (a directory or one file).\n"
	        "text: one line per marker, `FILE:LINE POLICY PART VALUE`; json: an array of\n"
	        "{\"file\", \"line\", \"policy\", \"part\", \"value\"}, file relative to PATH.\n"
	        "Problems are printed to stderr as warnings; the exit code is still 0.\n");
}

static int print_json(const struct marker_set *s)
{
	json_t *arr = json_array();
	char *text = NULL;
	int rc = 1;

	for (size_t i = 0; arr && i < s->len; i++) {
		const struct marker *m = &s->items[i];
		if (json_array_append_new(
		        arr, json_pack("{s:s, s:I, s:s, s:s, s:s}", "file", m->file, "line",
		                       (json_int_t)m->line, "policy", m->policy, "part",
		                       markers_part_name(m->part), "value", m->value)) < 0)
			goto done;
	}
	text = arr ? json_dumps(arr, JSON_INDENT(2)) : NULL;
	if (text) {
		printf("%s\n", text);
		rc = 0;
	}
done:
	free(text);
	json_decref(arr);
	if (rc)
		fprintf(stderr, "imageguard: markers: out of memory\n");
	return rc;
}

static void print_text(const struct marker_set *s)
{
	for (size_t i = 0; i < s->len; i++) {
		const struct marker *m = &s->items[i];
		printf("%s:%zu %s %s %s\n", m->file, m->line, m->policy, markers_part_name(m->part),
		       m->value);
	}
}

/* PATH may name one file: it is scanned under its own name. */
static int scan_path(struct marker_set *s, const char *path, struct error *err)
{
	struct stat st;
	const char *slash;
	char *dir = NULL;
	int rc;

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		FILE *f = fopen(path, "rb");
		if (!f)
			return error_set(err, IG_ENOTFOUND, "'%s': cannot read", path);
		fclose(f);
		slash = strrchr(path, '/');
		dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
		if (!dir)
			return error_oom(err);
		rc = markers_scan_file(s, dir, slash ? slash + 1 : path, err);
		free(dir);
		return rc;
	}
	return markers_scan_tree(s, path, NULL, err);
}

int cmd_markers(int argc, char **argv)
{
	struct marker_set set = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	const char *path = NULL, *format = "text";
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
		           i + 1 < argc) {
			format = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "imageguard: markers: unknown option '%s'\n", argv[i]);
			return 2;
		} else if (path) {
			fprintf(stderr, "imageguard: markers: only one PATH may be given\n");
			return 2;
		} else {
			path = argv[i];
		}
	}
	if (!path || (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)) {
		fprintf(stderr, path ? "imageguard: markers: -o must be text or json\n"
		                     : "imageguard: markers: PATH is required (see --help)\n");
		return 2;
	}
	if (scan_path(&set, path, &err) < 0) {
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = err.code == IG_EFAIL ? 1 : 2;
		goto done;
	}
	for (size_t i = 0; i < set.problems_len; i++) {
		const struct marker_problem *p = &set.problems[i];
		if (p->line)
			fprintf(stderr, "imageguard: %s:%zu: %s\n", p->file, p->line, p->message);
		else
			fprintf(stderr, "imageguard: %s: %s\n", p->file, p->message);
	}
	if (strcmp(format, "json") == 0)
		rc = print_json(&set);
	else
		print_text(&set);
done:
	markers_release(&set);
	return rc;
}
