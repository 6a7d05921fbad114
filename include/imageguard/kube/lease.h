/* Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it
 * (tools/leaderelection/leaderelection.go, tryAcquireOrRenew and release): a pure state machine
 * over a client (get, create, update of the Lease) and a clock, so tests drive it with fakes.
 * Not thread-safe: one thread steps it (src/controller/leader.c). */
#ifndef IMAGEGUARD_KUBE_LEASE_H
#define IMAGEGUARD_KUBE_LEASE_H

#include <stdbool.h>
#include <stdint.h>

struct error;

#define LEASE_MAX_ID 256  /* holderIdentity, bytes with the NUL */
#define LEASE_MAX_TIME 40 /* a MicroTime "2026-12-01T10:21:03.123456Z" with the NUL */

/* The Lease's spec, as LeaderElectionRecord holds it. */
struct lease_record {
	char holder[LEASE_MAX_ID]; /* holderIdentity; "" nobody (released) */
	long duration_s;           /* leaseDurationSeconds */
	char acquire_time[LEASE_MAX_TIME];
	char renew_time[LEASE_MAX_TIME];
	long transitions; /* leaseTransitions */
};

/* The Lease object behind the record. Each call may block (a request); ctx is the client's.
 * get: 0 with *out filled, and the object (its resourceVersion) kept for the next update;
 *   IG_ENOTFOUND when there is no Lease; another negative code on failure.
 * create: 0 (the created object kept), IG_ECONFLICT when it exists, negative on failure.
 * update: a PUT of the kept object with rec as its spec: 0 (the new object kept),
 *   IG_ECONFLICT when the resourceVersion moved (409), IG_EFAIL when nothing is kept yet. */
struct lease_client {
	void *ctx;
	int (*get)(void *ctx, struct lease_record *out, struct error *err);
	int (*create)(void *ctx, const struct lease_record *rec, struct error *err);
	int (*update)(void *ctx, const struct lease_record *rec, struct error *err);
};

/* The clock: mono() is CLOCK_MONOTONIC in ms (all local decisions), wall() writes the
 * MicroTime for acquireTime/renewTime (only written, never trusted: another node's clock). */
struct lease_clock {
	void *ctx;
	int64_t (*mono)(void *ctx);
	void (*wall)(void *ctx, char out[LEASE_MAX_TIME]);
};

/* Flux's flags (fluxcd/pkg runtime/leaderelection): 35s, 30s, 5s. */
struct lease_timing {
	int64_t lease_ms; /* --leader-election-lease-duration */
	int64_t renew_ms; /* --leader-election-renew-deadline */
	int64_t retry_ms; /* --leader-election-retry-period */
};
#define LEASE_TIMING_DEFAULT                                                                       \
	{                                                                                          \
		35000, 30000, 5000                                                                 \
	}
#define LEASE_JITTER_FACTOR 1.2 /* client-go's JitterFactor */

/* client-go's NewLeaderElector rules: lease > renew deadline > 1.2 x retry, each > 0.
 * Returns 0 or IG_EUSAGE with the rule broken ("leaseDuration must be greater than
 * renewDeadline", "renewDeadline must be greater than retryPeriod*JitterFactor", ...). */
int lease_timing_check(const struct lease_timing *t, struct error *err);

/* The longest push a fenced write may assume: renew deadline - 2 x retry period, so the gate
 * stays open through one missed renewal and closes after two; when timings that client-go
 * accepts leave that at or under (renew deadline - retry period) / 2 (e.g. 8s / 5s), half of
 * what one renewal period leaves instead. Always at least 1 ms and under renew - retry, so
 * the gate never admits a write past the renew deadline, and a leader renewing on time always
 * has it open. For timings that pass lease_timing_check. */
int64_t lease_push_ms(const struct lease_timing *t);

enum lease_state {
	LEASE_STANDBY, /* not holding the lease (yet) */
	LEASE_LEADING, /* holding it: the last successful write is in renewed_at */
	LEASE_LOST,    /* held it and could not renew within the renew deadline: final */
};

struct lease {
	struct lease_client client;
	struct lease_clock clock;
	struct lease_timing timing;
	const char *identity; /* borrowed: this candidate's holderIdentity */
	enum lease_state state;
	struct lease_record observed; /* the record last read or written */
	bool have_observed;
	int64_t observed_at; /* mono ms when observed last changed */
	int64_t renewed_at;  /* mono ms at the start of the last successful create/update */
	bool fast_path;      /* the last success took the fast path (tests) */
};

/* Sets l up as a standby; client, clock and identity are copied (identity borrowed). */
void lease_init(struct lease *l, const struct lease_client *c, const struct lease_clock *clk,
                const struct lease_timing *t, const char *identity);

/* Whether the last observed record names this candidate. */
bool lease_is_leader(const struct lease *l);

/* One tryAcquireOrRenew: the fast path (a leader updates with the cached object while its lease
 * is valid), else get; absent: create; held by another and not expired (observed unchanged for
 * less than its leaseDurationSeconds): not acquired; else update (leaseTransitions + 1 on a
 * takeover, acquireTime kept on a renewal). Returns 1 when this candidate holds the lease
 * after the call, 0 when another does, negative (the client's code, err set) on failure. */
int lease_try_acquire_or_renew(struct lease *l, struct error *err);

/* One step of the election, called every retry period (jittered while standby): standby tries
 * to acquire; a leader renews, and steps down (LEASE_LOST, final) when no renewal succeeded for
 * the renew deadline. Returns the state after the step; err says why the last try failed. */
enum lease_state lease_step(struct lease *l, struct error *err);

/* A standby sees the Lease's record at mono time `at` by other means than its own get (a
 * watch, as the change happens): a record that differs from the observed one becomes it, as of
 * at, so that a standby counts a dead leader's lease from when its last renewal arrived, not
 * from its own next get (up to 2.2 retry periods later). A record naming this candidate, or
 * seen while not standby, is ignored: only gets and writes move what a leader observes. at must
 * not be earlier than the change (a watch event's arrival is not). */
void lease_observe(struct lease *l, const struct lease_record *r, int64_t at);

/* How long a standby waits before its next step, given its jittered retry period: that
 * period, or less when the record another candidate holds expires sooner (observed unchanged
 * for its leaseDurationSeconds): then 1 ms past that moment, so a standby takes over a dead
 * leader's lease when it expires, not up to 2.2 retry periods later as client-go's JitterUntil
 * does. An expiry already passed (the last try failed) leaves the period, so a down API server
 * is not polled faster. */
int64_t lease_standby_wait(const struct lease *l, int64_t jittered_ms);

/* client-go's release: when leading, an update with holderIdentity "", leaseDurationSeconds 1
 * and the transitions kept, so a standby takes over at its next try. Returns 0 (also when not
 * leading) or the client's negative code. */
int lease_release(struct lease *l, struct error *err);

/* The fencing gate: whether a write of up to push_ms, started now, ends before
 * renewed_at + renew deadline (so before any other candidate can take over). False unless
 * LEASE_LEADING. */
bool lease_may_write(const struct lease *l, int64_t now_ms, int64_t push_ms);

#endif
