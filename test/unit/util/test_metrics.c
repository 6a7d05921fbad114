/* Unit tests for the Prometheus registry: exposition text, escaping, histograms, misuse and
 * concurrent updates. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/metrics.h"

static char *render(struct metrics *m)
{
	struct buf out = BUF_INIT;

	ck_assert_int_eq(metrics_render(&out, m), 0);
	return buf_detach(&out);
}

START_TEST(counter_and_gauge)
{
	static const char *const labels[] = {"policy", "decision"};
	static const char *const a[] = {"ns/b", "hold"}, *const b[] = {"ns/a", "update"};
	struct metrics *m;
	char *text;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(
	    metrics_declare(m, "x_total", METRICS_COUNTER, "Things.", labels, 2, NULL, 0), 0);
	ck_assert_int_eq(metrics_declare(m, "g", METRICS_GAUGE, "A gauge.", NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(metrics_add(m, "x_total", a, 1), 0);
	ck_assert_int_eq(metrics_add(m, "x_total", b, 2), 0);
	ck_assert_int_eq(metrics_add(m, "x_total", a, 1), 0);
	ck_assert_int_eq(metrics_set(m, "g", NULL, 1.5), 0);
	ck_assert(metrics_get(m, "x_total", a) == 2);
	text = render(m);
	ck_assert_str_eq(text, "# HELP x_total Things.\n# TYPE x_total counter\n"
	                       "x_total{policy=\"ns/a\",decision=\"update\"} 2\n"
	                       "x_total{policy=\"ns/b\",decision=\"hold\"} 2\n"
	                       "# HELP g A gauge.\n# TYPE g gauge\ng 1.5\n");
	free(text);
	ck_assert_int_eq(metrics_clear(m, "x_total"), 0);
	ck_assert(metrics_get(m, "x_total", a) == 0);
	metrics_free(m);
}
END_TEST

START_TEST(escaping)
{
	static const char *const labels[] = {"image"};
	static const char *const v[] = {"a\"b\\c\nd"};
	struct metrics *m;
	char *text;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(metrics_declare(m, "t", METRICS_GAUGE, "Back\\slash\nnewline \"q\".",
	                                 labels, 1, NULL, 0),
	                 0);
	ck_assert_int_eq(metrics_set(m, "t", v, -3), 0);
	text = render(m);
	ck_assert_str_eq(text, "# HELP t Back\\\\slash\\nnewline \"q\".\n# TYPE t gauge\n"
	                       "t{image=\"a\\\"b\\\\c\\nd\"} -3\n");
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(histogram)
{
	static const double bounds[] = {0.1, 1, 10};
	struct metrics *m;
	char *text;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(
	    metrics_declare(m, "d_seconds", METRICS_HISTOGRAM, "D.", NULL, 0, bounds, 3), 0);
	ck_assert_int_eq(metrics_observe(m, "d_seconds", NULL, 0.05), 0);
	ck_assert_int_eq(metrics_observe(m, "d_seconds", NULL, 1), 0);
	ck_assert_int_eq(metrics_observe(m, "d_seconds", NULL, 20), 0);
	text = render(m);
	ck_assert_str_eq(text, "# HELP d_seconds D.\n# TYPE d_seconds histogram\n"
	                       "d_seconds_bucket{le=\"0.1\"} 1\n"
	                       "d_seconds_bucket{le=\"1\"} 2\n"
	                       "d_seconds_bucket{le=\"10\"} 2\n"
	                       "d_seconds_bucket{le=\"+Inf\"} 3\n"
	                       "d_seconds_sum 21.05\n"
	                       "d_seconds_count 3\n");
	free(text);
	metrics_free(m);
}
END_TEST

static const struct {
	const char *name;
	enum metrics_type type;
	const char *label;
	size_t n_buckets;
	int rc;
} declarations[] = {
    {"ok_total", METRICS_COUNTER, "policy", 0, 0},
    {"", METRICS_COUNTER, NULL, 0, IG_EINVALID},
    {"9bad", METRICS_GAUGE, NULL, 0, IG_EINVALID},
    {"bad-name", METRICS_GAUGE, NULL, 0, IG_EINVALID},
    {"ok", METRICS_GAUGE, "bad:label", 0, IG_EINVALID},
    {"ok", METRICS_GAUGE, NULL, 2, IG_EINVALID},
    {"h", METRICS_HISTOGRAM, "le", 2, IG_EINVALID},
    {"h", METRICS_HISTOGRAM, "x", 2, 0},
};

START_TEST(declare)
{
	static const double bounds[] = {1, 2};
	const char *labels[1] = {declarations[_i].label};
	struct metrics *m;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(metrics_declare(m, declarations[_i].name, declarations[_i].type, "h",
	                                 labels, labels[0] ? 1 : 0, bounds,
	                                 declarations[_i].n_buckets),
	                 declarations[_i].rc);
	if (declarations[_i].rc == 0)
		ck_assert_int_eq(
		    metrics_declare(m, declarations[_i].name, METRICS_GAUGE, "h", NULL, 0, NULL, 0),
		    IG_EINVALID);
	metrics_free(m);
}
END_TEST

START_TEST(misuse)
{
	static const double bounds[] = {1};
	struct metrics *m;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(metrics_declare(m, "c_total", METRICS_COUNTER, "c", NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(metrics_declare(m, "h", METRICS_HISTOGRAM, "h", NULL, 0, bounds, 1), 0);
	ck_assert_int_eq(metrics_add(m, "nope", NULL, 1), IG_ENOTFOUND);
	ck_assert_int_eq(metrics_add(m, "c_total", NULL, -1), IG_EINVALID);
	ck_assert_int_eq(metrics_set(m, "c_total", NULL, 1), IG_EINVALID);
	ck_assert_int_eq(metrics_observe(m, "c_total", NULL, 1), IG_EINVALID);
	ck_assert_int_eq(metrics_add(m, "h", NULL, 1), IG_EINVALID);
	ck_assert_int_eq(metrics_clear(m, "nope"), IG_ENOTFOUND);
	metrics_free(m);
	metrics_free(NULL);
}
END_TEST

static void *hammer(void *arg)
{
	static const char *const v[][1] = {{"a"}, {"b"}, {"c"}, {"d"}};
	struct metrics *m = arg;

	for (int i = 0; i < 4000; i++)
		metrics_add(m, "n_total", v[i % 4], 1);
	return NULL;
}

START_TEST(threads)
{
	static const char *const labels[] = {"k"};
	static const char *const a[] = {"a"};
	pthread_t t[4];
	struct metrics *m;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(metrics_declare(m, "n_total", METRICS_COUNTER, "n", labels, 1, NULL, 0),
	                 0);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hammer, m);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert(metrics_get(m, "n_total", a) == 4000);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, counter_and_gauge);
	tcase_add_test(tc, escaping);
	tcase_add_test(tc, histogram);
	tcase_add_loop_test(tc, declare, 0, sizeof(declarations) / sizeof(declarations[0]));
	tcase_add_test(tc, misuse);
	tcase_add_test(tc, threads);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
