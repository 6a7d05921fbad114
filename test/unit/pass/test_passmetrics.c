/* passmetrics: the pass's metric families (CONTRACT §8) declared once, and each update a pass
 * makes (decisions, current-missing, settling, commits, tag gauges, pass duration and last
 * success, registry responses), read back as the Prometheus text /metrics serves
 * (metrics_render). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/config/config.h"
#include "imageguard/guard/guard.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/pass/scan.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/report/report.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/metrics.h"
#include "support/fixture.h"

static char *render(struct metrics *m)
{
	struct buf out = BUF_INIT;

	ck_assert_int_eq(metrics_render(&out, m), 0);
	return buf_detach(&out);
}

/* Whether text holds line (a whole line, its "\n" included in line). */
static bool has_line(const char *text, const char *line)
{
	for (const char *p = text; (p = strstr(p, line)); p++)
		if (p == text || p[-1] == '\n')
			return true;
	return false;
}

static struct metrics *declared(void)
{
	struct metrics *m = NULL;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(passmetrics_declare(m), 0);
	return m;
}

/* ---- the families, in the order /metrics shows them ---- */

static const struct {
	const char *name, *type;
} families[] = {
    {"imageguard_decisions_total", "counter"},
    {"imageguard_registry_requests_total", "counter"},
    {"imageguard_registry_tags", "gauge"},
    {"imageguard_reconcile_duration_seconds", "histogram"},
    {"imageguard_last_success_timestamp_seconds", "gauge"},
    {"imageguard_commits_total", "counter"},
    {"imageguard_settling", "gauge"},
    {"imageguard_current_missing_total", "counter"},
    {"imageguard_verify_total", "counter"},
};

START_TEST(declare)
{
	struct metrics *m = declared();
	char *text = render(m), line[160];
	const char *at = text;

	/* each family with its TYPE, in declaration order; a series appears only once set */
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		const char *p;

		snprintf(line, sizeof(line), "# TYPE %s %s\n", families[i].name, families[i].type);
		ck_assert_msg((p = strstr(at, line)) != NULL, "%s missing or out of order:\n%s",
		              line, text);
		at = p + strlen(line);
		snprintf(line, sizeof(line), "# HELP %s ", families[i].name);
		ck_assert_msg(strstr(text, line) != NULL, "no HELP for %s", families[i].name);
	}
	ck_assert_ptr_null(strstr(text, "imageguard_webhook"));
	free(text);
	/* declared once: a second declaration is refused */
	ck_assert_int_eq(passmetrics_declare(m), IG_EINVALID);

	ck_assert_int_eq(passmetrics_declare_webhook(m), 0);
	text = render(m);
	ck_assert(has_line(text, "# TYPE imageguard_webhook_requests_total counter\n"));
	ck_assert(has_line(text, "# TYPE imageguard_webhook_rejected_total counter\n"));
	ck_assert(has_line(text, "# TYPE imageguard_push_to_commit_seconds histogram\n"));
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(webhook_buckets)
{
	static const char *const accepted[] = {"accepted"};
	struct metrics *m = NULL;
	char *text;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(passmetrics_declare_webhook(m), 0);
	ck_assert_int_eq(metrics_add(m, "imageguard_webhook_requests_total", accepted, 1), 0);
	ck_assert_int_eq(metrics_observe(m, "imageguard_push_to_commit_seconds", NULL, 3), 0);
	text = render(m);
	ck_assert(has_line(text, "imageguard_webhook_requests_total{result=\"accepted\"} 1\n"));
	/* the buckets from half a second to a quarter of an hour */
	ck_assert(has_line(text, "imageguard_push_to_commit_seconds_bucket{le=\"0.5\"} 0\n"));
	ck_assert(has_line(text, "imageguard_push_to_commit_seconds_bucket{le=\"2\"} 0\n"));
	ck_assert(has_line(text, "imageguard_push_to_commit_seconds_bucket{le=\"5\"} 1\n"));
	ck_assert(has_line(text, "imageguard_push_to_commit_seconds_bucket{le=\"900\"} 1\n"));
	ck_assert(has_line(text, "imageguard_push_to_commit_seconds_count 1\n"));
	free(text);
	metrics_free(m);
}
END_TEST

/* ---- one decision at a time ---- */

static const struct {
	const char *policy;
	enum guard_decision_kind decision;
	enum guard_reason reason;
	unsigned warnings;
} decisions[] = {
    {"team/app", GUARD_UPDATE, GUARD_FORWARD, 0},
    {"team/app", GUARD_UPDATE, GUARD_FORWARD, 0},
    {"team/app", GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, GUARD_WARN_CURRENT_MISSING},
    {"team/app", GUARD_NONE, GUARD_UP_TO_DATE, GUARD_WARN_NAME_CHANGED},
    {"team/db", GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED,
     GUARD_WARN_CURRENT_MISSING | GUARD_WARN_CREATED_UNKNOWN},
    {"team/db", GUARD_ERROR, GUARD_REGISTRY, 0},
    {"team/db", GUARD_ROLLBACK, GUARD_OVERRIDE, 0},
};

static const struct {
	const char *line;
} decision_lines[] = {
    {"imageguard_decisions_total{policy=\"team/app\",decision=\"update\",reason=\"forward\"} "
     "2\n"},
    {"imageguard_decisions_total{policy=\"team/app\",decision=\"hold\","
     "reason=\"downgrade-blocked\"} 1\n"},
    {"imageguard_decisions_total{policy=\"team/app\",decision=\"none\",reason=\"up-to-date\"} "
     "1\n"},
    {"imageguard_decisions_total{policy=\"team/db\",decision=\"hold\","
     "reason=\"downgrade-blocked\"} 1\n"},
    {"imageguard_decisions_total{policy=\"team/db\",decision=\"error\",reason=\"registry\"} "
     "1\n"},
    {"imageguard_decisions_total{policy=\"team/db\",decision=\"rollback\",reason=\"override\"} "
     "1\n"},
    /* only the items that carry the current-missing warning, whatever else they carry */
    {"imageguard_current_missing_total{policy=\"team/app\"} 1\n"},
    {"imageguard_current_missing_total{policy=\"team/db\"} 1\n"},
};

START_TEST(decision_table)
{
	struct metrics *m = declared();
	char *text;

	for (size_t i = 0; i < sizeof(decisions) / sizeof(decisions[0]); i++) {
		struct report_item it;

		memset(&it, 0, sizeof(it));
		it.policy = (char *)decisions[i].policy;
		it.decision = decisions[i].decision;
		it.reason = decisions[i].reason;
		it.warnings = decisions[i].warnings;
		passmetrics_decision(m, &it);
		passmetrics_decision(NULL, &it); /* no registry: nothing, no crash */
	}
	text = render(m);
	for (size_t i = 0; i < sizeof(decision_lines) / sizeof(decision_lines[0]); i++)
		ck_assert_msg(has_line(text, decision_lines[i].line), "no %s in\n%s",
		              decision_lines[i].line, text);
	/* 7 decisions, 2 of them current-missing: no other series */
	{
		size_t series = 0, missing = 0;

		for (const char *p = text; (p = strstr(p, "\nimageguard_")); p++) {
			series += strncmp(p + 1, "imageguard_decisions_total{", 27) == 0;
			missing += strncmp(p + 1, "imageguard_current_missing_total{", 33) == 0;
		}
		ck_assert_uint_eq(series, 6);
		ck_assert_uint_eq(missing, 2);
	}
	free(text);
	metrics_free(m);
}
END_TEST

/* ---- the signature gate: one series per policy and result ---- */

START_TEST(verify_results)
{
	struct metrics *m = declared();
	char *text;

	passmetrics_verify(m, "team/app", "ok");
	passmetrics_verify(m, "team/app", "ok");
	passmetrics_verify(m, "team/app", "unsigned");
	passmetrics_verify(m, "team/db", "error");
	passmetrics_verify(NULL, "team/db", "error"); /* no registry: nothing, no crash */
	text = render(m);
	ck_assert(has_line(text, "imageguard_verify_total{policy=\"team/app\",result=\"ok\"} 2\n"));
	ck_assert(
	    has_line(text, "imageguard_verify_total{policy=\"team/app\",result=\"unsigned\"} 1\n"));
	ck_assert(
	    has_line(text, "imageguard_verify_total{policy=\"team/db\",result=\"error\"} 1\n"));
	free(text);
	metrics_free(m);
}
END_TEST

/* ---- settling: per policy, 1 while any of its markers is hold/settling ---- */

static const struct {
	const char *policies;    /* one letter a policy, one item each */
	const char *settling;    /* 's': the item is hold/settling */
	const char *want_a_to_d; /* the gauge for policies a..d after the pass, '-' absent */
} settle_cases[] = {
    {"aab", "s..", "10--"},   {"aab", ".s.", "10--"}, /* the settling item last of its policy */
    {"abab", "...s", "01--"},                         /* interleaved */
    {"abc", "...", "000-"},   {"abcd", "ssss", "1111"},
    {"", "", "----"}, /* an empty report sets nothing */
};

START_TEST(settling_table)
{
	struct metrics *m = declared();
	struct report_item items[8];
	struct report r = REPORT_INIT;
	char names[8][4];
	size_t n = strlen(settle_cases[_i].policies);

	memset(items, 0, sizeof(items));
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "n/%c", settle_cases[_i].policies[i]);
		items[i].policy = names[i];
		items[i].decision = settle_cases[_i].settling[i] == 's' ? GUARD_HOLD : GUARD_UPDATE;
		items[i].reason =
		    settle_cases[_i].settling[i] == 's' ? GUARD_SETTLING : GUARD_FORWARD;
	}
	r.items = items;
	r.len = n;
	/* a pass before in which every policy settled: this pass's values replace them */
	for (char c = 'a'; c <= 'd' && n; c++) {
		char p[4];
		const char *v[1] = {p};

		snprintf(p, sizeof(p), "n/%c", c);
		if (strchr(settle_cases[_i].policies, c))
			metrics_set(m, "imageguard_settling", v, 1);
	}
	passmetrics_settling(m, &r);
	passmetrics_settling(NULL, &r);
	{
		char *text = render(m);

		for (int k = 0; k < 4; k++) {
			char line[96];
			char want = settle_cases[_i].want_a_to_d[k];

			snprintf(line, sizeof(line), "imageguard_settling{policy=\"n/%c\"} ",
			         'a' + k);
			if (want == '-') {
				ck_assert_msg(strstr(text, line) == NULL, "case %d: %s present", _i,
				              line);
				continue;
			}
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%c\n", want);
			ck_assert_msg(has_line(text, line), "case %d: no %s in\n%s", _i, line,
			              text);
		}
		free(text);
	}
	metrics_free(m);
}
END_TEST

START_TEST(commits)
{
	struct metrics *m = declared();
	char *text;

	text = render(m);
	ck_assert_ptr_null(strstr(text, "\nimageguard_commits_total "));
	free(text);
	for (int i = 0; i < 3; i++)
		passmetrics_commit(m);
	passmetrics_commit(NULL);
	text = render(m);
	ck_assert(has_line(text, "imageguard_commits_total 3\n"));
	free(text);
	metrics_free(m);
}
END_TEST

/* ---- the tag gauges: only of the listings that succeeded ---- */

START_TEST(listings)
{
	struct metrics *m = declared();
	struct config_repository repos[4];
	struct scan scans[4];
	char *text;

	memset(repos, 0, sizeof(repos));
	memset(scans, 0, sizeof(scans));
	repos[0].image = (char *)"ghcr.io/team/app";
	repos[1].image = (char *)"ghcr.io/team/db";
	repos[2].image = (char *)"ghcr.io/team/broken";
	repos[3].image = (char *)"ghcr.io/team/suspended";
	for (int i = 0; i < 4; i++)
		scans[i].repo = &repos[i];
	scans[0] = (struct scan){.repo = &repos[0], .done = true, .rc = 0};
	scans[0].listing.tags.len = 42;
	scans[1] = (struct scan){.repo = &repos[1], .done = true, .rc = 0};
	scans[1].listing.tags.len = 0; /* an empty listing is still a listing */
	scans[2] = (struct scan){.repo = &repos[2], .done = true, .rc = IG_EFAIL};
	scans[2].listing.tags.len = 7;                              /* never counted */
	scans[3] = (struct scan){.repo = &repos[3], .done = false}; /* not listed */
	scans[3].listing.tags.len = 9;
	passmetrics_listings(m, scans, 4);
	passmetrics_listings(NULL, scans, 4);
	text = render(m);
	ck_assert(has_line(text, "imageguard_registry_tags{image=\"ghcr.io/team/app\"} 42\n"));
	ck_assert(has_line(text, "imageguard_registry_tags{image=\"ghcr.io/team/db\"} 0\n"));
	ck_assert_ptr_null(strstr(text, "team/broken"));
	ck_assert_ptr_null(strstr(text, "team/suspended"));
	free(text);

	/* the next pass: app's listing fails, its last value stays; db grew */
	scans[0].rc = IG_ETIMEOUT;
	scans[0].listing.tags.len = 1;
	scans[1].listing.tags.len = 5;
	passmetrics_listings(m, scans, 2);
	text = render(m);
	ck_assert(has_line(text, "imageguard_registry_tags{image=\"ghcr.io/team/app\"} 42\n"));
	ck_assert(has_line(text, "imageguard_registry_tags{image=\"ghcr.io/team/db\"} 5\n"));
	free(text);
	metrics_free(m);
}
END_TEST

/* ---- a complete pass: its duration observed, its end the last success ---- */

START_TEST(pass_done)
{
	struct metrics *m = declared();
	struct timespec t0;
	time_t before = time(NULL);
	double last;
	char *text;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	t0.tv_sec -= 3; /* a pass of 3 s (and the moment this test takes) */
	passmetrics_pass_done(m, &t0);
	passmetrics_pass_done(NULL, &t0);
	last = metrics_get(m, "imageguard_last_success_timestamp_seconds", NULL);
	ck_assert_msg(last >= (double)before && last <= (double)time(NULL), "%f", last);
	text = render(m);
	ck_assert(has_line(text, "imageguard_reconcile_duration_seconds_bucket{le=\"2.5\"} 0\n"));
	ck_assert(has_line(text, "imageguard_reconcile_duration_seconds_bucket{le=\"5\"} 1\n"));
	ck_assert(has_line(text, "imageguard_reconcile_duration_seconds_bucket{le=\"120\"} 1\n"));
	ck_assert(has_line(text, "imageguard_reconcile_duration_seconds_count 1\n"));
	{
		const char *sum = strstr(text, "\nimageguard_reconcile_duration_seconds_sum ");
		double s;

		ck_assert_ptr_nonnull(sum);
		s = strtod(sum + strlen("\nimageguard_reconcile_duration_seconds_sum "), NULL);
		ck_assert_msg(s >= 3 && s < 4, "%f", s);
	}
	free(text);
	metrics_free(m);
}
END_TEST

/* ---- the registry client counts every response by registry and status ---- */

static struct fixture fault;

static void fault_start(void)
{
	ck_assert_msg(fixture_fault_start(&fault, NULL) == 0, "faultserver.py did not start");
}

static void fault_stop(void)
{
	fixture_fault_stop(&fault);
}

static void list(struct registry_client *c, const char *repo, int want)
{
	struct imageref ref = IMAGEREF_INIT;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	struct registry_target t;
	struct error err = ERROR_INIT;
	char image[256];

	snprintf(image, sizeof(image), "%s/%s", fault.host, repo);
	ck_assert_msg(imageref_parse(&ref, image, 0, &err) == 0, "%s", err.msg);
	memset(&t, 0, sizeof(t));
	t.ref = &ref;
	t.insecure = true;
	ck_assert_msg(registry_list_tags(&l, c, &t, &err) == want, "%s: %s", repo, err.msg);
	registry_listing_release(&l);
	imageref_release(&ref);
}

START_TEST(registry_responses)
{
	struct metrics *m = declared();
	struct registry_client *c = NULL;
	struct error err = ERROR_INIT;
	char line[256], *text;

	ck_assert_int_eq(passmetrics_client_new(&c, m, false, &err), 0);
	list(c, "pages-query/pm", 0); /* 25 tags in 3 pages */
	list(c, "e500once/pm", 0);    /* a 500, then the list */
	list(c, "notfound-x/pm", IG_ENOTFOUND);
	registry_client_free(c);
	text = render(m);
	snprintf(line, sizeof(line),
	         "imageguard_registry_requests_total{registry=\"%s\",code=\"200\"} 4\n",
	         fault.host);
	ck_assert_msg(has_line(text, line), "no %s in\n%s", line, text);
	snprintf(line, sizeof(line),
	         "imageguard_registry_requests_total{registry=\"%s\",code=\"500\"} 1\n",
	         fault.host);
	ck_assert_msg(has_line(text, line), "no %s in\n%s", line, text);
	snprintf(line, sizeof(line),
	         "imageguard_registry_requests_total{registry=\"%s\",code=\"404\"} 1\n",
	         fault.host);
	ck_assert_msg(has_line(text, line), "no %s in\n%s", line, text);
	free(text);

	/* without a registry of metrics the client lists all the same */
	ck_assert_int_eq(passmetrics_client_new(&c, NULL, true, &err), 0);
	list(c, "pages-query/pm", 0);
	registry_client_free(c);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("passmetrics");
	TCase *tc = tcase_create("core"), *peer = tcase_create("registry");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, declare);
	tcase_add_test(tc, webhook_buckets);
	tcase_add_test(tc, decision_table);
	tcase_add_test(tc, verify_results);
	tcase_add_loop_test(tc, settling_table, 0, sizeof(settle_cases) / sizeof(settle_cases[0]));
	tcase_add_test(tc, commits);
	tcase_add_test(tc, listings);
	tcase_add_test(tc, pass_done);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(peer, fault_start, fault_stop);
	tcase_add_test(peer, registry_responses);
	tcase_set_timeout(peer, 60);
	suite_add_tcase(s, peer);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
