/* Unit tests for the Ready condition imageguard writes on an ImageUpdateAutomation: the worst
 * decision sets the reason (error, then downgrade-blocked/candidate-missing, then other holds,
 * then successes; a rollback in force names itself), the message counts each kind. */
#include <check.h>
#include <string.h>

#include "imageguard/controller/kubestatus.h"
#include "imageguard/report/report.h"

#define MAXN 4

static const struct {
	struct {
		enum guard_decision_kind d;
		enum guard_reason r;
	} items[MAXN];
	size_t n;
	const char *failure;
	bool ok;
	const char *reason, *message;
} cases[] = {
    {{{GUARD_UPDATE, GUARD_FORWARD}}, 1, NULL, true, "Succeeded", "1 marker: 1 update/forward"},
    {{{GUARD_NONE, GUARD_UP_TO_DATE},
      {GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED},
      {GUARD_NONE, GUARD_UP_TO_DATE}},
     3,
     NULL,
     true,
     "DowngradeBlocked",
     "3 markers: 2 none/up-to-date, 1 hold/downgrade-blocked"},
    {{{GUARD_HOLD, GUARD_NO_CANDIDATES}, {GUARD_HOLD, GUARD_CANDIDATE_MISSING}},
     2,
     NULL,
     true,
     "CandidateMissing",
     "2 markers: 1 hold/no-candidates, 1 hold/candidate-missing"},
    {{{GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED}, {GUARD_ERROR, GUARD_REGISTRY}},
     2,
     NULL,
     false,
     "RegistryOperationFailed",
     "2 markers: 1 hold/downgrade-blocked, 1 error/registry; ns/p: boom"},
    {{{GUARD_UPDATE, GUARD_FORWARD}, {GUARD_HOLD, GUARD_NO_CANDIDATES}},
     2,
     NULL,
     true,
     "NoCandidates",
     "2 markers: 1 update/forward, 1 hold/no-candidates"},
    {{{GUARD_UPDATE, GUARD_FORWARD}, {GUARD_ROLLBACK, GUARD_OVERRIDE}},
     2,
     NULL,
     true,
     "RollbackInForce",
     "2 markers: 1 update/forward, 1 rollback/override"},
    {{{GUARD_HOLD, GUARD_OVERRIDE}, {GUARD_HOLD, GUARD_SUSPENDED}},
     2,
     NULL,
     true,
     "Suspended",
     "2 markers: 1 hold/override, 1 hold/suspended"},
    {{{GUARD_ERROR, GUARD_GIT}},
     1,
     NULL,
     false,
     "GitOperationFailed",
     "1 marker: 1 error/git; ns/p: boom"},
    {{{GUARD_ERROR, GUARD_CONFIG}},
     1,
     NULL,
     false,
     "InvalidConfig",
     "1 marker: 1 error/config; ns/p: boom"},
    {{{0, 0}}, 0, NULL, true, "Succeeded", "no markers found"},
    {{{0, 0}}, 0, "clone failed: 404", false, "GitOperationFailed", "clone failed: 404"},
};

START_TEST(ready)
{
	struct report_item items[MAXN];
	const struct report_item *ptrs[MAXN];
	char reason[64], message[512];
	bool ok;

	memset(items, 0, sizeof(items));
	for (size_t i = 0; i < cases[_i].n; i++) {
		items[i].decision = cases[_i].items[i].d;
		items[i].reason = cases[_i].items[i].r;
		items[i].policy = "ns/p";
		items[i].message = "boom";
		ptrs[i] = &items[i];
	}
	ok = kubestatus_ready(reason, sizeof(reason), message, sizeof(message), ptrs, cases[_i].n,
	                      cases[_i].failure);
	ck_assert_msg(ok == cases[_i].ok, "case %d: status", _i);
	ck_assert_str_eq(reason, cases[_i].reason);
	ck_assert_str_eq(message, cases[_i].message);
}
END_TEST

/* A refusal Flux gives a reason of its own (config_invalid.reason, carried by the item) is
 * that reason, ahead of the other errors' InvalidConfig. */
START_TEST(access_denied)
{
	struct report_item items[2];
	const struct report_item *ptrs[2] = {&items[0], &items[1]};
	char reason[64], message[512];

	memset(items, 0, sizeof(items));
	items[0].decision = GUARD_UPDATE;
	items[0].reason = GUARD_FORWARD;
	items[1].decision = GUARD_ERROR;
	items[1].reason = GUARD_CONFIG;
	items[1].policy = "team-a/stolen";
	items[1].message = "access denied: 'team-b/private'";
	items[1].kube_reason = "AccessDenied";
	ck_assert(
	    !kubestatus_ready(reason, sizeof(reason), message, sizeof(message), ptrs, 2, NULL));
	ck_assert_str_eq(reason, "AccessDenied");
	ck_assert_msg(strstr(message, "team-a/stolen: access denied: 'team-b/private'"), "%s",
	              message);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kubestatus");
	TCase *tc = tcase_create("ready");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, ready, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, access_denied);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
