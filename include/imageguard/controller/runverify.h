/* The periodic verification inside `imageguard run --verify-interval` (issue 8): one
 * verify_pass on the run loop's schedule, its drift published as imageguard_running_drift,
 * logged and audited, its failures logged and counted without ever stopping `run`. */
#ifndef IMAGEGUARD_RUNVERIFY_H
#define IMAGEGUARD_RUNVERIFY_H

#include <signal.h>

struct audit;
struct config;
struct error;
struct leader;
struct metrics;
struct registry_client;
struct shard_spec;
struct verify_report;

/* Called after each verification that ran (the report and cfg borrowed for the call). */
typedef void (*runverify_report_fn)(void *arg, const struct config *cfg,
                                    const struct verify_report *report);

/* Counter of verifications that could not check everything (API, registry or Git failure). */
#define RUNVERIFY_METRIC_ERRORS "imageguard_verify_errors_total"
/* Gauge: Unix time of the last verification in which every check could be made. */
#define RUNVERIFY_METRIC_LAST_SUCCESS "imageguard_verify_last_success_timestamp_seconds"

struct runverify_options {
	const char *kubeconfig;            /* NULL: the in-cluster service account */
	const char *state_dir;             /* the Git clone cache shared with reconcile */
	const char *secrets_dir;           /* NULL: "." */
	struct metrics *metrics;           /* borrowed */
	struct registry_client *registry;  /* borrowed: the run loop's client */
	struct audit *audit;               /* borrowed; NULL: no audit records */
	const volatile sig_atomic_t *stop; /* SIGTERM ends API requests in flight; may be NULL */
	runverify_report_fn on_report;     /* NULL: none (run --kube: drift Events) */
	void *on_report_arg;
	const struct shard_spec *shard; /* borrowed; NULL: every automation, else only the
	                                   automations this shard owns are verified */
	struct leader *leader;          /* borrowed; NULL: no leader election; else only the
	                                   leader verifies and hands drift to on_report */
};

struct runverify;

/* Declares the metrics (imageguard_running_drift, the two above) and reads the Kubernetes
 * configuration once, so a missing or broken one is a startup error. o is copied (its
 * pointers stay borrowed). Returns 0, IG_EUSAGE / IG_EINVALID / IG_ENOTFOUND (err names the
 * file or says that no in-cluster service account exists) or IG_EFAIL. Free with
 * runverify_free. */
int runverify_new(struct runverify **out, const struct runverify_options *o, struct error *err);
void runverify_free(struct runverify *v);

/* One verification against cfg (borrowed), of the automations o->shard owns; when o->leader
 * is set and this replica does not lead, nothing (a standby verifies nothing and writes
 * nothing), and a lease lost during the verification withholds its report from
 * o->on_report (no drift Event from a deposed leader). Re-reads the Kubernetes configuration and
 * the token (a rotated service account token is picked up), runs verify_pass, publishes the drift
 * gauge, writes one audit record per drifting container, hands the report to o->on_report (also
 * when some checks failed: the drift found is still drift) and logs a summary. A failure is logged
 * (event verify.error) and counted, never returned to stop the caller. Returns 0 when every check
 * could be made, 1 otherwise. */
int runverify_once(struct runverify *v, const struct config *cfg);

#endif
