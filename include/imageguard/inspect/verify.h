/* Verifying what runs (issue 8): for every marker on a workload's container image in Git,
 * the pods of that workload are read from the Kubernetes API and each running container's
 * imageID digest is compared with the digest Git pins or the committed tag resolves to in
 * the registry. `imageguard verify` runs one pass; `run` can call verify_pass periodically
 * and publish imageguard_running_drift{policy,workload} with verify_metrics_publish. */
#ifndef IMAGEGUARD_VERIFY_H
#define IMAGEGUARD_VERIFY_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct error;
struct kube_client;
struct metrics;
struct shard_spec;
struct registry_client;

enum verify_status {
	VERIFY_OK,          /* the running digest (and tag) is what Git pins */
	VERIFY_DRIFT,       /* a different digest, or a different tag, runs */
	VERIFY_NOT_RUNNING, /* no pod, or the container has not started (no imageID) */
	VERIFY_UNKNOWN      /* cannot tell: API/registry/Git failure, no digest, unsupported */
};

/* One container of one pod (or of a workload without pods, pod NULL). Every string is
 * owned; NULL when not known. */
struct verify_result {
	char *policy; /* "ns/name" from the marker */
	char *file;   /* relative to the Git checkout */
	size_t line;
	char *workload; /* "ns/Kind/name" */
	char *kind, *ns, *name;
	char *container;
	char *pod;
	char *image;          /* the image value in Git */
	char *want_tag;       /* the committed tag */
	char *want_digest;    /* pinned in Git or resolved from want_tag in the registry */
	char *running_image;  /* containerStatuses[].image */
	char *running_digest; /* from containerStatuses[].imageID */
	enum verify_status status;
	char *reason;      /* one line */
	bool failed;       /* unknown because a call to the API, the registry or Git failed */
	size_t automation; /* index into the config's automations whose checkout holds the
	                      marker; VERIFY_NO_AUTOMATION for a repo_dir pass without any */
};

#define VERIFY_NO_AUTOMATION ((size_t)-1)

struct verify_report {
	struct verify_result *items;
	size_t len, cap;
	size_t counts[4]; /* by enum verify_status */
	size_t failures;  /* items with failed set */
};

#define VERIFY_REPORT_INIT                                                                         \
	{                                                                                          \
		NULL, 0, 0, {0, 0, 0, 0}, 0                                                        \
	}

struct verify_options {
	const struct config *config;      /* borrowed */
	const char *state_dir;            /* Git clone cache (as reconcile) */
	const char *secrets_dir;          /* NULL: "." */
	const char *repo_dir;             /* NULL: each automation's Git source via gitstore;
	                                     else this local checkout for every automation */
	struct kube_client *kube;         /* borrowed */
	struct registry_client *registry; /* borrowed */
	const struct shard_spec *shard;   /* NULL: every automation; else only those it owns
	                                     (shard_owns), as `run --shards` reconciles them */
};

/* One verification pass. Per-workload and per-marker failures become items (status
 * unknown, failed set), never a stop for the others; drift is logged (event verify.drift).
 * Returns 0, or negative only when the pass could not run (out of memory). out is
 * caller-owned (VERIFY_REPORT_INIT); release with verify_report_release. */
int verify_pass(struct verify_report *out, const struct verify_options *o, struct error *err);
void verify_report_release(struct verify_report *r);

/* The verdict for one running container: want_tag/want_digest are Git's (either may be NULL),
 * running_image and image_id what the pod status reports. A different digest, or a running
 * tag other than want_tag, is drift; an empty imageID is not-running; an imageID without a
 * repository digest, or an unknown want_digest, is unknown. *reason gets one line (free()
 * it). Returns 0 or IG_EFAIL (out of memory). */
int verify_compare(enum verify_status *out, char **reason, const char *want_tag,
                   const char *want_digest, const char *running_image, const char *image_id);

/* "ok", "drift", "not-running", "unknown" (static storage). */
const char *verify_status_name(enum verify_status s);

struct verify_record;
/* x as the one verification record (report/audit.h), borrowing x's strings. */
void verify_result_record(struct verify_record *out, const struct verify_result *x);

/* The metric family name and its declaration (a gauge with labels policy, workload). */
#define VERIFY_METRIC_DRIFT "imageguard_running_drift"
int verify_metrics_declare(struct metrics *m);

/* Replaces every series of imageguard_running_drift with the report's: 1 for a
 * (policy, workload) with any drifting container, else 0. Items with `failed` set do not
 * count, and a report with failures updates the series instead of replacing them: a pair
 * that could not be checked keeps its last value (or stays absent). Returns 0 or a
 * metrics error. */
int verify_metrics_publish(struct metrics *m, const struct verify_report *r);

#endif
