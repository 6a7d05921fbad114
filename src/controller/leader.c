/* The leader election thread of `run`: steps the Lease state machine every retry period
 * (jittered as client-go's JitterUntil while standby, but cut to the moment another holder's
 * record expires), publishes imageguard_leader and the fencing state under a mutex, releases on
 * stop. A standby also watches the Lease, so that it sees each renewal as it happens. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/controller/leader.h"
#include "imageguard/pass/reconcile.h"
#include "imageguard/util/metrics.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/kubewatch.h"
#include "imageguard/kube/leaseclient.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

struct leader {
	struct leader_options o;
	struct kubeconfig cfg;
	struct kube_client *kc;
	struct leaseclient *lc;
	struct lease lease;
	char *identity;
	char name[LEASE_MAX_NAME];
	const char *ns;
	pthread_t thread;
	bool started;
	volatile sig_atomic_t quit;
	unsigned seed;
	pthread_mutex_t mu; /* guards the copies below */
	enum lease_state state;
	int64_t renewed_at;
	long transitions;
	/* The Lease as the standby's watch last saw it change (on the watch's thread), folded into
	 * the state machine by the election thread before each step. */
	struct kubewatch *watch; /* NULL: none (could not start); cancelled once leading */
	pthread_mutex_t seen_mu;
	struct lease_record seen;
	int64_t seen_at;
	bool seen_new;
};

static int64_t mono_ms(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void publish(struct leader *l)
{
	enum lease_state before;

	pthread_mutex_lock(&l->mu);
	before = l->state;
	l->state = l->lease.state;
	l->renewed_at = l->lease.renewed_at;
	/* The generation is the one this replica led under: a deposed leader that kept reading
	 * the Lease must not stamp its late commits with its successor's generation (the
	 * head-lease check refuses a push under an older generation than the head's). */
	if (l->lease.state == LEASE_LEADING)
		l->transitions = l->lease.observed.transitions;
	pthread_mutex_unlock(&l->mu);
	if (l->o.metrics)
		metrics_set(l->o.metrics, "imageguard_leader", NULL,
		            l->lease.state == LEASE_LEADING ? 1 : 0);
	if (before != LEASE_LEADING && l->lease.state == LEASE_LEADING)
		log_info("leader.elected", "lease '%s/%s' acquired by '%s' (transitions %ld)",
		         l->ns, l->name, l->identity, l->lease.observed.transitions);
}

/* The watch's admit function: notes the Lease's record and when it arrived; keeps nothing. */
static json_t *seen_lease(void *ctx, json_t *obj)
{
	struct leader *l = ctx;
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	struct lease_record rec;

	if (!name || strcmp(name, l->name) != 0)
		return NULL;
	leaseclient_record(&rec, obj);
	pthread_mutex_lock(&l->seen_mu);
	l->seen = rec;
	l->seen_at = mono_ms(NULL);
	l->seen_new = true;
	pthread_mutex_unlock(&l->seen_mu);
	return NULL;
}

/* Hands the watch's last sighting to the state machine (election thread). */
static void fold_seen(struct leader *l)
{
	pthread_mutex_lock(&l->seen_mu);
	if (l->seen_new)
		lease_observe(&l->lease, &l->seen, l->seen_at);
	l->seen_new = false;
	pthread_mutex_unlock(&l->seen_mu);
}

/* Starts the standby's watch of the Lease (its namespace's leases, this one kept by name). A
 * watch that cannot start is no failure: the standby's gets alone see the renewals, later. */
static void watch_lease(struct leader *l)
{
	struct error err = ERROR_INIT;
	char path[512];

	snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->ns);
	if (kubewatch_start_admit(&l->watch, &l->cfg, path, NULL, seen_lease, l, 0, &l->quit,
	                          &err) < 0) {
		l->watch = NULL;
		log_warn("leader.watch",
		         "lease '%s/%s': no watch (%s): renewals are seen at each try", l->ns,
		         l->name, err.msg);
	}
}

/* Sleeps ms in short steps; false when told to quit meanwhile. */
static bool nap(struct leader *l, int64_t ms)
{
	int64_t end = mono_ms(NULL) + ms;

	while (!l->quit) {
		int64_t left = end - mono_ms(NULL);
		struct timespec ts;

		if (left <= 0)
			return true;
		if (left > 50)
			left = 50;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000000L;
		nanosleep(&ts, NULL);
	}
	return false;
}

static void *run_thread(void *arg)
{
	struct leader *l = arg;

	while (!l->quit) {
		struct error err = ERROR_INIT;
		enum lease_state was = l->lease.state, now;
		int64_t wait = l->o.timing.retry_ms;

		fold_seen(l);
		now = lease_step(&l->lease, &err);
		if (l->quit)
			break;
		publish(l);
		if (now != LEASE_STANDBY)
			kubewatch_cancel(l->watch); /* a leader's own writes are what it observes */
		if (now == LEASE_LOST) {
			if (l->o.lost_flag)
				*l->o.lost_flag = 1;
			log_error("leader.lost", "lease '%s/%s': stopped leading: %s", l->ns,
			          l->name, err.msg[0] ? err.msg : "renew deadline passed");
			break;
		}
		if (err.msg[0] && (was == LEASE_LEADING || err.code != IG_ECONFLICT))
			log_warn("leader.renew", "lease '%s/%s': %s", l->ns, l->name, err.msg);
		fold_seen(l);
		if (now == LEASE_STANDBY) /* wait.Jitter(retry, 1.2), cut to the expiry */
			wait = lease_standby_wait(
			    &l->lease, wait + (int64_t)((double)wait * LEASE_JITTER_FACTOR *
			                                ((double)rand_r(&l->seed) /
			                                 ((double)RAND_MAX + 1.0))));
		if (!nap(l, wait))
			break;
	}
	return NULL;
}

static int connect_api(struct leader *l, struct error *err)
{
	struct kube_options ko;
	int rc;

	if ((rc = l->o.kubeconfig ? kubeconfig_load(&l->cfg, l->o.kubeconfig, err)
	                          : kubeconfig_in_cluster(&l->cfg, NULL, err)) < 0)
		return rc;
	kube_options_init(&ko);
	ko.timeout_ms = (long)l->o.timing.renew_ms; /* one try never outlives the deadline */
	if (ko.connect_timeout_ms > ko.timeout_ms)
		ko.connect_timeout_ms = ko.timeout_ms;
	ko.max_retries = 0; /* the next retry period is the retry */
	ko.stop = &l->quit;
	return kube_client_new(&l->kc, &l->cfg, &ko, err);
}

static int setup(struct leader *l, struct error *err)
{
	struct lease_client c;
	struct lease_clock clk = {NULL, mono_ms, leaseclient_wall};
	int rc;

	if ((rc = lease_timing_check(&l->o.timing, err)) < 0)
		return error_prefix(err, "leader election");
	if ((rc = connect_api(l, err)) < 0)
		return error_prefix(err, "leader election");
	l->ns = lease_namespace(&l->cfg);
	lease_name(l->name, l->o.shard_key);
	if (!*l->name)
		return error_set(err, IG_EFAIL, "leader election: out of memory (lease name)");
	if (!(l->identity = lease_identity()))
		return error_set(err, IG_EFAIL, "leader election: no identity (randomness)");
	if ((rc = leaseclient_new(&l->lc, l->kc, l->ns, l->name, err)) < 0)
		return rc;
	leaseclient_bind(&c, l->lc);
	lease_init(&l->lease, &c, &clk, &l->o.timing, l->identity);
	if (l->o.metrics &&
	    metrics_declare(l->o.metrics, "imageguard_leader", METRICS_GAUGE,
	                    "1 while this replica holds the leader election lease, else 0", NULL, 0,
	                    NULL, 0) < 0)
		return error_oom(err);
	publish(l);
	watch_lease(l);
	return 0;
}

int leader_start(struct leader **out, const struct leader_options *o, struct error *err)
{
	struct leader *l = calloc(1, sizeof(*l));
	int rc;

	*out = NULL;
	if (!l)
		return error_oom(err);
	l->o = *o;
	l->cfg = (struct kubeconfig)KUBECONFIG_INIT;
	l->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)l;
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_init(&l->seen_mu, NULL);
	if ((rc = setup(l, err)) < 0) {
		leader_stop(l);
		return rc;
	}
	if ((rc = pthread_create(&l->thread, NULL, run_thread, l)) != 0) {
		leader_stop(l);
		return error_set(err, IG_EFAIL, "leader election thread: %s", strerror(rc));
	}
	l->started = true;
	log_info("leader.start", "lease '%s/%s', identity '%s': standby until acquired", l->ns,
	         l->name, l->identity);
	*out = l;
	return 0;
}

/* A renewal that the stop cut may have reached the server all the same, leaving the kept
 * resourceVersion stale and the release a 409 (client-go reads the Lease before it releases
 * since kubernetes/kubernetes#132849): read it again; true while it still names this
 * candidate. */
static bool still_ours(struct leader *l, struct error *err)
{
	struct lease_record rec;

	error_clear(err);
	if (l->lease.client.get(l->lease.client.ctx, &rec, err) < 0)
		return false;
	if (strcmp(rec.holder, l->identity) != 0) {
		error_set(err, IG_ECONFLICT, "held by '%s': not released", rec.holder);
		return false;
	}
	return true;
}

/* The release goes out on a client no stop flag cuts (bounded by the renew deadline). */
static void release(struct leader *l)
{
	struct kube_options ko;
	struct kube_client *kc = NULL;
	struct error err = ERROR_INIT;

	kube_options_init(&ko);
	ko.timeout_ms = (long)l->o.timing.renew_ms;
	ko.max_retries = 0;
	if (kube_client_new(&kc, &l->cfg, &ko, &err) == 0) {
		int rc;

		leaseclient_use(l->lc, kc);
		if ((rc = lease_release(&l->lease, &err)) == IG_ECONFLICT && still_ours(l, &err))
			rc = lease_release(&l->lease, &err);
		if (rc == 0)
			log_info("leader.release", "lease '%s/%s' released", l->ns, l->name);
	}
	if (err.msg[0])
		log_warn("leader.release", "lease '%s/%s': %s", l->ns, l->name, err.msg);
	leaseclient_use(l->lc, l->kc);
	kube_client_free(kc);
}

void leader_stop(struct leader *l)
{
	if (!l)
		return;
	l->quit = 1;
	kubewatch_cancel(l->watch);
	if (l->started)
		pthread_join(l->thread, NULL);
	if (l->started && l->o.release_on_cancel && l->lease.state == LEASE_LEADING)
		release(l);
	if (l->o.metrics && l->started)
		metrics_set(l->o.metrics, "imageguard_leader", NULL, 0);
	kubewatch_free(l->watch);
	leaseclient_free(l->lc);
	kube_client_free(l->kc);
	kubeconfig_release(&l->cfg);
	free(l->identity);
	pthread_mutex_destroy(&l->seen_mu);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

bool leader_is_leading(struct leader *l)
{
	bool yes;

	pthread_mutex_lock(&l->mu);
	yes = l->state == LEASE_LEADING;
	pthread_mutex_unlock(&l->mu);
	return yes;
}

bool leader_lost(struct leader *l)
{
	bool yes;

	pthread_mutex_lock(&l->mu);
	yes = l->state == LEASE_LOST;
	pthread_mutex_unlock(&l->mu);
	return yes;
}

bool leader_may_write_until(struct leader *l, int64_t push_ms, int64_t *until)
{
	struct lease snap; /* the renewal thread's state as last published: one gate rule */
	int64_t now = mono_ms(NULL);

	memset(&snap, 0, sizeof(snap));
	snap.timing = l->o.timing;
	pthread_mutex_lock(&l->mu);
	snap.state = l->state;
	snap.renewed_at = l->renewed_at;
	pthread_mutex_unlock(&l->mu);
	if (!lease_may_write(&snap, now, push_ms))
		return false;
	if (until)
		*until = now + push_ms;
	return true;
}

bool leader_may_write(struct leader *l, int64_t push_ms)
{
	return leader_may_write_until(l, push_ms, NULL);
}

int64_t leader_push_ms(const struct leader *l)
{
	return lease_push_ms(&l->o.timing);
}

void leader_generation(struct leader *l, char *out, size_t n)
{
	long t;

	pthread_mutex_lock(&l->mu);
	t = l->transitions;
	pthread_mutex_unlock(&l->mu);
	snprintf(out, n, "%s/%ld", l->name, t);
}

const char *leader_lease_name(const struct leader *l)
{
	return l->name;
}

static bool fence_may_write_until(void *ctx, int64_t push_ms, int64_t *until)
{
	return leader_may_write_until(ctx, push_ms, until);
}

static int64_t fence_push_ms(const void *ctx)
{
	return leader_push_ms(ctx);
}

static void fence_generation(void *ctx, char *out, size_t n)
{
	leader_generation(ctx, out, n);
}

static const char *fence_lease_name(const void *ctx)
{
	return leader_lease_name(ctx);
}

void leader_fence(struct reconcile_fence *out, struct leader *l)
{
	out->ctx = l;
	out->may_write_until = fence_may_write_until;
	out->push_ms = fence_push_ms;
	out->generation = fence_generation;
	out->lease_name = fence_lease_name;
}
