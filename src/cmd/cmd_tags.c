/* `imageguard tags IMAGE`: the tag list a registry serves, as imageguard sees it (the debugging
 * view Flux users asked for), optionally filtered and ordered by a policy. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/cmd/cmdopts.h"
#include "imageguard/cmd/commands.h"
#include "imageguard/registry/creds.h"
#include "imageguard/util/duration.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/util/log.h"
#include "imageguard/policy/policy.h"
#include "imageguard/policy/policyflags.h"
#include "imageguard/registry/cloudauth.h"
#include "imageguard/registry/registry.h"

static const char usage_text[] =
    "usage: imageguard tags IMAGE [--insecure] [--ca-file F] [--docker-config F] [--provider P]\n"
    "                            [POLICY FLAGS] [--timeout DURATION] [--log-level L] [-o "
    "text|json]\n"
    "\n"
    "Lists every tag of IMAGE (a repository, no tag) the way imageguard reads it: all pages,\n"
    "deduplicated, byte-wise sorted. A listing that fails or is cut short is an error.\n"
    "\n"
    "  --insecure          talk plain HTTP to the registry\n"
    "  --ca-file F         trust the CA certificates in F (PEM) instead of the system's\n"
    "  --docker-config F   credentials from a Docker config JSON (.dockerconfigjson)\n"
    "  --provider P        credentials from the cloud identity, as spec.provider gives them:\n"
    "                      aws (ECR), gcp (Artifact Registry, GCR), azure (ACR), generic\n"
    "  --timeout DURATION  per request, a Go duration (30s, 2m, 500ms; default 30s)\n"
    "  --page-size N       the page size asked for (`n`, default 1000; 0: none)\n"
    "  --max-pages N       pages followed at most (default 10000)\n"
    "  --memory-budget SIZE  memory the listing may take (bytes, or with Ki, Mi, Gi;\n"
    "                      default 96Mi, which fits the shipped 128Mi pod limit); the\n"
    "                      listing cap is half of it (default 48 MiB of JSON)\n"
    "  --max-bytes N       listing bytes at most, all pages (overrides --memory-budget)\n"
    "  --log-level L       error|warn|info|debug (default warn)\n"
    "  -o text|json        text: one tag per line; json: {image, tags, count, pages, sha256}\n"
    "\n"
    "POLICY FLAGS (show the candidates in policy order, best first):\n"
    "  --pattern RE  --extract TEMPLATE  --exclude RE (repeatable)\n"
    "  and one of --semver RANGE, --numerical asc|desc, --alphabetical asc|desc\n"
    "With them, JSON `tags` and `count` are the candidates; `sha256` always identifies the\n"
    "whole sorted listing (as the audit log's tags_sha256 does).\n"
    "\n"
    "Exit: 0 listed, 1 the registry failed (the error names it and the HTTP status),\n"
    "2 usage or invalid input (image, policy, Docker config).\n";

struct tags_opts {
	const char *image;
	const char *ca_file;
	const char *docker_config;
	const char *provider;
	bool insecure;
	bool json;
	long timeout_ms;
	size_t budget;      /* --memory-budget; 0: not given */
	bool max_bytes_set; /* --max-bytes given: it wins over the budget */
	struct registry_options ro;
	struct policyflags pf;
};

/* A non-negative count for a cap option. */
static int parse_size(size_t *out, const char *flag, const char *s, bool allow_zero,
                      struct error *err)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9' || (v = strtoull(s, &end, 10), *end != '\0') ||
	    (!v && !allow_zero) || v > (unsigned long long)SIZE_MAX)
		return error_set(err, IG_EUSAGE, "option '%s': expected a %s number, got '%s'",
		                 flag, allow_zero ? "non-negative" : "positive", s);
	*out = (size_t)v;
	return 0;
}

static int value_of(const char **out, int argc, char **argv, int *i, struct error *err)
{
	if (*i + 1 >= argc)
		return error_set(err, IG_EUSAGE, "option '%s': missing value", argv[*i]);
	*out = argv[++*i];
	return 0;
}

static int parse_args(struct tags_opts *o, int argc, char **argv, struct error *err)
{
	const char *v = NULL;
	int64_t ns;
	int i = 1, rc;
	enum log_level level = LOG_WARN;

	while (i < argc) {
		const char *a = argv[i];

		if ((rc = policyflags_take(&o->pf, argc, argv, &i, err)) != 0) {
			if (rc < 0)
				return rc;
			continue;
		}
		if (strcmp(a, "--insecure") == 0) {
			o->insecure = true;
		} else if (strcmp(a, "--ca-file") == 0) {
			if (value_of(&o->ca_file, argc, argv, &i, err) < 0)
				return IG_EUSAGE;
		} else if (strcmp(a, "--provider") == 0) {
			if (value_of(&o->provider, argc, argv, &i, err) < 0)
				return IG_EUSAGE;
			if (!cloudauth_is_provider(o->provider))
				return error_set(err, IG_EUSAGE, "tags: unknown provider '%s'",
				                 o->provider);
		} else if (strcmp(a, "--docker-config") == 0) {
			if (value_of(&o->docker_config, argc, argv, &i, err) < 0)
				return IG_EUSAGE;
		} else if (strcmp(a, "--timeout") == 0) {
			if (value_of(&v, argc, argv, &i, err) < 0)
				return IG_EUSAGE;
			if (duration_parse(&ns, v, err) < 0 || ns < 1000000 ||
			    ns > (int64_t)86400 * 1000000000)
				return error_set(
				    err, IG_EUSAGE,
				    "option '--timeout': bad duration '%s' (1ms to 24h)", v);
			o->timeout_ms = (long)(ns / 1000000);
		} else if (strcmp(a, "--page-size") == 0 || strcmp(a, "--max-pages") == 0 ||
		           strcmp(a, "--max-bytes") == 0) {
			bool page_size = strcmp(a, "--page-size") == 0;
			size_t *slot = page_size                       ? &o->ro.page_size
			               : strcmp(a, "--max-pages") == 0 ? &o->ro.max_pages
			                                               : &o->ro.max_bytes;

			if (value_of(&v, argc, argv, &i, err) < 0)
				return IG_EUSAGE;
			if (parse_size(slot, a, v, page_size, err) < 0)
				return IG_EUSAGE;
			o->max_bytes_set |= slot == &o->ro.max_bytes;
		} else if (strcmp(a, "--memory-budget") == 0) {
			if (value_of(&v, argc, argv, &i, err) < 0 ||
			    cmdopts_parse_bytes(&o->budget, a, v, err) < 0)
				return IG_EUSAGE;
		} else if (strcmp(a, "--log-level") == 0) {
			if (value_of(&v, argc, argv, &i, err) < 0)
				return IG_EUSAGE;
			if (log_parse_level(&level, v) < 0)
				return error_set(err, IG_EUSAGE,
				                 "option '--log-level': bad level '%s'", v);
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (value_of(&v, argc, argv, &i, err) < 0)
				return IG_EUSAGE;
			if (strcmp(v, "json") != 0 && strcmp(v, "text") != 0)
				return error_set(err, IG_EUSAGE,
				                 "option '-o': expected text or json, got '%s'", v);
			o->json = strcmp(v, "json") == 0;
		} else if (a[0] == '-' && a[1] != '\0') {
			return error_set(err, IG_EUSAGE,
			                 "option '%s': unknown (see imageguard tags --help)", a);
		} else if (o->image) {
			return error_set(err, IG_EUSAGE, "tags: one IMAGE only ('%s' is extra)", a);
		} else {
			o->image = a;
		}
		i++;
	}
	log_configure(level, LOG_TEXT);
	o->ro.skip_digest = !o->json; /* only the JSON prints the listing's sha256 */
	if (o->budget && !o->max_bytes_set)
		o->ro.max_bytes = registry_max_bytes(o->budget);
	if (!o->image)
		return error_set(err, IG_EUSAGE,
		                 "tags: IMAGE is required (see imageguard tags --help)");
	return policyflags_finish(&o->pf, err);
}

/* The JSON of `tags -o json`, written as it goes (jansson's layout with JSON_INDENT(2)): a
 * tree of a large listing would cost several times the listing. Tags need no escaping (the
 * reader kept valid tags only); the image name goes through jansson. */
static int print_json(const struct imageref *ref, const struct strvec *tags,
                      const struct registry_listing *l)
{
	char *name = imageref_name(ref), *quoted = NULL;
	json_t *js = name ? json_string(name) : NULL;
	int rc = 1;

	if (!js || !(quoted = json_dumps(js, JSON_ENCODE_ANY)))
		goto done;
	if (printf("{\n  \"image\": %s,\n  \"tags\": [", quoted) < 0)
		goto done;
	for (size_t i = 0; i < tags->len; i++)
		if (printf("%s\n    \"%s\"", i ? "," : "", tags->items[i]) < 0)
			goto done;
	if (printf("%s],\n  \"count\": %zu,\n  \"pages\": %zu,\n  \"sha256\": \"%s\"\n}\n",
	           tags->len ? "\n  " : "", tags->len, l->pages, l->sha256) < 0)
		goto done;
	rc = 0;
done:
	json_decref(js);
	free(quoted);
	free(name);
	return rc;
}

/* Everything before the first request is input: an error there is exit 2, after it exit 1. */
static int run(const struct tags_opts *o, bool *bad_input, struct error *err)
{
	struct imageref ref = IMAGEREF_INIT;
	struct registry_creds creds = REGISTRY_CREDS_INIT;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	struct strvec ordered = STRVEC_INIT;
	struct registry_client *c = NULL;
	struct policy *p = NULL;
	struct registry_target t = {0};
	const struct strvec *shown;
	int error;

	*bad_input = true;
	if ((error = imageref_parse(&ref, o->image, 0, err)) < 0)
		goto done;
	if (o->docker_config &&
	    (error = creds_load_docker_config(&creds, o->docker_config, ref.registry, err)) < 0)
		goto done;
	if (o->pf.set && (error = policy_new(&p, &o->pf.spec, err)) < 0)
		goto done;
	*bad_input = false;
	if ((error = registry_client_new(&c, &o->ro, err)) < 0)
		goto done;
	t.ref = &ref;
	t.creds = &creds;
	t.insecure = o->insecure;
	t.ca_file = o->ca_file;
	t.timeout_ms = o->timeout_ms;
	if ((error = cloudauth_creds(&creds, o->provider, ref.registry, o->insecure, err)) < 0) {
		*bad_input = error == IG_EINVALID;
		goto done;
	}
	if ((error = cloudauth_list_tags(&l, c, &t, o->provider, &creds, err)) < 0)
		goto done;
	shown = &l.tags;
	if (p) {
		if ((error = policy_order(&ordered, p, (const char *const *)l.tags.items,
		                          l.tags.len, err)) < 0)
			goto done;
		shown = &ordered;
	}
	if (o->json) {
		error = print_json(&ref, shown, &l)
		            ? error_set(err, IG_EFAIL, "tags: cannot write output")
		            : 0;
	} else {
		for (size_t i = 0; i < shown->len; i++)
			if (fputs(shown->items[i], stdout) < 0 || putchar('\n') < 0) {
				error = error_set(err, IG_EFAIL, "tags: cannot write output");
				break;
			}
	}
done:
	strvec_release(&ordered);
	policy_free(p);
	registry_listing_release(&l);
	registry_client_free(c);
	creds_release(&creds);
	imageref_release(&ref);
	return error;
}

int cmd_tags(int argc, char **argv)
{
	struct tags_opts o = {NULL, NULL, NULL,  NULL, false,           false,
	                      0,    0,    false, {0},  POLICYFLAGS_INIT};
	struct error err = ERROR_INIT;
	bool bad_input = false;
	int error, rc;

	registry_options_init(&o.ro);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, stdout);
			return 0;
		}
	if ((error = parse_args(&o, argc, argv, &err)) < 0) {
		fprintf(stderr, "imageguard: %s\n", err.msg);
		rc = 2;
		goto done;
	}
	error = run(&o, &bad_input, &err);
	if (error < 0)
		fprintf(stderr, "imageguard: %s\n", err.msg);
	rc = error == 0 ? 0 : bad_input && error != IG_EFAIL ? 2 : 1;
done:
	if (fflush(stdout) != 0 && rc == 0)
		rc = 1;
	policyflags_release(&o.pf);
	return rc;
}
