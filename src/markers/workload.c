/* Finds workload documents in manifest bytes with libyaml and lists their containers' image
 * fields with lines (pod template paths differ per kind: spec.template.spec, CronJob's
 * spec.jobTemplate.spec.template.spec, a Pod's spec). */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/kube/kubename.h"
#include "imageguard/markers/workload.h"
#include "imageguard/util/yamltree.h"
#include "imageguard/util/vec.h"

/* Every workload kind: where it keeps its pod spec, and its API path. lint and verify read
 * manifests through this one table. */
static const struct {
	const char *kind;
	const char *spec_path[6];
	const char *group_path, *plural;
} kinds[] = {
    {"Pod", {"spec", NULL}, "/api/v1", "pods"},
    {"Deployment", {"spec", "template", "spec", NULL}, "/apis/apps/v1", "deployments"},
    {"StatefulSet", {"spec", "template", "spec", NULL}, "/apis/apps/v1", "statefulsets"},
    {"DaemonSet", {"spec", "template", "spec", NULL}, "/apis/apps/v1", "daemonsets"},
    {"ReplicaSet", {"spec", "template", "spec", NULL}, "/apis/apps/v1", "replicasets"},
    {"ReplicationController",
     {"spec", "template", "spec", NULL},
     "/api/v1",
     "replicationcontrollers"},
    {"Job", {"spec", "template", "spec", NULL}, "/apis/batch/v1", "jobs"},
    {"CronJob",
     {"spec", "jobTemplate", "spec", "template", "spec", NULL},
     "/apis/batch/v1",
     "cronjobs"},
    {"PodTemplate", {"template", "spec", NULL}, "/api/v1", "podtemplates"},
};

static int kind_index(const char *kind)
{
	for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			return (int)i;
	return -1;
}

char *workload_api_path(const char *kind, const char *ns, const char *name)
{
	struct buf b = BUF_INIT;
	int k = kind_index(kind);

	if (k < 0 || !kubename_is_namespace(ns) || !kubename_is_name(name) ||
	    buf_printf(&b, "%s/namespaces/%s/%s/%s", kinds[k].group_path, ns, kinds[k].plural,
	               name) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b);
}

void workload_set_release(struct workload_set *s)
{
	for (size_t i = 0; i < s->len; i++) {
		struct workload_container *c = &s->items[i];
		free(c->kind);
		free(c->ns);
		free(c->name);
		free(c->container);
		free(c->image);
	}
	free(s->items);
	memset(s, 0, sizeof(*s));
}

const struct workload_container *workload_at_line(const struct workload_set *s, size_t line)
{
	for (size_t i = 0; i < s->len; i++)
		if (s->items[i].line == line)
			return &s->items[i];
	return NULL;
}

yaml_node_t *workload_pod_spec(yaml_document_t *doc, const yaml_node_t *root, const char **kind)
{
	const char *k = yamltree_get_str(doc, root, "kind");
	const yaml_node_t *n = root;
	int i = kind_index(k);

	if (i < 0)
		return NULL;
	for (size_t j = 0; n && kinds[i].spec_path[j]; j++)
		n = yamltree_get(doc, n, kinds[i].spec_path[j]);
	if (!n || n->type != YAML_MAPPING_NODE)
		return NULL;
	if (kind)
		*kind = kinds[i].kind;
	return (yaml_node_t *)n;
}

static int push(struct workload_set *s, const char *kind, const char *ns, const char *name,
                const char *container, bool init, const yaml_node_t *image)
{
	struct workload_container *c;

	void *p = vec_reserve(s->items, &s->cap, s->len, sizeof(*s->items), 8);

	if (!p)
		return IG_EFAIL;
	s->items = p;
	c = &s->items[s->len];
	memset(c, 0, sizeof(*c));
	c->init = init;
	c->line = yamltree_line(image);
	if (!(c->kind = strdup(kind)) || !(c->ns = strdup(ns)) || !(c->name = strdup(name)) ||
	    !(c->container = strdup(container)) || !(c->image = strdup(yamltree_str(image)))) {
		free(c->kind);
		free(c->ns);
		free(c->name);
		free(c->container);
		return IG_EFAIL;
	}
	s->len++;
	return 0;
}

static int read_document(struct workload_set *out, yaml_document_t *doc)
{
	static const char *const lists[] = {"containers", "initContainers"};
	yaml_node_t *root = yaml_document_get_root_node(doc), *meta, *spec;
	const char *kind = NULL, *name, *ns;

	if (!(spec = workload_pod_spec(doc, root, &kind)))
		return 0;
	meta = yamltree_get(doc, root, "metadata");
	if (!(name = yamltree_get_str(doc, meta, "name")))
		return 0;
	ns = yamltree_get_str(doc, meta, "namespace");
	for (size_t l = 0; l < 2; l++) {
		yaml_node_t *seq = yamltree_get(doc, spec, lists[l]), *c;
		for (size_t i = 0; (c = yamltree_item(doc, seq, i)); i++) {
			yaml_node_t *image = yamltree_get(doc, c, "image");
			const char *cname = yamltree_get_str(doc, c, "name");
			if (!cname || !yamltree_str(image) || yamltree_is_null(image))
				continue;
			if (push(out, kind, ns ? ns : "default", name, cname, l == 1, image) < 0)
				return IG_EFAIL;
		}
	}
	return 0;
}

int workload_scan_buffer(struct workload_set *out, const char *file, const char *data, size_t len,
                         struct error *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int error = 0;

	if (!yaml_parser_initialize(&parser))
		return error_oom(err);
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	for (;;) {
		if (!yaml_parser_load(&parser, &doc)) {
			error = error_set(err, IG_EINVALID, "'%s': line %zu: %s", file,
			                  parser.problem_mark.line + 1,
			                  parser.problem ? parser.problem : "does not parse");
			break;
		}
		if (!yaml_document_get_root_node(&doc)) {
			yaml_document_delete(&doc);
			break; /* end of stream */
		}
		error = read_document(out, &doc);
		yaml_document_delete(&doc);
		if (error < 0) {
			error_set(err, error, "out of memory");
			break;
		}
	}
	yaml_parser_delete(&parser);
	return error;
}
