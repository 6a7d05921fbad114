/* The Lease state machine of client-go's leaderelection (tryAcquireOrRenew, renew, release),
 * over a client and a clock given by the caller: include/imageguard/kube/lease.h. */
#include <stdio.h>
#include <string.h>

#include "imageguard/kube/lease.h"
#include "imageguard/util/error.h"

int lease_timing_check(const struct lease_timing *t, struct error *err)
{
	/* client-go NewLeaderElector, in its order and words */
	if (t->lease_ms <= t->renew_ms)
		return error_set(err, IG_EUSAGE,
		                 "leaseDuration must be greater than renewDeadline");
	if ((double)t->renew_ms <= LEASE_JITTER_FACTOR * (double)t->retry_ms)
		return error_set(err, IG_EUSAGE,
		                 "renewDeadline must be greater than retryPeriod*JitterFactor");
	if (t->lease_ms < 1)
		return error_set(err, IG_EUSAGE, "leaseDuration must be greater than zero");
	if (t->renew_ms < 1)
		return error_set(err, IG_EUSAGE, "renewDeadline must be greater than zero");
	if (t->retry_ms < 1)
		return error_set(err, IG_EUSAGE, "retryPeriod must be greater than zero");
	return 0;
}

void lease_init(struct lease *l, const struct lease_client *c, const struct lease_clock *clk,
                const struct lease_timing *t, const char *identity)
{
	memset(l, 0, sizeof(*l));
	l->client = *c;
	l->clock = *clk;
	l->timing = *t;
	l->identity = identity;
	l->state = LEASE_STANDBY;
}

bool lease_is_leader(const struct lease *l)
{
	return l->have_observed && strcmp(l->observed.holder, l->identity) == 0;
}

static bool same_record(const struct lease_record *a, const struct lease_record *b)
{
	return strcmp(a->holder, b->holder) == 0 && a->duration_s == b->duration_s &&
	       strcmp(a->acquire_time, b->acquire_time) == 0 &&
	       strcmp(a->renew_time, b->renew_time) == 0 && a->transitions == b->transitions;
}

static void observe(struct lease *l, const struct lease_record *r)
{
	l->observed = *r;
	l->have_observed = true;
	l->observed_at = l->clock.mono(l->clock.ctx);
}

/* client-go isLeaseValid: the observed record has not gone unchanged for its own duration. */
static bool lease_valid(const struct lease *l, int64_t now)
{
	return l->have_observed && l->observed_at + l->observed.duration_s * 1000 > now;
}

/* The record this candidate writes: itself, the configured duration, now. The duration goes
 * up to whole seconds where client-go truncates it: a 1.5 s lease written as 1 s would let a
 * standby take over while the leader's gate (renew deadline, under the lease) is still open. */
static void fresh_record(struct lease *l, struct lease_record *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->holder, sizeof(r->holder), "%s", l->identity);
	r->duration_s = (long)((l->timing.lease_ms + 999) / 1000);
	l->clock.wall(l->clock.ctx, r->renew_time);
	memcpy(r->acquire_time, r->renew_time, sizeof(r->acquire_time));
}

static int wrote(struct lease *l, const struct lease_record *r, int64_t started, bool fast)
{
	observe(l, r);
	l->renewed_at = started;
	l->fast_path = fast;
	return 1;
}

/* 2.-3. of tryAcquireOrRenew: get (or create), check the holder and time, update. */
static int slow_path(struct lease *l, struct lease_record *rec, int64_t t0, struct error *err)
{
	struct lease_record old;
	int rc = l->client.get(l->client.ctx, &old, err);

	if (rc == IG_ENOTFOUND) {
		if ((rc = l->client.create(l->client.ctx, rec, err)) < 0)
			return rc;
		return wrote(l, rec, t0, false);
	}
	if (rc < 0)
		return rc;
	if (!l->have_observed || !same_record(&l->observed, &old))
		observe(l, &old);
	if (old.holder[0] && lease_valid(l, t0) && !lease_is_leader(l))
		return 0; /* held by another, not yet expired */
	if (lease_is_leader(l)) {
		memcpy(rec->acquire_time, old.acquire_time, sizeof(rec->acquire_time));
		rec->transitions = old.transitions;
	} else {
		rec->transitions = old.transitions + 1;
	}
	if ((rc = l->client.update(l->client.ctx, rec, err)) < 0)
		return rc;
	return wrote(l, rec, t0, false);
}

int lease_try_acquire_or_renew(struct lease *l, struct error *err)
{
	struct lease_record rec;
	int64_t t0 = l->clock.mono(l->clock.ctx);

	fresh_record(l, &rec);
	/* 1. the fast path: the leader updates the object it cached, assumed current */
	if (lease_is_leader(l) && lease_valid(l, t0)) {
		struct error fast = ERROR_INIT;

		memcpy(rec.acquire_time, l->observed.acquire_time, sizeof(rec.acquire_time));
		rec.transitions = l->observed.transitions;
		if (l->client.update(l->client.ctx, &rec, &fast) == 0)
			return wrote(l, &rec, t0, true);
		fresh_record(l, &rec); /* falls back to the slow path */
	}
	return slow_path(l, &rec, t0, err);
}

enum lease_state lease_step(struct lease *l, struct error *err)
{
	int rc;

	if (l->state == LEASE_LOST)
		return l->state;
	rc = lease_try_acquire_or_renew(l, err);
	if (rc == 1) {
		*err = (struct error)ERROR_INIT; /* a 404 before the create is no failure */
		l->state = LEASE_LEADING;
		return l->state;
	}
	if (rc == 0 && l->state == LEASE_LEADING)
		error_set(err, IG_ECONFLICT, "lease held by '%s'", l->observed.holder);
	if (l->state == LEASE_LEADING &&
	    (rc == 0 || l->clock.mono(l->clock.ctx) - l->renewed_at >= l->timing.renew_ms))
		l->state = LEASE_LOST; /* another holds it, or the renew deadline passed */
	return l->state;
}

void lease_observe(struct lease *l, const struct lease_record *r, int64_t at)
{
	if (l->state != LEASE_STANDBY || strcmp(r->holder, l->identity) == 0 ||
	    (l->have_observed && same_record(&l->observed, r)))
		return;
	l->observed = *r;
	l->have_observed = true;
	l->observed_at = at;
}

int64_t lease_standby_wait(const struct lease *l, int64_t jittered_ms)
{
	int64_t left;

	if (!l->have_observed || !l->observed.holder[0] || lease_is_leader(l))
		return jittered_ms;
	left = l->observed_at + l->observed.duration_s * 1000 - l->clock.mono(l->clock.ctx);
	return left >= 0 && left + 1 < jittered_ms ? left + 1 : jittered_ms;
}

int lease_release(struct lease *l, struct error *err)
{
	struct lease_record rec;
	int rc;

	if (!lease_is_leader(l))
		return 0;
	memset(&rec, 0, sizeof(rec));
	rec.duration_s = 1;
	rec.transitions = l->observed.transitions;
	l->clock.wall(l->clock.ctx, rec.renew_time);
	memcpy(rec.acquire_time, rec.renew_time, sizeof(rec.acquire_time));
	if ((rc = l->client.update(l->client.ctx, &rec, err)) < 0)
		return rc;
	observe(l, &rec);
	l->state = LEASE_STANDBY;
	return 0;
}

int64_t lease_push_ms(const struct lease_timing *t)
{
	int64_t two = t->renew_ms - 2 * t->retry_ms, half = (t->renew_ms - t->retry_ms) / 2;
	int64_t ms = two > half ? two : half;

	return ms > 0 ? ms : 1;
}

bool lease_may_write(const struct lease *l, int64_t now_ms, int64_t push_ms)
{
	return l->state == LEASE_LEADING && now_ms + push_ms < l->renewed_at + l->timing.renew_ms;
}
