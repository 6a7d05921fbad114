/* auth: challenges answered as a registry client must, against the real token issuer that the
 * suite runs beside Debian's docker-registry (test/fixtures/registry.py --token): Basic and
 * Bearer with right, wrong and no credentials, unknown and malformed challenges, tokens cached
 * per realm/service/scope/user and fetched again only when refused (stale). */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "imageguard/registry/auth.h"
#include "imageguard/registry/creds.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "support/fixture.h"

static struct fixture reg;
static char token_url[256];
static int started;

static void start_peers(void)
{
	const char *const extra[] = {"--token", "user:pass", NULL};
	char path[512];
	struct buf b = BUF_INIT;
	const char *at, *end;

	started = fixture_registry_start(&reg, extra) == 0;
	snprintf(path, sizeof(path), "%s/registry.json", reg.dir);
	if (!started || buf_read_file(&b, path) < 0 ||
	    !(at = strstr(b.data, "\"token_url\": \"")) || !(end = strchr(at + 14, '"')))
		started = 0;
	else
		snprintf(token_url, sizeof(token_url), "%.*s", (int)(end - at - 14), at + 14);
	buf_release(&b);
}

static void stop_peers(void)
{
	fixture_registry_stop(&reg);
}

/* How many requests the token issuer has seen. */
static size_t issuer_requests(void)
{
	struct buf b = BUF_INIT;
	char url[300];
	size_t n = 0;

	snprintf(url, sizeof(url), "%.*s/_requests", (int)(strlen(token_url) - strlen("/token")),
	         token_url);
	ck_assert_int_eq(fixture_http_get(&b, url), 200);
	for (const char *p = b.data; (p = strstr(p, "\"path\"")); p++)
		n++;
	buf_release(&b);
	return n;
}

enum who { ANONYMOUS, RIGHT, WRONG };

static const struct {
	const char *name;
	const char *challenge; /* %s: the issuer's realm */
	enum who who;
	int rc;
	const char *prefix; /* of the Authorization value; NULL: none (anonymous) */
} rows[] = {
    {"basic with credentials", "Basic realm=\"registry\"", RIGHT, 0, "Basic dXNlcjpwYXNz"},
    {"basic without credentials", "Basic realm=\"registry\"", ANONYMOUS, IG_EAUTH, NULL},
    {"bearer with credentials",
     "Bearer realm=\"%s\",service=\"imageguard-test-registry\",scope=\"repository:team/app:pull\"",
     RIGHT, 0, "Bearer ey"},
    {"bearer anonymous (a token without access)",
     "Bearer realm=\"%s\",service=\"imageguard-test-registry\",scope=\"repository:team/app:pull\"",
     ANONYMOUS, 0, "Bearer ey"},
    {"bearer with a wrong password",
     "Bearer realm=\"%s\",service=\"imageguard-test-registry\",scope=\"repository:team/app:pull\"",
     WRONG, IG_EAUTH, NULL},
    {"unknown scheme", "Negotiate", RIGHT, IG_EAUTH, NULL},
    {"bearer without realm", "Bearer service=\"x\"", RIGHT, IG_EINVALID, NULL},
    {"malformed challenge", "Bearer realm=\"unterminated", RIGHT, IG_EINVALID, NULL},
};

struct peer {
	struct auth *a;
	struct http_client *http;
	struct registry_creds creds;
	struct auth_target t;
	char host[128];
};

static void peer_init(struct peer *p, enum who who)
{
	struct http_options o = {0};
	struct error err = ERROR_INIT;

	ck_assert_msg(started, "docker-registry with token auth did not start");
	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(auth_new(&p->a, &err), 0);
	ck_assert_int_eq(http_client_new(&p->http, &o, &err), 0);
	if (who != ANONYMOUS) {
		p->creds.username = strdup("user");
		p->creds.password = strdup(who == RIGHT ? "pass" : "nope");
	}
	snprintf(p->host, sizeof(p->host), "%s", reg.host);
	p->t.host = p->host;
	p->t.scope = "repository:team/app:pull";
	p->t.creds = who == ANONYMOUS ? NULL : &p->creds;
	p->t.insecure = true;
}

static void peer_release(struct peer *p)
{
	auth_free(p->a);
	http_client_free(p->http);
	creds_release(&p->creds);
}

START_TEST(challenge_table)
{
	struct peer p;
	struct error err = ERROR_INIT;
	char challenge[512];
	char *out = NULL;
	int rc;

	peer_init(&p, rows[_i].who);
	snprintf(challenge, sizeof(challenge), rows[_i].challenge, token_url);
	rc = auth_authorize(&out, p.a, p.http, &p.t, challenge, false, &err);
	ck_assert_msg(rc == rows[_i].rc, "%s: rc %d (%s)", rows[_i].name, rc, err.msg);
	if (rows[_i].prefix) {
		ck_assert_ptr_nonnull(out);
		ck_assert_msg(strncmp(out, rows[_i].prefix, strlen(rows[_i].prefix)) == 0, "%s: %s",
		              rows[_i].name, out);
	} else {
		ck_assert_ptr_null(out);
	}
	if (rc < 0) /* errors name no secret */
		ck_assert(!strstr(err.msg, "pass") && !strstr(err.msg, "nope"));
	free(out);
	peer_release(&p);
}
END_TEST

/* A token is fetched once, then sent up front; refused (stale), it is fetched again. */
START_TEST(token_cached_until_stale)
{
	struct peer p;
	struct error err = ERROR_INIT;
	char challenge[512];
	char *first = NULL, *again = NULL, *fresh = NULL;
	size_t n0, n1;

	peer_init(&p, RIGHT);
	snprintf(challenge, sizeof(challenge), rows[2].challenge, token_url);
	n0 = issuer_requests();
	ck_assert_int_eq(auth_authorize(&first, p.a, p.http, &p.t, challenge, false, &err), 0);
	n1 = issuer_requests();
	ck_assert_uint_eq(n1, n0 + 1);
	/* no challenge: what the host challenged before, answered from the cache */
	ck_assert_int_eq(auth_authorize(&again, p.a, p.http, &p.t, NULL, false, &err), 0);
	ck_assert_str_eq(again, first);
	ck_assert_uint_eq(issuer_requests(), n1);
	/* the registry refused it: a new token */
	ck_assert_int_eq(auth_authorize(&fresh, p.a, p.http, &p.t, challenge, true, &err), 0);
	ck_assert_uint_eq(issuer_requests(), n1 + 1);
	ck_assert_str_ne(fresh, first);
	/* another scope is another token */
	free(again);
	again = NULL;
	p.t.scope = "repository:team/other:pull";
	ck_assert_int_eq(auth_authorize(&again, p.a, p.http, &p.t, NULL, false, &err), 0);
	ck_assert_uint_eq(issuer_requests(), n1 + 2);
	free(first);
	free(again);
	free(fresh);
	peer_release(&p);
}
END_TEST

/* A token realm that accepts the connection and never answers: the pass's deadline ends the
 * token request (IG_ETIMEOUT), not the per-request timeout, which is far longer here (without
 * the deadline the test would outlive its tcase timeout). */
START_TEST(token_request_ends_at_the_pass_deadline)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	struct peer p;
	struct error err = ERROR_INIT;
	char challenge[512];
	char *out = NULL;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	peer_init(&p, RIGHT);
	p.t.timeout_ms = 600000;
	p.t.deadline_ms = http_now_ms() + 300;
	snprintf(
	    challenge, sizeof(challenge),
	    "Bearer "
	    "realm=\"http://127.0.0.1:%d/token\",service=\"s\",scope=\"repository:team/app:pull\"",
	    ntohs(sa.sin_port));
	ck_assert_int_eq(auth_authorize(&out, p.a, p.http, &p.t, challenge, false, &err),
	                 IG_ETIMEOUT);
	ck_assert_ptr_null(out);
	ck_assert_msg(strstr(err.msg, "token request"), "%s", err.msg);
	peer_release(&p);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("issuer");
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, start_peers, stop_peers);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, challenge_table, 0, sizeof(rows) / sizeof(rows[0]));
	tcase_add_test(tc, token_cached_until_stale);
	suite_add_tcase(s, tc);
	tc = tcase_create("deadline");
	tcase_add_unchecked_fixture(tc, start_peers, stop_peers);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, token_request_ends_at_the_pass_deadline);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
