/* Unit tests for eventcorr: client-go's EventCorrelator rules (tools/record/events_cache.go at
 * 928244b13ad2eb19a8a910669ec0bbb498cb74c1) transcribed as sequences of Events with a fake
 * clock: de-duplication by count, aggregation of the 10th similar event within 10 minutes into
 * a combined one, the per-object token bucket (25, then one every 5 minutes), the LRU cap. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/kube/eventcorr.h"

#define S 1000000000LL
#define T0 (1764576000LL * S) /* 2025-12-01T08:00:00Z */

/* One Event (repeated `repeat` times at the same instant: 0 reads as 1) and what the last
 * repetition must give. same_as: the step whose Event it writes, -1 a name never seen. */
struct step {
	int64_t t; /* seconds after T0 */
	const char *object, *reason, *message;
	int repeat;
	enum eventcorr_action action;
	long count;
	int same_as;
	int combined;
};

#define END                                                                                        \
	{                                                                                          \
		-1, NULL, NULL, NULL, 0, 0, 0, 0, 0                                                \
	}
#define C EVENTCORR_CREATE
#define P EVENTCORR_PATCH
#define K EVENTCORR_SKIP

static const struct step scenarios[][16] = {
    /* 0: the same Event again patches the first one's count; firstTimestamp stays */
    {{0, "auto", "DowngradeBlocked", "a -> b", 0, C, 1, -1, 0},
     {60, "auto", "DowngradeBlocked", "a -> b", 0, P, 2, 0, 0},
     {3600, "auto", "DowngradeBlocked", "a -> b", 0, P, 3, 0, 0},
     END},
    /* 1: another message, type, reason or object is another Event */
    {{0, "auto", "DowngradeBlocked", "a -> b", 0, C, 1, -1, 0},
     {1, "auto", "DowngradeBlocked", "a -> c", 0, C, 1, -1, 0},
     {2, "auto", "CandidateMissing", "a -> b", 0, C, 1, -1, 0},
     {3, "other", "DowngradeBlocked", "a -> b", 0, C, 1, -1, 0},
     {4, "auto", "DowngradeBlocked", "a -> b", 0, P, 2, 0, 0},
     END},
    /* 2: the 10th distinct message of one reason within the interval is combined; the next
     * new one patches the combined Event; a message still in the group's set is its own */
    {{0, "auto", "Drift", "m0", 0, C, 1, -1, 0},
     {1, "auto", "Drift", "m1", 0, C, 1, -1, 0},
     {2, "auto", "Drift", "m2", 0, C, 1, -1, 0},
     {3, "auto", "Drift", "m3", 0, C, 1, -1, 0},
     {4, "auto", "Drift", "m4", 0, C, 1, -1, 0},
     {5, "auto", "Drift", "m5", 0, C, 1, -1, 0},
     {6, "auto", "Drift", "m6", 0, C, 1, -1, 0},
     {7, "auto", "Drift", "m7", 0, C, 1, -1, 0},
     {8, "auto", "Drift", "m8", 0, C, 1, -1, 0},
     {9, "auto", "Drift", "m9", 0, C, 1, -1, 1},
     {10, "auto", "Drift", "m10", 0, P, 2, 9, 1},
     {11, "auto", "Drift", "m5", 0, P, 2, 5, 0},
     {12, "auto", "Drift", "m11", 0, P, 3, 9, 1},
     END},
    /* 3: a group quiet for more than 600 s starts again: no combined Event */
    {{0, "auto", "Drift", "m0", 0, C, 1, -1, 0},
     {1, "auto", "Drift", "m1", 0, C, 1, -1, 0},
     {2, "auto", "Drift", "m2", 0, C, 1, -1, 0},
     {3, "auto", "Drift", "m3", 0, C, 1, -1, 0},
     {4, "auto", "Drift", "m4", 0, C, 1, -1, 0},
     {5, "auto", "Drift", "m5", 0, C, 1, -1, 0},
     {6, "auto", "Drift", "m6", 0, C, 1, -1, 0},
     {7, "auto", "Drift", "m7", 0, C, 1, -1, 0},
     {8, "auto", "Drift", "m8", 0, C, 1, -1, 0},
     {609, "auto", "Drift", "m9", 0, C, 1, -1, 0},
     {610, "auto", "Drift", "m0", 0, P, 2, 0, 0},
     END},
    /* 4: the interval runs from the group's last event, not its first: ten messages 500 s
     * apart (75 minutes in all) are still combined; exactly 600 s is within */
    {{0, "auto", "Drift", "m0", 0, C, 1, -1, 0},
     {500, "auto", "Drift", "m1", 0, C, 1, -1, 0},
     {1000, "auto", "Drift", "m2", 0, C, 1, -1, 0},
     {1500, "auto", "Drift", "m3", 0, C, 1, -1, 0},
     {2000, "auto", "Drift", "m4", 0, C, 1, -1, 0},
     {2500, "auto", "Drift", "m5", 0, C, 1, -1, 0},
     {3000, "auto", "Drift", "m6", 0, C, 1, -1, 0},
     {3500, "auto", "Drift", "m7", 0, C, 1, -1, 0},
     {4100, "auto", "Drift", "m8", 0, C, 1, -1, 0},
     {4500, "auto", "Drift", "m9", 0, C, 1, -1, 1},
     END},
    /* 5: similar means the same reason: nine of one and one of another are not combined */
    {{0, "auto", "Drift", "m0", 0, C, 1, -1, 0},
     {1, "auto", "Drift", "m1", 0, C, 1, -1, 0},
     {2, "auto", "Drift", "m2", 0, C, 1, -1, 0},
     {3, "auto", "Drift", "m3", 0, C, 1, -1, 0},
     {4, "auto", "Drift", "m4", 0, C, 1, -1, 0},
     {5, "auto", "Drift", "m5", 0, C, 1, -1, 0},
     {6, "auto", "Drift", "m6", 0, C, 1, -1, 0},
     {7, "auto", "Drift", "m7", 0, C, 1, -1, 0},
     {8, "auto", "Drift", "m8", 0, C, 1, -1, 0},
     {9, "auto", "DowngradeBlocked", "m9", 0, C, 1, -1, 0},
     END},
    /* 6: 25 Events about one object pass, the 26th is held; a token comes back every 300 s;
     * held ones still count (the cache is updated before the filter, as client-go does) */
    {{0, "auto", "DowngradeBlocked", "a -> b", 25, P, 25, -1, 0},
     {0, "auto", "DowngradeBlocked", "a -> b", 0, K, 26, -1, 0},
     {0, "auto", "CandidateMissing", "x", 0, K, 1, -1, 0},
     {0, "other", "DowngradeBlocked", "a -> b", 0, C, 1, -1, 0},
     {299, "auto", "DowngradeBlocked", "a -> b", 0, K, 27, -1, 0},
     {300, "auto", "DowngradeBlocked", "a -> b", 0, P, 28, 0, 0},
     {300, "auto", "DowngradeBlocked", "a -> b", 0, K, 29, -1, 0},
     {900, "auto", "DowngradeBlocked", "a -> b", 2, P, 31, 0, 0},
     {900, "auto", "DowngradeBlocked", "a -> b", 0, K, 32, -1, 0},
     END},
};

static struct eventcorr_event event_of(const struct step *st)
{
	struct eventcorr_event e = {"imageguard",
	                            "pod-1",
	                            "ImageUpdateAutomation",
	                            "default",
	                            st->object,
	                            NULL,
	                            "image.toolkit.fluxcd.io/v1",
	                            "Warning",
	                            st->reason,
	                            st->message,
	                            "imageguard",
	                            "pod-1"};

	return e;
}

START_TEST(sequence)
{
	const struct step *steps = scenarios[_i];
	char names[16][320];
	struct eventcorr *c = NULL;
	struct eventcorr_result r;

	ck_assert_int_eq(eventcorr_new(&c), 0);
	for (int k = 0; steps[k].object; k++) {
		const struct step *st = &steps[k];
		struct eventcorr_event e = event_of(st);
		char want[EVENTCORR_MAX_MESSAGE];

		for (int n = 0; n < (st->repeat ? st->repeat : 1); n++)
			ck_assert_int_eq(eventcorr_correlate(&r, c, &e, T0 + st->t * S), 0);
		snprintf(names[k], sizeof(names[k]), "%s", r.name);
		ck_assert_msg(r.action == st->action, "scenario %d step %d: action %d", _i, k,
		              (int)r.action);
		ck_assert_msg(r.count == st->count, "scenario %d step %d: count %ld", _i, k,
		              r.count);
		if (r.action == EVENTCORR_SKIP)
			continue;
		snprintf(want, sizeof(want), "%s%s", st->combined ? EVENTCORR_COMBINED_PREFIX : "",
		         st->message);
		ck_assert_str_eq(r.message, want);
		if (st->same_as >= 0)
			ck_assert_msg(strcmp(r.name, names[st->same_as]) == 0,
			              "scenario %d step %d: %s, not step %d's %s", _i, k, r.name,
			              st->same_as, names[st->same_as]);
		for (int j = 0; st->same_as < 0 && j < k; j++)
			ck_assert_msg(strcmp(r.name, names[j]) != 0,
			              "scenario %d step %d: reused %s", _i, k, r.name);
		if (r.action == EVENTCORR_CREATE && st->repeat <= 1) {
			char name[320];

			snprintf(name, sizeof(name), "%s.%llx", st->object,
			         (unsigned long long)(T0 + st->t * S));
			ck_assert_str_eq(r.name, name); /* client-go's "<object>.<hex ns>" */
			ck_assert_msg(r.first_ns == T0 + st->t * S, "first");
		}
		if (r.action == EVENTCORR_PATCH && st->same_as >= 0)
			ck_assert_msg(r.first_ns == T0 + steps[st->same_as].t * S,
			              "scenario %d step %d: firstTimestamp kept", _i, k);
	}
	eventcorr_free(c);
}
END_TEST

/* Each cache keeps EVENTCORR_CACHE_ENTRIES: the least recently used one is forgotten. */
START_TEST(lru_cap)
{
	struct eventcorr *c = NULL;
	struct eventcorr_result r;
	struct step st = {0, NULL, "DowngradeBlocked", "a -> b", 0, C, 1, -1, 0};
	char object[32];

	ck_assert_int_eq(eventcorr_new(&c), 0);
	for (int i = 0; i <= EVENTCORR_CACHE_ENTRIES; i++) {
		struct eventcorr_event e;

		snprintf(object, sizeof(object), "o%d", i);
		st.object = object;
		e = event_of(&st);
		ck_assert_int_eq(eventcorr_correlate(&r, c, &e, T0 + i), 0);
		ck_assert_int_eq(r.action, EVENTCORR_CREATE);
		if (i == 1) { /* o1 used again: o0 becomes the oldest */
			ck_assert_int_eq(eventcorr_correlate(&r, c, &e, T0 + i), 0);
			ck_assert_int_eq(r.action, EVENTCORR_PATCH);
		}
	}
	st.object = "o1";
	{
		struct eventcorr_event e = event_of(&st);

		ck_assert_int_eq(eventcorr_correlate(&r, c, &e, T0 + S), 0);
		ck_assert_int_eq(r.action, EVENTCORR_PATCH);
		ck_assert_int_eq(r.count, 3);
		st.object = "o0";
		e = event_of(&st);
		ck_assert_int_eq(eventcorr_correlate(&r, c, &e, T0 + S), 0);
		ck_assert_int_eq(r.action, EVENTCORR_CREATE); /* forgotten */
		ck_assert_int_eq(r.count, 1);
	}
	eventcorr_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("eventcorr");
	TCase *tc = tcase_create("eventcorr");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, sequence, 0, sizeof(scenarios) / sizeof(scenarios[0]));
	tcase_add_test(tc, lru_cap);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
