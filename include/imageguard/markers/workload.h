/* The workloads in Kubernetes manifests (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet,
 * ReplicationController, Job, CronJob, PodTemplate: one table for lint and verify) and their
 * containers' image fields with line numbers, so that a marker's file:line leads to the
 * workload and container whose image it sets. */
#ifndef IMAGEGUARD_WORKLOAD_H
#define IMAGEGUARD_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

struct error;

struct workload_container {
	char *kind;      /* owned; "Deployment" */
	char *ns;        /* owned; metadata.namespace, "default" when absent */
	char *name;      /* owned; metadata.name */
	char *container; /* owned; the container's name */
	bool init;       /* an initContainers entry */
	char *image;     /* owned; the image field's value */
	size_t line;     /* 1-based line of the image value */
};

struct workload_set {
	struct workload_container *items;
	size_t len, cap;
};

#define WORKLOAD_SET_INIT                                                                          \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

/* Appends every container image field of every workload document in data (named file in
 * messages). Documents of other kinds, or without a name, are skipped. Returns 0,
 * IG_EINVALID when the YAML does not parse (err names file:line; items found before stay),
 * or IG_EFAIL out of memory. */
int workload_scan_buffer(struct workload_set *out, const char *file, const char *data, size_t len,
                         struct error *err);

/* The container whose image value starts on line, or NULL (borrowed from s). */
const struct workload_container *workload_at_line(const struct workload_set *s, size_t line);

void workload_set_release(struct workload_set *s);

/* The pod spec mapping of a workload document (root of doc), borrowed from doc, or NULL for
 * another kind or a document without one; *kind (when kind is not NULL) gets the kind's name
 * (static storage). Merge keys are honoured (yamltree_get). */
yaml_node_t *workload_pod_spec(yaml_document_t *doc, const yaml_node_t *root, const char **kind);

/* The API path of a workload object ("/apis/apps/v1/namespaces/NS/deployments/NAME"), newly
 * allocated (free() it), or NULL for an unknown kind, a namespace or name that is not a
 * Kubernetes name (kubename: Git content never names another path), or out of memory. */
char *workload_api_path(const char *kind, const char *ns, const char *name);

#endif
