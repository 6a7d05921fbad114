/* One reconcile pass (CONTRACT §1, §6): list each repository once, read the markers of every
 * automation's Git tree, decide each marker with the guard, confirm by manifest HEAD, and
 * write one commit per automation that re-decides on the fresh head at every push attempt.
 * With dry_run (plan) nothing is written: no commit, push, audit record or metric. */
#ifndef IMAGEGUARD_RECONCILE_H
#define IMAGEGUARD_RECONCILE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct audit;
struct config;
struct config_automation;
struct error;
struct metrics;
struct registry_client;
struct report;
struct shard_spec;

/* The fencing gate a pass asks before each push, under run's leader election (the controller's
 * leader module fills it: leader_fence). Each function gets ctx. */
struct reconcile_fence {
	void *ctx;
	/* Still the leader, with push_ms left for a push before the lease could expire; *until
	 * (when non-NULL) is the instant the push must end by (CLOCK_MONOTONIC ms). */
	bool (*may_write_until)(void *ctx, int64_t push_ms, int64_t *until);
	/* The longest push the gate admits (ms). */
	int64_t (*push_ms)(const void *ctx);
	/* "<lease>/<generation>" for the commit's `Imageguard-Lease:` trailer. */
	void (*generation)(void *ctx, char *out, size_t n);
	/* The Lease's name, for messages (borrowed). */
	const char *(*lease_name)(const void *ctx);
};

struct reconcile_options {
	const struct config *config;    /* borrowed */
	const char *state_dir;          /* the Git clone cache lives below it */
	const char *secrets_dir;        /* NULL: secrets resolve against "." */
	unsigned concurrency;           /* registry scans at once */
	bool dry_run;                   /* plan: decide only */
	struct audit *audit;            /* NULL: no audit records */
	struct metrics *metrics;        /* NULL: no metrics (declared by passmetrics_declare) */
	struct registry_client *client; /* NULL: a client is made for the pass */
	/* When non-NULL and set (by a signal handler), no further automation is started; a commit
	 * already being pushed is finished. */
	const volatile sig_atomic_t *stop;
	/* --shards/--shard-index: only the automations this shard owns are read and written,
	 * and only the policies it is the one to report (shard_owns, shard_reports_policy).
	 * NULL or shards 0: every automation. Borrowed. */
	const struct shard_spec *shard;
	/* NULL, or run's leader election: each push attempt first passes the gate (else the
	 * writes fail, read-only), its commit carries `Imageguard-Lease:`, and a head written
	 * under the same lease with a higher generation is not pushed on. Borrowed. */
	const struct reconcile_fence *fence;
	/* NULL, or the signature gate's verdicts kept across passes (verifygate.h). Borrowed. */
	struct verifycache *verify_cache;
	/* NULL, or told the policy ("ns/name") of every marker read of an automation this shard
	 * owns, and NULL for an owned automation whose markers could not be read. It returns
	 * false when that policy is absent from the configuration only because it is listed for
	 * the next one (run --kube under hash sharding: kubesource_marked_note): the marker is
	 * skipped without the unknown-policy warning. A standby's warm-up reads the markers for it
	 * too. */
	bool (*marker_named)(void *ctx, const char *policy);
	void *marker_ctx;
};

/* Runs one pass and fills out (caller-owned, REPORT_INIT; release with report_release).
 * Per-policy and per-repository failures are items with decision error (out->errors counts
 * them), never a stop for the others. Returns 0, or negative only when the pass could not
 * run at all (out of memory, threads). */
int reconcile_pass(struct report *out, const struct reconcile_options *o, struct error *err);

/* A standby's preparation for taking over (run --enable-leader-election): clones automation
 * a's remote into the Git cache below o->state_dir, or fetches and syncs a clone there,
 * exactly as a pass opens it (o's state_dir, secrets_dir, stop and fence are read), reads its
 * markers for o->marker_named (as a pass would; NULL to it when they cannot be read), and
 * writes nothing else: no commit, no push. Returns 0 or the open's or the scan's error. */
int reconcile_warm_git(const struct reconcile_options *o, const struct config_automation *a,
                       struct error *err);

#endif
