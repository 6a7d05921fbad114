/* The registry client against real peers: Debian's docker-registry (manifest digests, the index
 * digest of a multi-arch tag, missing tags and repositories, many threads on one client) and
 * the fault server for what it cannot do (GET fallback for the digest, token cache and renewal,
 * Retry-After). Fixtures start once for the suite (unchecked fixture) and are always stopped. */
#include <check.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageconfig.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/http.h"
#include "support/fixture.h"

static struct fixture reg, fault;
static char index_digest[128], plain_digest[128];
static int started;

static void start_peers(void)
{
	started = fixture_registry_start(&reg, NULL) == 0 &&
	          fixture_fault_start(&fault, NULL) == 0 &&
	          fixture_registry_push(&reg, "team/app", "multi", 1, index_digest,
	                                sizeof(index_digest)) == 0 &&
	          fixture_registry_push(&reg, "team/app", "v1.0.0", 0, plain_digest,
	                                sizeof(plain_digest)) == 0;
}

static void stop_peers(void)
{
	fixture_registry_stop(&reg);
	fixture_fault_stop(&fault);
}

/* A client and a target for host/repo (insecure: the peers speak plain HTTP). */
struct ctx {
	struct registry_client *c;
	struct imageref ref;
	struct registry_target t;
	struct error err;
	long codes[600];
};

static void observe(void *p, const char *registry, long code)
{
	struct ctx *x = p;

	(void)registry;
	if (code >= 0 && code < 600)
		__atomic_add_fetch(&x->codes[code], 1, __ATOMIC_RELAXED);
}

static void ctx_init(struct ctx *x, const char *host, const char *repo)
{
	struct registry_options o;
	char image[256];

	ck_assert_msg(started, "fixtures did not start");
	memset(x, 0, sizeof(*x));
	registry_options_init(&o);
	o.observe = observe;
	o.observe_ctx = x;
	snprintf(image, sizeof(image), "%s/%s", host, repo);
	ck_assert_int_eq(imageref_parse(&x->ref, image, 0, &x->err), 0);
	ck_assert_int_eq(registry_client_new(&x->c, &o, &x->err), 0);
	x->t.ref = &x->ref;
	x->t.insecure = true;
}

static void ctx_release(struct ctx *x)
{
	registry_client_free(x->c);
	imageref_release(&x->ref);
}

START_TEST(head_digests)
{
	struct ctx x;
	char *d = NULL;

	ctx_init(&x, reg.host, "team/app");
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, "multi", &x.err), 0);
	ck_assert_str_eq(d, index_digest); /* the index, never a child */
	free(d);
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, "v1.0.0", &x.err), 0);
	ck_assert_str_eq(d, plain_digest);
	free(d);
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, index_digest, &x.err), 0);
	ck_assert_str_eq(d, index_digest);
	free(d);
	ctx_release(&x);
}
END_TEST

START_TEST(head_missing)
{
	struct ctx x;
	char *d = (char *)1, want[256];

	ctx_init(&x, reg.host, "team/app");
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, "v9.9.9", &x.err), IG_ENOTFOUND);
	ck_assert_ptr_null(d);
	snprintf(want, sizeof(want), "registry '%s/team/app': manifest 'v9.9.9': 404", reg.host);
	ck_assert_msg(strncmp(x.err.msg, want, strlen(want)) == 0, "%s", x.err.msg);
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, "bad tag!", &x.err), IG_EINVALID);
	ctx_release(&x);
	ctx_init(&x, reg.host, "team/none");
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, "v1", &x.err), IG_ENOTFOUND);
	ctx_release(&x);
}
END_TEST

START_TEST(list_real)
{
	struct ctx x;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	char want[256];

	ctx_init(&x, reg.host, "team/app");
	ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), 0);
	ck_assert_int_eq((int)l.tags.len, 2);
	ck_assert_str_eq(l.tags.items[0], "multi");
	ck_assert_str_eq(l.tags.items[1], "v1.0.0");
	ck_assert_int_eq((int)l.pages, 1);
	/* sha256("multi\nv1.0.0") */
	ck_assert_str_eq(l.sha256,
	                 "f43480bfbd1608d3e6379c2e287cb7a4e4acb378c63a0359d2fab68e1b6a0cd4");
	registry_listing_release(&l);
	ctx_release(&x);
	ctx_init(&x, reg.host, "team/none");
	ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), IG_ENOTFOUND);
	snprintf(want, sizeof(want),
	         "registry '%s/team/none': 404 NAME_UNKNOWN: repository name not known to registry",
	         reg.host);
	ck_assert_str_eq(x.err.msg, want);
	ck_assert_int_eq((int)l.tags.len, 0);
	ctx_release(&x);
}
END_TEST

START_TEST(sha256_of_list)
{
	struct strvec v = STRVEC_INIT;
	char out[65];

	registry_tags_sha256(out, &v);
	ck_assert_str_eq(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	strvec_push(&v, "a");
	strvec_push(&v, "b");
	registry_tags_sha256(out, &v); /* sha256("a\nb") */
	ck_assert_str_eq(out, "7e18f737311b2dc3b2f269dd78396b0351f14fb66efa879f768cb23181883c78");
	strvec_release(&v);
}
END_TEST

static void *lister(void *p)
{
	struct ctx *x = p;
	struct error err = ERROR_INIT;
	long ok = 0;

	for (int i = 0; i < 10; i++) {
		struct registry_listing l = REGISTRY_LISTING_INIT;
		char *d = NULL;

		if (registry_list_tags(&l, x->c, &x->t, &err) == 0 && l.tags.len == 2 &&
		    registry_head_manifest(&d, x->c, &x->t, "multi", &err) == 0 &&
		    strcmp(d, index_digest) == 0)
			ok++;
		free(d);
		registry_listing_release(&l);
	}
	return (void *)ok;
}

START_TEST(threads_share_a_client)
{
	struct ctx x;
	pthread_t th[4];
	long total = 0;

	ctx_init(&x, reg.host, "team/app");
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, lister, &x), 0);
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(th[i], &r);
		total += (long)r;
	}
	ck_assert_int_eq(total, 40);
	ck_assert_int_eq(x.codes[200], 80);
	ctx_release(&x);
}
END_TEST

static void sha256_hex(char out[72], const struct buf *b)
{
	unsigned char md[32];
	unsigned n = 0;

	EVP_Digest(b->data, b->len, md, &n, EVP_sha256(), NULL);
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

START_TEST(digest_from_body)
{
	struct ctx x;
	struct buf body = BUF_INIT;
	char url[256], want[72], *d = NULL;

	ctx_init(&x, fault.host, "nodigest/app");
	snprintf(url, sizeof(url), "http://%s/v2/nodigest/app/manifests/v1", fault.host);
	ck_assert_int_eq(fixture_http_get(&body, url), 200);
	sha256_hex(want, &body);
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, "v1", &x.err), 0);
	ck_assert_str_eq(d, want);
	free(d);
	buf_release(&body);
	ctx_release(&x);
	ctx_init(&x, fault.host, "baddigest/app");
	ck_assert_int_eq(registry_head_manifest(&d, x.c, &x.t, "v1", &x.err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(x.err.msg, "does not match"));
	ctx_release(&x);
}
END_TEST

/* The fault server's recorded requests whose path starts with prefix, in order (a new array). */
static json_t *requests_under(const char *prefix)
{
	struct buf body = BUF_INIT;
	char url[256];
	json_t *log, *e, *out = json_array();
	size_t i;

	snprintf(url, sizeof(url), "http://%s/_fault/requests", fault.host);
	ck_assert_int_eq(fixture_http_get(&body, url), 200);
	log = json_loads(body.data, 0, NULL);
	json_array_foreach(log, i, e)
	{
		const char *p = json_string_value(json_object_get(e, "path"));

		if (p && strncmp(p, prefix, strlen(prefix)) == 0)
			json_array_append(out, e);
	}
	json_decref(log);
	buf_release(&body);
	return out;
}

/* Counts the fault server's recorded requests whose path starts with prefix. */
static int count_requests(const char *prefix)
{
	json_t *log = requests_under(prefix);
	int n = (int)json_array_size(log);

	json_decref(log);
	return n;
}

static int refuse_begin(void *ctx, struct error *err)
{
	(void)ctx;
	return error_set(err, IG_EFAIL, "refused before the request");
}

/* One client on one thread reuses one pooled handle: what a request set (its Authorization,
 * its headers, HEAD's no-body) is never on the next one, and a request that ended before
 * reaching curl leaves a fresh handle unconfigured, not half set up. */
START_TEST(pooled_handle_keeps_nothing)
{
	static const struct {
		const char *method, *authorization, *header;
	} seq[] = {
	    {"GET", "Bearer first-secret", "X-Imageguard-Test: one"},
	    {"GET", NULL, NULL},
	    {"HEAD", "Bearer second-secret", NULL},
	    {"GET", NULL, NULL},
	};
	struct http_options o = {0};
	struct http_client *c;
	struct error err = ERROR_INIT;
	char url[256], prefix[64];
	json_t *got;

	ck_assert_msg(started, "fixtures did not start");
	snprintf(prefix, sizeof(prefix), "/v2/dups/pool%ld/", (long)time(NULL));
	snprintf(url, sizeof(url), "http://%s%stags/list", fault.host, prefix);
	ck_assert_int_eq(http_client_new(&c, &o, &err), 0);
	{
		const struct http_stream refused = {refuse_begin, NULL, NULL, false};
		struct http_request req = {.url = url, .stream = &refused};
		struct http_response r = HTTP_RESPONSE_INIT;

		ck_assert_int_lt(http_do(&r, c, &req, &err), 0);
		http_response_release(&r);
		err = (struct error)ERROR_INIT;
	}
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		const char *headers[] = {seq[i].header, NULL};
		struct http_request req = {.method = seq[i].method,
		                           .url = url,
		                           .authorization = seq[i].authorization,
		                           .headers = seq[i].header ? headers : NULL};
		struct http_response r = HTTP_RESPONSE_INIT;

		ck_assert_int_eq(http_do(&r, c, &req, &err), 0);
		ck_assert_int_eq(r.status, 200);
		/* a GET after the HEAD has its body again */
		ck_assert_msg(strcmp(seq[i].method, "HEAD") == 0 ? r.body.len == 0 : r.body.len > 0,
		              "request %zu: %zu body bytes", i, r.body.len);
		http_response_release(&r);
	}
	http_client_free(c);
	got = requests_under(prefix);
	ck_assert_int_eq((int)json_array_size(got), 4);
	for (size_t i = 0; i < 4; i++) {
		json_t *h = json_object_get(json_array_get(got, i), "headers");
		const char *auth = json_string_value(json_object_get(h, "authorization"));

		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(got, i), "method")),
		    seq[i].method);
		ck_assert_msg(seq[i].authorization ? auth && strcmp(auth, seq[i].authorization) == 0
		                                   : auth == NULL,
		              "request %zu: Authorization %s", i, auth ? auth : "(none)");
		ck_assert_msg((json_object_get(h, "x-imageguard-test") != NULL) ==
		                  (seq[i].header != NULL),
		              "request %zu: the test header", i);
	}
	json_decref(got);
}
END_TEST

START_TEST(token_cached_and_renewed)
{
	struct ctx x;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	char repo[64];

	/* bearer: one token serves every later request (sent up front, no 401 round trip) */
	snprintf(repo, sizeof(repo), "bearer/cache%ld", (long)time(NULL));
	ctx_init(&x, fault.host, repo);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), 0);
		ck_assert_int_eq((int)l.tags.len, 5);
		registry_listing_release(&l);
	}
	ck_assert_int_eq(x.codes[401], 1);
	ck_assert_int_eq(x.codes[200], 4); /* one token, three listings */
	ctx_release(&x);
	/* bearer-expire: each token works once; invalid_token makes the client fetch another */
	ctx_init(&x, fault.host, "bearer-expire/x");
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), 0);
		registry_listing_release(&l);
	}
	ck_assert_int_eq(x.codes[401], 3); /* the first anonymous try, then two expiries */
	ck_assert_int_ge(count_requests("/_token?kind=bearer-expire"), 3);
	ctx_release(&x);
}
END_TEST

START_TEST(retry_after)
{
	struct ctx x;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	struct timespec a, b;
	char repo[64];

	snprintf(repo, sizeof(repo), "r429/t%ld", (long)time(NULL));
	ctx_init(&x, fault.host, repo);
	clock_gettime(CLOCK_MONOTONIC, &a);
	ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ck_assert_int_eq((int)l.tags.len, 3);
	ck_assert_int_eq(x.codes[429], 1);
	ck_assert_msg((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= 950,
	              "Retry-After: 1 was not honoured");
	registry_listing_release(&l);
	ctx_release(&x);
}
END_TEST

/* Pushes repo:tag with the given created ("none": no field) through registry.py; arm64 set
 * makes a multi-arch index whose arm64 image has that created. */
static void push_created(char digest[128], const char *repo, const char *tag, const char *created,
                         const char *arm64)
{
	char script[512], url[256];
	const char *src = getenv("IMAGEGUARD_SRC");
	const char *argv[16] = {
	    "/usr/bin/python3", script, "push", "--url", url, "--repo", repo, "--tag", tag,
	    "--created",        created};
	struct buf out = BUF_INIT;
	size_t n = 11;

	snprintf(script, sizeof(script), "%s/test/fixtures/registry.py", src && *src ? src : ".");
	snprintf(url, sizeof(url), "http://%s", reg.host);
	if (arm64) {
		argv[n++] = "--multi-arch";
		argv[n++] = "--arm64-created";
		argv[n++] = arm64;
	}
	argv[n] = NULL;
	ck_assert_int_eq(fixture_run(&out, argv), 0);
	ck_assert_ptr_nonnull(out.data);
	snprintf(digest, 128, "%.*s", (int)strcspn(out.data, "\n"), out.data);
	buf_release(&out);
}

START_TEST(image_created)
{
	struct ctx x;
	struct imageconfig_created c;
	char plain[128], none[128], multi[128], epoch[128];

	ctx_init(&x, reg.host, "team/created");
	push_created(plain, "team/created", "plain", "2026-01-02T03:04:05.5+00:00", NULL);
	push_created(none, "team/created", "none", "none", NULL);
	push_created(epoch, "team/created", "epoch", "1970-01-01T00:00:00Z", NULL);
	push_created(multi, "team/created", "multi", "2026-03-01T00:00:00Z",
	             "2026-04-01T00:00:00Z");

	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t, plain, NULL, &x.err), 0);
	ck_assert(c.known);
	ck_assert_int_eq((long long)c.time.tv_sec, 1767323045LL);
	ck_assert_int_eq(c.time.tv_nsec, 500000000L);

	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t, none, NULL, &x.err), 0);
	ck_assert(!c.known);
	ck_assert_msg(strstr(c.why, "no 'created'") != NULL, "%s", c.why);
	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t, epoch, NULL, &x.err), 0);
	ck_assert(!c.known);
	ck_assert_msg(strstr(c.why, "placeholder") != NULL, "%s", c.why);

	/* an index: linux/amd64 by default, or the platform asked for */
	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t, multi, NULL, &x.err), 0);
	ck_assert(c.known);
	ck_assert_int_eq((long long)c.time.tv_sec, 1772323200LL);
	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t, multi, "linux/arm64", &x.err), 0);
	ck_assert(c.known);
	ck_assert_int_eq((long long)c.time.tv_sec, 1775001600LL);
	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t, multi, "linux/s390x", &x.err), 0);
	ck_assert(!c.known);
	ck_assert_msg(strstr(c.why, "no linux/s390x entry") != NULL, "%s", c.why);

	/* a digest the registry does not have, and one that is not a digest */
	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t,
	                                        "sha256:00000000000000000000000000000000000000"
	                                        "00000000000000000000000000",
	                                        NULL, &x.err),
	                 IG_ENOTFOUND);
	ck_assert_msg(strstr(x.err.msg, "manifest 'sha256:0000") != NULL, "%s", x.err.msg);
	ck_assert_int_eq(registry_image_created(&c, x.c, &x.t, "latest", NULL, &x.err),
	                 IG_EINVALID);
	ctx_release(&x);
}
END_TEST

/* ---- bounded work and prompt shutdown ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct raiser {
	volatile sig_atomic_t *flag;
	long after_ms;
};

static void *raise_later(void *arg)
{
	struct raiser *r = arg;
	struct timespec ts = {r->after_ms / 1000, (r->after_ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
	*r->flag = 1;
	return NULL;
}

/* A stop flag raised while a request waits on a registry that never answers ends the listing
 * within about a second (curl's progress callback), however long the request timeout is. */
START_TEST(stop_ends_a_stalled_request)
{
	static const char *const repos[] = {"stall/s1", "slowpage/s2"};
	static volatile sig_atomic_t stop;
	struct raiser r = {&stop, 500};
	struct registry_listing l;
	struct ctx x;
	pthread_t th;
	int64_t t0;

	for (size_t i = 0; i < sizeof(repos) / sizeof(repos[0]); i++) {
		stop = 0;
		ctx_init(&x, fault.host, repos[i]);
		registry_client_set_stop(x.c, &stop);
		x.t.timeout_ms = 60000;
		t0 = now_ms();
		ck_assert_int_eq(pthread_create(&th, NULL, raise_later, &r), 0);
		ck_assert_int_lt(registry_list_tags(&l, x.c, &x.t, &x.err), 0);
		pthread_join(th, NULL);
		ck_assert_msg(now_ms() - t0 < 2500, "%s: %lld ms", repos[i],
		              (long long)(now_ms() - t0));
		ck_assert_msg(strstr(x.err.msg, "stopping"), "%s", x.err.msg);
		ck_assert_uint_eq(l.tags.len, 0);
		/* once stopped, nothing new starts */
		t0 = now_ms();
		ck_assert_int_lt(registry_list_tags(&l, x.c, &x.t, &x.err), 0);
		ck_assert_int_lt(now_ms() - t0, 200);
		ctx_release(&x);
	}
}
END_TEST

/* An endless listing whose every page comes just in time is ended by the listing's deadline
 * (the target's timeout covers all pages), and the pass deadline ends any request. */
START_TEST(listing_and_pass_deadlines)
{
	struct registry_listing l;
	struct ctx x;
	int64_t t0;

	ctx_init(&x, fault.host, "slowpage/d1");
	x.t.listing_timeout_ms = 2000; /* each page takes 0.8 s; the listing is endless */
	t0 = now_ms();
	ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), IG_ETIMEOUT);
	ck_assert_msg(now_ms() - t0 < 3500, "%lld ms", (long long)(now_ms() - t0));
	ck_assert_msg(strstr(x.err.msg, "tag list timed out") && strstr(x.err.msg, "pages"), "%s",
	              x.err.msg);
	ctx_release(&x);

	ctx_init(&x, fault.host, "stall/d2");
	registry_client_set_deadline(x.c, now_ms() + 1000);
	t0 = now_ms();
	ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), IG_ETIMEOUT);
	ck_assert_msg(now_ms() - t0 < 2500, "%lld ms", (long long)(now_ms() - t0));
	ctx_release(&x);
}
END_TEST

/* Next links that come back to a page already read are a loop, not a longer listing. */
START_TEST(link_loop_refused)
{
	struct registry_listing l;
	struct ctx x;

	ctx_init(&x, fault.host, "linkloop/l1");
	ck_assert_int_eq(registry_list_tags(&l, x.c, &x.t, &x.err), IG_EINVALID);
	ck_assert_msg(strstr(x.err.msg, "loops back"), "%s", x.err.msg);
	ck_assert_uint_le(x.codes[200], 4);
	ctx_release(&x);
}
END_TEST

/* The body parsers without a peer: OCI error bodies become one line (control characters from
 * the registry were echoed into messages, found by fuzz_ocierror), tag-list pages. */
static const struct {
	const char *body, *want;
} oci_bodies[] = {
    {"{\"errors\":[{\"code\":\"NAME_UNKNOWN\",\"message\":\"repository name not known\"}]}",
     "NAME_UNKNOWN: repository name not known"},
    {"{\"errors\":[{\"code\":\"DENIED\",\"message\":\"a\\nb\\r\\u007f\\u001b[31m\"}]}",
     "DENIED: a b   [31m"},
    {"{\"errors\":[{\"code\":\"X\\ty\"},{\"message\":\"only\"}]}", "X y; only"},
    {"<html>502 Bad Gateway</html>", ""},
};

START_TEST(oci_error_bodies)
{
	char out[512];

	registry_oci_errors(out, sizeof(out), oci_bodies[_i].body, strlen(oci_bodies[_i].body));
	ck_assert_str_eq(out, oci_bodies[_i].want);
}
END_TEST

static const struct {
	const char *body;
	int rc;
	size_t ntags;
} tag_pages[] = {
    {"{\"name\":\"a/b\",\"tags\":[\"1.0.0\",\"latest\"]}", 0, 2},
    {"{\"name\":\"a/b\",\"tags\":null}", 0, 0},
    {"{\"name\":\"a/b\",\"tags\":[\"ok\",\"-bad\",\"sp ace\",\"\"]}", 0, 1},
    {"{\"name\":\"a/b\",\"tags\":[\"ok\",1]}", IG_EINVALID, 0},
    {"{\"name\":\"a/b\"}", IG_EINVALID, 0},
    {"{\"tags\":[\"1\"", IG_EINVALID, 0},
};

START_TEST(tag_list_pages)
{
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	int rc = registry_parse_tag_list(&tags, "r.example/a/b", tag_pages[_i].body,
	                                 strlen(tag_pages[_i].body), &err);

	ck_assert_int_eq(rc, tag_pages[_i].rc);
	if (rc == 0)
		ck_assert_uint_eq(tags.len, tag_pages[_i].ntags);
	else
		ck_assert_msg(strstr(err.msg, "'r.example/a/b'"), "%s", err.msg);
	strvec_release(&tags);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("peers");
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, start_peers, stop_peers);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, sha256_of_list);
	tcase_add_test(tc, head_digests);
	tcase_add_test(tc, head_missing);
	tcase_add_test(tc, list_real);
	tcase_add_test(tc, threads_share_a_client);
	tcase_add_test(tc, digest_from_body);
	tcase_add_test(tc, pooled_handle_keeps_nothing);
	tcase_add_test(tc, token_cached_and_renewed);
	tcase_add_test(tc, retry_after);
	tcase_add_test(tc, image_created);
	tcase_add_test(tc, stop_ends_a_stalled_request);
	tcase_add_test(tc, listing_and_pass_deadlines);
	tcase_add_test(tc, link_loop_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("bodies");
	tcase_add_loop_test(tc, oci_error_bodies, 0, sizeof(oci_bodies) / sizeof(oci_bodies[0]));
	tcase_add_loop_test(tc, tag_list_pages, 0, sizeof(tag_pages) / sizeof(tag_pages[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
