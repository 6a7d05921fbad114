/* `run --verify-interval`: one verification per call on the run loop's thread, using the loop's
 * registry client and Git clone cache; what drifts becomes a gauge, log lines and audit
 * records, and a failure is logged and counted but never stops the loop. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/report/audit.h"
#include "imageguard/util/error.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/controller/leader.h"
#include "imageguard/util/log.h"
#include "imageguard/util/metrics.h"
#include "imageguard/controller/runverify.h"
#include "imageguard/inspect/verify.h"

struct runverify {
	struct runverify_options o;
};

/* --kubeconfig, else the in-cluster service account (run is meant to run in a pod; a
 * workstation passes --kubeconfig). */
static int load(struct kubeconfig *kc, const char *path, struct error *err)
{
	if (path)
		return kubeconfig_load(kc, path, err);
	return kubeconfig_in_cluster(kc, NULL, err); /* its message suggests --kubeconfig */
}

static int declare(struct metrics *m)
{
	int error;

	if ((error = verify_metrics_declare(m)) < 0 ||
	    (error = metrics_declare(m, RUNVERIFY_METRIC_ERRORS, METRICS_COUNTER,
	                             "verifications of running images that could not check "
	                             "everything (Kubernetes API, registry or Git failure)",
	                             NULL, 0, NULL, 0)) < 0 ||
	    (error = metrics_declare(m, RUNVERIFY_METRIC_LAST_SUCCESS, METRICS_GAUGE,
	                             "Unix time of the last verification of running images in "
	                             "which every check could be made",
	                             NULL, 0, NULL, 0)) < 0)
		return error;
	/* the counter exists at 0 from the start, so rate() and increase() see its first step */
	return metrics_add(m, RUNVERIFY_METRIC_ERRORS, NULL, 0);
}

int runverify_new(struct runverify **out, const struct runverify_options *o, struct error *err)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct runverify *v = NULL;
	int error;

	*out = NULL;
	if ((error = declare(o->metrics)) < 0)
		return error_set(err, IG_EFAIL, "verify metrics: cannot declare them");
	if ((error = load(&kc, o->kubeconfig, err)) < 0)
		goto done;
	if (!(v = calloc(1, sizeof(*v)))) {
		error = error_oom(err);
		goto done;
	}
	v->o = *o;
	*out = v;
done:
	kubeconfig_release(&kc);
	return error;
}

void runverify_free(struct runverify *v)
{
	free(v);
}

static void audit_drift(struct runverify *v, const struct verify_report *r)
{
	struct error err = ERROR_INIT;
	bool wrote = false;

	for (size_t i = 0; v->o.audit && i < r->len; i++) {
		const struct verify_result *x = &r->items[i];
		struct verify_record d;

		if (x->status != VERIFY_DRIFT)
			continue;
		verify_result_record(&d, x);
		if (audit_write_drift(v->o.audit, &d, &err) < 0) {
			log_error("verify.audit", "%s", err.msg);
			return;
		}
		wrote = true;
	}
	if (wrote && audit_sync(v->o.audit, &err) < 0)
		log_error("verify.audit", "%s", err.msg);
}

static void failed(struct runverify *v, const char *what, const char *detail)
{
	log_error("verify.error", "%s%s", what, detail);
	metrics_add(v->o.metrics, RUNVERIFY_METRIC_ERRORS, NULL, 1);
}

int runverify_once(struct runverify *v, const struct config *cfg)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct kube_client *kube = NULL;
	struct kube_options ko;
	struct verify_report report = VERIFY_REPORT_INIT;
	struct verify_options vo;
	struct error err = ERROR_INIT;
	struct timespec t0, t1;
	int rc = 1;

	if (v->o.leader && !leader_is_leading(v->o.leader)) {
		log_debug("verify.skip", "not leading: the leader verifies");
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kube_options_init(&ko);
	ko.stop = v->o.stop;
	/* read again every time: a rotated token or an edited kubeconfig is picked up */
	if (load(&kc, v->o.kubeconfig, &err) < 0 || kube_client_new(&kube, &kc, &ko, &err) < 0) {
		failed(v, "verification not run: ", err.msg);
		goto done;
	}
	vo = (struct verify_options){cfg,  v->o.state_dir, v->o.secrets_dir, NULL,
	                             kube, v->o.registry,  v->o.shard};
	if (verify_pass(&report, &vo, &err) < 0) {
		failed(v, "verification not run: ", err.msg);
		goto done;
	}
	if (verify_metrics_publish(v->o.metrics, &report) < 0)
		log_error("verify.metrics", "cannot publish %s", VERIFY_METRIC_DRIFT);
	audit_drift(v, &report);
	if (v->o.leader && !leader_is_leading(v->o.leader))
		log_warn("verify.skip",
		         "lease '%s' lost during the verification: its drift is "
		         "not reported as Events (the new leader's verification is)",
		         leader_lease_name(v->o.leader));
	else if (v->o.on_report)
		v->o.on_report(v->o.on_report_arg, cfg, &report);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("verify.pass", "%zu ok, %zu drift, %zu not running, %zu unknown in %.3fs",
	         report.counts[VERIFY_OK], report.counts[VERIFY_DRIFT],
	         report.counts[VERIFY_NOT_RUNNING], report.counts[VERIFY_UNKNOWN],
	         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (report.failures) {
		failed(v, "",
		       "some checks failed (Kubernetes API, registry or Git; see the "
		       "verify.kube/verify.registry/verify.git lines); their workloads keep "
		       "their last imageguard_running_drift value");
		goto done;
	}
	metrics_set(v->o.metrics, RUNVERIFY_METRIC_LAST_SUCCESS, NULL, (double)time(NULL));
	rc = 0;
done:
	verify_report_release(&report);
	kube_client_free(kube);
	kubeconfig_release(&kc);
	return rc;
}
