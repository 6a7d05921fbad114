/* The pass's metric families and updates, in one place so that reconcile, run and their
 * tests name each family once. */
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "imageguard/guard/guard.h"
#include "imageguard/util/metrics.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/report/report.h"
#include "imageguard/pass/scan.h"
#include "imageguard/config/config.h"
#include "imageguard/registry/registry.h"

static const char *const decision_labels[] = {"policy", "decision", "reason"};
static const char *const registry_labels[] = {"registry", "code"};
static const char *const image_labels[] = {"image"};
static const char *const policy_labels[] = {"policy"};
static const char *const verify_labels[] = {"policy", "result"};
static const double duration_buckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

int passmetrics_declare(struct metrics *m)
{
	int error = 0;

	if (!error)
		error = metrics_declare(m, "imageguard_decisions_total", METRICS_COUNTER,
		                        "Marker decisions by policy, decision and reason.",
		                        decision_labels, 3, NULL, 0);
	if (!error)
		error =
		    metrics_declare(m, "imageguard_registry_requests_total", METRICS_COUNTER,
		                    "Registry HTTP responses by registry and status (0: transport "
		                    "failure).",
		                    registry_labels, 2, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_registry_tags", METRICS_GAUGE,
		                        "Tags in the last successful listing of an image.",
		                        image_labels, 1, NULL, 0);
	if (!error)
		error =
		    metrics_declare(m, "imageguard_reconcile_duration_seconds", METRICS_HISTOGRAM,
		                    "Duration of reconcile passes.", NULL, 0, duration_buckets,
		                    sizeof(duration_buckets) / sizeof(duration_buckets[0]));
	if (!error)
		error = metrics_declare(
		    m, "imageguard_last_success_timestamp_seconds", METRICS_GAUGE,
		    "Unix time of the end of the last complete pass.", NULL, 0, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_commits_total", METRICS_COUNTER,
		                        "Commits pushed.", NULL, 0, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_settling", METRICS_GAUGE,
		                        "1 while a policy's candidate waits out its settle window.",
		                        policy_labels, 1, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_current_missing_total", METRICS_COUNTER,
		                        "Decisions where the committed tag was absent from a "
		                        "successful listing (stale or truncated registry data).",
		                        policy_labels, 1, NULL, 0);
	if (!error)
		error =
		    metrics_declare(m, "imageguard_verify_total", METRICS_COUNTER,
		                    "Signature checks of candidates about to be written, by "
		                    "policy and result (ok, unsigned, bad-signature, ..., error).",
		                    verify_labels, 2, NULL, 0);
	return error;
}

static const char *const webhook_labels[] = {"result"};
static const char *const reject_labels[] = {"reason"};
static const double push_buckets[] = {0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900};

int passmetrics_declare_webhook(struct metrics *m)
{
	int error = metrics_declare(m, "imageguard_webhook_requests_total", METRICS_COUNTER,
	                            "Webhook requests by result (accepted, ignored, "
	                            "unauthorized, bad-request).",
	                            webhook_labels, 1, NULL, 0);

	if (!error)
		error = metrics_declare(
		    m, "imageguard_webhook_rejected_total", METRICS_COUNTER,
		    "Webhook requests refused by reason (unauthorized, "
		    "length-required, too-large, timeout); each is logged at most once a "
		    "minute per client address.",
		    reject_labels, 1, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_push_to_commit_seconds", METRICS_HISTOGRAM,
		                        "From a push notification's timestamp to the commit of "
		                        "the pass it started.",
		                        NULL, 0, push_buckets,
		                        sizeof(push_buckets) / sizeof(push_buckets[0]));
	return error;
}

static void observe_response(void *ctx, const char *registry, long code)
{
	char code_text[16];
	const char *values[2] = {registry, code_text};

	snprintf(code_text, sizeof(code_text), "%ld", code);
	metrics_add(ctx, "imageguard_registry_requests_total", values, 1);
}

int passmetrics_client_new(struct registry_client **out, struct metrics *m, bool memo,
                           struct error *err)
{
	struct registry_options opts;

	registry_options_init(&opts);
	opts.skip_digest = true; /* scan_tags_sha256 computes it where it is read */
	opts.memo_listings = memo;
	if (m) {
		opts.observe = observe_response;
		opts.observe_ctx = m;
	}
	return registry_client_new(out, &opts, err);
}

void passmetrics_decision(struct metrics *m, const struct report_item *it)
{
	const char *values[3] = {it->policy, guard_decision_name(it->decision),
	                         guard_reason_name(it->reason)};

	if (!m)
		return;
	metrics_add(m, "imageguard_decisions_total", values, 1);
	if (it->warnings & GUARD_WARN_CURRENT_MISSING)
		metrics_add(m, "imageguard_current_missing_total", values, 1);
}

void passmetrics_verify(struct metrics *m, const char *policy, const char *result)
{
	const char *values[2] = {policy, result};

	if (m)
		metrics_add(m, "imageguard_verify_total", values, 1);
}

void passmetrics_settling(struct metrics *m, const struct report *r)
{
	/* zeros first, then ones: one settling marker is enough whatever the order */
	for (int pass = 0; m && pass < 2; pass++)
		for (size_t i = 0; i < r->len; i++) {
			const char *values[1] = {r->items[i].policy};
			bool settling = r->items[i].reason == GUARD_SETTLING;

			if (settling == (pass == 1))
				metrics_set(m, "imageguard_settling", values, settling ? 1 : 0);
		}
}

void passmetrics_commit(struct metrics *m)
{
	if (m)
		metrics_add(m, "imageguard_commits_total", NULL, 1);
}

void passmetrics_listings(struct metrics *m, const struct scan *scans, size_t n)
{
	for (size_t i = 0; m && i < n; i++) {
		const char *values[1] = {scans[i].repo->image};

		if (scans[i].done && scans[i].rc == 0)
			metrics_set(m, "imageguard_registry_tags", values,
			            (double)scans[i].listing.tags.len);
	}
}

void passmetrics_pass_done(struct metrics *m, const struct timespec *t0)
{
	struct timespec t1;

	if (!m)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	metrics_observe(m, "imageguard_reconcile_duration_seconds", NULL,
	                (double)(t1.tv_sec - t0->tv_sec) +
	                    (double)(t1.tv_nsec - t0->tv_nsec) / 1e9);
	metrics_set(m, "imageguard_last_success_timestamp_seconds", NULL, (double)time(NULL));
}
