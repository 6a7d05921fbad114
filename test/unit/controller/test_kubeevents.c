/* Unit tests for which decisions become Kubernetes Events and with which type and reason
 * (Warning/error for the anomalies, Normal/info for commits and rollbacks, nothing for the
 * quiet ones). */
#include <check.h>
#include <string.h>

#include "imageguard/controller/kubeevents.h"
#include "imageguard/report/report.h"

static const struct {
	enum guard_decision_kind d;
	enum guard_reason r;
	unsigned warnings;
	const char *commit;
	bool event, warning;
	const char *reason;
} cases[] = {
    {GUARD_UPDATE, GUARD_FORWARD, 0, "abc", true, false, "UpdateCommitted"},
    {GUARD_UPDATE, GUARD_ADOPT, 0, "abc", true, false, "UpdateCommitted"},
    {GUARD_UPDATE, GUARD_FORWARD, 0, NULL, false, false, ""}, /* decided, not written */
    {GUARD_ROLLBACK, GUARD_OVERRIDE, 0, "abc", true, false, "RollbackCommitted"},
    {GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, 0, NULL, true, true, "DowngradeBlocked"},
    {GUARD_HOLD, GUARD_CANDIDATE_MISSING, 0, NULL, true, true, "CandidateMissing"},
    {GUARD_HOLD, GUARD_UNVERIFIED, GUARD_WARN_UNSIGNED, NULL, true, true, "SignatureUnverified"},
    {GUARD_HOLD, GUARD_UNVERIFIED, GUARD_WARN_BAD_SIGNATURE, NULL, true, true,
     "SignatureUnverified"},
    {GUARD_NONE, GUARD_UP_TO_DATE, GUARD_WARN_CURRENT_MISSING, NULL, true, true, "CurrentMissing"},
    {GUARD_UPDATE, GUARD_FORWARD, GUARD_WARN_CURRENT_MISSING, "abc", true, true, "CurrentMissing"},
    {GUARD_ERROR, GUARD_REGISTRY, 0, NULL, true, true, "RegistryOperationFailed"},
    {GUARD_ERROR, GUARD_GIT, 0, NULL, true, true, "GitOperationFailed"},
    {GUARD_ERROR, GUARD_CONFIG, 0, NULL, true, true, "InvalidConfig"},
    {GUARD_NONE, GUARD_UP_TO_DATE, 0, NULL, false, false, ""},
    {GUARD_HOLD, GUARD_NO_CANDIDATES, 0, NULL, false, false, ""},
    {GUARD_HOLD, GUARD_SUSPENDED, 0, NULL, false, false, ""},
    {GUARD_HOLD, GUARD_OVERRIDE, 0, NULL, false, false, ""},
    {GUARD_NONE, GUARD_NO_MARKERS, 0, NULL, false, false, ""},
};

START_TEST(classify)
{
	struct report_item it;
	char reason[64] = "";
	bool warning = false, event;

	memset(&it, 0, sizeof(it));
	it.decision = cases[_i].d;
	it.reason = cases[_i].r;
	it.warnings = cases[_i].warnings;
	it.commit = (char *)cases[_i].commit;
	event = kubeevents_classify(&it, &warning, reason, sizeof(reason));
	ck_assert_msg(event == cases[_i].event, "case %d: event", _i);
	if (event) {
		ck_assert_msg(warning == cases[_i].warning, "case %d: type", _i);
		ck_assert_str_eq(reason, cases[_i].reason);
	}
}
END_TEST

/* An error with Flux's own reason is a Warning Event with that reason. */
START_TEST(access_denied)
{
	struct report_item it;
	char reason[64] = "";
	bool warning = false;

	memset(&it, 0, sizeof(it));
	it.decision = GUARD_ERROR;
	it.reason = GUARD_CONFIG;
	it.kube_reason = "AccessDenied";
	ck_assert(kubeevents_classify(&it, &warning, reason, sizeof(reason)));
	ck_assert(warning);
	ck_assert_str_eq(reason, "AccessDenied");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kubeevents");
	TCase *tc = tcase_create("classify");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, classify, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, access_denied);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
