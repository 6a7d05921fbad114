/* Unit tests for the health/metrics endpoint: address parsing, and real requests over
 * loopback with libcurl (a free port picked by the kernel). */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/controller/httpd.h"
#include "imageguard/util/metrics.h"

static const struct {
	const char *in;
	int rc;
	int family;
} listens[] = {
    {"127.0.0.1:9090", 0, AF_INET},  {":0", 0, AF_INET},
    {"localhost:1", 0, AF_INET},     {"[::1]:8080", 0, AF_INET6},
    {"127.0.0.1", IG_EUSAGE, 0},     {"1.2.3.4:x", IG_EUSAGE, 0},
    {"1.2.3.4:70000", IG_EUSAGE, 0}, {"host.example:80", IG_EUSAGE, 0},
    {"[::1:80", IG_EUSAGE, 0},       {"", IG_EUSAGE, 0},
};

START_TEST(parse_listen)
{
	struct sockaddr_storage ss;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(httpd_parse_listen(&ss, listens[_i].in, &err), listens[_i].rc);
	if (listens[_i].rc == 0)
		ck_assert_int_eq(ss.ss_family, listens[_i].family);
	else
		ck_assert(strstr(err.msg, "listen address '") == err.msg);
}
END_TEST

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	buf_append(ctx, p, size * n);
	return size * n;
}

static long get(unsigned port, const char *path, struct buf *body)
{
	char url[128];
	long code = 0;
	CURL *c = curl_easy_init();

	buf_reset(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return code;
}

START_TEST(serve)
{
	static const char *const labels[] = {"policy"};
	static const char *const v[] = {"default/app"};
	struct metrics *m;
	struct httpd *h;
	struct error err = ERROR_INIT;
	struct buf body = BUF_INIT;
	unsigned port;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(metrics_declare(m, "x_total", METRICS_COUNTER, "X.", labels, 1, NULL, 0),
	                 0);
	ck_assert_int_eq(metrics_add(m, "x_total", v, 3), 0);
	ck_assert_int_eq(httpd_start(&h, "127.0.0.1:0", m, &err), 0);
	port = httpd_port(h);
	ck_assert_uint_ne(port, 0);
	ck_assert_int_eq(get(port, "/healthz", &body), 200);
	ck_assert_int_eq(get(port, "/readyz", &body), 503);
	httpd_set_ready(h, true);
	ck_assert_int_eq(get(port, "/readyz", &body), 200);
	ck_assert_int_eq(get(port, "/metrics", &body), 200);
	ck_assert(strstr(body.data, "x_total{policy=\"default/app\"} 3\n") != NULL);
	ck_assert_int_eq(get(port, "/nope", &body), 404);
	buf_release(&body);
	httpd_stop(h);
	metrics_free(m);
}
END_TEST

START_TEST(bind_in_use)
{
	struct metrics *m;
	struct httpd *a, *b;
	struct error err = ERROR_INIT;
	char listen[32];

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(httpd_start(&a, "127.0.0.1:0", m, &err), 0);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", httpd_port(a));
	ck_assert_int_eq(httpd_start(&b, listen, m, &err), IG_EFAIL);
	ck_assert(strstr(err.msg, "cannot bind") != NULL);
	httpd_stop(a);
	httpd_stop(NULL);
	metrics_free(m);
}
END_TEST

/* ---- health under load ---- */

#define SLOW_CLIENTS 200
#define SLOW_PER_ADDRESS 8 /* the per-address cap: 25 loopback addresses hold 200 */

/* A client that connects from 127.0.0.<host> and sends half a request, then holds. Returns
 * the socket or -1. */
static int slow_client(unsigned port, unsigned host)
{
	struct sockaddr_in src = {0}, dst = {0};
	static const char partial[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	src.sin_family = dst.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(0x7f000000u | host);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dst.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 ||
	    write(fd, partial, sizeof(partial) - 1) != (ssize_t)(sizeof(partial) - 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* True when the server closed fd within ms (EOF or reset). */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	char c;

	if (poll(&p, 1, ms) <= 0)
		return false;
	return read(fd, &c, 1) <= 0;
}

/* A probe as the kubelet sends it: one GET, a 1 s timeout. The status, or -1. */
static long probe(unsigned port)
{
	char url[64];
	CURL *c = curl_easy_init();
	struct buf body = BUF_INIT;
	long code = -1;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	buf_release(&body);
	return code;
}

/* 200 slow clients from 25 loopback addresses hold connections (more than the 64 that used
 * to starve the probe); /healthz still answers, again and again. A 9th connection from one
 * address is refused at once; the slow ones are closed once idle past the timeout. */
START_TEST(probes_under_load)
{
	struct metrics *m;
	struct httpd *h;
	struct error err = ERROR_INIT;
	int fds[SLOW_CLIENTS], extra;
	unsigned port;
	size_t held = 0;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(httpd_start(&h, "127.0.0.1:0", m, &err), 0);
	port = httpd_port(h);
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		fds[i] = slow_client(port, 2 + (unsigned)(i / SLOW_PER_ADDRESS));
		held += fds[i] >= 0;
	}
	ck_assert_uint_eq(held, SLOW_CLIENTS);
	for (int i = 0; i < 5; i++) {
		struct timespec ts = {0, 200000000L};

		ck_assert_int_eq(probe(port), 200);
		nanosleep(&ts, NULL);
	}
	ck_assert_msg(!closed_within(fds[0], 100) && !closed_within(fds[SLOW_CLIENTS - 1], 100),
	              "slow clients within their budget are still held");
	extra = slow_client(port, 2);
	ck_assert_int_ge(extra, 0);
	ck_assert_msg(closed_within(extra, 2000), "a 9th connection from one address is refused");
	close(extra);
	ck_assert_msg(closed_within(fds[0], 8000), "an idle slow client is closed by the timeout");
	ck_assert_int_eq(probe(port), 200);
	for (int i = 0; i < SLOW_CLIENTS; i++)
		close(fds[i]);
	httpd_stop(h);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("httpd");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_loop_test(tc, parse_listen, 0, sizeof(listens) / sizeof(listens[0]));
	tcase_add_test(tc, serve);
	tcase_add_test(tc, bind_in_use);
	tcase_add_test(tc, probes_under_load);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? 1 : 0;
}
