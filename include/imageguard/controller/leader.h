/* `run --enable-leader-election`: the Lease renewed on its own thread (so a long pass cannot
 * miss a renewal), the imageguard_leader gauge, and the fencing gate and generation that the
 * commits of a pass read. Thread-safe: the renewal thread writes, any thread reads. */
#ifndef IMAGEGUARD_LEADER_H
#define IMAGEGUARD_LEADER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "imageguard/kube/lease.h"

struct error;
struct metrics;
struct reconcile_fence;

struct leader_options {
	const char *kubeconfig; /* NULL: the in-cluster service account */
	const char *shard_key;  /* NULL/"": the unsharded lease (lease_name) */
	struct lease_timing timing;
	bool release_on_cancel;  /* --leader-election-release-on-cancel */
	struct metrics *metrics; /* imageguard_leader declared here; NULL: none */
	/* Set to 1 by the renewal thread when the lease is lost (NULL: none): the stop flag of
	 * the clients that write under the lease, so a request in flight is cut at once. */
	volatile sig_atomic_t *lost_flag;
};

struct leader;

/* Validates the timing (IG_EUSAGE, client-go's words), reads the kubeconfig, picks the lease's
 * namespace, name and this candidate's identity, and starts the renewal thread (standby until
 * it acquires). Returns 0, IG_EUSAGE, IG_EINVALID/IG_ENOTFOUND (kubeconfig) or IG_EFAIL. */
int leader_start(struct leader **out, const struct leader_options *o, struct error *err);

/* Stops the thread (a request in flight is cut) and, when leading and release_on_cancel,
 * releases the lease (holder "", 1s). Call only when nothing guarded by the lease runs any
 * more. NULL-safe; frees l. */
void leader_stop(struct leader *l);

/* Holding the lease now (renewed within the renew deadline). */
bool leader_is_leading(struct leader *l);
/* Held it and lost it (renew deadline passed, or another holder seen): final. */
bool leader_lost(struct leader *l);

/* The fencing gate: leading, and a push of push_ms started now ends before the last
 * successful renewal + the renew deadline (CLOCK_MONOTONIC). */
bool leader_may_write(struct leader *l, int64_t push_ms);

/* leader_may_write, and when it admits the write, *until = the instant (CLOCK_MONOTONIC ms)
 * the push of push_ms must end by: now + push_ms, before the renew deadline. */
bool leader_may_write_until(struct leader *l, int64_t push_ms, int64_t *until);

/* The push timeout fenced writes assume (lease_push_ms of the timings: renew deadline - 2 x
 * retry period, never under 1 ms); the push's Git I/O timeout is capped at it. */
int64_t leader_push_ms(const struct leader *l);

/* "NAME/TRANSITIONS": the lease and its generation, for the Imageguard-Lease trailer (into
 * out, n bytes). */
void leader_generation(struct leader *l, char *out, size_t n);

/* The lease's name (borrowed, valid until leader_stop). */
const char *leader_lease_name(const struct leader *l);

/* The pass's fencing gate over this leader (reconcile_options.fence): *out borrows l. */
void leader_fence(struct reconcile_fence *out, struct leader *l);

#endif
