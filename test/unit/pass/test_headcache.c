/* headcache: one manifest HEAD per (target, reference) per pass, against Debian's real
 * docker-registry: hits make no request, 404s and other failures are remembered too, keys do
 * not collide, and the table grows past its first size. A prefetched batch makes each HEAD
 * once, on threads, and remembers the same answers headcache_get would have. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/pass/headcache.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/error.h"
#include "support/fixture.h"

static struct fixture reg;
static char digest[128];
static int started;
static long requests;

static void start_peers(void)
{
	started = fixture_registry_start(&reg, NULL) == 0 &&
	          fixture_registry_push(&reg, "team/app", "v1", 0, digest, sizeof(digest)) == 0;
}

static void stop_peers(void)
{
	fixture_registry_stop(&reg);
}

static void observe(void *ctx, const char *registry, long code)
{
	(void)ctx;
	(void)registry;
	(void)code;
	__atomic_add_fetch(&requests, 1, __ATOMIC_RELAXED);
}

START_TEST(cache_once)
{
	struct registry_options o;
	struct registry_client *c = NULL;
	struct imageref ref = IMAGEREF_INIT;
	struct registry_target t = {0};
	struct error err = ERROR_INIT;
	struct headcache *hc = NULL;
	struct headcache_entry *e;
	char image[256];
	long before;

	ck_assert_msg(started, "docker-registry did not start");
	registry_options_init(&o);
	o.observe = observe;
	o.max_retries = 0;
	ck_assert_int_eq(registry_client_new(&c, &o, &err), 0);
	snprintf(image, sizeof(image), "%s/team/app", reg.host);
	ck_assert_int_eq(imageref_parse(&ref, image, 0, &err), 0);
	t.ref = &ref;
	t.insecure = true;
	ck_assert_int_eq(headcache_new(&hc), 0);
	ck_assert_ptr_null(headcache_find(hc, "apps/app", "v1"));

	ck_assert_ptr_nonnull(e = headcache_get(hc, c, &t, "apps/app", "v1"));
	ck_assert_int_eq(e->rc, 0);
	ck_assert_str_eq(e->digest, digest);
	before = requests;
	ck_assert_ptr_eq(headcache_get(hc, c, &t, "apps/app", "v1"), e);
	ck_assert_ptr_eq(headcache_find(hc, "apps/app", "v1"), e);
	ck_assert_int_eq(requests, before); /* a hit asks nothing */

	ck_assert_ptr_nonnull(e = headcache_get(hc, c, &t, "apps/app", "v404"));
	ck_assert_int_eq(e->rc, IG_ENOTFOUND);
	ck_assert_ptr_null(e->digest);
	before = requests;
	ck_assert_int_eq(headcache_get(hc, c, &t, "apps/app", "v404")->rc, IG_ENOTFOUND);
	ck_assert_int_eq(requests, before);

	/* the key is (target, reference): "apps/app\nv1" is not "apps\napp/v1" */
	ck_assert_ptr_null(headcache_find(hc, "apps", "app\nv1"));
	ck_assert_ptr_null(headcache_find(hc, "apps/other", "v1"));

	/* past the first table size, every entry is still found */
	for (int i = 0; i < 100; i++) {
		char tag[16];

		snprintf(tag, sizeof(tag), "x%d", i);
		ck_assert_ptr_nonnull(headcache_get(hc, c, &t, "apps/app", tag));
	}
	ck_assert_int_eq(headcache_find(hc, "apps/app", "v1")->rc, 0);
	ck_assert_str_eq(headcache_find(hc, "apps/app", "v1")->digest, digest);
	ck_assert_int_eq(headcache_find(hc, "apps/app", "x57")->rc, IG_ENOTFOUND);

	headcache_free(hc);
	headcache_free(NULL);
	imageref_release(&ref);
	registry_client_free(c);
}
END_TEST

START_TEST(prefetch_batch)
{
	struct registry_options o;
	struct registry_client *c = NULL;
	struct imageref ref = IMAGEREF_INIT;
	struct registry_target t = {0};
	struct error err = ERROR_INIT;
	struct headcache *hc = NULL;
	struct headcache_want w[80];
	char tags[70][16], image[256];
	size_t n = 0;
	long before;

	ck_assert_msg(started, "docker-registry did not start");
	registry_options_init(&o);
	o.observe = observe;
	o.max_retries = 0;
	ck_assert_int_eq(registry_client_new(&c, &o, &err), 0);
	snprintf(image, sizeof(image), "%s/team/app", reg.host);
	ck_assert_int_eq(imageref_parse(&ref, image, 0, &err), 0);
	t.ref = &ref;
	t.insecure = true;
	ck_assert_int_eq(headcache_new(&hc), 0);
	ck_assert_int_eq(headcache_get(hc, c, &t, "apps/app", "x3")->rc, IG_ENOTFOUND);

	/* v1 (200), 70 missing tags (one already known), and ten repeats of v1 */
	w[n++] = (struct headcache_want){&t, "apps/app", "v1"};
	for (int i = 0; i < 70; i++) {
		snprintf(tags[i], sizeof(tags[i]), "x%d", i);
		w[n++] = (struct headcache_want){&t, "apps/app", tags[i]};
	}
	while (n < 80)
		w[n++] = (struct headcache_want){&t, "apps/app", "v1"};
	before = requests;
	headcache_prefetch(hc, c, w, n, 4);
	ck_assert_int_eq(requests - before, 70); /* each once, x3 not again */
	before = requests;
	ck_assert_int_eq(headcache_get(hc, c, &t, "apps/app", "v1")->rc, 0);
	ck_assert_str_eq(headcache_find(hc, "apps/app", "v1")->digest, digest);
	for (int i = 0; i < 70; i++) {
		struct headcache_entry *e = headcache_get(hc, c, &t, "apps/app", tags[i]);

		ck_assert_int_eq(e->rc, IG_ENOTFOUND);
		ck_assert_ptr_null(e->digest);
		ck_assert_ptr_nonnull(e->error);
	}
	ck_assert_int_eq(requests, before); /* all answered from memory */

	/* one HEAD to make, or one thread: left to headcache_get */
	w[0] = (struct headcache_want){&t, "apps/app", "y1"};
	w[1] = (struct headcache_want){&t, "apps/app", "v1"};
	before = requests;
	headcache_prefetch(hc, c, w, 2, 4);
	headcache_prefetch(hc, c, w, 1, 4);
	w[1] = (struct headcache_want){&t, "apps/app", "y2"};
	headcache_prefetch(hc, c, w, 2, 1);
	ck_assert_int_eq(requests, before);
	ck_assert_ptr_null(headcache_find(hc, "apps/app", "y1"));

	headcache_free(hc);
	imageref_release(&ref);
	registry_client_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("headcache");
	TCase *tc = tcase_create("registry");
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, start_peers, stop_peers);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, cache_once);
	tcase_add_test(tc, prefetch_batch);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
