/* Unit tests for the verification verdict (running digest and tag vs Git's) and the
 * imageguard_running_drift gauge. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/metrics.h"
#include "imageguard/inspect/verify.h"

#define A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static const struct {
	const char *want_tag, *want_digest, *image, *image_id;
	enum verify_status status;
	const char *reason; /* substring */
} cases[] = {
    {"v1", A, "r/app:v1", "docker-pullable://r/app@" A, VERIFY_OK, "runs the digest Git wants"},
    {"v1", A, "r/app:v1", "r/app@" A, VERIFY_OK, "runs the digest Git wants"},
    {NULL, A, "r/app@" A, "r/app@" A, VERIFY_OK, "runs the digest Git wants"},
    {"v1", A, "r/app@" A, "r/app@" A, VERIFY_OK,
     "runs the digest Git wants"}, /* running by digest: no tag to compare */
    {"v1", A, "r/app:v1", "r/app@" B, VERIFY_DRIFT,
     "runs sha256:bbbbbbbbbbbb, Git wants sha256:aaaaaaaaaaaa (v1)"},
    {NULL, A, "r/app@" B, "r/app@" B, VERIFY_DRIFT, "Git wants sha256:aaaaaaaaaaaa"},
    {"v2", A, "r/app:v1", "r/app@" A, VERIFY_DRIFT, "runs tag v1, Git has v2"},
    {"v2", NULL, "r/app:v1", "r/app@" A, VERIFY_DRIFT, "runs tag v1, Git has v2"},
    {"v2", A, "r/app:v1", "", VERIFY_DRIFT, "runs tag v1"}, /* waiting on the old tag */
    {"v1", A, "r/app:v1", "", VERIFY_NOT_RUNNING, "has not started"},
    {"v1", A, "r/app:v1", NULL, VERIFY_NOT_RUNNING, "has not started"},
    {"v1", A, "r/app:v1",
     "docker://sha256:"
     "cccccccccccccccccccccccccccccccccccccccccccccccccc"
     "cccccccccccccc",
     VERIFY_UNKNOWN, "no repository digest"},
    {"v1", A, "r/app:v1", "r/app@sha256:short", VERIFY_UNKNOWN, "not a sha256 digest"},
    {"v1", NULL, "r/app:v1", "r/app@" A, VERIFY_UNKNOWN, "digest of the committed tag is unknown"},
    {"v1", A, NULL, "r/app@" A, VERIFY_OK, "runs the digest Git wants"},
};

START_TEST(compare)
{
	enum verify_status st;
	char *reason = NULL;

	ck_assert_int_eq(verify_compare(&st, &reason, cases[_i].want_tag, cases[_i].want_digest,
	                                cases[_i].image, cases[_i].image_id),
	                 0);
	ck_assert_msg(st == cases[_i].status, "case %d: %s, reason %s", _i, verify_status_name(st),
	              reason);
	ck_assert_msg(cases[_i].reason[0] != '\0', "case %d: empty expected reason", _i);
	ck_assert_msg(strstr(reason, cases[_i].reason) != NULL, "case %d: %s", _i, reason);
	free(reason);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(verify_status_name(VERIFY_OK), "ok");
	ck_assert_str_eq(verify_status_name(VERIFY_DRIFT), "drift");
	ck_assert_str_eq(verify_status_name(VERIFY_NOT_RUNNING), "not-running");
	ck_assert_str_eq(verify_status_name(VERIFY_UNKNOWN), "unknown");
}
END_TEST

START_TEST(gauge)
{
	struct verify_result items[4];
	struct verify_report r = {items, 4, 4, {0}, 0};
	struct metrics *m = NULL;
	struct buf out = BUF_INIT;

	memset(items, 0, sizeof(items));
	items[0] = (struct verify_result){
	    .policy = "default/web", .workload = "prod/Deployment/web", .status = VERIFY_OK};
	items[1] = (struct verify_result){
	    .policy = "default/web", .workload = "prod/Deployment/web", .status = VERIFY_DRIFT};
	items[2] = (struct verify_result){
	    .policy = "default/api", .workload = "prod/StatefulSet/api", .status = VERIFY_OK};
	items[3] = (struct verify_result){
	    .policy = "default/web", .workload = NULL, .status = VERIFY_UNKNOWN};
	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(verify_metrics_declare(m), 0);
	ck_assert_int_eq(verify_metrics_publish(m, &r), 0);
	ck_assert_int_eq(metrics_render(&out, m), 0);
	ck_assert_msg(strstr(out.data, "# TYPE imageguard_running_drift gauge\n") != NULL, "%s",
	              out.data);
	ck_assert_msg(strstr(out.data, "imageguard_running_drift{policy=\"default/web\","
	                               "workload=\"prod/Deployment/web\"} 1\n") != NULL,
	              "%s", out.data);
	ck_assert_msg(strstr(out.data, "imageguard_running_drift{policy=\"default/api\","
	                               "workload=\"prod/StatefulSet/api\"} 0\n") != NULL,
	              "%s", out.data);
	/* the next pass replaces the series: the drift is gone, the api workload too */
	r.len = 1;
	ck_assert_int_eq(verify_metrics_publish(m, &r), 0);
	buf_reset(&out);
	ck_assert_int_eq(metrics_render(&out, m), 0);
	ck_assert_msg(strstr(out.data, "workload=\"prod/Deployment/web\"} 0\n") != NULL, "%s",
	              out.data);
	ck_assert_msg(strstr(out.data, "StatefulSet") == NULL, "%s", out.data);
	buf_release(&out);
	metrics_free(m);
}
END_TEST

START_TEST(gauge_failures)
{
	struct verify_result items[3];
	struct verify_report r = {items, 2, 3, {0}, 0};
	struct metrics *m = NULL;
	struct buf out = BUF_INIT;

	memset(items, 0, sizeof(items));
	items[0] = (struct verify_result){
	    .policy = "default/web", .workload = "prod/Deployment/web", .status = VERIFY_DRIFT};
	items[1] = (struct verify_result){
	    .policy = "default/api", .workload = "prod/StatefulSet/api", .status = VERIFY_OK};
	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(verify_metrics_declare(m), 0);
	ck_assert_int_eq(verify_metrics_publish(m, &r), 0);
	/* the API is down: every check failed; the last known values stay */
	items[0].status = items[1].status = VERIFY_UNKNOWN;
	items[0].failed = items[1].failed = true;
	r.failures = 2;
	ck_assert_int_eq(verify_metrics_publish(m, &r), 0);
	ck_assert_int_eq(metrics_render(&out, m), 0);
	ck_assert_msg(strstr(out.data, "workload=\"prod/Deployment/web\"} 1\n") != NULL, "%s",
	              out.data);
	ck_assert_msg(strstr(out.data, "workload=\"prod/StatefulSet/api\"} 0\n") != NULL, "%s",
	              out.data);
	/* partly failed: what was checked is updated, a pair never checked stays absent */
	items[1] = (struct verify_result){
	    .policy = "default/api", .workload = "prod/StatefulSet/api", .status = VERIFY_DRIFT};
	items[2] = (struct verify_result){.policy = "default/db",
	                                  .workload = "prod/StatefulSet/db",
	                                  .status = VERIFY_UNKNOWN,
	                                  .failed = true};
	r.len = 3;
	ck_assert_int_eq(verify_metrics_publish(m, &r), 0);
	buf_reset(&out);
	ck_assert_int_eq(metrics_render(&out, m), 0);
	ck_assert_msg(strstr(out.data, "workload=\"prod/Deployment/web\"} 1\n") != NULL, "%s",
	              out.data);
	ck_assert_msg(strstr(out.data, "workload=\"prod/StatefulSet/api\"} 1\n") != NULL, "%s",
	              out.data);
	ck_assert_msg(strstr(out.data, "StatefulSet/db") == NULL, "%s", out.data);
	buf_release(&out);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verify");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, compare, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, names);
	tcase_add_test(tc, gauge);
	tcase_add_test(tc, gauge_failures);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
