/* leader (run --enable-leader-election): the renewal thread over a real Lease in the
 * etcd-backed API fixture (kubeapi_etcd.py), with short timings (6 s lease, 4.5 s renew
 * deadline, 0.5 s retry: room for valgrind): acquiring and renewing past the lease duration,
 * imageguard_leader, the fencing gate (leader_may_write_until and its instant), the generation for
 * the Imageguard-Lease trailer, leader_fence calling through to them, a standby that writes nothing
 * until the leader releases, and a leader whose Lease is taken: lost, its flag set, the gate
 * closed, nothing released. The timing rules are refused before any request. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/controller/leader.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/lease.h"
#include "imageguard/kube/leaseclient.h"
#include "imageguard/pass/reconcile.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/metrics.h"
#include "support/fixture.h"

#define TIMING                                                                                     \
	{                                                                                          \
		6000, 4500, 500                                                                    \
	}
#define LEASES "/apis/coordination.k8s.io/v1/namespaces/default/leases/"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static double gauge(struct metrics *m)
{
	return metrics_get(m, "imageguard_leader", NULL);
}

/* ---- client-go's timing rules, checked before anything is read or requested ---- */

static const struct {
	struct lease_timing t;
	const char *msg;
} bad_timings[] = {
    {{1500, 1500, 250}, "leader election: leaseDuration must be greater than renewDeadline"},
    {{2000, 300, 250},
     "leader election: renewDeadline must be greater than "
     "retryPeriod*JitterFactor"},
    {{0, -1, -2}, "leader election: leaseDuration must be greater than zero"},
    {{2000, 1500, 0}, "leader election: retryPeriod must be greater than zero"},
};

START_TEST(refuses_bad_timings)
{
	struct leader_options o = {0};
	struct leader *l = NULL;
	struct metrics *m = NULL;
	struct error err = ERROR_INIT;
	struct buf text = BUF_INIT;

	ck_assert_int_eq(metrics_new(&m), 0);
	o.kubeconfig = "/nonexistent/kubeconfig"; /* never read: the timing comes first */
	o.timing = bad_timings[_i].t;
	o.metrics = m;
	ck_assert_int_eq(leader_start(&l, &o, &err), IG_EUSAGE);
	ck_assert_ptr_null(l);
	ck_assert_str_eq(err.msg, bad_timings[_i].msg);
	ck_assert_int_eq(metrics_render(&text, m), 0);
	ck_assert(text.len == 0 || strstr(text.data, "imageguard_leader") == NULL);
	buf_release(&text);
	metrics_free(m);
}
END_TEST

START_TEST(refuses_a_missing_kubeconfig)
{
	struct leader_options o = {.kubeconfig = "/nonexistent/kubeconfig", .timing = TIMING};
	struct leader *l = NULL;
	struct error err = ERROR_INIT;
	int rc = leader_start(&l, &o, &err);

	ck_assert_msg(rc < 0 && rc != IG_EUSAGE, "%d", rc);
	ck_assert_ptr_null(l);
	ck_assert_str_eq(err.msg,
	                 "leader election: kubeconfig '/nonexistent/kubeconfig': no such file");
}
END_TEST

/* ---- against the API fixture ---- */

static struct fixture etcd;
static char kubeconfig[300];

static void etcd_start(void)
{
	ck_assert_msg(fixture_kubeapi_start(&etcd, "kubeapi_etcd.py", NULL) == 0,
	              "kubeapi_etcd.py did not start");
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", etcd.dir);
	unsetenv("POD_NAMESPACE"); /* the Lease in the kubeconfig's namespace, default */
}

static void etcd_stop(void)
{
	fixture_kubeapi_stop(&etcd);
}

static struct kube_client *admin_open(void)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct kube_client *c = NULL;
	struct error err = ERROR_INIT;

	ck_assert_msg(kubeconfig_load(&kc, kubeconfig, &err) == 0, "%s", err.msg);
	ck_assert_msg(kube_client_new(&c, &kc, NULL, &err) == 0, "%s", err.msg);
	kubeconfig_release(&kc);
	return c;
}

/* The Lease named name, as the API server holds it. */
static json_t *lease_get(struct kube_client *c, const char *name)
{
	struct error err = ERROR_INIT;
	char path[200];
	json_t *j = NULL;

	snprintf(path, sizeof(path), LEASES "%s", name);
	ck_assert_msg(kube_get(&j, c, path, &err) == 0, "%s", err.msg);
	return j;
}

static const char *spec_str(const json_t *lease, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(lease, "spec"), key));

	return s ? s : "";
}

static long spec_int(const json_t *lease, const char *key)
{
	return (long)json_integer_value(json_object_get(json_object_get(lease, "spec"), key));
}

static struct leader *start(const char *shard, bool release, volatile sig_atomic_t *lost,
                            struct metrics *m)
{
	struct leader_options o = {.kubeconfig = kubeconfig,
	                           .shard_key = shard,
	                           .timing = TIMING,
	                           .release_on_cancel = release,
	                           .metrics = m,
	                           .lost_flag = lost};
	struct leader *l = NULL;
	struct error err = ERROR_INIT;

	ck_assert_msg(leader_start(&l, &o, &err) == 0, "%s", err.msg);
	return l;
}

static bool wait_for(bool (*pred)(struct leader *), struct leader *l, long ms)
{
	for (int64_t end = mono_ms() + ms; mono_ms() < end; nap_ms(20))
		if (pred(l))
			return true;
	return pred(l);
}

START_TEST(leads_renews_and_fences)
{
	struct lease_timing timing = TIMING;
	struct kube_client *admin = admin_open();
	volatile sig_atomic_t lost = 0;
	struct metrics *m = NULL;
	struct reconcile_fence fence;
	struct leader *l;
	char name[LEASE_MAX_NAME], gen[128], want[128], host[128];
	int64_t until = -1, t0, t1, u = -1;
	json_t *first, *later;

	ck_assert_int_eq(metrics_new(&m), 0);
	l = start("lead", true, &lost, m);
	lease_name(name, "lead");
	ck_assert_str_eq(leader_lease_name(l), name);
	ck_assert_str_ne(name, LEASE_NAME_BASE); /* a shard elects on a Lease of its own */
	ck_assert_msg(wait_for(leader_is_leading, l, 15000), "not leading");
	ck_assert(gauge(m) == 1);
	ck_assert(!leader_lost(l));
	ck_assert_int_eq(lost, 0);

	/* the Lease in the API server names this candidate, created: no transition */
	first = lease_get(admin, name);
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	ck_assert_msg(strncmp(spec_str(first, "holderIdentity"), host, strlen(host)) == 0 &&
	                  spec_str(first, "holderIdentity")[strlen(host)] == '_',
	              "%s", spec_str(first, "holderIdentity"));
	ck_assert_int_eq(spec_int(first, "leaseDurationSeconds"), 6);
	ck_assert_int_eq(spec_int(first, "leaseTransitions"), 0);
	leader_generation(l, gen, sizeof(gen));
	snprintf(want, sizeof(want), "%s/0", name);
	ck_assert_str_eq(gen, want);

	/* the gate: a push that ends before the renew deadline, and the instant it must end by */
	ck_assert_int_eq(leader_push_ms(l), lease_push_ms(&timing));
	ck_assert_int_eq(leader_push_ms(l), 3500);
	t0 = mono_ms();
	ck_assert(leader_may_write_until(l, 500, &until));
	t1 = mono_ms();
	ck_assert_msg(until >= t0 + 500 && until <= t1 + 500, "%lld not in [%lld, %lld]",
	              (long long)until, (long long)t0 + 500, (long long)t1 + 500);
	ck_assert(leader_may_write_until(l, 500, NULL));
	ck_assert(leader_may_write(l, 500));
	/* one that would outlive the renew deadline is refused, *until untouched */
	until = -1;
	ck_assert(!leader_may_write_until(l, timing.renew_ms, &until));
	ck_assert_int_eq(until, -1);
	ck_assert(!leader_may_write(l, timing.renew_ms));

	/* the pass's fence is the same gate, generation and name */
	memset(&fence, 0, sizeof(fence));
	leader_fence(&fence, l);
	ck_assert_ptr_eq(fence.ctx, l);
	ck_assert_int_eq(fence.push_ms(fence.ctx), 3500);
	t0 = mono_ms();
	ck_assert(fence.may_write_until(fence.ctx, 400, &u));
	ck_assert(u >= t0 + 400 && u <= mono_ms() + 400);
	u = -1;
	ck_assert(!fence.may_write_until(fence.ctx, timing.renew_ms, &u));
	ck_assert_int_eq(u, -1);
	memset(gen, 0, sizeof(gen));
	fence.generation(fence.ctx, gen, sizeof(gen));
	ck_assert_str_eq(gen, want);
	ck_assert_ptr_eq(fence.lease_name(fence.ctx), leader_lease_name(l));

	/* renewed on its own thread past the lease duration: still leading */
	nap_ms(timing.lease_ms + 1000);
	ck_assert(leader_is_leading(l));
	ck_assert(leader_may_write(l, 500));
	later = lease_get(admin, name);
	ck_assert_str_eq(spec_str(later, "holderIdentity"), spec_str(first, "holderIdentity"));
	ck_assert_str_eq(spec_str(later, "acquireTime"), spec_str(first, "acquireTime"));
	ck_assert_str_gt(spec_str(later, "renewTime"), spec_str(first, "renewTime"));
	ck_assert_int_eq(spec_int(later, "leaseTransitions"), 0);
	json_decref(later);

	/* stopped with release on cancel: holder "", 1 s, the gauge back to 0 */
	leader_stop(l);
	ck_assert(gauge(m) == 0);
	later = lease_get(admin, name);
	ck_assert_str_eq(spec_str(later, "holderIdentity"), "");
	ck_assert_int_eq(spec_int(later, "leaseDurationSeconds"), 1);
	ck_assert_int_eq(spec_int(later, "leaseTransitions"), 0);
	json_decref(later);
	json_decref(first);
	ck_assert_int_eq(lost, 0);
	metrics_free(m);
	kube_client_free(admin);
}
END_TEST

START_TEST(standby_writes_nothing_until_released)
{
	volatile sig_atomic_t lost1 = 0, lost2 = 0;
	struct metrics *m1 = NULL, *m2 = NULL;
	struct leader *l1, *l2;
	char name[LEASE_MAX_NAME], gen[128], want[128];
	int64_t until = -1;

	ck_assert_int_eq(metrics_new(&m1), 0);
	ck_assert_int_eq(metrics_new(&m2), 0);
	lease_name(name, "takeover");
	l1 = start("takeover", true, &lost1, m1);
	ck_assert_msg(wait_for(leader_is_leading, l1, 15000), "first not leading");
	l2 = start("takeover", true, &lost2, m2);
	/* several retry periods: the standby stays one, its gate closed */
	nap_ms(2500);
	ck_assert(!leader_is_leading(l2));
	ck_assert(!leader_lost(l2));
	ck_assert(!leader_may_write_until(l2, 1, &until));
	ck_assert_int_eq(until, -1);
	ck_assert(gauge(m2) == 0);
	ck_assert(gauge(m1) == 1);
	ck_assert(leader_is_leading(l1));

	/* the leader releases: the standby takes over, one transition more */
	leader_stop(l1);
	ck_assert_msg(wait_for(leader_is_leading, l2, 8000), "no takeover");
	ck_assert(gauge(m2) == 1);
	leader_generation(l2, gen, sizeof(gen));
	snprintf(want, sizeof(want), "%s/1", name);
	ck_assert_str_eq(gen, want);
	ck_assert(leader_may_write_until(l2, 1, &until));
	ck_assert_int_ne(until, -1);
	leader_stop(l2);
	ck_assert_int_eq(lost1, 0);
	ck_assert_int_eq(lost2, 0);
	metrics_free(m1);
	metrics_free(m2);
}
END_TEST

/* The Lease moved after this leader's last renewal was read back, as when the stop cuts a
 * renewal that the server still applies: the release is not refused for it (a 409 on the
 * kept resourceVersion), the Lease is read again and released while it names this leader. */
START_TEST(release_after_the_lease_moved)
{
	struct kube_client *admin = admin_open();
	struct leader *l;
	char name[LEASE_MAX_NAME], path[200];
	struct error err = ERROR_INIT;
	json_t *lease;
	int rc = IG_ECONFLICT;

	lease_name(name, "moved");
	snprintf(path, sizeof(path), LEASES "%s", name);
	l = start("moved", true, NULL, NULL);
	ck_assert_msg(wait_for(leader_is_leading, l, 15000), "not leading");
	/* a write that keeps the holder (a label) moves the resourceVersion (the fixture
	 * answers a patch that races a renewal with 409: again) */
	for (int i = 0; i < 20 && rc == IG_ECONFLICT; i++) {
		error_clear(&err);
		rc = kube_send(NULL, admin, "PATCH", path, "application/merge-patch+json",
		               "{\"metadata\": {\"labels\": {\"moved\": \"yes\"}}}", &err);
	}
	ck_assert_msg(rc == 0, "%s", err.msg);
	leader_stop(l);
	lease = lease_get(admin, name);
	ck_assert_str_eq(spec_str(lease, "holderIdentity"), "");
	ck_assert_int_eq(spec_int(lease, "leaseDurationSeconds"), 1);
	json_decref(lease);
	kube_client_free(admin);
}
END_TEST

START_TEST(lost_when_another_holds_it)
{
	struct kube_client *admin = admin_open();
	volatile sig_atomic_t lost = 0;
	struct metrics *m = NULL;
	struct leader *l;
	char name[LEASE_MAX_NAME], path[200], led[128], gen[128];
	json_t *lease;
	int rc = IG_ECONFLICT;

	ck_assert_int_eq(metrics_new(&m), 0);
	lease_name(name, "taken");
	snprintf(path, sizeof(path), LEASES "%s", name);
	l = start("taken", true, &lost, m);
	ck_assert_msg(wait_for(leader_is_leading, l, 15000), "not leading");
	leader_generation(l, led, sizeof(led));

	/* another holder writes the Lease (retrying if a renewal came between) */
	for (int i = 0; i < 20 && rc == IG_ECONFLICT; i++) {
		struct error err = ERROR_INIT;
		char *body;

		lease = lease_get(admin, name);
		json_object_set_new(json_object_get(lease, "spec"), "holderIdentity",
		                    json_string("intruder"));
		json_object_set_new(json_object_get(lease, "spec"), "leaseTransitions",
		                    json_integer(spec_int(lease, "leaseTransitions") + 1));
		body = json_dumps(lease, JSON_COMPACT);
		rc = kube_send(NULL, admin, "PUT", path, "application/json", body, &err);
		ck_assert_msg(rc == 0 || rc == IG_ECONFLICT, "%s", err.msg);
		free(body);
		json_decref(lease);
	}
	ck_assert_int_eq(rc, 0);

	/* seen at the next renewal: lost for good, the flag set for the writers' clients */
	ck_assert_msg(wait_for(leader_lost, l, 8000), "not lost");
	ck_assert_int_eq(lost, 1);
	ck_assert(!leader_is_leading(l));
	ck_assert(!leader_may_write(l, 1));
	ck_assert(gauge(m) == 0);
	nap_ms(1200); /* final: it does not take the Lease back */
	ck_assert(leader_lost(l));
	/* its commits keep the generation it led under, never the intruder's (one more) */
	leader_generation(l, gen, sizeof(gen));
	ck_assert_str_eq(gen, led);

	/* nothing to release: the other holder keeps it */
	leader_stop(l);
	lease = lease_get(admin, name);
	ck_assert_str_eq(spec_str(lease, "holderIdentity"), "intruder");
	json_decref(lease);
	metrics_free(m);
	kube_client_free(admin);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("leader");
	TCase *tc = tcase_create("core"), *api = tcase_create("api");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, refuses_bad_timings, 0,
	                    sizeof(bad_timings) / sizeof(bad_timings[0]));
	tcase_add_test(tc, refuses_a_missing_kubeconfig);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(api, etcd_start, etcd_stop);
	tcase_add_test(api, leads_renews_and_fences);
	tcase_add_test(api, standby_writes_nothing_until_released);
	tcase_add_test(api, release_after_the_lease_moved);
	tcase_add_test(api, lost_when_another_holds_it);
	tcase_set_timeout(api, 180);
	suite_add_tcase(s, api);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
