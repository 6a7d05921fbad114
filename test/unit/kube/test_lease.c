/* lease: client-go's leaderelection state machine with a fake clock and a fake API server
 * (one stored Lease with a resourceVersion, compare-and-swap updates, 404 and 409): create
 * when absent, blocked while held, takeover after the lease duration, the fast and slow renew
 * paths, 409 on a stale resourceVersion, step-down after the renew deadline, release, the
 * fencing gate and client-go's timing rules. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/git/commitmsg.h"
#include "imageguard/kube/lease.h"
#include "imageguard/kube/leaseclient.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

/* ---- the fake server: one Lease, resourceVersion counted, faults on demand ---- */

struct fake_server {
	bool exists;
	struct lease_record rec;
	long rv;
	int fail;            /* non-zero: every call answers this code (API down) */
	bool move_after_get; /* another writer updates right after each get */
	unsigned gets, creates, updates;
};

struct fake_client {
	struct fake_server *s;
	long cached_rv; /* 0: nothing cached */
};

static int64_t now_ms;

static int64_t fake_mono(void *ctx)
{
	(void)ctx;
	return now_ms;
}

static void fake_wall(void *ctx, char out[LEASE_MAX_TIME])
{
	(void)ctx;
	snprintf(out, LEASE_MAX_TIME, "2026-12-01T10:00:%02lld.%06lldZ",
	         (long long)(now_ms / 1000 % 60), (long long)(now_ms % 1000 * 1000));
}

static int fget(void *ctx, struct lease_record *out, struct error *err)
{
	struct fake_client *c = ctx;

	c->s->gets++;
	if (c->s->fail)
		return error_set(err, c->s->fail, "fake: down");
	if (!c->s->exists)
		return error_set(err, IG_ENOTFOUND, "fake: not found");
	*out = c->s->rec;
	c->cached_rv = c->s->rv;
	if (c->s->move_after_get)
		c->s->rv++;
	return 0;
}

static int fcreate(void *ctx, const struct lease_record *rec, struct error *err)
{
	struct fake_client *c = ctx;

	c->s->creates++;
	if (c->s->fail)
		return error_set(err, c->s->fail, "fake: down");
	if (c->s->exists)
		return error_set(err, IG_ECONFLICT, "fake: already exists");
	c->s->exists = true;
	c->s->rec = *rec;
	c->cached_rv = ++c->s->rv;
	return 0;
}

static int fupdate(void *ctx, const struct lease_record *rec, struct error *err)
{
	struct fake_client *c = ctx;

	c->s->updates++;
	if (c->s->fail)
		return error_set(err, c->s->fail, "fake: down");
	if (!c->cached_rv)
		return error_set(err, IG_EFAIL, "fake: lease not initialized");
	if (c->cached_rv != c->s->rv)
		return error_set(err, IG_ECONFLICT, "fake: 409 the object has been modified");
	c->s->rec = *rec;
	c->cached_rv = ++c->s->rv;
	return 0;
}

static const struct lease_clock clk = {NULL, fake_mono, fake_wall};
static const struct lease_timing timing = {3000, 2000, 500}; /* the integration tests' */

struct cand {
	struct fake_client fc;
	struct lease l;
};

static void cand_init_timed(struct cand *c, struct fake_server *s, const char *id,
                            const struct lease_timing *t)
{
	struct lease_client lc;

	c->fc.s = s;
	c->fc.cached_rv = 0;
	lc.ctx = &c->fc;
	lc.get = fget;
	lc.create = fcreate;
	lc.update = fupdate;
	lease_init(&c->l, &lc, &clk, t, id);
}

static void cand_init(struct cand *c, struct fake_server *s, const char *id)
{
	cand_init_timed(c, s, id, &timing);
}

START_TEST(create_when_absent)
{
	struct fake_server s = {0};
	struct cand a;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	ck_assert_int_eq(lease_try_acquire_or_renew(&a.l, &err), 1);
	ck_assert(s.exists && s.creates == 1 && s.gets == 1 && s.updates == 0);
	ck_assert_str_eq(s.rec.holder, "a_1");
	ck_assert_int_eq(s.rec.duration_s, 3);
	ck_assert_int_eq(s.rec.transitions, 0);
	ck_assert_str_eq(s.rec.acquire_time, s.rec.renew_time);
	ck_assert(lease_is_leader(&a.l));
}
END_TEST

START_TEST(blocked_while_held_then_takeover)
{
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	cand_init(&b, &s, "b_2");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	/* b sees a's fresh record: held, not expired, and keeps seeing it as a renews */
	for (int i = 0; i < 10; i++) {
		now_ms += 500;
		ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
		ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	}
	ck_assert_int_eq(s.updates, 10);
	ck_assert_str_eq(s.rec.holder, "a_1");
	/* a stops renewing (killed): b sees its last renewal, then waits the lease duration
	 * from that observed change */
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	now_ms += 2999;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	now_ms += 1;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_LEADING);
	ck_assert_str_eq(s.rec.holder, "b_2");
	ck_assert_int_eq(s.rec.transitions, 1);
}
END_TEST

START_TEST(expiry_is_from_the_observers_clock)
{
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	cand_init(&b, &s, "b_2");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	now_ms = 100000; /* b first looks long after a's renewTime: it still waits a full term */
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	now_ms += 3000;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_LEADING);
}
END_TEST

START_TEST(a_standby_wakes_at_the_expiry)
{
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	cand_init(&b, &s, "b_2");
	ck_assert_int_eq(lease_standby_wait(&b.l, 1100), 1100); /* nothing observed yet */
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert_int_eq(lease_standby_wait(&a.l, 100), 100); /* its own record */
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	/* a renews: every change b sees starts a full term again */
	now_ms += 500;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	ck_assert_int_eq(lease_standby_wait(&b.l, 1100), 1100);
	/* a dies: 2,800 ms into the unchanged term the jittered retry (1,100) would overshoot the
	 * expiry by 900 ms; the wait ends 1 ms past it, and that step takes over */
	now_ms += 2800;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	ck_assert_int_eq(lease_standby_wait(&b.l, 1100), 201);
	ck_assert_int_eq(lease_standby_wait(&b.l, 150), 150);
	now_ms += 201;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_LEADING);
	ck_assert_str_eq(s.rec.holder, "b_2");
	/* an expiry already passed (the API down) leaves the retry period */
	cand_init(&a, &s, "a_1");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_STANDBY);
	s.fail = IG_EFAIL;
	now_ms += 5000;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_STANDBY);
	ck_assert_int_eq(lease_standby_wait(&a.l, 1100), 1100);
}
END_TEST

/* A renewal seen by a watch as it happens counts from its arrival: the standby's own get of
 * the same record later does not restart the term; its own record, or one seen while leading,
 * is ignored. */
START_TEST(a_watched_renewal_counts_from_its_arrival)
{
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	cand_init(&b, &s, "b_2");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	/* a renews at 1,500 and dies; the watch hands b the record at 1,510, b's get is at 2,900 */
	now_ms = 1500;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	lease_observe(&b.l, &s.rec, 1510);
	now_ms = 2900;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	ck_assert_int_eq(lease_standby_wait(&b.l, 5000), 1510 + 3000 - 2900 + 1);
	now_ms = 1510 + 3000;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_LEADING); /* not at 2,900 + 3,000 */
	/* b leads: a record seen now is not what it observes; nor, as a standby, its own */
	lease_observe(&b.l, &(struct lease_record){.holder = "c_3", .duration_s = 3}, now_ms);
	ck_assert(lease_is_leader(&b.l));
	b.l.state = LEASE_STANDBY;
	lease_observe(&b.l, &(struct lease_record){.holder = "b_2", .duration_s = 9}, now_ms);
	ck_assert_int_eq(b.l.observed.duration_s, 3);
	/* the same record again does not move the time it was first seen */
	cand_init(&a, &s, "c_3");
	lease_observe(&a.l, &s.rec, 7000);
	ck_assert_int_eq(a.l.observed_at, 7000);
	lease_observe(&a.l, &s.rec, 8000);
	ck_assert_int_eq(a.l.observed_at, 7000);
}
END_TEST

START_TEST(fast_and_slow_renew_paths)
{
	struct fake_server s = {0};
	struct cand a;
	struct error err = ERROR_INIT;
	char acquired[LEASE_MAX_TIME];

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	ck_assert_int_eq(lease_try_acquire_or_renew(&a.l, &err), 1);
	memcpy(acquired, s.rec.acquire_time, sizeof(acquired));
	now_ms += 500;
	s.gets = 0;
	/* fast: one update with the cached object, no get; acquireTime kept, renewTime moves */
	ck_assert_int_eq(lease_try_acquire_or_renew(&a.l, &err), 1);
	ck_assert(a.l.fast_path && s.gets == 0);
	ck_assert_str_eq(s.rec.acquire_time, acquired);
	ck_assert_str_ne(s.rec.renew_time, acquired);
	/* the object moved under it (someone wrote the same holder): the fast update gets 409,
	 * the slow path reads and renews */
	s.rv++;
	now_ms += 500;
	ck_assert_int_eq(lease_try_acquire_or_renew(&a.l, &err), 1);
	ck_assert(!a.l.fast_path && s.gets == 1);
	ck_assert_str_eq(s.rec.acquire_time, acquired);
	ck_assert_int_eq(s.rec.transitions, 0);
	/* past its own lease validity the leader skips the fast path */
	now_ms += 3000;
	s.gets = 0;
	ck_assert_int_eq(lease_try_acquire_or_renew(&a.l, &err), 1);
	ck_assert(!a.l.fast_path && s.gets == 1);
	ck_assert_int_eq(s.rec.transitions, 0); /* still its own term */
}
END_TEST

START_TEST(conflict_on_a_stale_resource_version)
{
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	cand_init(&b, &s, "b_2");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	now_ms += 3000;          /* a went silent: b may take over */
	s.move_after_get = true; /* another writer lands between b's get and its update */
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	ck_assert_int_eq(err.code, IG_ECONFLICT);
	ck_assert_str_eq(s.rec.holder, "a_1");
	ck_assert_int_eq(s.rec.transitions, 0);
	/* the next try reads the current object and takes over */
	s.move_after_get = false;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_LEADING);
	ck_assert_str_eq(s.rec.holder, "b_2");
	ck_assert_int_eq(s.rec.transitions, 1);
	/* a wakes up: its lease is past validity (slow path), the get shows b: a lost it */
	now_ms += 100;
	err = (struct error)ERROR_INIT;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LOST);
	ck_assert_int_eq(err.code, IG_ECONFLICT);
	ck_assert_ptr_nonnull(strstr(err.msg, "b_2"));
	ck_assert(!lease_may_write(&a.l, now_ms, 0));
	ck_assert_str_eq(s.rec.holder, "b_2");
}
END_TEST

START_TEST(a_leader_whose_fast_update_conflicts_and_finds_another_holder_stops)
{
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	cand_init(&b, &s, "b_2");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	/* someone replaced the Lease by hand (kubectl) naming b, while a's lease is valid */
	snprintf(s.rec.holder, sizeof(s.rec.holder), "b_2");
	s.rv++;
	now_ms += 500;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LOST);
	ck_assert_uint_eq(s.updates, 1); /* the fast path's 409 only: nothing overwritten */
	ck_assert_str_eq(s.rec.holder, "b_2");
}
END_TEST

START_TEST(step_down_after_the_renew_deadline)
{
	struct fake_server s = {0};
	struct cand a;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert(lease_may_write(&a.l, now_ms, 0));
	s.fail = IG_ETIMEOUT; /* the API goes away */
	now_ms += 500;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	/* the fencing gate closes before the deadline by the push time */
	ck_assert(lease_may_write(&a.l, now_ms, 1000));
	ck_assert(!lease_may_write(&a.l, now_ms, 1500));
	now_ms = 1000 + 1999;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert(!lease_may_write(&a.l, now_ms, 1));
	now_ms = 1000 + 2000;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LOST);
	ck_assert_int_eq(err.code, IG_ETIMEOUT);
	ck_assert(!lease_may_write(&a.l, now_ms, 0));
	/* final: the API back does not make it a leader again */
	s.fail = 0;
	now_ms += 500;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LOST);
}
END_TEST

/* The push time the gate assumes, for timings client-go accepts: Flux's defaults and the
 * chaos suite's keep renew - 2 x retry; where that is zero or negative (8s / 5s, 2s / 1s, the
 * smallest renew over 1.2 x retry), half of renew - retry. Then for every accepted timing: a
 * push of that length started right after a renewal closes before the renew deadline, and one
 * started a retry period later (a leader renewing on time) is still admitted. */
static const struct {
	struct lease_timing t;
	int64_t want;
} push_times[] = {
    {{35000, 30000, 5000}, 20000},
    {{3000, 2000, 500}, 1000},
    {{15000, 10000, 2000}, 6000},
    {{10000, 8000, 5000}, 1500},
    {{3000, 2000, 1000}, 500},
    {{7000, 6001, 5000}, 500},
    {{3, 2, 1}, 1},
};

START_TEST(push_time_keeps_the_gate_inside_the_deadline)
{
	struct lease_timing t = push_times[_i].t;
	struct error err = ERROR_INIT;
	struct lease l;
	int64_t push = lease_push_ms(&t);

	ck_assert_int_eq(lease_timing_check(&t, &err), 0);
	ck_assert_int_eq(push, push_times[_i].want);
	memset(&l, 0, sizeof(l));
	l.timing = t;
	l.state = LEASE_LEADING;
	l.renewed_at = 1000;
	ck_assert(push >= 1 && push < t.renew_ms);
	ck_assert(lease_may_write(&l, 1000 + t.retry_ms - 1, push) ||
	          push + t.retry_ms >= t.renew_ms);
	ck_assert(!lease_may_write(&l, 1000 + t.renew_ms - push, push));
}
END_TEST

/* A lease that is not whole seconds: leaseDurationSeconds goes up (client-go truncates), so a
 * standby never takes over while the leader's gate can still be open. With 1.9 s / 1.8 s the
 * truncated 1 s would let b lead at 2.0 s while a may write until 2.8 s. */
START_TEST(a_fractional_lease_is_rounded_up)
{
	static const struct lease_timing t = {1900, 1800, 500};
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init_timed(&a, &s, "a_1", &t);
	cand_init_timed(&b, &s, "b_2", &t);
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert_int_eq(s.rec.duration_s, 2);
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	now_ms = 2500; /* a has not renewed since 1000: its gate is open until 2800 */
	ck_assert(lease_may_write(&a.l, now_ms, 0));
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	now_ms = 2801; /* a's gate has closed */
	ck_assert(!lease_may_write(&a.l, now_ms, 0));
	now_ms = 3001;
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_LEADING);
	ck_assert_int_eq(s.rec.transitions, 1);
}
END_TEST

START_TEST(release_lets_a_standby_in_at_once)
{
	struct fake_server s = {0};
	struct cand a, b;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	cand_init(&b, &s, "b_2");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_STANDBY);
	ck_assert_int_eq(lease_release(&a.l, &err), 0);
	ck_assert_str_eq(s.rec.holder, "");
	ck_assert_int_eq(s.rec.duration_s, 1);
	ck_assert_int_eq(s.rec.transitions, 0);
	ck_assert(!lease_is_leader(&a.l) && !lease_may_write(&a.l, now_ms, 0));
	now_ms += 500; /* well inside the old term: an empty holder is free */
	ck_assert_int_eq(lease_step(&b.l, &err), LEASE_LEADING);
	ck_assert_str_eq(s.rec.holder, "b_2");
	ck_assert_int_eq(s.rec.transitions, 1);
	/* releasing when not leading writes nothing */
	s.updates = 0;
	ck_assert_int_eq(lease_release(&a.l, &err), 0);
	ck_assert_int_eq(s.updates, 0);
}
END_TEST

START_TEST(renewal_failures_inside_the_deadline_are_survived)
{
	struct fake_server s = {0};
	struct cand a;
	struct error err = ERROR_INIT;

	now_ms = 1000;
	cand_init(&a, &s, "a_1");
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	s.fail = IG_EFAIL;
	now_ms += 1500;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	s.fail = 0;
	now_ms += 400;
	ck_assert_int_eq(lease_step(&a.l, &err), LEASE_LEADING);
	ck_assert_int_eq(a.l.renewed_at, now_ms);
	ck_assert_int_eq(s.rec.transitions, 0);
}
END_TEST

/* client-go NewLeaderElector's rules and messages */
static const struct {
	struct lease_timing t;
	int rc;
	const char *msg;
} timings[] = {
    {{35000, 30000, 5000}, 0, NULL},
    {{3000, 2000, 500}, 0, NULL},
    {{30000, 30000, 5000}, IG_EUSAGE, "leaseDuration must be greater than renewDeadline"},
    {{20000, 30000, 5000}, IG_EUSAGE, "leaseDuration must be greater than renewDeadline"},
    {{35000, 6000, 5000}, IG_EUSAGE, "renewDeadline must be greater than retryPeriod*JitterFactor"},
    {{35000, 6001, 5000}, 0, NULL},
    {{35000, 30000, 0}, IG_EUSAGE, "retryPeriod must be greater than zero"},
    {{35000, 0, -1}, IG_EUSAGE, "renewDeadline must be greater than zero"},
};

START_TEST(timing_rules)
{
	struct error err = ERROR_INIT;
	int rc = lease_timing_check(&timings[_i].t, &err);

	ck_assert_int_eq(rc, timings[_i].rc);
	if (timings[_i].msg)
		ck_assert_str_eq(err.msg, timings[_i].msg);
}
END_TEST

/* Flux's name, per shard a hash of the shard's key: distinct, stable, a valid object name */
START_TEST(names)
{
	char a[LEASE_MAX_NAME], b[LEASE_MAX_NAME], c[LEASE_MAX_NAME];

	lease_name(a, NULL);
	ck_assert_str_eq(a, "imageguard-leader-election");
	lease_name(a, "");
	ck_assert_str_eq(a, "imageguard-leader-election");
	lease_name(a, "sharding.fluxcd.io/key in (shard1)");
	lease_name(b, "sharding.fluxcd.io/key in (shard2)");
	lease_name(c, "sharding.fluxcd.io/key in (shard1)");
	ck_assert_str_ne(a, b);
	ck_assert_str_eq(a, c);
	/* Flux's controllers: GenerateID("<controller>-leader-election", selector), the first 8
	 * hex digits of the selector's SHA-256 (computed independently with sha256sum) */
	ck_assert_str_eq(a, "imageguard-leader-election-7ee98f29");
}
END_TEST

/* fluxcd/pkg runtime/leaderelection TestGenerateID, case by case (inputs and outputs) */
static const struct {
	const char *base;
	const char *add[3];
	size_t k;
	const char *want;
} generate_ids[] = {
    {"foo", {NULL}, 0, "foo"},                      /* no additions */
    {"foo", {"bar"}, 1, "foo-fcde2b2e"},            /* one addition */
    {"foo", {"bar", "baz"}, 2, "foo-c8f8b724"},     /* multiple additions */
    {"foo", {"bar", "", "baz"}, 3, "foo-c8f8b724"}, /* ... with an empty string */
    {"", {"bar", "baz"}, 2, ""},                    /* ... with an empty base */
    {"", {NULL}, 0, ""},                            /* empty base and additions */
};

START_TEST(generate_id_as_flux)
{
	char out[LEASE_MAX_NAME];

	memset(out, 'x', sizeof(out));
	lease_generate_id(out, sizeof(out), generate_ids[_i].base, generate_ids[_i].add,
	                  generate_ids[_i].k);
	ck_assert_str_eq(out, generate_ids[_i].want);
}
END_TEST

START_TEST(identity_is_host_and_uuid)
{
	char *x = lease_identity(), *y = lease_identity();
	const char *u;

	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(y);
	ck_assert_str_ne(x, y);
	u = strrchr(x, '_');
	ck_assert_ptr_nonnull(u);
	ck_assert_uint_eq(strlen(u + 1), 36);
	ck_assert(u[15] == '4'); /* a version 4 UUID */
	free(x);
	free(y);
}
END_TEST

/* the Imageguard-Lease trailer: written after the others, read back, malformed ones ignored */
static const struct {
	const char *msg;
	int found;
	const char *name;
	long transitions;
} trailers[] = {
    {"imageguard: update 1 image\n\nImageguard-Policy: a/b\nImageguard-Lease: "
     "imageguard-leader-election/3\n",
     1, "imageguard-leader-election", 3},
    {"x\n\nImageguard-Lease: l-1/1\nImageguard-Lease: l-1/12", 1, "l-1", 12},
    {"x\n\nImageguard-Lease: a/b/4\n", 1, "a/b", 4},
    {"x\n\nImageguard-Lease: l/\n", 0, NULL, 0},
    {"x\n\nImageguard-Lease: l/3x\n", 0, NULL, 0},
    {"x\n\nImageguard-Lease: /3\n", 0, NULL, 0},
    {"x\n\nImageguard-Lease: l/-3\n", 0, NULL, 0},
    {"x\n\nNot-Imageguard-Lease: l/3\n", 0, NULL, 0},
    {"no trailer at all", 0, NULL, 0},
};

START_TEST(lease_trailer_read)
{
	char name[LEASE_MAX_ID];
	long t = -1;

	ck_assert_int_eq(commitmsg_lease_of(name, sizeof(name), &t, trailers[_i].msg),
	                 trailers[_i].found);
	if (trailers[_i].found) {
		ck_assert_str_eq(name, trailers[_i].name);
		ck_assert_int_eq(t, trailers[_i].transitions);
	}
}
END_TEST

START_TEST(lease_trailer_written)
{
	struct buf b = BUF_INIT;
	struct error err = ERROR_INIT;
	char name[LEASE_MAX_ID];
	long t;

	ck_assert_int_eq(buf_puts(&b, "imageguard: update 1 image\n\nImageguard-Policy: a/b"), 0);
	ck_assert_int_eq(commitmsg_add_lease(&b, "imageguard-leader-election/2", &err), 0);
	ck_assert_str_eq(b.data, "imageguard: update 1 image\n\nImageguard-Policy: a/b\n"
	                         "Imageguard-Lease: imageguard-leader-election/2\n");
	ck_assert_int_eq(commitmsg_lease_of(name, sizeof(name), &t, b.data), 1);
	ck_assert_int_eq(t, 2);
	/* outside text in a name is escaped: no line break can forge a second trailer */
	buf_reset(&b);
	ck_assert_int_eq(commitmsg_add_lease(&b, "x\nImageguard-Lease: x/99", &err), 0);
	ck_assert_ptr_null(strstr(b.data, "\nImageguard-Lease: x/99"));
	buf_release(&b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lease");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, create_when_absent);
	tcase_add_test(tc, blocked_while_held_then_takeover);
	tcase_add_test(tc, expiry_is_from_the_observers_clock);
	tcase_add_test(tc, a_standby_wakes_at_the_expiry);
	tcase_add_test(tc, a_watched_renewal_counts_from_its_arrival);
	tcase_add_test(tc, fast_and_slow_renew_paths);
	tcase_add_test(tc, conflict_on_a_stale_resource_version);
	tcase_add_test(tc, a_leader_whose_fast_update_conflicts_and_finds_another_holder_stops);
	tcase_add_test(tc, step_down_after_the_renew_deadline);
	tcase_add_test(tc, release_lets_a_standby_in_at_once);
	tcase_add_test(tc, a_fractional_lease_is_rounded_up);
	tcase_add_loop_test(tc, push_time_keeps_the_gate_inside_the_deadline, 0,
	                    sizeof(push_times) / sizeof(push_times[0]));
	tcase_add_test(tc, renewal_failures_inside_the_deadline_are_survived);
	tcase_add_loop_test(tc, timing_rules, 0, sizeof(timings) / sizeof(timings[0]));
	tcase_add_test(tc, names);
	tcase_add_loop_test(tc, generate_id_as_flux, 0,
	                    sizeof(generate_ids) / sizeof(generate_ids[0]));
	tcase_add_test(tc, identity_is_host_and_uuid);
	tcase_add_loop_test(tc, lease_trailer_read, 0, sizeof(trailers) / sizeof(trailers[0]));
	tcase_add_test(tc, lease_trailer_written);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
