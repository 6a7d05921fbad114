/* What one pass tells Prometheus (CONTRACT §8): the metric families, declared once, and the
 * updates a pass makes. Every update takes the registry (NULL: no metrics, a no-op). */
#ifndef IMAGEGUARD_PASSMETRICS_H
#define IMAGEGUARD_PASSMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct error;
struct metrics;
struct registry_client;
struct report;
struct report_item;
struct scan;

/* Declares the families CONTRACT §8 lists (and imageguard_current_missing_total). Returns 0
 * or the metrics module's error. */
int passmetrics_declare(struct metrics *m);
/* The webhook's families (run --webhook-listen): imageguard_webhook_requests_total{result} and
 * the imageguard_push_to_commit_seconds histogram. Returns as passmetrics_declare. */
int passmetrics_declare_webhook(struct metrics *m);

/* A registry client whose every response is counted in
 * imageguard_registry_requests_total{registry,code} (m may be NULL), listing without the tags'
 * digest (scan_tags_sha256 makes it when read); memo: it keeps listings between passes
 * (`run`, registry_options.memo_listings). */
int passmetrics_client_new(struct registry_client **out, struct metrics *m, bool memo,
                           struct error *err);

/* One decision: imageguard_decisions_total, and imageguard_current_missing_total when the
 * item carries the current-missing warning. */
void passmetrics_decision(struct metrics *m, const struct report_item *it);

/* One signature check of the gate (CONTRACT §12): imageguard_verify_total{policy,result},
 * result a status name ("ok", "unsigned", ...) or "error" (m may be NULL). */
void passmetrics_verify(struct metrics *m, const char *policy, const char *result);

/* imageguard_settling{policy}: 1 while any marker of the policy is hold/settling, else 0,
 * for every policy of the pass's report. */
void passmetrics_settling(struct metrics *m, const struct report *r);

/* One pushed commit: imageguard_commits_total. */
void passmetrics_commit(struct metrics *m);

/* The tag gauges of the n scans whose listing succeeded. */
void passmetrics_listings(struct metrics *m, const struct scan *scans, size_t n);

/* A complete pass that started at t0 (CLOCK_MONOTONIC): its duration, and the time of its end
 * as the last success (policies in error have their own counter). */
void passmetrics_pass_done(struct metrics *m, const struct timespec *t0);

#endif
