/* The scan pool against the fault server: the done hook reports each listing as it completes,
 * so a fast repository is known long before a stalled one of the same pass ends (the seam for
 * deciding per repository as its listing completes). */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "imageguard/pass/scan.h"
#include "imageguard/config/config.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/error.h"
#include "support/fixture.h"

static struct fixture fault;
static int started;

static void start_peers(void)
{
	started = fixture_fault_start(&fault, NULL) == 0;
}

static void stop_peers(void)
{
	fixture_fault_stop(&fault);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct seen {
	pthread_mutex_t lock;
	int64_t at[2]; /* when each scan's done hook ran, 0: not yet */
	int rc[2];
};

static void on_done(void *ctx, size_t i)
{
	struct seen *s = ctx;

	pthread_mutex_lock(&s->lock);
	s->at[i] = now_ms();
	pthread_mutex_unlock(&s->lock);
}

static void repo_init(struct config_repository *r, const char *id, const char *path, long t_ms)
{
	char image[256];
	struct error err = ERROR_INIT;

	memset(r, 0, sizeof(*r));
	r->id = (char *)id;
	snprintf(image, sizeof(image), "%s/%s", fault.host, path);
	ck_assert_msg(imageref_parse(&r->ref, image, 0, &err) == 0, "%s", err.msg);
	r->insecure = true;
	r->timeout_ms = t_ms;
}

START_TEST(done_as_each_listing_completes)
{
	struct config_repository repos[2];
	struct scan scans[2];
	struct seen seen = {PTHREAD_MUTEX_INITIALIZER, {0, 0}, {0, 0}};
	struct scan_hooks hooks = {on_done, &seen};
	struct registry_options o;
	struct registry_client *c = NULL;
	struct error err = ERROR_INIT;
	int64_t t0, end;

	ck_assert_msg(started, "fault server did not start");
	repo_init(&repos[0], "default/fast", "pages-absolute/scan1", 0);
	repo_init(&repos[1], "default/stalled", "stall/scan2", 4000);
	memset(scans, 0, sizeof(scans));
	for (int i = 0; i < 2; i++) {
		scans[i].repo = &repos[i];
		scans[i].wanted = true;
	}
	registry_options_init(&o);
	ck_assert_int_eq(registry_client_new(&c, &o, &err), 0);
	t0 = now_ms();
	ck_assert_int_eq(scan_run_hooked(scans, 2, c, NULL, 2, &hooks, &err), 0);
	end = now_ms();
	ck_assert_msg(seen.at[0] && seen.at[1], "every listing reported");
	ck_assert_int_eq(scans[0].rc, 0);
	ck_assert_uint_eq(scans[0].listing.tags.len, 25);
	{
		/* a small listing waits packed: its pointers are rebuilt on demand, sorted */
		const char *scratch[26];
		const char *const *tags = scan_tags(&scans[0], scratch);

		ck_assert(scans[0].packed);
		ck_assert_ptr_null(scans[0].listing.tags.items);
		for (size_t i = 1; i < 25; i++)
			ck_assert_int_lt(strcmp(tags[i - 1], tags[i]), 0);
		ck_assert_ptr_null(tags[25]);
	}
	ck_assert_int_eq(scans[1].rc, IG_ETIMEOUT);
	ck_assert_ptr_nonnull(scans[1].error); /* the failure's message, kept for the report */
	ck_assert_ptr_null(scans[0].error);
	ck_assert_msg(seen.at[0] - t0 < 2500, "the fast listing reported after %lld ms",
	              (long long)(seen.at[0] - t0));
	ck_assert_msg(seen.at[1] - seen.at[0] > 1000 && end - t0 < 8000,
	              "fast at %lld ms, stalled at %lld ms, pass %lld ms",
	              (long long)(seen.at[0] - t0), (long long)(seen.at[1] - t0),
	              (long long)(end - t0));
	scan_release(scans, 2);
	registry_client_free(c);
	for (int i = 0; i < 2; i++)
		imageref_release(&repos[i].ref);
}
END_TEST

#define QUEUED 12

struct counts {
	pthread_mutex_t lock;
	int calls[QUEUED];
};

static void on_count(void *ctx, size_t i)
{
	struct counts *c = ctx;

	pthread_mutex_lock(&c->lock);
	c->calls[i]++;
	pthread_mutex_unlock(&c->lock);
}

/* The per-host queues: scans over two hosts (two spellings of the fault server's), some not
 * wanted and one suspended, with fewer threads than scans. Every pending scan is listed
 * exactly once; the others are never taken. */
START_TEST(queues_over_hosts)
{
	struct config_repository repos[QUEUED];
	struct scan scans[QUEUED];
	struct counts counts = {PTHREAD_MUTEX_INITIALIZER, {0}};
	struct scan_hooks hooks = {on_count, &counts};
	struct registry_options o;
	struct registry_client *c = NULL;
	struct error err = ERROR_INIT;
	char other[128], image[256];
	const char *colon = strrchr(fault.host, ':');

	ck_assert_msg(started, "fault server did not start");
	ck_assert_ptr_nonnull(colon);
	snprintf(other, sizeof(other), "localhost%s", colon);
	memset(scans, 0, sizeof(scans));
	for (int i = 0; i < QUEUED; i++) {
		memset(&repos[i], 0, sizeof(repos[i]));
		repos[i].id = "default/queued";
		snprintf(image, sizeof(image), "%s/pages-relative/q%d", i % 2 ? other : fault.host,
		         i);
		ck_assert_msg(imageref_parse(&repos[i].ref, image, 0, &err) == 0, "%s", err.msg);
		repos[i].insecure = true;
		repos[i].suspend = i == 4;
		scans[i].repo = &repos[i];
		scans[i].wanted = i % 3 != 2;
	}
	registry_options_init(&o);
	ck_assert_int_eq(registry_client_new(&c, &o, &err), 0);
	ck_assert_int_eq(scan_run_hooked(scans, QUEUED, c, NULL, 3, &hooks, &err), 0);
	for (int i = 0; i < QUEUED; i++) {
		bool pending = i % 3 != 2 && i != 4;

		ck_assert_msg(counts.calls[i] == (pending ? 1 : 0), "scan %d listed %d times", i,
		              counts.calls[i]);
		ck_assert_int_eq(scans[i].done, pending);
		if (pending) {
			ck_assert_msg(scans[i].rc == 0, "scan %d: %s", i,
			              scans[i].error ? scans[i].error : "");
			ck_assert_uint_eq(scans[i].listing.tags.len, 25);
		}
	}
	scan_release(scans, QUEUED);
	registry_client_free(c);
	for (int i = 0; i < QUEUED; i++)
		imageref_release(&repos[i].ref);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scan");
	TCase *tc = tcase_create("peers");
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, start_peers, stop_peers);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, done_as_each_listing_completes);
	tcase_add_test(tc, queues_over_hosts);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
