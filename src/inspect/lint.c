/* `imageguard lint`: the rule table (CONTRACT §3), the report, and the YAML walk that finds
 * image references in workloads, Kustomize `images:` and HelmRelease values. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/inspect/lint.h"
#include "imageguard/markers/markers.h"
#include "imageguard/markers/workload.h"
#include "imageguard/util/yamltree.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/yamldepth.h"
#include "imageguard/util/strvec.h"
#include "imageguard/util/vec.h"

static const char *const default_mutable[] = {"latest",  "main", "master",  "dev",
                                              "develop", "edge", "nightly", "stable"};

const char *lint_rule_name(enum lint_rule rule)
{
	switch (rule) {
	case LINT_MUTABLE_TAG:
		return "mutable-tag";
	case LINT_PULL_POLICY:
		return "pull-policy";
	case LINT_NO_DIGEST:
		return "no-digest";
	case LINT_UNKNOWN_POLICY:
		return "unknown-policy";
	}
	return "unknown";
}

const char *lint_severity_name(enum lint_severity severity)
{
	return severity == LINT_ERROR ? "error" : "warning";
}

const char *lint_pull_name(enum lint_pull pull)
{
	switch (pull) {
	case LINT_PULL_ALWAYS:
		return "Always";
	case LINT_PULL_IF_NOT_PRESENT:
		return "IfNotPresent";
	case LINT_PULL_NEVER:
		return "Never";
	case LINT_PULL_UNSET:
		break;
	}
	return "";
}

/* Kubernetes (pkg/apis/core/v1/defaults.go): the tag `latest` — which a reference without tag
 * and digest implies — defaults to Always; anything else, a bare digest included, IfNotPresent.
 * `name:latest@digest` keeps its tag `latest` and so defaults to Always. */
enum lint_pull lint_pull_default(const char *tag, bool has_digest)
{
	if (tag ? strcmp(tag, "latest") == 0 : !has_digest)
		return LINT_PULL_ALWAYS;
	return LINT_PULL_IF_NOT_PRESENT;
}

bool lint_is_mutable_tag(const struct lint_options *opts, const char *tag)
{
	if (!tag)
		return true;
	if (opts && opts->mutable_tags)
		return strvec_has(opts->mutable_tags, tag);
	for (size_t i = 0; i < sizeof(default_mutable) / sizeof(default_mutable[0]); i++)
		if (strcmp(default_mutable[i], tag) == 0)
			return true;
	return false;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int push_finding(struct lint_report *out, const char *file, size_t line, enum lint_rule rule,
                        const char *image, const char *message, struct error *err)
{
	struct lint_finding f = {NULL, line, rule, LINT_ERROR, NULL, NULL};

	void *p = vec_reserve(out->findings, &out->cap, out->len, sizeof(*out->findings), 16);

	if (!p)
		return error_oom(err);
	out->findings = p;
	f.severity = rule == LINT_NO_DIGEST ? LINT_WARNING : LINT_ERROR;
	f.file = dup_or_empty(file);
	f.image = dup_or_empty(image);
	f.message = dup_or_empty(message);
	if (!f.file || !f.image || !f.message) {
		free(f.file);
		free(f.image);
		free(f.message);
		return error_oom(err);
	}
	out->findings[out->len++] = f;
	return 0;
}

int lint_add_problem(struct lint_report *out, const char *file, size_t line, struct error *err,
                     const char *fmt, ...)
{
	struct lint_problem p = {NULL, line, NULL};
	struct buf msg = BUF_INIT;
	va_list ap;
	int error;

	void *np = vec_reserve(out->problems, &out->problems_cap, out->problems_len,
	                       sizeof(*out->problems), 8);

	if (!np)
		return error_oom(err);
	out->problems = np;
	va_start(ap, fmt);
	error = buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	p.file = dup_or_empty(file);
	if (error < 0 || !p.file || !msg.data) {
		free(p.file);
		buf_release(&msg);
		return error_oom(err);
	}
	error_flatten(msg.data); /* one line whatever the input held */
	p.message = buf_detach(&msg);
	out->problems[out->problems_len++] = p;
	return 0;
}

/* The whole rule table: a reference pinned by digest runs exactly that image whatever its tag
 * says, so only unpinned references can be mutable — and only they can meet a stale cache. */
int lint_check_image(struct lint_report *out, const struct lint_options *opts, const char *file,
                     size_t line, const struct lint_image *img, struct error *err)
{
	char msg[512];
	enum lint_pull pull;
	bool defaulted;
	int error;

	if (img->has_digest)
		return 0;
	if (lint_is_mutable_tag(opts, img->tag)) {
		if (img->tag)
			snprintf(
			    msg, sizeof(msg),
			    "mutable tag '%.128s' without a digest: the image it runs can change",
			    img->tag);
		else
			snprintf(
			    msg, sizeof(msg),
			    "no tag (means 'latest') and no digest: the image it runs can change");
		if ((error =
		         push_finding(out, file, line, LINT_MUTABLE_TAG, img->image, msg, err)) < 0)
			return error;
		defaulted = img->pull == LINT_PULL_UNSET;
		pull = defaulted ? lint_pull_default(img->tag, false) : img->pull;
		if (img->pull_known &&
		    (pull == LINT_PULL_IF_NOT_PRESENT || pull == LINT_PULL_NEVER)) {
			snprintf(
			    msg, sizeof(msg),
			    "%s%.128s%s with imagePullPolicy %s%s: nodes keep running a cached "
			    "image after the tag moves",
			    img->tag ? "mutable tag '" : "no tag (means 'latest')",
			    img->tag ? img->tag : "", img->tag ? "'" : "", lint_pull_name(pull),
			    defaulted ? " (Kubernetes' default for this tag)" : "");
			if ((error = push_finding(out, file, line, LINT_PULL_POLICY, img->image,
			                          msg, err)) < 0)
				return error;
		}
	}
	return push_finding(out, file, line, LINT_NO_DIGEST, img->image, "not pinned by digest",
	                    err);
}

int lint_check_markers(struct lint_report *out, const struct marker_set *markers,
                       const struct strvec *known, struct error *err)
{
	char msg[512];
	int error;

	for (size_t i = 0; i < markers->len; i++) {
		const struct marker *m = &markers->items[i];
		if (strvec_has(known, m->policy))
			continue;
		snprintf(msg, sizeof(msg),
		         "marker names policy '%.200s', which the configuration does not define",
		         m->policy);
		if ((error = push_finding(out, m->file, m->line, LINT_UNKNOWN_POLICY, m->value, msg,
		                          err)) < 0)
			return error;
	}
	return 0;
}

static int cmp_finding(const void *a, const void *b)
{
	const struct lint_finding *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->rule != y->rule)
		return x->rule < y->rule ? -1 : 1;
	if ((c = strcmp(x->image, y->image)))
		return c;
	return strcmp(x->message, y->message);
}

static int cmp_problem(const void *a, const void *b)
{
	const struct lint_problem *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return strcmp(x->message, y->message);
}

void lint_report_sort(struct lint_report *r)
{
	if (r->len > 1)
		qsort(r->findings, r->len, sizeof(*r->findings), cmp_finding);
	if (r->problems_len > 1)
		qsort(r->problems, r->problems_len, sizeof(*r->problems), cmp_problem);
}

void lint_report_release(struct lint_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->len; i++) {
		free(r->findings[i].file);
		free(r->findings[i].image);
		free(r->findings[i].message);
	}
	for (size_t i = 0; i < r->problems_len; i++) {
		free(r->problems[i].file);
		free(r->problems[i].message);
	}
	free(r->findings);
	free(r->problems);
	memset(r, 0, sizeof(*r));
}

/* ---- Finding images in YAML documents ---- */

#define LINT_DEPTH_MAX 64 /* nesting followed in HelmRelease values */
#define LINT_DIR_DEPTH_MAX 64

struct scan {
	struct lint_report *out;
	const struct lint_options *opts;
	const char *file;
	yaml_document_t *doc;
	unsigned char *seen; /* values walk: each node once, so aliases cannot multiply work */
	bool kustomization_file;
	struct error *err;
};

static yaml_node_t *node_at(struct scan *s, int id)
{
	return yaml_document_get_node(s->doc, id);
}

/* Values filled in later (Flux postBuild `${VAR}`, Helm `{{ }}`, shell `$(...)`) say nothing
 * about the image that will run. */
static bool is_templated(const char *v)
{
	return strstr(v, "{{") || strstr(v, "${") || strstr(v, "$(");
}

static bool has_prefix(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Reads an imagePullPolicy value; a value Kubernetes would reject is a problem and counts as
 * unset. */
static int read_pull(struct scan *s, const yaml_node_t *n, enum lint_pull *out)
{
	const char *v = yamltree_str(n);

	*out = LINT_PULL_UNSET;
	if (yamltree_is_null(n) || (v && is_templated(v)))
		return 0;
	if (v && !strcmp(v, "Always"))
		*out = LINT_PULL_ALWAYS;
	else if (v && !strcmp(v, "IfNotPresent"))
		*out = LINT_PULL_IF_NOT_PRESENT;
	else if (v && !strcmp(v, "Never"))
		*out = LINT_PULL_NEVER;
	else
		return lint_add_problem(
		    s->out, s->file, yamltree_line(n), s->err,
		    "imagePullPolicy '%.64s': not Always, IfNotPresent or Never",
		    v ? v : "(not a string)");
	return 0;
}

/* Lints one reference. strict: an unparseable reference is a problem (workloads, Kustomize);
 * otherwise it is taken for something that is not an image (a guess in Helm values). */
static int check_ref(struct scan *s, const char *ref, size_t line, enum lint_pull pull,
                     bool pull_known, bool strict)
{
	struct imageref r = IMAGEREF_INIT;
	struct error perr = ERROR_INIT;
	struct lint_image img;
	int error;

	if (!*ref || is_templated(ref))
		return 0;
	if (imageref_parse(&r, ref, IMAGEREF_ALLOW_TAG | IMAGEREF_ALLOW_DIGEST, &perr) < 0) {
		if (perr.code != IG_EINVALID)
			return error_set(s->err, perr.code, "%s", perr.msg);
		return strict ? lint_add_problem(s->out, s->file, line, s->err, "%s", perr.msg) : 0;
	}
	img.image = ref;
	img.tag = r.tag;
	img.has_digest = r.digest != NULL;
	img.pull = pull;
	img.pull_known = pull_known;
	error = lint_check_image(s->out, s->opts, s->file, line, &img, s->err);
	imageref_release(&r);
	return error;
}

static int scan_container(struct scan *s, const yaml_node_t *c)
{
	yaml_node_t *img = yamltree_get(s->doc, c, "image");
	enum lint_pull pull;
	const char *ref;
	int error;

	if (yamltree_is_null(img))
		return 0;
	if (!(ref = yamltree_str(img)))
		return lint_add_problem(s->out, s->file, yamltree_line(img), s->err,
		                        "image: not a string");
	if ((error = read_pull(s, yamltree_get(s->doc, c, "imagePullPolicy"), &pull)) < 0)
		return error;
	return check_ref(s, ref, yamltree_line(img), pull, true, true);
}

static int scan_pod_spec(struct scan *s, const yaml_node_t *spec)
{
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	int error;

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		yaml_node_t *seq = yamltree_get(s->doc, spec, lists[i]);
		if (!seq || seq->type != YAML_SEQUENCE_NODE)
			continue;
		for (yaml_node_item_t *it = seq->data.sequence.items.start;
		     it < seq->data.sequence.items.top; it++)
			if ((error = scan_container(s, node_at(s, *it))) < 0)
				return error;
	}
	return 0;
}

static int scan_workload(struct scan *s, const yaml_node_t *obj)
{
	yaml_node_t *spec = workload_pod_spec(s->doc, obj, NULL);

	return spec ? scan_pod_spec(s, spec) : 0;
}

/* A value that is set: non-null and a string. */
static const char *set_str(const yaml_node_t *n)
{
	return yamltree_is_null(n) ? NULL : yamltree_str(n);
}

/* Kustomize `images:` entries ({name, newName, newTag, digest}). An entry that only renames
 * keeps the tag the manifests carry, which the manifests' own findings cover. */
static int scan_kustomize_entry(struct scan *s, const yaml_node_t *e)
{
	yaml_node_t *tagn = yamltree_get(s->doc, e, "newTag"),
	            *dign = yamltree_get(s->doc, e, "digest");
	const char *name = yamltree_get_str(s->doc, e, "newName"), *tag = set_str(tagn),
	           *digest = set_str(dign);
	struct buf ref = BUF_INIT_MAX(8192);
	size_t line;
	int error;

	if (!tag && !digest)
		return 0;
	line = yamltree_line(tag ? tagn : dign);
	if (!name && !(name = yamltree_get_str(s->doc, e, "name")))
		return lint_add_problem(s->out, s->file, yamltree_line(e), s->err,
		                        "images: entry without name or newName");
	if (buf_puts(&ref, name) < 0 || (tag && buf_printf(&ref, ":%s", tag) < 0) ||
	    (digest && buf_printf(&ref, "@%s", digest) < 0)) {
		buf_release(&ref);
		return lint_add_problem(s->out, s->file, line, s->err, "images: entry too long");
	}
	error = check_ref(s, ref.data, line, LINT_PULL_UNSET, false, true);
	buf_release(&ref);
	return error;
}

static int scan_kustomize_images(struct scan *s, const yaml_node_t *images)
{
	int error;

	if (!images || images->type != YAML_SEQUENCE_NODE)
		return 0;
	for (yaml_node_item_t *it = images->data.sequence.items.start;
	     it < images->data.sequence.items.top; it++) {
		yaml_node_t *e = node_at(s, *it);
		if (e && e->type == YAML_MAPPING_NODE && (error = scan_kustomize_entry(s, e)) < 0)
			return error;
	}
	return 0;
}

/* The pull policy a chart is given next to its image: `pullPolicy` (the Helm convention) or
 * `imagePullPolicy`. */
static int helm_pull(struct scan *s, const yaml_node_t *map, enum lint_pull *out)
{
	yaml_node_t *n = yamltree_get(s->doc, map, "pullPolicy");

	if (!n)
		n = yamltree_get(s->doc, map, "imagePullPolicy");
	return read_pull(s, n, out);
}

/* `image: {registry?, repository, tag?, digest?, pullPolicy?}`. Without tag and digest a chart
 * uses its own default (usually appVersion), unknown here: not recognisable, skipped. */
static int helm_image_map(struct scan *s, const yaml_node_t *m)
{
	yaml_node_t *repon = yamltree_get(s->doc, m, "repository"),
	            *tagn = yamltree_get(s->doc, m, "tag"),
	            *dign = yamltree_get(s->doc, m, "digest");
	const char *repo = set_str(repon), *tag = set_str(tagn), *digest = set_str(dign),
	           *registry = yamltree_get_str(s->doc, m, "registry");
	struct buf ref = BUF_INIT_MAX(8192);
	enum lint_pull pull;
	int error;

	if (!repo || !(tag || digest))
		return 0;
	if ((error = helm_pull(s, m, &pull)) < 0)
		return error;
	if ((registry && *registry && buf_printf(&ref, "%s/", registry) < 0) ||
	    buf_puts(&ref, repo) < 0 || (tag && buf_printf(&ref, ":%s", tag) < 0) ||
	    (digest && buf_printf(&ref, "@%s", digest) < 0)) {
		buf_release(&ref);
		return 0; /* longer than any reference: not an image */
	}
	error = check_ref(s, ref.data, yamltree_line(tag ? tagn : dign), pull, true, false);
	buf_release(&ref);
	return error;
}

/* `image: "repo:tag"` (or with a digest); a bare name is too weak a sign of an image. */
static int helm_image_string(struct scan *s, const yaml_node_t *v, const yaml_node_t *parent)
{
	const char *ref = set_str(v);
	struct imageref_parts p;
	enum lint_pull pull;
	int error;

	if (!ref)
		return 0;
	imageref_split(&p, ref, strlen(ref));
	if (!p.tag_len && !p.digest_len)
		return 0;
	if ((error = helm_pull(s, parent, &pull)) < 0)
		return error;
	return check_ref(s, ref, yamltree_line(v), pull, true, false);
}

static bool is_image_key(const char *k)
{
	return !strcmp(k, "image") || has_suffix(k, "Image");
}

static bool first_visit(struct scan *s, const yaml_node_t *n)
{
	size_t i = (size_t)(n - s->doc->nodes.start);

	if (s->seen[i])
		return false;
	s->seen[i] = 1;
	return true;
}

static int scan_values(struct scan *s, const yaml_node_t *n, int depth)
{
	int error = 0;

	if (!n || depth > LINT_DEPTH_MAX || !first_visit(s, n))
		return 0;
	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     error >= 0 && it < n->data.sequence.items.top; it++)
			error = scan_values(s, node_at(s, *it), depth + 1);
		return error;
	}
	if (n->type != YAML_MAPPING_NODE)
		return 0;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     error >= 0 && p < n->data.mapping.pairs.top; p++) {
		const char *k = yamltree_str(node_at(s, p->key));
		yaml_node_t *v = node_at(s, p->value);
		if (!v)
			continue;
		if (k && is_image_key(k) && v->type == YAML_MAPPING_NODE && first_visit(s, v))
			error = helm_image_map(s, v);
		else if (k && is_image_key(k) && v->type == YAML_SCALAR_NODE)
			error = helm_image_string(s, v, n);
		else
			error = scan_values(s, v, depth + 1);
	}
	return error;
}

static bool is_kustomization_name(const char *file)
{
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	return !strcmp(base, "kustomization.yaml") || !strcmp(base, "kustomization.yml");
}

static int scan_object(struct scan *s, const yaml_node_t *obj, int depth)
{
	const char *kind = yamltree_get_str(s->doc, obj, "kind"),
	           *api = yamltree_get_str(s->doc, obj, "apiVersion");
	yaml_node_t *items;
	int error = 0;

	if (!obj || obj->type != YAML_MAPPING_NODE)
		return 0;
	if (kind && !strcmp(kind, "HelmRelease") && has_prefix(api, "helm.toolkit.fluxcd.io/"))
		return scan_values(
		    s, yamltree_get(s->doc, yamltree_get(s->doc, obj, "spec"), "values"), 0);
	if (kind && !strcmp(kind, "Kustomization") &&
	    has_prefix(api, "kustomize.toolkit.fluxcd.io/"))
		return scan_kustomize_images(
		    s, yamltree_get(s->doc, yamltree_get(s->doc, obj, "spec"), "images"));
	if ((kind && (!strcmp(kind, "Kustomization") || !strcmp(kind, "Component")) &&
	     has_prefix(api, "kustomize.config.k8s.io/")) ||
	    (!kind && !api && s->kustomization_file))
		return scan_kustomize_images(s, yamltree_get(s->doc, obj, "images"));
	if (kind && has_suffix(kind, "List") && depth < 4 &&
	    (items = yamltree_get(s->doc, obj, "items")) && items->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = items->data.sequence.items.start;
		     error >= 0 && it < items->data.sequence.items.top; it++)
			error = scan_object(s, node_at(s, *it), depth + 1);
		return error;
	}
	return scan_workload(s, obj);
}

static int scan_document(struct scan *s, yaml_document_t *doc)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	size_t n = (size_t)(doc->nodes.top - doc->nodes.start);
	int error;

	s->doc = doc;
	if (!(s->seen = calloc(n ? n : 1, 1)))
		return error_oom(s->err);
	error = scan_object(s, root, 0);
	free(s->seen);
	s->seen = NULL;
	return error;
}

int lint_scan_buffer(struct lint_report *out, const struct lint_options *opts, const char *file,
                     const char *data, size_t len, struct error *err)
{
	struct scan s = {out, opts, file, NULL, NULL, is_kustomization_name(file), err};
	yaml_parser_t parser;
	yaml_document_t doc;
	size_t line;
	int error = yamldepth_check(&line, data, len, YAMLDEPTH_MAX);

	if (error == IG_ETOOBIG)
		return lint_add_problem(out, file, line, err, "YAML nested deeper than %d levels",
		                        YAMLDEPTH_MAX);
	if (error < 0 || !yaml_parser_initialize(&parser))
		return error_oom(err);
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	while (error >= 0) {
		if (!yaml_parser_load(&parser, &doc)) {
			if (parser.error == YAML_MEMORY_ERROR)
				error = error_oom(err);
			else
				error = lint_add_problem(out, file, parser.problem_mark.line + 1,
				                         err, "does not parse as YAML: %s%s%s%s",
				                         parser.problem ? parser.problem : "error",
				                         parser.context ? " (" : "",
				                         parser.context ? parser.context : "",
				                         parser.context ? ")" : "");
			break;
		}
		if (!yaml_document_get_root_node(&doc)) { /* end of the stream */
			yaml_document_delete(&doc);
			break;
		}
		error = scan_document(&s, &doc);
		yaml_document_delete(&doc);
	}
	yaml_parser_delete(&parser);
	return error < 0 ? error : 0;
}

/* ---- Walking PATH ---- */

static char *path_join(const char *a, const char *b)
{
	struct buf p = BUF_INIT;

	if (buf_printf(&p, "%s%s%s", a, *a && *b ? "/" : "", b) < 0) {
		buf_release(&p);
		return NULL;
	}
	return buf_detach(&p);
}

/* Appends the *.yaml / *.yml files below root/rel (relative names) to files. */
static int collect(struct strvec *files, struct lint_report *out, const char *root, const char *rel,
                   int depth, struct error *err)
{
	char *dir = NULL, *child = NULL, *full = NULL;
	struct dirent *de;
	struct stat st;
	DIR *d = NULL;
	int error = 0;

	if (!(dir = path_join(root, rel))) {
		error = error_oom(err);
		goto done;
	}
	if (depth > LINT_DIR_DEPTH_MAX) {
		error = lint_add_problem(out, rel, 0, err, "directories nested too deep, skipped");
		goto done;
	}
	if (!(d = opendir(dir))) {
		error = lint_add_problem(out, *rel ? rel : ".", 0, err, "cannot read directory: %s",
		                         strerror(errno));
		goto done;
	}
	while (error >= 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.') /* ".", "..", .git and other hidden trees */
			continue;
		free(child);
		free(full);
		full = NULL;
		if (!(child = path_join(rel, de->d_name)) || !(full = path_join(root, child))) {
			error = error_oom(err);
			break;
		}
		if (lstat(full, &st) < 0)
			continue;
		/* links are never followed: the tree may be a clone of someone else's content */
		if (S_ISDIR(st.st_mode))
			error = collect(files, out, root, child, depth + 1, err);
		else if ((has_suffix(child, ".yaml") || has_suffix(child, ".yml")) &&
		         S_ISREG(st.st_mode) && strvec_push(files, child) < 0)
			error = error_oom(err);
	}
done:
	if (d)
		closedir(d);
	free(child);
	free(full);
	free(dir);
	return error;
}

/* Reads name below root (NULL root: path is a file the user named) and scans it. Below a
 * root nothing is read through a link, and a FIFO or device is refused without blocking. */
static int lint_file(struct lint_report *out, const struct lint_options *opts, const char *root,
                     const char *path, const char *name, struct error *err)
{
	struct buf data = BUF_INIT_MAX(LINT_FILE_MAX);
	struct error e = ERROR_INIT;
	int error;

	if (root)
		error = safefile_read(&data, root, path, &e);
	else if ((error = buf_read_file(&data, path)) < 0)
		error_set(&e, error, "'%s': %s", path, strerror(errno));
	if (error == IG_ETOOBIG)
		error = lint_add_problem(out, name, 0, err, "file larger than %zu MiB, skipped",
		                         LINT_FILE_MAX >> 20);
	else if (error < 0)
		error = lint_add_problem(out, name, 0, err, "cannot read: %s", safefile_reason(&e));
	else
		error = lint_scan_buffer(out, opts, name, data.data, data.len, err);
	buf_release(&data);
	return error;
}

int lint_scan_tree(struct lint_report *out, const struct lint_options *opts, const char *root,
                   struct error *err)
{
	struct strvec files = STRVEC_INIT;
	struct stat st;
	int error = 0;

	if (stat(root, &st) < 0) {
		error = error_set(err, errno == ENOENT ? IG_ENOTFOUND : IG_EINVALID, "'%s': %s",
		                  root, strerror(errno));
		goto done;
	}
	if (S_ISREG(st.st_mode)) {
		const char *base = strrchr(root, '/');
		error = lint_file(out, opts, NULL, root, base && base[1] ? base + 1 : root, err);
		goto done;
	}
	if (!S_ISDIR(st.st_mode)) {
		error = error_set(err, IG_EINVALID, "'%s': not a file or directory", root);
		goto done;
	}
	if (access(root, R_OK | X_OK) < 0) {
		error = error_set(err, IG_EINVALID, "'%s': %s", root, strerror(errno));
		goto done;
	}
	if ((error = collect(&files, out, root, "", 0, err)) < 0)
		goto done;
	strvec_sort(&files);
	for (size_t i = 0; error >= 0 && i < files.len; i++)
		error = lint_file(out, opts, root, files.items[i], files.items[i], err);
done:
	strvec_release(&files);
	return error;
}
