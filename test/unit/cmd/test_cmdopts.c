/* Unit tests for the COMMON FLAGS shared by plan, reconcile and run. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/cmd/cmdopts.h"
#include "imageguard/util/error.h"

static const struct {
	const char *args[8];
	unsigned allow;
	int rc;
	const char *msg; /* prefix of the error, or NULL */
} cases[] = {
    {{"plan", "--config", "c.yaml"}, 0, 0, NULL},
    {{"plan", "--config=c.yaml", "--state-dir", "/s", "--concurrency=3"}, 0, 0, NULL},
    {{"plan"}, 0, IG_EUSAGE, "option '--config': required"},
    {{"plan", "--help"}, 0, 0, NULL},
    {{"plan", "--config"}, 0, IG_EUSAGE, "option '--config': missing value"},
    {{"plan", "--config", "c", "--bogus"}, 0, IG_EUSAGE, "option '--bogus': unknown"},
    {{"run", "--config", "c", "-o", "json"}, CMDOPTS_LISTEN, IG_EUSAGE, "option '-o': unknown"},
    {{"plan", "--config", "c", "-o", "yaml"}, CMDOPTS_OUTPUT, IG_EUSAGE, "option '-o': expected"},
    {{"plan", "--config", "c", "--listen", ":1"},
     CMDOPTS_OUTPUT,
     IG_EUSAGE,
     "option '--listen': unknown"},
    {{"plan", "--config", "c", "--concurrency", "0"}, 0, IG_EUSAGE, "option '--concurrency'"},
    {{"plan", "--config", "c", "--concurrency", "-1"}, 0, IG_EUSAGE, "option '--concurrency'"},
    {{"plan", "--config", "c", "--concurrency", "9x"}, 0, IG_EUSAGE, "option '--concurrency'"},
    {{"plan", "--config", "c", "--log-level", "loud"}, 0, IG_EUSAGE, "option '--log-level'"},
    {{"plan", "--config", "c", "--log-format", "xml"}, 0, IG_EUSAGE, "option '--log-format'"},
    {{"plan", "--config", "c", "--audit-tags=1"}, 0, IG_EUSAGE, "option '--audit-tags=1'"},
    {{"plan", "--config", "c", "--verify-interval", "5m"},
     CMDOPTS_OUTPUT,
     IG_EUSAGE,
     "option '--verify-interval': unknown"},
    {{"run", "--config", "c", "--verify-interval", "5m"}, CMDOPTS_VERIFY, 0, NULL},
    {{"run", "--config", "c", "--verify-interval=0"}, CMDOPTS_VERIFY, 0, NULL},
    {{"run", "--config", "c", "--verify-interval", "5"},
     CMDOPTS_VERIFY,
     IG_EUSAGE,
     "option '--verify-interval': "},
    {{"run", "--config", "c", "--verify-interval", "-1s"},
     CMDOPTS_VERIFY,
     IG_EUSAGE,
     "option '--verify-interval': expected 0 (off)"},
    {{"run", "--config", "c", "--verify-interval", "200h"},
     CMDOPTS_VERIFY,
     IG_EUSAGE,
     "option '--verify-interval': expected 0 (off)"},
    {{"run", "--config", "c", "--kubeconfig", "k"},
     CMDOPTS_VERIFY,
     IG_EUSAGE,
     "option '--kubeconfig': only used with --verify-interval"},
    {{"run", "--config", "c", "--kubeconfig="},
     CMDOPTS_VERIFY,
     IG_EUSAGE,
     "option '--kubeconfig': empty"},
    /* the first lists' deadline of run --kube */
    {{"run", "--kube", "--kube-sync-timeout", "2m"}, CMDOPTS_KUBE, 0, NULL},
    {{"run", "--kube", "--kube-sync-timeout=500ms"},
     CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--kube-sync-timeout': expected 1s to 24h, got '500ms'"},
    {{"run", "--kube", "--kube-sync-timeout", "25h"},
     CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--kube-sync-timeout': expected 1s to 24h"},
    {{"run", "--kube", "--kube-sync-timeout", "30"},
     CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--kube-sync-timeout': duration '30'"},
    {{"run", "--config", "c", "--kube-sync-timeout", "1m"},
     CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--kube-sync-timeout': only used with --kube"},
    {{"plan", "--config", "c", "--kube-sync-timeout", "1m"},
     CMDOPTS_OUTPUT,
     IG_EUSAGE,
     "option '--kube-sync-timeout': unknown"},
    /* issue 12: the pass deadline and the memory budget, run only */
    {{"run", "--config", "c", "--pass-timeout", "3s", "--memory-budget", "64Mi"},
     CMDOPTS_RUN,
     0,
     NULL},
    {{"plan", "--config", "c", "--pass-timeout", "3s"},
     CMDOPTS_OUTPUT,
     IG_EUSAGE,
     "option '--pass-timeout': unknown"},
    {{"run", "--config", "c", "--pass-timeout", "500ms"},
     CMDOPTS_RUN,
     IG_EUSAGE,
     "option '--pass-timeout': expected 1s to 24h"},
    {{"run", "--config", "c", "--pass-timeout", "soon"},
     CMDOPTS_RUN,
     IG_EUSAGE,
     "option '--pass-timeout': "},
    {{"run", "--config", "c", "--memory-budget", "0"},
     CMDOPTS_RUN,
     IG_EUSAGE,
     "option '--memory-budget': expected a positive size"},
    {{"run", "--config", "c", "--memory-budget", "96MB"},
     CMDOPTS_RUN,
     IG_EUSAGE,
     "option '--memory-budget': expected a positive size"},
    {{"run", "--config", "c", "--memory-budget=99999999999Gi"},
     CMDOPTS_RUN,
     IG_EUSAGE,
     "option '--memory-budget': expected a positive size"},
    /* issue 17: sharding by label and by hash (plan, reconcile, run) */
    {{"reconcile", "--config", "c", "--shards", "3", "--shard-index", "2"}, CMDOPTS_SHARD, 0, NULL},
    {{"reconcile", "--config", "c", "--shards=1", "--shard-index=0"}, CMDOPTS_SHARD, 0, NULL},
    {{"reconcile", "--config", "c", "--shards", "3"},
     CMDOPTS_SHARD,
     IG_EUSAGE,
     "option '--shards': needs --shard-index"},
    {{"plan", "--config", "c", "--shards", "3"}, CMDOPTS_SHARD | CMDOPTS_SHARD_VIEW, 0, NULL},
    {{"plan", "--config", "c", "--shard-index", "0"},
     CMDOPTS_SHARD | CMDOPTS_SHARD_VIEW,
     IG_EUSAGE,
     "option '--shard-index': needs --shards"},
    {{"reconcile", "--config", "c", "--shards", "3", "--shard-index", "3"},
     CMDOPTS_SHARD,
     IG_EUSAGE,
     "option '--shard-index': 3 is not below --shards 3"},
    {{"reconcile", "--config", "c", "--shards", "0", "--shard-index", "0"},
     CMDOPTS_SHARD,
     IG_EUSAGE,
     "option '--shards': expected a number from 1 to 1024"},
    {{"reconcile", "--config", "c", "--shards", "1025", "--shard-index", "0"},
     CMDOPTS_SHARD,
     IG_EUSAGE,
     "option '--shards': expected"},
    {{"reconcile", "--config", "c", "--shards", "2", "--shard-index", "-1"},
     CMDOPTS_SHARD,
     IG_EUSAGE,
     "option '--shard-index': expected"},
    {{"reconcile", "--config", "c", "--shards", "2"},
     CMDOPTS_OUTPUT,
     IG_EUSAGE,
     "option '--shards': unknown"},
    {{"reconcile", "--config", "c", "--watch-label-selector", "!sharding.fluxcd.io/key"},
     CMDOPTS_SHARD,
     0,
     NULL},
    {{"reconcile", "--config", "c", "--watch-label-selector", "x in (a"},
     CMDOPTS_SHARD,
     IG_EUSAGE,
     "option '--watch-label-selector': label selector 'x in (a': found end of string"},
    {{"run", "--kube", "--watch-label-selector", "a=b,!c"}, CMDOPTS_KUBE, 0, NULL},
    {{"run", "--kube", "--watch-label-selector", "a=b=c"},
     CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--watch-label-selector': "},
    /* issue 17: leader election, run only, with the API server, client-go's timing rules */
    {{"run", "--kube", "--enable-leader-election"}, CMDOPTS_RUN | CMDOPTS_KUBE, 0, NULL},
    {{"run", "--config", "c", "--enable-leader-election", "--kubeconfig", "k"},
     CMDOPTS_RUN | CMDOPTS_VERIFY,
     0,
     NULL},
    {{"run", "--config", "c", "--enable-leader-election"},
     CMDOPTS_RUN,
     IG_EUSAGE,
     "option '--enable-leader-election': needs --kube or --kubeconfig"},
    {{"plan", "--config", "c", "--enable-leader-election"},
     CMDOPTS_OUTPUT,
     IG_EUSAGE,
     "option '--enable-leader-election': unknown"},
    {{"run", "--kube", "--enable-leader-election", "--leader-election-renew-deadline", "35s"},
     CMDOPTS_RUN | CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--enable-leader-election': leaseDuration must be greater than renewDeadline"},
    {{"run", "--kube", "--enable-leader-election", "--leader-election-retry-period=25s"},
     CMDOPTS_RUN | CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--enable-leader-election': renewDeadline must be greater than "
     "retryPeriod*JitterFactor"},
    {{"run", "--kube", "--leader-election-lease-duration", "0s"},
     CMDOPTS_RUN | CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--leader-election-lease-duration': expected 1ms to 1h"},
    {{"run", "--kube", "--leader-election-retry-period", "often"},
     CMDOPTS_RUN | CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--leader-election-retry-period': "},
    {{"run", "--kube", "--leader-election-release-on-cancel=no"},
     CMDOPTS_RUN | CMDOPTS_KUBE,
     IG_EUSAGE,
     "option '--leader-election-release-on-cancel': expected true or false"},
    {{"run", "--kube", "--enable-leader-election=false"}, CMDOPTS_RUN | CMDOPTS_KUBE, 0, NULL},
};

START_TEST(parse)
{
	struct cmdopts o;
	struct error err = ERROR_INIT;
	int argc = 0;

	while (cases[_i].args[argc])
		argc++;
	ck_assert_int_eq(cmdopts_parse(&o, argc, (char **)cases[_i].args, cases[_i].allow, &err),
	                 cases[_i].rc);
	if (cases[_i].msg)
		ck_assert_msg(strncmp(err.msg, cases[_i].msg, strlen(cases[_i].msg)) == 0, "%s",
		              err.msg);
	cmdopts_release(&o);
}
END_TEST

START_TEST(shard_values)
{
	const char *args[] = {"run", "--config", "c", "--watch-label-selector",
	                      "x=1", "--shards", "4", "--shard-index",
	                      "3"};
	struct cmdopts o;
	struct error err = ERROR_INIT;
	char *key;

	ck_assert_int_eq(cmdopts_parse(&o, 9, (char **)args, CMDOPTS_SHARD, &err), 0);
	ck_assert_uint_eq(o.shard.shards, 4);
	ck_assert_uint_eq(o.shard.index, 3);
	ck_assert(o.shard_index_set);
	ck_assert_str_eq(o.shard.selector, "x=1");
	key = shard_key(&o.shard);
	ck_assert_str_eq(key, "x=1;shards=4/index=3");
	free(key);
	cmdopts_release(&o);
	log_configure(LOG_INFO, LOG_TEXT);
}
END_TEST

START_TEST(values)
{
	const char *args[] = {
	    "run",  "--config",         "dir",      "--state-dir=/s", "--audit-log",
	    "-",    "--audit-tags",     "--listen", ":9090",          "--secrets-dir",
	    "/sec", "--log-level=error"};
	struct cmdopts o;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(cmdopts_parse(&o, 12, (char **)args, CMDOPTS_LISTEN, &err), 0);
	ck_assert_str_eq(o.config, "dir");
	ck_assert_str_eq(o.state_dir, "/s");
	ck_assert_str_eq(o.audit_log, "-");
	ck_assert(o.audit_tags);
	ck_assert_str_eq(o.listen, ":9090");
	ck_assert_str_eq(o.secrets_dir, "/sec");
	ck_assert_int_eq(o.log_level, LOG_ERROR);
	ck_assert_uint_eq(o.concurrency, 8);
	ck_assert_int_eq(o.verify_interval_ms, 0);
	ck_assert_ptr_null(o.kubeconfig);
	cmdopts_release(&o);
	log_configure(LOG_INFO, LOG_TEXT);
}
END_TEST

START_TEST(verify_values)
{
	const char *args[] = {
	    "run", "--config", "dir", "--verify-interval", "1m30s", "--kubeconfig=/k/config"};
	struct cmdopts o;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(cmdopts_parse(&o, 6, (char **)args, CMDOPTS_LISTEN | CMDOPTS_VERIFY, &err),
	                 0);
	ck_assert_int_eq(o.verify_interval_ms, 90000);
	ck_assert_str_eq(o.kubeconfig, "/k/config");
	cmdopts_release(&o);
}
END_TEST

START_TEST(run_limits)
{
	const char *args[] = {
	    "run", "--config", "dir", "--pass-timeout", "1m30s", "--memory-budget=64Mi"};
	struct cmdopts o;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(cmdopts_parse(&o, 3, (char **)args, CMDOPTS_RUN, &err), 0);
	ck_assert_int_eq(o.pass_timeout_ms, 600000);
	ck_assert_uint_eq(o.memory_budget, (size_t)96 << 20);
	cmdopts_release(&o);
	ck_assert_int_eq(cmdopts_parse(&o, 6, (char **)args, CMDOPTS_RUN, &err), 0);
	ck_assert_int_eq(o.pass_timeout_ms, 90000);
	ck_assert_uint_eq(o.memory_budget, (size_t)64 << 20);
	cmdopts_release(&o);
}
END_TEST

START_TEST(kube_sync_timeout)
{
	const char *args[] = {"run", "--kube", "--kube-sync-timeout", "1m30s"};
	struct cmdopts o;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(cmdopts_parse(&o, 2, (char **)args, CMDOPTS_KUBE, &err), 0);
	ck_assert_int_eq(o.kube_sync_timeout_ms, 30000);
	cmdopts_release(&o);
	ck_assert_int_eq(cmdopts_parse(&o, 4, (char **)args, CMDOPTS_KUBE, &err), 0);
	ck_assert_int_eq(o.kube_sync_timeout_ms, 90000);
	cmdopts_release(&o);
}
END_TEST

START_TEST(leader_values)
{
	const char *defaults[] = {"run", "--kube", "--enable-leader-election"};
	const char *args[] = {"run",
	                      "--kube",
	                      "--enable-leader-election",
	                      "--leader-election-lease-duration",
	                      "3s",
	                      "--leader-election-renew-deadline=2s",
	                      "--leader-election-retry-period",
	                      "500ms",
	                      "--leader-election-release-on-cancel=false"};
	struct cmdopts o;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(cmdopts_parse(&o, 3, (char **)defaults, CMDOPTS_RUN | CMDOPTS_KUBE, &err),
	                 0);
	ck_assert(o.leader_elect && o.leader_release); /* Flux's defaults: 35s, 30s, 5s, true */
	ck_assert_int_eq(o.leader_timing.lease_ms, 35000);
	ck_assert_int_eq(o.leader_timing.renew_ms, 30000);
	ck_assert_int_eq(o.leader_timing.retry_ms, 5000);
	cmdopts_release(&o);
	ck_assert_int_eq(cmdopts_parse(&o, 9, (char **)args, CMDOPTS_RUN | CMDOPTS_KUBE, &err), 0);
	ck_assert(o.leader_elect && !o.leader_release);
	ck_assert_int_eq(o.leader_timing.lease_ms, 3000);
	ck_assert_int_eq(o.leader_timing.renew_ms, 2000);
	ck_assert_int_eq(o.leader_timing.retry_ms, 500);
	cmdopts_release(&o);
	ck_assert_int_eq(cmdopts_parse(&o, 2, (char **)args, CMDOPTS_RUN | CMDOPTS_KUBE, &err), 0);
	ck_assert(!o.leader_elect);
	cmdopts_release(&o);
}
END_TEST

/* --no-cross-namespace-refs (Flux's boolean flag) on plan, reconcile and run, and
 * --watch-namespace only as a valid namespace (it goes into API paths). */
START_TEST(tenancy_values)
{
	static const struct {
		const char *arg;
		unsigned allow;
		int rc;
		bool set;
	} cases[] = {
	    {"--no-cross-namespace-refs", CMDOPTS_TENANCY, 0, true},
	    {"--no-cross-namespace-refs=true", CMDOPTS_TENANCY, 0, true},
	    {"--no-cross-namespace-refs=false", CMDOPTS_TENANCY, 0, false},
	    {"--no-cross-namespace-refs=yes", CMDOPTS_TENANCY, IG_EUSAGE, false},
	    {"--no-cross-namespace-refs", 0, IG_EUSAGE, false}, /* verify: not its flag */
	};
	static const char *const bad_ns[] = {"..", "a/b", "Team", "a.b", "-a"};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[] = {"plan", "--config", "c.yaml", cases[i].arg};
		struct cmdopts o;
		struct error err = ERROR_INIT;

		ck_assert_int_eq(cmdopts_parse(&o, 4, (char **)args, cases[i].allow, &err),
		                 cases[i].rc);
		if (cases[i].rc == 0)
			ck_assert(o.no_cross_namespace_refs == cases[i].set);
		cmdopts_release(&o);
	}
	for (size_t i = 0; i < sizeof(bad_ns) / sizeof(bad_ns[0]); i++) {
		const char *args[] = {"run", "--kube", "--watch-namespace", bad_ns[i]};
		struct cmdopts o;
		struct error err = ERROR_INIT;

		ck_assert_int_eq(
		    cmdopts_parse(&o, 4, (char **)args, CMDOPTS_RUN | CMDOPTS_KUBE, &err),
		    IG_EUSAGE);
		ck_assert_msg(strstr(err.msg, "is not a valid namespace"), "%s", err.msg);
		cmdopts_release(&o);
	}
}
END_TEST

START_TEST(default_state_dir)
{
	char *d = cmdopts_default_state_dir();

	ck_assert_ptr_nonnull(d);
	ck_assert(strstr(d, "imageguard") != NULL);
	free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cmdopts");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, parse, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, values);
	tcase_add_test(tc, shard_values);
	tcase_add_test(tc, verify_values);
	tcase_add_test(tc, run_limits);
	tcase_add_test(tc, kube_sync_timeout);
	tcase_add_test(tc, leader_values);
	tcase_add_test(tc, tenancy_values);
	tcase_add_test(tc, default_state_dir);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
