/* Unit tests for the decision table (guard): every row of CONTRACT §6, warnings, overrides,
 * digest reflection, and the invariants of §1 as properties over seeded random inputs. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/guard/guard.h"
#include "imageguard/policy/policy.h"

#define NOW 1700000000
#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

enum pol { SEMVER, NUMERICAL, ALPHA, STAMPED, NARROW, RAISED, ORDER, TRACKED, NPOL };

static struct policy *policies[NPOL];

static void setup(void)
{
	static const struct policy_spec specs[NPOL] = {
	    [SEMVER] = {NULL, NULL, NULL, 0, POLICY_SEMVER, ">=1.0.0", true},
	    [NUMERICAL] = {NULL, NULL, NULL, 0, POLICY_NUMERICAL, NULL, true},
	    [ALPHA] = {NULL, NULL, NULL, 0, POLICY_ALPHABETICAL, NULL, true},
	    /* the incident: release-<sha>-<ts>, ordered by the extracted timestamp */
	    [STAMPED] = {"^release-[0-9a-f]+-(?P<ts>[0-9]+)$", "$ts", NULL, 0, POLICY_NUMERICAL,
	                 NULL, true},
	    /* a range narrowed below, or raised above, what Git has; and the order alone */
	    [NARROW] = {NULL, NULL, NULL, 0, POLICY_SEMVER, "<2.0.0", true},
	    [RAISED] = {NULL, NULL, NULL, 0, POLICY_SEMVER, ">=2.0.0", true},
	    [ORDER] = {NULL, NULL, NULL, 0, POLICY_SEMVER, ">=0.0.0-0", true},
	    /* policy.digest.tag: latest, as config compiles it */
	    [TRACKED] = {"^latest$", NULL, NULL, 0, POLICY_ALPHABETICAL, NULL, true},
	};
	struct error err = ERROR_INIT;

	for (int i = 0; i < NPOL; i++)
		ck_assert_msg(policy_new(&policies[i], &specs[i], &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	for (int i = 0; i < NPOL; i++) {
		policy_free(policies[i]);
		policies[i] = NULL;
	}
}

/* Splits a space-separated list into a static array (tests only). */
static size_t split(const char **out, size_t cap, char *s)
{
	size_t n = 0;

	for (char *p = s; *p && n < cap;) {
		while (*p == ' ')
			*p++ = '\0';
		if (!*p)
			break;
		out[n++] = p;
		while (*p && *p != ' ')
			p++;
	}
	return n;
}

enum { SUS_POLICY = 1, SUS_REPO = 2, SUS_AUTO = 4 };
enum { NO_UNTIL = 0, LAPSED = -1, FUTURE = 1, AT_NOW = 2 };

static const struct row {
	const char *name;
	enum pol pol;
	const char *tags; /* NULL: the listing failed */
	const char *current, *current_digest;
	enum guard_digest_mode mode;
	unsigned suspended;
	const char *rollback_to;
	int until;
	/* after guard_decide */
	enum guard_decision_kind d1;
	enum guard_reason r1;
	bool confirm;
	unsigned warnings;
	const char *candidate;
	/* after guard_confirm(head, digest) */
	enum guard_head head;
	const char *head_digest;
	enum guard_decision_kind d2;
	enum guard_reason r2;
	bool write_digest;
	bool use_order; /* was order_policy; policy_verdict lifts the range itself now */
} rows[] = {
    /* update/forward, confirmed and not */
    {"forward",
     SEMVER,
     "1.0.0 1.1.0 1.2.0",
     "1.1.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     false,
     false},
    {"forward 404",
     SEMVER,
     "1.0.0 1.1.0 1.2.0",
     "1.1.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_NOT_FOUND,
     NULL,
     GUARD_HOLD,
     GUARD_CANDIDATE_MISSING,
     false,
     false},
    {"forward head fails",
     SEMVER,
     "1.0.0 1.2.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_FAILED,
     NULL,
     GUARD_ERROR,
     GUARD_REGISTRY,
     false,
     false},
    {"forward numerical",
     NUMERICAL,
     "3 10 9",
     "9",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "10",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     false,
     false},
    /* Flux fails a numerical policy over a non-number: so does the decision */
    {"numerical over a non-number errors",
     NUMERICAL,
     "3 10 latest",
     "9",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_ERROR,
     GUARD_CONFIG,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_ERROR,
     GUARD_CONFIG,
     false,
     false},
    /* policy_verdict: a looser spelling ahead of the pick holds, a respelling is up to date */
    {"loose spelling ahead holds",
     SEMVER,
     "1.0.0 1.9.0",
     "v2",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "1.9.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     false},
    {"same version respelled is up to date",
     SEMVER,
     "1.2.0 1.3.0 v1.3.0",
     "1.3.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     0,
     "1.3.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     false},
    /* the committed spelling stays, so only the digest moves (and is HEADed as committed) */
    {"respelled under Always keeps the spelling",
     SEMVER,
     "1.2.0 1.3.0 v1.3.0",
     "1.3.0",
     D2,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     true,
     0,
     "1.3.0",
     GUARD_HEAD_OK,
     D2,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     false},
    {"respelled, committed spelling not listed",
     SEMVER,
     "1.2.0 v1.3.0",
     "1.3.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "v1.3.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     false},
    /* update/adopt */
    {"adopt latest",
     SEMVER,
     "1.0.0 1.2.0 latest",
     "latest",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_ADOPT,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_ADOPT,
     false,
     false},
    {"adopt no current tag",
     NUMERICAL,
     "1 2",
     NULL,
     NULL,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_ADOPT,
     true,
     0,
     "2",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_ADOPT,
     true,
     false},
    {"digest-only marker equal",
     NUMERICAL,
     "1 2",
     NULL,
     D1,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_ADOPT,
     true,
     0,
     "2",
     GUARD_HEAD_OK,
     D1,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     false},
    /* none/up-to-date */
    {"up to date",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     false},
    /* hold/downgrade-blocked, with and without current-missing (the stale cache) */
    {"downgrade",
     SEMVER,
     "1.0.0 1.1.0 1.2.0",
     "1.3.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     false},
    {"stale cache",
     STAMPED,
     "release-aa1-100 release-bb2-150",
     "release-cc3-300",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "release-bb2-150",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     false},
    {"fresh list after stale",
     STAMPED,
     "release-bb2-150 release-cc3-300 release-dd4-400",
     "release-cc3-300",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "release-dd4-400",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     false,
     false},
    {"current missing forward",
     SEMVER,
     "1.0.0 1.5.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     GUARD_WARN_CURRENT_MISSING,
     "1.5.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     false,
     false},
    /* hold/no-candidates */
    {"empty listing",
     SEMVER,
     "",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     false},
    {"nothing passes",
     SEMVER,
     "latest main 0.9.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     false},
    {"only signatures",
     ALPHA,
     "sha256-abc.sig",
     "a",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     false},
    /* error/registry */
    {"listing failed",
     SEMVER,
     NULL,
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_ERROR,
     GUARD_REGISTRY,
     false,
     0,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_ERROR,
     GUARD_REGISTRY,
     false,
     false},
    /* hold/suspended, before anything else */
    {"policy suspended",
     SEMVER,
     "1.0.0 2.0.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     SUS_POLICY,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_SUSPENDED,
     false,
     0,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_SUSPENDED,
     false,
     false},
    {"repository suspended",
     SEMVER,
     NULL,
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     SUS_REPO,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_SUSPENDED,
     false,
     0,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_SUSPENDED,
     false,
     false},
    {"automation suspended",
     SEMVER,
     "1.0.0 2.0.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     SUS_AUTO,
     "1.0.0",
     FUTURE,
     GUARD_HOLD,
     GUARD_SUSPENDED,
     false,
     0,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_SUSPENDED,
     false,
     false},
    /* overrides */
    {"rollback",
     SEMVER,
     "1.0.0 1.1.0 1.2.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     true,
     0,
     "1.0.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     false,
     false},
    {"rollback until future",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     FUTURE,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     true,
     0,
     "1.0.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     false,
     false},
    {"rollback 404",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     true,
     0,
     "1.0.0",
     GUARD_HEAD_NOT_FOUND,
     NULL,
     GUARD_HOLD,
     GUARD_CANDIDATE_MISSING,
     false,
     false},
    {"rollback to unlisted tag",
     SEMVER,
     "1.1.0 1.2.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_HOLD,
     GUARD_CANDIDATE_MISSING,
     false,
     0,
     "1.0.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_CANDIDATE_MISSING,
     false,
     false},
    {"override held",
     SEMVER,
     "1.0.0 1.1.0 1.2.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     FUTURE,
     GUARD_HOLD,
     GUARD_OVERRIDE,
     false,
     0,
     "1.0.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_OVERRIDE,
     false,
     false},
    {"override blocks forward",
     SEMVER,
     "1.0.0 1.1.0 9.0.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_HOLD,
     GUARD_OVERRIDE,
     false,
     0,
     "1.0.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_OVERRIDE,
     false,
     false},
    {"override outside the order",
     SEMVER,
     "1.0.0 hotfix",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "hotfix",
     NO_UNTIL,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     true,
     0,
     "hotfix",
     GUARD_HEAD_OK,
     D1,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     false,
     false},
    {"override lapsed",
     SEMVER,
     "1.0.0 1.1.0 1.2.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     LAPSED,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     GUARD_WARN_OVERRIDE_LAPSED,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     false,
     false},
    {"override lapses at until",
     SEMVER,
     "1.0.0 1.2.0",
     "1.0.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     AT_NOW,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     GUARD_WARN_OVERRIDE_LAPSED,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     false,
     false},
    {"override and empty listing",
     SEMVER,
     "",
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_NO_CANDIDATES,
     false,
     false},
    {"override and failed listing",
     SEMVER,
     NULL,
     "1.2.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_ERROR,
     GUARD_REGISTRY,
     false,
     0,
     "",
     GUARD_HEAD_OK,
     D1,
     GUARD_ERROR,
     GUARD_REGISTRY,
     false,
     false},
    /* digest reflection */
    {"IfNotPresent forward",
     SEMVER,
     "1.0.0 1.2.0",
     "1.0.0",
     D2,
     GUARD_DIGEST_IF_MISSING,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     false},
    {"IfNotPresent present",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     D2,
     GUARD_DIGEST_IF_MISSING,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     false},
    {"IfNotPresent missing",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_IF_MISSING,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_ADOPT,
     true,
     false},
    {"Always same",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     D1,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     false,
     false},
    {"Always changed",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     D2,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     false},
    {"Always missing",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     NULL,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_ADOPT,
     true,
     false},
    {"Always tag gone",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     D2,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_NONE,
     GUARD_UP_TO_DATE,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_NOT_FOUND,
     NULL,
     GUARD_HOLD,
     GUARD_CANDIDATE_MISSING,
     false,
     false},
    {"Always no digest sent",
     SEMVER,
     "1.0.0 1.2.0",
     "1.0.0",
     D2,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "1.2.0",
     GUARD_HEAD_OK,
     NULL,
     GUARD_ERROR,
     GUARD_REGISTRY,
     false,
     false},
    {"Always downgrade",
     SEMVER,
     "1.0.0 1.2.0",
     "2.0.0",
     D2,
     GUARD_DIGEST_ALWAYS,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     GUARD_WARN_CURRENT_MISSING,
     "1.2.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     false},
    {"rollback with digest",
     SEMVER,
     "1.0.0 1.2.0",
     "1.2.0",
     D2,
     GUARD_DIGEST_IF_MISSING,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     true,
     0,
     "1.0.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     true,
     false},
    /* a range changed under a committed version */
    {"narrowed range holds",
     NARROW,
     "1.8.0 1.9.0 2.1.0",
     "2.1.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     0,
     "1.9.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     true},
    /* policy_verdict lifts the range itself: order_policy is no longer needed to hold */
    {"narrowed range without order holds",
     NARROW,
     "1.9.0 2.1.0",
     "2.1.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     0,
     "1.9.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     false},
    {"raised range moves forward",
     RAISED,
     "1.5.0 2.0.0 2.1.0",
     "1.5.0",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_FORWARD,
     true,
     0,
     "2.1.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_FORWARD,
     false,
     true},
    {"latest adopts with order",
     NARROW,
     "1.9.0 latest",
     "latest",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_UPDATE,
     GUARD_ADOPT,
     true,
     0,
     "1.9.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_UPDATE,
     GUARD_ADOPT,
     false,
     true},
    {"narrowed range, prerelease committed",
     NARROW,
     "1.9.0 2.0.0-rc.1",
     "2.0.0-rc.1",
     NULL,
     GUARD_DIGEST_NONE,
     0,
     NULL,
     0,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     0,
     "1.9.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED,
     false,
     true},
    {"rollback digest-only marker held",
     SEMVER,
     "1.0.0 1.2.0",
     NULL,
     D1,
     GUARD_DIGEST_ALWAYS,
     0,
     "1.0.0",
     NO_UNTIL,
     GUARD_ROLLBACK,
     GUARD_OVERRIDE,
     true,
     0,
     "1.0.0",
     GUARD_HEAD_OK,
     D1,
     GUARD_HOLD,
     GUARD_OVERRIDE,
     false,
     false},
};

static void fill_input(struct guard_input *in, const struct row *r, const char **tags, size_t cap,
                       char *tagbuf, size_t tagbuf_len)
{
	*in = (struct guard_input)GUARD_INPUT_INIT;
	in->policy = policies[r->pol];
	in->policy_suspended = r->suspended & SUS_POLICY;
	in->repository_suspended = r->suspended & SUS_REPO;
	in->automation_suspended = r->suspended & SUS_AUTO;
	in->listing_ok = r->tags != NULL;
	in->listing_error = "registry '127.0.0.1:5000': 500 internal server error";
	if (r->tags) {
		snprintf(tagbuf, tagbuf_len, "%s", r->tags);
		in->tags = tags;
		in->tags_len = split(tags, cap, tagbuf);
	}
	in->rollback_to = r->rollback_to;
	in->rollback_reason = r->rollback_to ? "bad release" : NULL;
	in->has_until = r->until != NO_UNTIL;
	in->until = r->until == LAPSED ? NOW - 1 : r->until == AT_NOW ? NOW : NOW + 3600;
	in->now = NOW;
	in->current_tag = r->current;
	in->current_digest = r->current_digest;
	in->digest_mode = r->mode;
}

START_TEST(table)
{
	const struct row *r = &rows[_i];
	const char *tags[32];
	char tagbuf[512];
	struct guard_input in;
	struct guard_decision d;
	struct error err = ERROR_INIT;

	fill_input(&in, r, tags, 32, tagbuf, sizeof(tagbuf));
	ck_assert_int_eq(guard_decide(&d, &in, &err), 0);
	ck_assert_msg(d.decision == r->d1 && d.reason == r->r1, "%s: decide gave %s/%s", r->name,
	              guard_decision_name(d.decision), guard_reason_name(d.reason));
	ck_assert_msg(d.needs_confirmation == r->confirm, "%s: needs_confirmation", r->name);
	ck_assert_msg(d.warnings == r->warnings, "%s: warnings %u", r->name, d.warnings);
	ck_assert_msg(!strcmp(d.candidate, r->candidate), "%s: candidate '%s'", r->name,
	              d.candidate);
	ck_assert_msg(!guard_writes(&d), "%s: writes before confirmation", r->name);
	if (d.decision == GUARD_ERROR)
		ck_assert_msg(d.message[0], "%s: error without message", r->name);
	if (d.reason == GUARD_OVERRIDE)
		ck_assert_str_eq(d.message, "bad release");

	guard_confirm(&d, &in, r->head, r->head_digest, "HEAD: connection refused");
	ck_assert_msg(d.decision == r->d2 && d.reason == r->r2, "%s: confirm gave %s/%s", r->name,
	              guard_decision_name(d.decision), guard_reason_name(d.reason));
	ck_assert(!d.needs_confirmation);
	ck_assert_msg(d.write_digest == r->write_digest, "%s: write_digest", r->name);
	/* a re-pushed tag (same tag, new digest) waits for build times, under every policy */
	ck_assert_msg(d.needs_created == (r->d2 == GUARD_UPDATE && r->r2 == GUARD_FORWARD &&
	                                  in.current_tag && !strcmp(in.current_tag, d.candidate)),
	              "%s: needs_created %d", r->name, d.needs_created);
	ck_assert(guard_writes(&d) ==
	          ((r->d2 == GUARD_UPDATE || r->d2 == GUARD_ROLLBACK) && !d.needs_created));
	if (r->confirm && r->head == GUARD_HEAD_OK && r->head_digest)
		ck_assert_str_eq(d.digest, r->head_digest);
	if (r->confirm && r->head == GUARD_HEAD_FAILED)
		ck_assert_ptr_nonnull(strstr(d.message, "connection refused"));
	ck_assert_msg(d.warnings == r->warnings, "%s: warnings changed by confirm", r->name);
}
END_TEST

START_TEST(no_policy_is_config_error)
{
	const char *tags[] = {"1.0.0"};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_decision d;

	in.listing_ok = true;
	in.tags = tags;
	in.tags_len = 1;
	in.current_tag = "1.0.0";
	ck_assert_int_eq(guard_decide(&d, &in, NULL), 0);
	ck_assert_int_eq(d.decision, GUARD_ERROR);
	ck_assert_int_eq(d.reason, GUARD_CONFIG);
}
END_TEST

START_TEST(overlong_candidate_is_not_written)
{
	char big[300];
	const char *tags[] = {big};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_decision d;

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	in.policy = policies[ALPHA];
	in.listing_ok = true;
	in.tags = tags;
	in.tags_len = 1;
	in.current_tag = "a";
	ck_assert_int_eq(guard_decide(&d, &in, NULL), 0);
	ck_assert_int_eq(d.decision, GUARD_ERROR);
	ck_assert(!guard_writes(&d));
}
END_TEST

START_TEST(fail_keeps_candidate)
{
	struct guard_decision d = {0};

	d.decision = GUARD_UPDATE;
	memcpy(d.candidate, "1.2.0", 6);
	d.needs_confirmation = true;
	d.warnings = GUARD_WARN_CURRENT_MISSING;
	guard_fail(&d, GUARD_GIT, "push to '%s': rejected", "main");
	ck_assert_int_eq(d.decision, GUARD_ERROR);
	ck_assert_int_eq(d.reason, GUARD_GIT);
	ck_assert_str_eq(d.candidate, "1.2.0");
	ck_assert_str_eq(d.message, "push to 'main': rejected");
	ck_assert_uint_eq(d.warnings, GUARD_WARN_CURRENT_MISSING);
	ck_assert(!d.needs_confirmation && !guard_writes(&d));
}
END_TEST

START_TEST(names)
{
	static const char *const decisions[] = {"update", "none", "hold", "rollback", "error"};
	static const char *const reasons[] = {
	    "forward",           "adopt",         "up-to-date", "downgrade-blocked",
	    "candidate-missing", "no-candidates", "suspended",  "override",
	    "registry",          "git",           "config",     "no-markers"};

	for (int i = 0; i < 5; i++)
		ck_assert_str_eq(guard_decision_name((enum guard_decision_kind)i), decisions[i]);
	for (int i = 0; i < 12; i++)
		ck_assert_str_eq(guard_reason_name((enum guard_reason)i), reasons[i]);
	ck_assert_str_eq(guard_decision_name((enum guard_decision_kind)99), "unknown");
	ck_assert_str_eq(guard_reason_name((enum guard_reason)99), "unknown");
	ck_assert_str_eq(guard_warning_name(GUARD_WARN_CURRENT_MISSING), "current-missing");
	ck_assert_str_eq(guard_warning_name(GUARD_WARN_OVERRIDE_LAPSED), "override-lapsed");
	ck_assert_str_eq(guard_warning_name((enum guard_warning)0), "unknown");
}
END_TEST

/* ---- properties over seeded random inputs ---- */

static unsigned long long rng_state;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng_state >> 33) % n);
}

/* A tag from a small pool: versions, numbers, junk outside every order. */
static void random_tag(char *out, size_t n, enum pol pol)
{
	static const char *const junk[] = {"latest", "main", "x.sig", "v1", "1.0"};

	if (rnd(8) == 0) {
		snprintf(out, n, "%s", junk[rnd(5)]);
		return;
	}
	switch (pol) {
	case SEMVER:
	case NARROW:
	case RAISED:
		snprintf(out, n, "%u.%u.%u", 1 + rnd(3), rnd(3), rnd(3));
		break;
	case NUMERICAL:
		snprintf(out, n, "%u", rnd(40));
		break;
	case ALPHA:
		snprintf(out, n, "%c%c", 'a' + rnd(5), 'a' + rnd(5));
		break;
	default:
		snprintf(out, n, "release-%x-%u", rnd(4096), 100 + rnd(50));
		break;
	}
}

START_TEST(invariants)
{
	char pool[24][48], current[48], rollback[48];
	const char *tags[24];
	struct error err = ERROR_INIT;

	rng_state = 0x1234abcdULL;
	for (int iter = 0; iter < 4000; iter++) {
		enum pol pol = (enum pol)rnd(ORDER); /* ORDER only serves as order_policy */
		struct guard_input in = GUARD_INPUT_INIT;
		struct guard_decision d;
		size_t n = rnd(24);
		enum guard_head head = (enum guard_head)rnd(3);
		enum policy_verdict v = POLICY_INCOMPARABLE;

		for (size_t i = 0; i < n; i++) {
			random_tag(pool[i], sizeof(pool[i]), pol);
			tags[i] = pool[i];
		}
		random_tag(current, sizeof(current), pol);
		random_tag(rollback, sizeof(rollback), pol);
		in.policy = policies[pol];
		if ((pol == SEMVER || pol == NARROW || pol == RAISED) && rnd(4))
			in.listing_ok = rnd(10) != 0;
		in.tags = tags;
		in.tags_len = n;
		in.current_tag = rnd(20) ? current : NULL;
		in.current_digest = rnd(2) ? D2 : NULL;
		in.digest_mode = (enum guard_digest_mode)rnd(3);
		in.policy_suspended = rnd(30) == 0;
		in.now = NOW;
		if (rnd(4) == 0) {
			in.rollback_to = rollback;
			in.rollback_reason = "r";
			in.has_until = rnd(2);
			in.until = NOW + (long)rnd(3) - 1;
		}
		ck_assert_int_eq(guard_decide(&d, &in, &err), 0);
		if (d.candidate[0] && in.current_tag) {
			v = policy_verdict(in.policy, in.current_tag, d.candidate);
			/* and, independently of the verdict's range lifting, the strict order */
			if (guard_writes(&d) && d.decision != GUARD_ROLLBACK)
				ck_assert_int_ne(
				    policy_compare(in.policy, in.current_tag, d.candidate),
				    POLICY_BACKWARD);
		}
		guard_confirm(&d, &in, head, rnd(8) ? D1 : NULL, NULL);
		if (!guard_writes(&d))
			continue;
		/* invariant 2: a write only after HEAD 200 in this pass */
		ck_assert_int_eq(head, GUARD_HEAD_OK);
		/* invariant 3: never from a failed or empty listing, never when suspended */
		ck_assert(in.listing_ok && n > 0 && !in.policy_suspended);
		/* the written tag is in the listing */
		ck_assert(strcmp(d.candidate, "") != 0);
		{
			bool found = false;

			for (size_t i = 0; i < n && !found; i++)
				found = !strcmp(tags[i], d.candidate);
			ck_assert_msg(found, "wrote unlisted '%s'", d.candidate);
		}
		if (d.decision == GUARD_ROLLBACK) {
			/* an override names exactly that value, and is in force */
			ck_assert(in.rollback_to && !strcmp(d.candidate, in.rollback_to));
			ck_assert(!in.has_until || in.now < in.until);
			continue;
		}
		/* invariant 1: never backward; with an override in force, never anything else */
		ck_assert(!(in.rollback_to && (!in.has_until || in.now < in.until)));
		ck_assert_msg(v != POLICY_BACKWARD, "%s -> %s backward", current, d.candidate);
		if (v == POLICY_SAME)
			ck_assert(d.write_digest && in.digest_mode != GUARD_DIGEST_NONE);
		if (d.reason == GUARD_FORWARD && in.current_tag)
			ck_assert(v == POLICY_FORWARD || v == POLICY_SAME);
		if (d.reason == GUARD_ADOPT && in.current_tag)
			ck_assert(v == POLICY_INCOMPARABLE || v == POLICY_SAME);
		/* the candidate is the policy's best */
		{
			struct policy_result best = POLICY_RESULT_INIT;

			ck_assert_int_eq(policy_select(&best, in.policy, tags, n, &err), 0);
			ck_assert_str_eq(best.latest, d.candidate);
			policy_result_release(&best);
		}
	}
}
END_TEST

#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"
#define T1 1767323045L /* 2026-01-02T03:04:05Z */

enum {
	K = GUARD_CREATED_KNOWN,
	M = GUARD_CREATED_MISSING,
	NF = GUARD_CREATED_NOT_FOUND,
	F = GUARD_CREATED_FAILED
};

/* Digest-tracked policies (tracked_tag "latest"): a moved digest goes forward only to a newer
 * build; an override names a digest. */
static const struct tracked_row {
	const char *name;
	const char *current_tag, *current_digest; /* the marker */
	enum guard_digest_mode mode;
	const char *rollback_to;
	const char *head_digest; /* HEAD answer for guard_confirm_ref */
	enum guard_head head;
	bool needs_created; /* after guard_confirm */
	int cur_state, cand_state;
	long cur_sec, cur_ns, cand_sec, cand_ns;
	enum guard_decision_kind d;
	enum guard_reason r;
	bool writes;
	const char *confirm_ref; /* what guard_confirm_ref names */
	const char *msg;         /* in the message, or NULL */
} tracked[] = {
    {"newer build", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true, K, K, T1, 0,
     T1 + 86400, 0, GUARD_UPDATE, GUARD_FORWARD, true, "latest", NULL},
    {"newer by a nanosecond", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true, K,
     K, T1, 5, T1, 6, GUARD_UPDATE, GUARD_FORWARD, true, "latest", NULL},
    {"older build (yesterday's under today's name)", "latest", D2, GUARD_DIGEST_ALWAYS, NULL, D1,
     GUARD_HEAD_OK, true, K, K, T1 + 86400, 0, T1, 0, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, false,
     "latest", "is older than"},
    {"older by a nanosecond", "latest", D2, GUARD_DIGEST_ALWAYS, NULL, D1, GUARD_HEAD_OK, true, K,
     K, T1, 6, T1, 5, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, false, "latest", NULL},
    {"equal created", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true, K, K, T1, 0,
     T1, 0, GUARD_UPDATE, GUARD_FORWARD, false, "latest", "both created"},
    {"new has no created", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true, K, M,
     T1, 0, 0, 0, GUARD_UPDATE, GUARD_FORWARD, false, "latest", "new '" D2 "'"},
    {"committed has no created", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true,
     M, K, 0, 0, T1, 0, GUARD_UPDATE, GUARD_FORWARD, false, "latest", "committed '" D1 "'"},
    {"neither has created", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true, M, M,
     0, 0, 0, 0, GUARD_UPDATE, GUARD_FORWARD, false, "latest", NULL},
    {"committed gone from the registry", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK,
     true, NF, K, 0, 0, T1, 0, GUARD_UPDATE, GUARD_FORWARD, false, "latest", "not in the registry"},
    {"new gone since its HEAD", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true, K,
     NF, T1, 0, 0, 0, GUARD_HOLD, GUARD_CANDIDATE_MISSING, false, "latest", NULL},
    {"reading the new config failed", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK,
     true, M, F, 0, 0, 0, 0, GUARD_ERROR, GUARD_REGISTRY, false, "latest", "boom"},
    {"reading the committed config failed", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D2,
     GUARD_HEAD_OK, true, F, NF, 0, 0, 0, 0, GUARD_ERROR, GUARD_REGISTRY, false, "latest",
     "committed"},
    /* no created needed */
    {"same digest", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, D1, GUARD_HEAD_OK, false, K, K, 0, 0,
     0, 0, GUARD_NONE, GUARD_UP_TO_DATE, false, "latest", NULL},
    {"no digest committed yet: adopt", "latest", NULL, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK,
     false, K, K, 0, 0, 0, 0, GUARD_UPDATE, GUARD_ADOPT, true, "latest", NULL},
    {"lone digest marker, newer", NULL, D1, GUARD_DIGEST_ALWAYS, NULL, D2, GUARD_HEAD_OK, true, K,
     K, T1, 0, T1 + 1, 0, GUARD_UPDATE, GUARD_FORWARD, true, "latest", NULL},
    {"lone digest marker, older", NULL, D2, GUARD_DIGEST_ALWAYS, NULL, D1, GUARD_HEAD_OK, true, K,
     K, T1 + 1, 0, T1, 0, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, false, "latest", NULL},
    {"lone digest marker, same", NULL, D1, GUARD_DIGEST_ALWAYS, NULL, D1, GUARD_HEAD_OK, false, K,
     K, 0, 0, 0, 0, GUARD_NONE, GUARD_UP_TO_DATE, false, "latest", NULL},
    {"IfNotPresent keeps the pinned digest", "latest", D1, GUARD_DIGEST_IF_MISSING, NULL, D2,
     GUARD_HEAD_OK, false, K, K, 0, 0, 0, 0, GUARD_NONE, GUARD_UP_TO_DATE, false, "latest", NULL},
    {"tag HEAD 404", "latest", D1, GUARD_DIGEST_ALWAYS, NULL, NULL, GUARD_HEAD_NOT_FOUND, false, K,
     K, 0, 0, 0, 0, GUARD_HOLD, GUARD_CANDIDATE_MISSING, false, "latest", NULL},
    /* overrides name a digest: backward allowed, no created compared */
    {"rollback to an older digest", "latest", D2, GUARD_DIGEST_ALWAYS, D1, D1, GUARD_HEAD_OK, false,
     K, K, 0, 0, 0, 0, GUARD_ROLLBACK, GUARD_OVERRIDE, true, D1, "incident"},
    {"rollback from a lone digest marker", NULL, D2, GUARD_DIGEST_ALWAYS, D1, D1, GUARD_HEAD_OK,
     false, K, K, 0, 0, 0, 0, GUARD_ROLLBACK, GUARD_OVERRIDE, true, D1, NULL},
    {"rollback: a :tag marker already holds the tag", "latest", NULL, GUARD_DIGEST_NONE, D1, D1,
     GUARD_HEAD_OK, false, K, K, 0, 0, 0, 0, GUARD_HOLD, GUARD_OVERRIDE, false, "latest", NULL},
    {"rollback: a :tag marker with another tag", "v1", NULL, GUARD_DIGEST_NONE, D1, D1,
     GUARD_HEAD_OK, false, K, K, 0, 0, 0, 0, GUARD_ROLLBACK, GUARD_OVERRIDE, true, D1, NULL},
    {"rollback already there", "latest", D1, GUARD_DIGEST_ALWAYS, D1, D1, GUARD_HEAD_OK, false, K,
     K, 0, 0, 0, 0, GUARD_HOLD, GUARD_OVERRIDE, false, "latest", NULL},
    {"rollback digest missing", "latest", D2, GUARD_DIGEST_ALWAYS, D3, NULL, GUARD_HEAD_NOT_FOUND,
     false, K, K, 0, 0, 0, 0, GUARD_HOLD, GUARD_CANDIDATE_MISSING, false, D3, NULL},
    {"rollback HEAD answers another digest", "latest", D2, GUARD_DIGEST_ALWAYS, D3, D1,
     GUARD_HEAD_OK, false, K, K, 0, 0, 0, 0, GUARD_ERROR, GUARD_REGISTRY, false, D3,
     "answered digest"},
};

START_TEST(tracked_table)
{
	const struct tracked_row *r = &tracked[_i];
	const char *tags[] = {"latest", "v1", "main"};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_created cur = {
	    (enum guard_created_state)r->cur_state, {r->cur_sec, r->cur_ns}, "boom"};
	struct guard_created cand = {
	    (enum guard_created_state)r->cand_state, {r->cand_sec, r->cand_ns}, "boom"};
	struct guard_decision d;

	in.policy = policies[TRACKED];
	in.listing_ok = true;
	in.tags = tags;
	in.tags_len = 3;
	in.current_tag = r->current_tag;
	in.current_digest = r->current_digest;
	in.digest_mode = r->mode;
	in.tracked_tag = "latest";
	in.rollback_to = r->rollback_to;
	in.rollback_reason = r->rollback_to ? "incident 42" : NULL;
	in.now = NOW;
	ck_assert_int_eq(guard_decide(&d, &in, NULL), 0);
	ck_assert_str_eq(d.candidate, "latest");
	if (d.needs_confirmation) {
		ck_assert_str_eq(guard_confirm_ref(&d, &in), r->confirm_ref);
		guard_confirm(&d, &in, r->head, r->head_digest, NULL);
	}
	ck_assert_msg(d.needs_created == r->needs_created, "%s: needs_created %d", r->name,
	              d.needs_created);
	if (d.needs_created)
		ck_assert_msg(!guard_writes(&d), "%s: writes before created is settled", r->name);
	guard_confirm_created(&d, &in, &cur, &cand);
	ck_assert_msg(!d.needs_created, "%s", r->name);
	/* builds that created cannot order wait for the marker's history, and never write before */
	ck_assert_msg(d.needs_history == (r->d == GUARD_UPDATE && !r->writes),
	              "%s: needs_history %d", r->name, d.needs_history);
	ck_assert_msg(d.decision == r->d && d.reason == r->r, "%s: got %s/%s (%s)", r->name,
	              guard_decision_name(d.decision), guard_reason_name(d.reason), d.message);
	ck_assert_msg(guard_writes(&d) == r->writes, "%s: writes %d", r->name, guard_writes(&d));
	ck_assert_msg(!guard_writes(&d) || d.write_digest || r->mode == GUARD_DIGEST_NONE,
	              "%s: writes without its digest", r->name);
	if (r->writes && r->head_digest)
		ck_assert_str_eq(d.digest, r->head_digest);
	if (r->msg)
		ck_assert_msg(strstr(d.message, r->msg) != NULL, "%s: message '%s'", r->name,
		              d.message);
}
END_TEST

/* imageguard.io/settle: a move waits until its candidate has been listed for the window; an
 * override never waits. */
static const struct {
	const char *name;
	const char *current, *rollback_to;
	long settle_s, listed_for; /* listed_for: now - since */
	enum guard_decision_kind d;
	enum guard_reason r;
	bool asks; /* needs_settle after guard_confirm */
	const char *msg;
} settles[] = {
    {"new candidate waits", "1.0.0", NULL, 600, 0, GUARD_HOLD, GUARD_SETTLING, true, "600s left"},
    {"half way", "1.0.0", NULL, 600, 100, GUARD_HOLD, GUARD_SETTLING, true,
     "listed for 100s of the 600s settle window: 500s left"},
    {"one second short", "1.0.0", NULL, 600, 599, GUARD_HOLD, GUARD_SETTLING, true, "1s left"},
    {"window over", "1.0.0", NULL, 600, 600, GUARD_UPDATE, GUARD_FORWARD, true, NULL},
    {"no window", "1.0.0", NULL, 0, 0, GUARD_UPDATE, GUARD_FORWARD, false, NULL},
    {"up to date: nothing to wait for", "1.2.0", NULL, 600, 0, GUARD_NONE, GUARD_UP_TO_DATE, false,
     NULL},
    {"behind: still held as a downgrade", "2.0.0", NULL, 600, 0, GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED, false, NULL},
    {"a rollback never waits", "1.2.0", "1.0.0", 600, 0, GUARD_ROLLBACK, GUARD_OVERRIDE, false,
     NULL},
    {"adopting waits too", "latest", NULL, 600, 10, GUARD_HOLD, GUARD_SETTLING, true, NULL},
};

START_TEST(settle_table)
{
	const char *tags[] = {"1.0.0", "1.2.0"};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_decision d;

	in.policy = policies[SEMVER];
	in.listing_ok = true;
	in.tags = tags;
	in.tags_len = 2;
	in.current_tag = settles[_i].current;
	in.rollback_to = settles[_i].rollback_to;
	in.rollback_reason = settles[_i].rollback_to ? "bad release" : NULL;
	in.settle_s = settles[_i].settle_s;
	in.now = NOW;
	ck_assert_int_eq(guard_decide(&d, &in, NULL), 0);
	if (d.needs_confirmation)
		guard_confirm(&d, &in, GUARD_HEAD_OK, D1, NULL);
	ck_assert_msg(d.needs_settle == settles[_i].asks, "%s: needs_settle %d", settles[_i].name,
	              d.needs_settle);
	if (d.needs_settle)
		ck_assert(!guard_writes(&d));
	guard_confirm_settle(&d, &in, NOW - settles[_i].listed_for);
	ck_assert_msg(d.decision == settles[_i].d && d.reason == settles[_i].r, "%s: got %s/%s",
	              settles[_i].name, guard_decision_name(d.decision),
	              guard_reason_name(d.reason));
	ck_assert(guard_writes(&d) == (d.decision == GUARD_UPDATE || d.decision == GUARD_ROLLBACK));
	if (settles[_i].msg)
		ck_assert_msg(strstr(d.message, settles[_i].msg) != NULL, "%s: '%s'",
		              settles[_i].name, d.message);
}
END_TEST

/* When created cannot order the builds, the history decides: replaced holds, unseen moves. */
START_TEST(tracked_history)
{
	const char *tags[] = {"latest"};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_created same = {GUARD_CREATED_KNOWN, {T1, 0}, NULL};
	struct guard_decision d;

	in.policy = policies[TRACKED];
	in.listing_ok = true;
	in.tags = tags;
	in.tags_len = 1;
	in.current_tag = "latest";
	in.current_digest = D1;
	in.digest_mode = GUARD_DIGEST_ALWAYS;
	in.now = NOW;
	for (int replaced = 0; replaced <= 1; replaced++) {
		ck_assert_int_eq(guard_decide(&d, &in, NULL), 0);
		guard_confirm(&d, &in, GUARD_HEAD_OK, D2, NULL);
		guard_confirm_created(&d, &in, &same, &same);
		ck_assert(d.needs_history && !guard_writes(&d));
		guard_confirm_history(&d, replaced);
		ck_assert(!d.needs_history);
		if (replaced) {
			ck_assert(d.decision == GUARD_HOLD && d.reason == GUARD_DOWNGRADE_BLOCKED);
			ck_assert_uint_eq(d.warnings, GUARD_WARN_DIGEST_REPLACED);
			ck_assert(!guard_writes(&d) && !d.write_digest);
			ck_assert(strstr(d.message, "held at this marker before") != NULL);
		} else {
			ck_assert(d.decision == GUARD_UPDATE && d.reason == GUARD_FORWARD);
			ck_assert_uint_eq(d.warnings, GUARD_WARN_CREATED_UNKNOWN);
			ck_assert(guard_writes(&d) && d.write_digest);
		}
	}
}
END_TEST

/* A whole-image marker naming another repository (a mirror) than the policy's, same tag: the
 * policy's repository's digest is a re-point like any other, forward only to a newer build
 * (found by the seeded soak: a rename to a lagging mirror wrote its older build). */
static const struct renamed_row {
	const char *name;
	const char *current_digest;
	enum guard_digest_mode mode;
	const char *head_digest;
	bool needs_created;
	int cur_state, cand_state;
	long cur_sec, cand_sec;
	enum guard_decision_kind d;
	enum guard_reason r;
	bool writes, needs_history;
} renamed[] = {
    {"the mirror's build is newer", D1, GUARD_DIGEST_ALWAYS, D2, true, K, K, T1, T1 + 1,
     GUARD_UPDATE, GUARD_ADOPT, true, false},
    {"the mirror's build is older", D2, GUARD_DIGEST_ALWAYS, D1, true, K, K, T1 + 1, T1, GUARD_HOLD,
     GUARD_DOWNGRADE_BLOCKED, false, false},
    /* its build time is in the repository the committed value names: nothing shows forward */
    {"the mirror lacks the committed digest: hold", D1, GUARD_DIGEST_ALWAYS, D2, true, NF, K, 0, T1,
     GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, false, false},
    {"the mirror's build has no created: history decides", D1, GUARD_DIGEST_ALWAYS, D2, true, K, M,
     T1, 0, GUARD_UPDATE, GUARD_ADOPT, false, true},
    {"the mirror holds the same digest: only the name moves", D1, GUARD_DIGEST_ALWAYS, D1, false, K,
     K, 0, 0, GUARD_UPDATE, GUARD_ADOPT, true, false},
    {"IfNotPresent, the mirror's build is older", D2, GUARD_DIGEST_IF_MISSING, D1, true, K, K,
     T1 + 1, T1, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, false, false},
};

START_TEST(renamed_table)
{
	const struct renamed_row *r = &renamed[_i];
	const char *tags[] = {"latest"};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_created cur = {(enum guard_created_state)r->cur_state, {r->cur_sec, 0}, NULL};
	struct guard_created cand = {
	    (enum guard_created_state)r->cand_state, {r->cand_sec, 0}, NULL};
	struct guard_decision d;

	in.policy = policies[TRACKED];
	in.listing_ok = true;
	in.tags = tags;
	in.tags_len = 1;
	in.current_tag = "latest";
	in.current_digest = r->current_digest;
	in.digest_mode = r->mode;
	in.name_changed = true;
	in.now = NOW;
	ck_assert_int_eq(guard_decide(&d, &in, NULL), 0);
	ck_assert_msg(d.decision == GUARD_UPDATE && d.reason == GUARD_ADOPT && d.needs_confirmation,
	              "%s: decide gave %s/%s", r->name, guard_decision_name(d.decision),
	              guard_reason_name(d.reason));
	guard_confirm(&d, &in, GUARD_HEAD_OK, r->head_digest, NULL);
	ck_assert_msg(d.needs_created == r->needs_created, "%s: needs_created %d", r->name,
	              d.needs_created);
	if (d.needs_created)
		ck_assert_msg(!guard_writes(&d), "%s: writes before created is settled", r->name);
	guard_confirm_created(&d, &in, &cur, &cand);
	ck_assert_msg(d.decision == r->d && d.reason == r->r, "%s: got %s/%s (%s)", r->name,
	              guard_decision_name(d.decision), guard_reason_name(d.reason), d.message);
	ck_assert_msg(d.needs_history == r->needs_history, "%s: needs_history", r->name);
	ck_assert_msg(guard_writes(&d) == r->writes, "%s: writes %d", r->name, guard_writes(&d));
	ck_assert_msg(d.write_digest == (r->d == GUARD_UPDATE), "%s: write_digest", r->name);
	ck_assert_uint_eq(d.warnings, GUARD_WARN_NAME_CHANGED);
	if (r->cur_state == NF)
		ck_assert_msg(strstr(d.message, "not in the policy's repository") != NULL,
		              "%s: message '%s'", r->name, d.message);
}
END_TEST

/* Holds name both digests and both times, to the nanosecond. */
START_TEST(tracked_message)
{
	const char *tags[] = {"latest"};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_created cur = {GUARD_CREATED_KNOWN, {T1 + 86400, 500000000}, NULL};
	struct guard_created cand = {GUARD_CREATED_KNOWN, {T1, 0}, NULL};
	struct guard_decision d;

	in.policy = policies[TRACKED];
	in.listing_ok = true;
	in.tags = tags;
	in.tags_len = 1;
	in.current_tag = "latest";
	in.current_digest = D2;
	in.digest_mode = GUARD_DIGEST_ALWAYS;
	in.tracked_tag = "latest";
	guard_decide(&d, &in, NULL);
	guard_confirm(&d, &in, GUARD_HEAD_OK, D1, NULL);
	guard_confirm_created(&d, &in, &cur, &cand);
	ck_assert_str_eq(d.message, "new '" D1 "' (created 2026-01-02T03:04:05Z) is older than "
	                            "committed '" D2 "' (created 2026-01-03T03:04:05.5Z)");
	/* a decision that does not need created is left alone */
	d.needs_created = false;
	d.decision = GUARD_UPDATE;
	guard_confirm_created(&d, &in, &cur, &cand);
	ck_assert_int_eq(d.decision, GUARD_UPDATE);
	ck_assert_str_eq(guard_warning_name(GUARD_WARN_NAME_CHANGED), "name-changed");
	ck_assert_str_eq(guard_reason_name(GUARD_SETTLING), "settling");
	ck_assert_str_eq(guard_warning_name(GUARD_WARN_CREATED_UNKNOWN), "created-unknown");
	ck_assert_str_eq(guard_warning_name(GUARD_WARN_DIGEST_REPLACED), "digest-replaced");
}
END_TEST

/* The incident end to end at the decision level: forward, stale list, fresh list. */
START_TEST(incident)
{
	const char *fresh1[] = {"release-aa1-100", "release-bb2-200"};
	const char *stale[] = {"release-0ld-050", "release-aa1-100"};
	const char *fresh2[] = {"release-aa1-100", "release-bb2-200", "release-cc3-300"};
	struct guard_input in = GUARD_INPUT_INIT;
	struct guard_decision d;

	in.policy = policies[STAMPED];
	in.listing_ok = true;
	in.current_tag = "release-aa1-100";
	in.tags = fresh1;
	in.tags_len = 2;
	guard_decide(&d, &in, NULL);
	guard_confirm(&d, &in, GUARD_HEAD_OK, D1, NULL);
	ck_assert(guard_writes(&d) && !strcmp(d.candidate, "release-bb2-200"));

	in.current_tag = "release-bb2-200";
	in.tags = stale;
	guard_decide(&d, &in, NULL);
	ck_assert_int_eq(d.decision, GUARD_HOLD);
	ck_assert_int_eq(d.reason, GUARD_DOWNGRADE_BLOCKED);
	ck_assert_uint_eq(d.warnings, GUARD_WARN_CURRENT_MISSING);
	guard_confirm(&d, &in, GUARD_HEAD_OK, D1, NULL);
	ck_assert(!guard_writes(&d));

	in.tags = fresh2;
	in.tags_len = 3;
	guard_decide(&d, &in, NULL);
	guard_confirm(&d, &in, GUARD_HEAD_OK, D1, NULL);
	ck_assert(guard_writes(&d) && !strcmp(d.candidate, "release-cc3-300"));
	ck_assert_uint_eq(d.warnings, 0);
}
END_TEST

static Suite *guard_suite(void)
{
	Suite *s = suite_create("guard");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, table, 0, sizeof(rows) / sizeof(rows[0]));
	tcase_add_test(tc, no_policy_is_config_error);
	tcase_add_test(tc, overlong_candidate_is_not_written);
	tcase_add_test(tc, fail_keeps_candidate);
	tcase_add_test(tc, names);
	tcase_add_test(tc, invariants);
	tcase_add_test(tc, incident);
	tcase_add_loop_test(tc, tracked_table, 0, sizeof(tracked) / sizeof(tracked[0]));
	tcase_add_test(tc, tracked_message);
	tcase_add_loop_test(tc, renamed_table, 0, sizeof(renamed) / sizeof(renamed[0]));
	tcase_add_test(tc, tracked_history);
	tcase_add_loop_test(tc, settle_table, 0, sizeof(settles) / sizeof(settles[0]));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(guard_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
