/* `imageguard lint PATH`: mutable tags, missing digests, pull policies that keep stale images,
 * and markers naming policies the configuration lacks (CONTRACT §3), as text or JSON. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "imageguard/cmd/commands.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/inspect/lint.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/strvec.h"

struct lint_args {
	const char *path;
	const char *config;
	struct strvec mutable_tags;
	bool mutable_set;
	enum lint_severity fail_on;
	bool json;
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: imageguard lint PATH [--config P] [--mutable-tags a,b] "
	    "[--fail-on error|warning] [-o text|json]\n\n"
	    "Lints the Kubernetes manifests under PATH (*.yaml, *.yml): workloads' containers,\n"
	    "Kustomize images: and HelmRelease values.\n\n"
	    "rules:\n"
	    "  mutable-tag     error    no tag, or a mutable tag, and no digest\n"
	    "  pull-policy     error    a mutable tag whose effective imagePullPolicy (after\n"
	    "                           Kubernetes' defaulting) is IfNotPresent or Never\n"
	    "  no-digest       warning  not pinned by digest\n"
	    "  unknown-policy  error    a marker naming a policy absent from --config\n\n"
	    "options:\n"
	    "  --config P          configuration file or directory (enables unknown-policy)\n"
	    "  --mutable-tags a,b  the mutable tags (default: latest,main,master,dev,develop,\n"
	    "                      edge,nightly,stable); a missing tag is always mutable\n"
	    "  --fail-on SEV       exit 1 when a finding at or above SEV exists (default error)\n"
	    "  -o, --output FMT    text (default) or json\n\n"
	    "exit: 0 no finding at or above --fail-on, 1 some, 2 usage, unreadable PATH or\n"
	    "an invalid --config (its errors on stderr, the findings still printed)\n");
}

/* Splits "a,b" into tags (surrounding spaces dropped); an empty string is the empty list. */
static int parse_tag_list(struct strvec *out, const char *s)
{
	while (*s) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		const char *p = s;
		while (n && *p == ' ')
			p++, n--;
		while (n && p[n - 1] == ' ')
			n--;
		if (!imageref_is_valid_tag(p, n)) {
			fprintf(stderr, "imageguard: lint: --mutable-tags: '%.*s' is not a tag\n",
			        (int)(end ? (size_t)(end - s) : strlen(s)), s);
			return IG_EUSAGE;
		}
		if (strvec_pushn(out, p, n) < 0)
			return IG_EFAIL;
		s = end ? end + 1 : s + strlen(s);
	}
	return 0;
}

static int parse_args(struct lint_args *a, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"mutable-tags", required_argument, NULL, 'm'},
	    {"fail-on", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 'm':
			strvec_release(&a->mutable_tags);
			a->mutable_set = true;
			if (parse_tag_list(&a->mutable_tags, optarg) < 0)
				return IG_EUSAGE;
			break;
		case 'f':
			if (!strcmp(optarg, "error") || !strcmp(optarg, "warning")) {
				a->fail_on = !strcmp(optarg, "error") ? LINT_ERROR : LINT_WARNING;
				break;
			}
			fprintf(stderr,
			        "imageguard: lint: --fail-on '%s': expected error or warning\n",
			        optarg);
			return IG_EUSAGE;
		case 'o':
			if (!strcmp(optarg, "text") || !strcmp(optarg, "json")) {
				a->json = !strcmp(optarg, "json");
				break;
			}
			fprintf(stderr, "imageguard: lint: -o '%s': expected text or json\n",
			        optarg);
			return IG_EUSAGE;
		case 'h':
			usage(stdout);
			return 1; /* done, exit 0 */
		case ':':
			fprintf(stderr, "imageguard: lint: %s: needs a value\n", argv[optind - 1]);
			return IG_EUSAGE;
		default:
			fprintf(stderr, "imageguard: lint: %s: unknown option (see --help)\n",
			        argv[optind - 1]);
			return IG_EUSAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "imageguard: lint: %s\n",
		        optind == argc ? "PATH is required (see --help)"
		                       : "only one PATH is allowed");
		return IG_EUSAGE;
	}
	a->path = argv[optind];
	return 0;
}

static int print_json(const struct lint_report *r)
{
	json_t *arr = json_array();
	char *text = NULL;
	int error = IG_EFAIL;

	if (!arr)
		goto done;
	for (size_t i = 0; i < r->len; i++) {
		const struct lint_finding *f = &r->findings[i];
		json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s}", "file", f->file, "line",
		                      (json_int_t)f->line, "rule", lint_rule_name(f->rule),
		                      "severity", lint_severity_name(f->severity), "image",
		                      f->image, "message", f->message);
		if (!o || json_array_append_new(arr, o) < 0)
			goto done;
	}
	if (!(text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER)))
		goto done;
	printf("%s\n", text);
	error = 0;
done:
	free(text);
	json_decref(arr);
	return error;
}

static void print_text(const struct lint_report *r)
{
	for (size_t i = 0; i < r->len; i++) {
		const struct lint_finding *f = &r->findings[i];
		printf("%s:%zu: %s %s: %s (%s)\n", f->file, f->line,
		       lint_severity_name(f->severity), lint_rule_name(f->rule), f->message,
		       f->image);
	}
}

static void print_problems(const struct lint_report *r)
{
	for (size_t i = 0; i < r->problems_len; i++) {
		const struct lint_problem *p = &r->problems[i];
		if (p->line)
			fprintf(stderr, "imageguard: %s:%zu: %s\n", p->file, p->line, p->message);
		else
			fprintf(stderr, "imageguard: %s: %s\n", p->file, p->message);
	}
}

/* The markers under root (a directory, or one file named by its base name as lint names it). */
static int scan_markers(struct marker_set *out, const char *root, struct error *err)
{
	const char *slash = strrchr(root, '/');
	char *dir = NULL;
	struct stat st;
	int error;

	if (stat(root, &st) < 0 || !S_ISREG(st.st_mode))
		return markers_scan_tree(out, root, NULL, err);
	if (!slash)
		return markers_scan_file(out, ".", root, err);
	if (!(dir = strndup(root, slash == root ? 1 : (size_t)(slash - root))))
		return error_oom(err);
	error = markers_scan_file(out, dir, slash + 1, err);
	free(dir);
	return error;
}

/* Markers' problems are worth hearing (a marker on a map), except in a file lint already
 * reported as unreadable: that would say the same thing twice. */
static int add_marker_problems(struct lint_report *report, const struct marker_set *m,
                               struct error *err)
{
	size_t lint_problems = report->problems_len;
	int error;

	for (size_t i = 0; i < m->problems_len; i++) {
		const struct marker_problem *p = &m->problems[i];
		bool seen = false;
		for (size_t j = 0; j < lint_problems && !seen; j++)
			seen = !strcmp(report->problems[j].file, p->file);
		if (!seen &&
		    (error = lint_add_problem(report, p->file, p->line, err, "%s", p->message)) < 0)
			return error;
	}
	return 0;
}

/* The policies cfg defines: the valid ones, and the invalid ones (already reported as config
 * errors: a marker naming one is not unknown). */
static int known_policies(struct strvec *known, const struct config *cfg)
{
	for (size_t i = 0; i < cfg->policies_len; i++)
		if (strvec_push(known, cfg->policies[i].id) < 0)
			return -1;
	for (size_t i = 0; i < cfg->invalid_len; i++)
		if (cfg->invalid[i].kind == CONFIG_KIND_POLICY && cfg->invalid[i].id &&
		    strvec_push(known, cfg->invalid[i].id) < 0)
			return -1;
	return 0;
}

/* unknown-policy: loads the configuration (its valid objects, whatever else is wrong), scans
 * the markers under root and reports those naming a policy it does not define. A config with
 * errors sets *config_bad and is linted with what it has (none of unknown-policy when no
 * object at all is valid). Returns the exit code to stop with (2: configuration missing or
 * unreadable, 1: runtime failure) or 0 to go on. */
static int lint_unknown_policies(struct lint_report *report, const char *root, const char *path,
                                 bool *config_bad)
{
	struct config_load_options lo = {.keep_valid = true};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct marker_set markers = MARKER_SET_INIT;
	struct strvec known = STRVEC_INIT;
	struct config *cfg = NULL;
	struct error err = ERROR_INIT;
	int rc = 2, error;

	error = config_load_with(&cfg, path, &lo, &diags, &err);
	config_diags_print(&diags, false);
	*config_bad = error < 0 || diags.errors > 0;
	if (error < 0) {
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = error == IG_EFAIL ? 1 : error == IG_EINVALID ? 0 : 2;
		goto done;
	}
	if (diags.errors)
		fprintf(stderr,
		        "imageguard: config '%s': %zu error%s (linted with its valid objects)\n",
		        path, diags.errors, diags.errors == 1 ? "" : "s");
	rc = 1;
	if (known_policies(&known, cfg) < 0)
		goto oom;
	if ((error = scan_markers(&markers, root, &err)) < 0) {
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = error == IG_EFAIL ? 1 : 2;
		goto done;
	}
	if (add_marker_problems(report, &markers, &err) < 0 ||
	    lint_check_markers(report, &markers, &known, &err) < 0)
		goto oom;
	rc = 0;
	goto done;
oom:
	fprintf(stderr, "imageguard: lint: out of memory\n");
done:
	markers_release(&markers);
	strvec_release(&known);
	config_free(cfg);
	config_diags_release(&diags);
	return rc;
}

int cmd_lint(int argc, char **argv)
{
	struct lint_args a = {NULL, NULL, STRVEC_INIT, false, LINT_ERROR, false};
	struct lint_report report = LINT_REPORT_INIT;
	struct lint_options opts = {NULL};
	struct error err = ERROR_INIT;
	bool config_bad = false;
	int rc = 2, error;

	if ((error = parse_args(&a, argc, argv)) != 0) {
		rc = error > 0 ? 0 : 2;
		goto done;
	}
	opts.mutable_tags = a.mutable_set ? &a.mutable_tags : NULL;
	if ((error = lint_scan_tree(&report, &opts, a.path, &err)) < 0) {
		rc = error == IG_EFAIL ? 1 : 2;
		fprintf(stderr, "imageguard: %s\n", err.msg);
		goto done;
	}
	if (a.config && (rc = lint_unknown_policies(&report, a.path, a.config, &config_bad)) != 0)
		goto done;
	lint_report_sort(&report);
	print_problems(&report);
	if (a.json) {
		if (print_json(&report) < 0) {
			fprintf(stderr, "imageguard: lint: out of memory\n");
			rc = 1;
			goto done;
		}
	} else {
		print_text(&report);
	}
	rc = 0;
	for (size_t i = 0; i < report.len; i++)
		if (report.findings[i].severity >= a.fail_on)
			rc = 1;
	if (config_bad)
		rc = 2;
done:
	fflush(stdout);
	lint_report_release(&report);
	strvec_release(&a.mutable_tags);
	return rc;
}
