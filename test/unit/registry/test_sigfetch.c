/* sigfetch, sigverify's registry callbacks, against Debian's docker-registry: a manifest by tag
 * and by digest with its media type, the config blob it names, the body cap, the referrers API
 * that docker-registry 2.8 lacks (404 once, then no request at all), and signature tags looked up
 * in a pass's sorted listing. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/registry/sigfetch.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"
#include "support/fixture.h"

static struct fixture reg;
static char digest[128];
static int started;

static void start_peers(void)
{
	started = fixture_registry_start(&reg, NULL) == 0 &&
	          fixture_registry_push(&reg, "team/app", "v1.0.0", 0, digest, sizeof(digest)) == 0;
}

static void stop_peers(void)
{
	fixture_registry_stop(&reg);
}

/* One repository's sigfetch over a client that counts the HTTP answers it gets. */
struct ctx {
	struct registry_client *c;
	struct imageref ref;
	struct registry_target t;
	struct sigfetch f;
	struct error err;
	long answers;
};

static void observe(void *p, const char *registry, long code)
{
	struct ctx *x = p;

	(void)registry;
	(void)code;
	__atomic_add_fetch(&x->answers, 1, __ATOMIC_RELAXED);
}

static void ctx_init(struct ctx *x)
{
	struct registry_options o;
	char image[256];

	ck_assert_msg(started, "docker-registry did not start");
	memset(x, 0, sizeof(*x));
	registry_options_init(&o);
	o.observe = observe;
	o.observe_ctx = x;
	snprintf(image, sizeof(image), "%s/team/app", reg.host);
	ck_assert_int_eq(imageref_parse(&x->ref, image, 0, &x->err), 0);
	ck_assert_int_eq(registry_client_new(&x->c, &o, &x->err), 0);
	x->t.ref = &x->ref;
	x->t.insecure = true;
	x->f.client = x->c;
	x->f.target = &x->t;
}

static void ctx_release(struct ctx *x)
{
	registry_client_free(x->c);
	imageref_release(&x->ref);
}

START_TEST(manifest_and_its_config_blob)
{
	struct ctx x;
	struct buf body = BUF_INIT, blob = BUF_INIT;
	char type[128];
	json_t *m, *cfg;

	ctx_init(&x);
	ck_assert_int_eq(sigfetch_manifest(&x.f, &body, type, sizeof(type), "v1.0.0", &x.err), 0);
	ck_assert_str_eq(type, "application/vnd.oci.image.manifest.v1+json");
	m = json_loadb(body.data, body.len, 0, NULL);
	ck_assert_ptr_nonnull(m);
	cfg = json_object_get(json_object_get(m, "config"), "digest");
	ck_assert_ptr_nonnull(json_string_value(cfg));
	ck_assert_int_eq(sigfetch_blob(&x.f, &blob, json_string_value(cfg), &x.err), 0);
	ck_assert_uint_gt(blob.len, 0);
	ck_assert_ptr_nonnull(strstr(blob.data, "architecture"));
	json_decref(m);
	/* By digest: the same bytes, checked against the digest by the client. */
	buf_reset(&blob);
	ck_assert_int_eq(sigfetch_manifest(&x.f, &blob, type, sizeof(type), digest, &x.err), 0);
	ck_assert_uint_eq(blob.len, body.len);
	ck_assert_int_eq(memcmp(blob.data, body.data, body.len), 0);
	buf_release(&body);
	buf_release(&blob);
	ctx_release(&x);
}
END_TEST

START_TEST(caps_and_missing)
{
	struct ctx x;
	struct buf body = BUF_INIT_MAX(16);
	char type[8] = "x";

	ctx_init(&x);
	/* The caller's cap holds and survives: nothing of the body is kept. */
	ck_assert_int_eq(sigfetch_manifest(&x.f, &body, type, sizeof(type), "v1.0.0", &x.err),
	                 IG_ETOOBIG);
	ck_assert_uint_eq(body.len, 0);
	ck_assert_uint_eq(body.max, 16);
	/* A media type that does not fit is cut, never overrun. */
	body.max = 0;
	ck_assert_int_eq(sigfetch_manifest(&x.f, &body, type, sizeof(type), "v1.0.0", &x.err), 0);
	ck_assert_uint_eq(strlen(type), sizeof(type) - 1);
	ck_assert_uint_eq(body.max, 0);
	ck_assert_int_eq(sigfetch_manifest(&x.f, &body, NULL, 0, "v9.9.9", &x.err), IG_ENOTFOUND);
	ck_assert_int_eq(
	    sigfetch_blob(&x.f, &body,
	                  "sha256:00000000000000000000000000000000000000000000000000000"
	                  "00000000000",
	                  &x.err),
	    IG_ENOTFOUND);
	buf_release(&body);
	ctx_release(&x);
}
END_TEST

START_TEST(referrers_asked_once)
{
	struct ctx x;
	struct buf body = BUF_INIT;
	long before;

	ctx_init(&x);
	ck_assert(!x.f.no_referrers_api);
	ck_assert_int_eq(sigfetch_referrers(&x.f, &body, digest, &x.err), IG_ENOTFOUND);
	ck_assert(x.f.no_referrers_api);
	before = x.answers;
	ck_assert_int_gt(before, 0);
	ck_assert_int_eq(sigfetch_referrers(&x.f, &body, digest, &x.err), IG_ENOTFOUND);
	ck_assert_int_eq(x.answers, before); /* no second request */
	ck_assert_ptr_nonnull(strstr(x.err.msg, "no referrers API"));
	buf_release(&body);
	ctx_release(&x);
}
END_TEST

START_TEST(tags_from_the_listing)
{
	static const char *const none[] = {NULL};
	struct sigfetch f = {0};
	struct strvec tags = STRVEC_INIT;

	ck_assert_int_eq(sigfetch_has_tag(&f, "sha256-ab.sig"), -1); /* no listing: ask */
	f.tags = none;                                               /* an empty listing */
	ck_assert_int_eq(sigfetch_has_tag(&f, "sha256-ab.sig"), 0);
	ck_assert_int_eq(strvec_push(&tags, "v1.0.0"), 0);
	ck_assert_int_eq(strvec_push(&tags, "sha256-ab.sig"), 0);
	ck_assert_int_eq(strvec_push(&tags, "sha256-ab"), 0);
	ck_assert_int_eq(strvec_push(&tags, "latest"), 0);
	strvec_sort(&tags);
	f.tags = (const char *const *)tags.items;
	f.tags_len = tags.len;
	ck_assert_int_eq(sigfetch_has_tag(&f, "sha256-ab.sig"), 1);
	ck_assert_int_eq(sigfetch_has_tag(&f, "sha256-ab"), 1);
	ck_assert_int_eq(sigfetch_has_tag(&f, "v1.0.0"), 1);
	ck_assert_int_eq(sigfetch_has_tag(&f, "latest"), 1);
	ck_assert_int_eq(sigfetch_has_tag(&f, "sha256-ab.att"), 0);
	ck_assert_int_eq(sigfetch_has_tag(&f, "sha256-a"), 0);
	strvec_release(&tags);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sigfetch");
	TCase *tc = tcase_create("sigfetch");
	SRunner *r;
	int failed;

	tcase_add_unchecked_fixture(tc, start_peers, stop_peers);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, manifest_and_its_config_blob);
	tcase_add_test(tc, caps_and_missing);
	tcase_add_test(tc, referrers_asked_once);
	tcase_add_test(tc, tags_from_the_listing);
	suite_add_tcase(s, tc);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
