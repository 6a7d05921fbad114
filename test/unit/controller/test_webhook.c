/* Unit tests for the webhook (CONTRACT §11): the body and token table (envelopes with push,
 * pull and delete, the generic body, bad JSON, oversized, wrong and missing tokens, unknown
 * repositories), RFC 3339 times, the debounce, and real requests over loopback with libcurl.
 * The envelope shape follows Docker distribution's notifications documentation
 * (distribution/distribution docs/content/about/notifications.md). */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/util/metrics.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/controller/webhook.h"
#include "imageguard/config/config.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "../../../src/controller/webhook_private.h"

#define TOKEN "s3cret-token"
#define BEARER "Bearer " TOKEN
#define ENVELOPE(action, repo, host)                                                               \
	"{\"events\":[{\"id\":\"1\",\"timestamp\":\"2026-12-01T08:00:00.5Z\",\"action\":\"" action \
	"\",\"target\":{\"mediaType\":\"application/"                                              \
	"vnd.docker.distribution.manifest.v2+json\",\"repository\":\"" repo                        \
	"\",\"tag\":\"v2\"},\"request\":{\"host\":\"" host "\",\"method\":\"PUT\"}}]}"

/* Two configured repositories: 127.0.0.1:5000/team/app and Docker Hub's library/nginx. */
static struct config_repository repos[2];
static struct config cfg;

static void setup_config(void)
{
	memset(repos, 0, sizeof(repos));
	memset(&cfg, 0, sizeof(cfg));
	repos[0].ref.registry = "127.0.0.1:5000";
	repos[0].ref.repository = "team/app";
	repos[1].ref.registry = "registry-1.docker.io";
	repos[1].ref.repository = "library/nginx";
	cfg.repositories = repos;
	cfg.repositories_len = 2;
}

static const struct {
	const char *name, *auth, *body;
	bool oversized;
	enum webhook_result want;
	bool app, nginx; /* wanted after the request */
} cases[] = {
    {"push", BEARER, ENVELOPE("push", "team/app", "127.0.0.1:5000"), false, WEBHOOK_ACCEPTED, true,
     false},
    {"push, tag in the generic body", BEARER, "{\"image\":\"127.0.0.1:5000/team/app:v2\"}", false,
     WEBHOOK_ACCEPTED, true, false},
    {"generic, Docker Hub normalised", BEARER, "{\"image\":\"docker.io/nginx\"}", false,
     WEBHOOK_ACCEPTED, false, true},
    {"envelope without host matches the path", BEARER, ENVELOPE("push", "team/app", ""), false,
     WEBHOOK_ACCEPTED, true, false},
    {"bearer scheme case-insensitive", "bearer " TOKEN,
     ENVELOPE("push", "team/app", "127.0.0.1:5000"), false, WEBHOOK_ACCEPTED, true, false},
    {"pull", BEARER, ENVELOPE("pull", "team/app", "127.0.0.1:5000"), false, WEBHOOK_IGNORED, false,
     false},
    {"blob push (a layer, before the tag's manifest): no hint", BEARER,
     "{\"events\":[{\"action\":\"push\",\"target\":{\"mediaType\":\"application/"
     "octet-stream\",\"digest\":\"sha256:ab\",\"repository\":\"team/app\"},"
     "\"request\":{\"host\":\"127.0.0.1:5000\"}}]}",
     false, WEBHOOK_IGNORED, false, false},
    {"manifest push by digest (no tag) still a hint", BEARER,
     "{\"events\":[{\"action\":\"push\",\"target\":{\"mediaType\":\"application/"
     "vnd.oci.image.index.v1+json\",\"digest\":\"sha256:ab\",\"repository\":\"team/app\"},"
     "\"request\":{\"host\":\"127.0.0.1:5000\"}}]}",
     false, WEBHOOK_ACCEPTED, true, false},
    {"delete", BEARER, ENVELOPE("delete", "team/app", "127.0.0.1:5000"), false, WEBHOOK_IGNORED,
     false, false},
    {"unknown repository", BEARER, ENVELOPE("push", "team/other", "127.0.0.1:5000"), false,
     WEBHOOK_IGNORED, false, false},
    {"same path, other registry", BEARER, ENVELOPE("push", "team/app", "ghcr.io"), false,
     WEBHOOK_IGNORED, false, false},
    {"Harbor push", BEARER,
     "{\"type\":\"PUSH_ARTIFACT\",\"occur_at\":1796112000,\"operator\":\"ci\",\"event_data\":"
     "{\"resources\":[{\"digest\":\"sha256:ab\",\"tag\":\"v2\",\"resource_url\":"
     "\"127.0.0.1:5000/team/app:v2\"}],\"repository\":{\"repo_full_name\":\"team/app\"}}}",
     false, WEBHOOK_ACCEPTED, true, false},
    {"Harbor pull", BEARER,
     "{\"type\":\"PULL_ARTIFACT\",\"event_data\":{\"resources\":[{\"resource_url\":"
     "\"127.0.0.1:5000/team/app:v2\"}]}}",
     false, WEBHOOK_IGNORED, false, false},
    {"empty envelope", BEARER, "{\"events\":[]}", false, WEBHOOK_IGNORED, false, false},
    {"wrong token", "Bearer s3cret-tokem", ENVELOPE("push", "team/app", "127.0.0.1:5000"), false,
     WEBHOOK_UNAUTHORIZED, false, false},
    {"token prefix", "Bearer s3cret", ENVELOPE("push", "team/app", "127.0.0.1:5000"), false,
     WEBHOOK_UNAUTHORIZED, false, false},
    {"missing token", NULL, ENVELOPE("push", "team/app", "127.0.0.1:5000"), false,
     WEBHOOK_UNAUTHORIZED, false, false},
    {"basic scheme", "Basic czNjcmV0LXRva2Vu", ENVELOPE("push", "team/app", "127.0.0.1:5000"),
     false, WEBHOOK_UNAUTHORIZED, false, false},
    {"wrong token, bad body", "Bearer x", "{", false, WEBHOOK_UNAUTHORIZED, false, false},
    {"bad JSON", BEARER, "{\"events\":[", false, WEBHOOK_BAD_REQUEST, false, false},
    {"not an envelope", BEARER, "{\"foo\":1}", false, WEBHOOK_BAD_REQUEST, false, false},
    {"JSON array", BEARER, "[1,2]", false, WEBHOOK_BAD_REQUEST, false, false},
    {"empty image", BEARER, "{\"image\":\"\"}", false, WEBHOOK_BAD_REQUEST, false, false},
    {"oversized", BEARER, ENVELOPE("push", "team/app", "127.0.0.1:5000"), true, WEBHOOK_BAD_REQUEST,
     false, false},
};

START_TEST(handle_table)
{
	struct webhook *w = NULL;
	struct metrics *m = NULL;
	struct error err = ERROR_INIT;
	bool wanted[2] = {false, false};
	const char *label[1];

	setup_config();
	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(passmetrics_declare_webhook(m), 0);
	ck_assert_int_eq(webhook_new(&w, TOKEN, m, &err), 0);
	ck_assert_int_eq(webhook_set_known(w, &cfg), 0);
	ck_assert_msg(webhook_handle(w, cases[_i].auth, cases[_i].body, strlen(cases[_i].body),
	                             cases[_i].oversized) == cases[_i].want,
	              "%s", cases[_i].name);
	label[0] = webhook_result_name(cases[_i].want);
	ck_assert_double_eq(metrics_get(m, "imageguard_webhook_requests_total", label), 1);
	/* due only after the quiet time: nothing is taken at once */
	ck_assert_double_eq(webhook_take(w, wanted, 2), -1);
	ck_assert(webhook_wait(w, WEBHOOK_QUIET_MS + 300) == (cases[_i].want == WEBHOOK_ACCEPTED));
	if (cases[_i].want == WEBHOOK_ACCEPTED) {
		ck_assert_double_ge(webhook_take(w, wanted, 2), 0);
		ck_assert_msg(wanted[0] == cases[_i].app && wanted[1] == cases[_i].nginx, "%s",
		              cases[_i].name);
	}
	ck_assert_double_eq(webhook_take(w, wanted, 2), -1);
	webhook_free(w);
	metrics_free(m);
}
END_TEST

START_TEST(parse_envelope)
{
	struct webhook_events ev = WEBHOOK_EVENTS_INIT;
	struct error err = ERROR_INIT;
	const char *body =
	    "{\"events\":[{\"action\":\"push\",\"timestamp\":\"2026-12-01T08:00:00Z\","
	    "\"target\":{\"repository\":\"a/b\"},\"request\":{\"host\":\"r:5000\"}},"
	    "{\"action\":\"pull\",\"target\":{\"repository\":\"c\"}},"
	    "{\"action\":\"push\"},\"junk\"]}";

	ck_assert_int_eq(webhook_parse(&ev, body, strlen(body), &err), 0);
	ck_assert_uint_eq(ev.len, 2); /* events without a repository are skipped */
	ck_assert_str_eq(ev.items[0].action, "push");
	ck_assert_str_eq(ev.items[0].host, "r:5000");
	ck_assert_str_eq(ev.items[0].repository, "a/b");
	ck_assert_double_eq(ev.items[0].timestamp, 1796112000.0);
	ck_assert_str_eq(ev.items[1].action, "pull");
	ck_assert_str_eq(ev.items[1].host, "");
	ck_assert_double_eq(ev.items[1].timestamp, 0);
	webhook_events_release(&ev);
	ck_assert_int_eq(webhook_parse(&ev, "nope", 4, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "not JSON"));
	ck_assert_uint_eq(ev.len, 0);
}
END_TEST

static const struct {
	const char *in;
	double want;
} times[] = {
    {"2026-12-01T08:00:00Z", 1796112000.0},
    {"2026-12-01T08:00:00.25Z", 1796112000.25},
    {"2026-12-01T00:00:00-08:00", 1796112000.0},
    {"2026-12-01T09:30:00+01:30", 1796112000.0},
    {"2026-12-01 08:00:00Z", 0},
    {"2026-13-01T08:00:00Z", 0},
    {"2026-12-01T08:00:00", 0},
    {"2026-12-01T08:00:00+0100", 0},
    {"", 0},
};

START_TEST(parse_time)
{
	ck_assert_double_eq_tol(webhook_parse_time(times[_i].in), times[_i].want, 1e-6);
}
END_TEST

/* A burst of hints close together is one due set; its earliest notification time is kept. */
START_TEST(debounce)
{
	struct webhook *w = NULL;
	struct error err = ERROR_INIT;
	bool wanted[2];
	int taken = 0;
	const char *a =
	    "{\"image\":\"127.0.0.1:5000/team/app\",\"timestamp\":\"2026-12-01T08:00:05Z\"}";
	const char *b =
	    "{\"image\":\"127.0.0.1:5000/team/app\",\"timestamp\":\"2026-12-01T08:00:01Z\"}";

	setup_config();
	ck_assert_int_eq(webhook_new(&w, TOKEN, NULL, &err), 0);
	ck_assert_int_eq(webhook_set_known(w, &cfg), 0);
	for (int i = 0; i < 50; i++) {
		const char *body = i == 7 ? b : a;

		ck_assert_int_eq(webhook_handle(w, BEARER, body, strlen(body), false),
		                 WEBHOOK_ACCEPTED);
		if (webhook_take(w, wanted, 2) >= 0)
			taken++;
		usleep(10000);
	}
	ck_assert_int_eq(taken, 0);
	ck_assert(webhook_wait(w, 2 * WEBHOOK_QUIET_MS));
	ck_assert_double_eq(webhook_take(w, wanted, 2), 1796112001.0);
	ck_assert(!webhook_wait(w, 50));
	webhook_free(w);
}
END_TEST

START_TEST(token_file)
{
	char path[] = "/tmp/imageguard-test-token.XXXXXX";
	int fd = mkstemp(path);
	char *tok = NULL;
	struct error err = ERROR_INIT;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "  abc.def\n", 10), 10);
	ck_assert_int_eq(webhook_read_token(&tok, path, &err), 0);
	ck_assert_str_eq(tok, "abc.def");
	free(tok);
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(pwrite(fd, "a b\n", 4, 0), 4);
	ck_assert_int_eq(webhook_read_token(&tok, path, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, path));
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(webhook_read_token(&tok, path, &err), IG_EINVALID);
	close(fd);
	unlink(path);
	ck_assert_int_eq(webhook_read_token(&tok, path, &err), IG_ENOTFOUND);
}
END_TEST

static size_t discard(char *p, size_t s, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return s * n;
}

static long post(unsigned port, const char *path, const char *auth, const char *body, size_t len)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[128], hdr[256];
	long code = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	h = curl_slist_append(h,
	                      "Content-Type: application/vnd.docker.distribution.events.v1+json");
	if (auth) {
		snprintf(hdr, sizeof(hdr), "Authorization: %s", auth);
		h = curl_slist_append(h, hdr);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

START_TEST(serve)
{
	struct webhook *w = NULL;
	struct error err = ERROR_INIT;
	const char *push = ENVELOPE("push", "team/app", "127.0.0.1:5000");
	size_t big_len = WEBHOOK_BODY_MAX + 10;
	char *big = malloc(big_len);
	unsigned port;

	ck_assert_ptr_nonnull(big);
	memset(big, ' ', big_len);
	memcpy(big, "{\"image\":\"127.0.0.1:5000/team/app\"}", 35);
	setup_config();
	ck_assert_int_eq(webhook_new(&w, TOKEN, NULL, &err), 0);
	ck_assert_int_eq(webhook_set_known(w, &cfg), 0);
	ck_assert_int_eq(webhook_listen(w, "127.0.0.1:0", &err), 0);
	port = webhook_port(w);
	ck_assert_uint_gt(port, 0);
	ck_assert_int_eq(post(port, "/hooks/registry", "Bearer nope", push, strlen(push)), 401);
	ck_assert_int_eq(post(port, "/hooks/registry", NULL, push, strlen(push)), 401);
	ck_assert_int_eq(post(port, "/hooks/registry", BEARER, "{", 1), 400);
	ck_assert_int_eq(post(port, "/hooks/registry", BEARER, big, big_len), 413);
	ck_assert_int_eq(post(port, "/other", BEARER, push, strlen(push)), 404);
	ck_assert(!webhook_wait(w, WEBHOOK_QUIET_MS + 200));
	ck_assert_int_eq(post(port, "/hooks/registry", BEARER, push, strlen(push)), 202);
	ck_assert(webhook_wait(w, WEBHOOK_QUIET_MS + 500));
	free(big);
	webhook_free(w);
	ck_assert_int_eq(webhook_new(&w, TOKEN, NULL, &err), 0);
	ck_assert_int_eq(webhook_listen(w, "127.0.0.1:x", &err), IG_EUSAGE);
	ck_assert_ptr_nonnull(strstr(err.msg, "--webhook-listen"));
	webhook_free(w);
}
END_TEST

/* A client from 127.0.0.<host> that sends the start of a request (text) and then holds. */
static int slow_client(unsigned port, unsigned host, const char *text)
{
	struct sockaddr_in src = {0}, dst = {0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	src.sin_family = dst.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(0x7f000000u | host);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dst.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* True when the server closed fd within ms (EOF or reset), reading any answer first. */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	char b[512];

	for (;;) {
		if (poll(&p, 1, ms) <= 0)
			return false;
		if (read(fd, b, sizeof(b)) <= 0)
			return true;
	}
}

/* Slow clients (half headers; an authenticated body that never ends) hold only their own
 * address's slots and are closed by the idle timeout; others are served meanwhile. */
START_TEST(slow_clients)
{
	static const char *const starts[] = {
	    "POST /hooks/registry HTTP/1.1\r\nHost: x\r\nX-Slow: ",
	    "POST /hooks/registry HTTP/1.1\r\nHost: x\r\nAuthorization: " BEARER
	    "\r\nContent-Length: 100000\r\n\r\n{\"image\": "};
	struct webhook *w = NULL;
	struct error err = ERROR_INIT;
	const char *push = ENVELOPE("push", "team/app", "127.0.0.1:5000");
	int fds[16], extra;
	unsigned port;

	setup_config();
	ck_assert_int_eq(webhook_new(&w, TOKEN, NULL, &err), 0);
	ck_assert_int_eq(webhook_set_known(w, &cfg), 0);
	ck_assert_int_eq(webhook_listen(w, "127.0.0.1:0", &err), 0);
	port = webhook_port(w);
	for (int i = 0; i < 16; i++)
		ck_assert_int_ge(fds[i] = slow_client(port, 2 + (unsigned)i / 8, starts[i / 8]), 0);
	ck_assert(!closed_within(fds[0], 200) && !closed_within(fds[15], 200));
	ck_assert_int_eq(post(port, "/hooks/registry", BEARER, push, strlen(push)), 202);
	extra = slow_client(port, 2, starts[0]);
	ck_assert_msg(extra < 0 || closed_within(extra, 2000),
	              "a 9th connection from one address is refused");
	if (extra >= 0)
		close(extra);
	ck_assert_msg(closed_within(fds[0], 8000) && closed_within(fds[15], 8000),
	              "idle slow clients are closed by the timeout");
	ck_assert_int_eq(post(port, "/hooks/registry", BEARER, push, strlen(push)), 202);
	for (int i = 0; i < 16; i++)
		close(fds[i]);
	webhook_free(w);
}
END_TEST

/* A flood of valid pushes for one repository: one early pass, then none for it within
 * WEBHOOK_REPEAT_MS however many pushes come (five more bursts are each held); a
 * push for another repository is due as usual (and its pass takes the held one along). */
START_TEST(flood_is_one_early_pass_per_repository)
{
	struct webhook *w = NULL;
	struct error err = ERROR_INIT;
	bool wanted[2] = {false, false};
	const char *app = "{\"image\":\"127.0.0.1:5000/team/app\"}";
	const char *nginx = "{\"image\":\"docker.io/library/nginx\"}";
	int passes = 0; /* early passes of the flooded repository */

	setup_config();
	ck_assert_int_eq(webhook_new(&w, TOKEN, NULL, &err), 0);
	ck_assert_int_eq(webhook_set_known(w, &cfg), 0);
	ck_assert_int_eq(webhook_handle(w, BEARER, app, strlen(app), false), WEBHOOK_ACCEPTED);
	ck_assert(webhook_wait(w, WEBHOOK_MAX_DELAY_MS + 500));
	ck_assert_double_ge(webhook_take(w, wanted, 2), 0);
	ck_assert(wanted[0] && !wanted[1]);
	passes++;
	for (int i = 0; i < 300; i++) { /* 3 s of pushes, each wait past the quiet time */
		ck_assert_int_eq(webhook_handle(w, BEARER, app, strlen(app), false),
		                 WEBHOOK_ACCEPTED);
		if (i % 60 == 59 && webhook_wait(w, WEBHOOK_QUIET_MS + 100) &&
		    webhook_take(w, wanted, 2) >= 0)
			passes++;
		usleep(10000);
	}
	ck_assert_int_eq(passes, 1); /* within WEBHOOK_REPEAT_MS of the first: no second one */
	ck_assert_int_eq(webhook_handle(w, BEARER, nginx, strlen(nginx), false), WEBHOOK_ACCEPTED);
	ck_assert(webhook_wait(w, WEBHOOK_MAX_DELAY_MS + 500));
	ck_assert_double_ge(webhook_take(w, wanted, 2), 0);
	ck_assert(wanted[0] && wanted[1]);
	webhook_free(w);
}
END_TEST

/* 3,000 rejections from one address: one line, every one counted; from 3,000 addresses: at
 * most WEBHOOK_REJECT_LINES lines in the interval; over HTTP, each 401 counted once. */
START_TEST(rejections_rate_limited)
{
	struct webhook *w = NULL;
	struct metrics *m = NULL;
	struct error err = ERROR_INIT;
	const char *label[1] = {"unauthorized"};
	const char *push = ENVELOPE("push", "team/app", "127.0.0.1:5000");
	char addr[64];
	int lines = 0;

	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(passmetrics_declare_webhook(m), 0);
	ck_assert_int_eq(webhook_new(&w, TOKEN, m, &err), 0);
	for (int i = 0; i < 3000; i++)
		lines += webhook_rejected(w, "192.0.2.7", "unauthorized", "wrong token");
	ck_assert_int_eq(lines, 1);
	ck_assert_double_eq(metrics_get(m, "imageguard_webhook_rejected_total", label), 3000);
	webhook_free(w);
	ck_assert_int_eq(webhook_new(&w, TOKEN, m, &err), 0);
	lines = 0;
	for (int i = 0; i < 3000; i++) {
		snprintf(addr, sizeof(addr), "2001:db8::%x", (unsigned)i);
		lines += webhook_rejected(w, addr, "unauthorized", "wrong token");
	}
	ck_assert_int_eq(lines, WEBHOOK_REJECT_LINES);
	ck_assert_int_eq(webhook_listen(w, "127.0.0.1:0", &err), 0);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(
		    post(webhook_port(w), "/hooks/registry", "Bearer x", push, strlen(push)), 401);
	ck_assert_double_eq(metrics_get(m, "imageguard_webhook_rejected_total", label), 6050);
	ck_assert_double_eq(metrics_get(m, "imageguard_webhook_requests_total", label), 50);
	webhook_free(w);
	metrics_free(m);
}
END_TEST

/* The status code of the answer on fd (0: closed without one), waiting up to ms. */
static int status_within(int fd, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	char b[256];
	ssize_t n;
	int code = 0;

	if (poll(&p, 1, ms) <= 0)
		return -1;
	if ((n = read(fd, b, sizeof(b) - 1)) <= 0)
		return 0;
	b[n] = '\0';
	if (strncmp(b, "HTTP/1.", 7) != 0 || n < 12)
		return 0;
	code = (int)strtol(b + 9, NULL, 10);
	return code;
}

/* Authenticated bodies are capped: a Content-Length over 1 MiB is 413 before any body; a chunked
 * body (no Content-Length) is 411 from its headers, before its chunks are read; a body trickled
 * a byte a second (the idle timeout never fires) gets 408 once WEBHOOK_BODY_TIME_MS has passed,
 * then the end of the stream; others are served meanwhile and each refusal is counted by
 * reason. */
START_TEST(body_caps)
{
	static const char head[] =
	    "POST /hooks/registry HTTP/1.1\r\nHost: x\r\nAuthorization: " BEARER "\r\n";
	struct webhook *w = NULL;
	struct metrics *m = NULL;
	struct error err = ERROR_INIT;
	const char *push = ENVELOPE("push", "team/app", "127.0.0.1:5000");
	const char *big[1] = {"too-large"}, *slow[1] = {"timeout"}, *len[1] = {"length-required"};
	char chunk[8192 + 16];
	unsigned port;
	int fd, code = -1;

	setup_config();
	ck_assert_int_eq(metrics_new(&m), 0);
	ck_assert_int_eq(passmetrics_declare_webhook(m), 0);
	ck_assert_int_eq(webhook_new(&w, TOKEN, m, &err), 0);
	ck_assert_int_eq(webhook_set_known(w, &cfg), 0);
	ck_assert_int_eq(webhook_listen(w, "127.0.0.1:0", &err), 0);
	port = webhook_port(w);
	/* announced too big */
	ck_assert_int_ge(fd = slow_client(port, 3, head), 0);
	ck_assert_int_eq(write(fd, "Content-Length: 2000000\r\n\r\n", 27), 27);
	ck_assert_int_eq(status_within(fd, 5000), 413);
	close(fd);
	/* chunked: refused from the headers, whatever follows */
	ck_assert_int_ge(fd = slow_client(port, 4, head), 0);
	ck_assert_int_eq(write(fd, "Transfer-Encoding: chunked\r\n\r\n", 30), 30);
	memset(chunk, ' ', sizeof(chunk));
	memcpy(chunk, "2000\r\n", 6);
	memcpy(chunk + 6 + 8192, "\r\n", 2);
	ck_assert_int_eq(write(fd, chunk, 6 + 8192 + 2), 6 + 8192 + 2);
	code = status_within(fd, 5000);
	ck_assert_msg(code == 411, "a chunked body: %d", code);
	close(fd);
	/* trickled */
	ck_assert_int_ge(fd = slow_client(port, 5, head), 0);
	ck_assert_int_eq(write(fd, "Content-Length: 1000\r\n\r\n{", 25), 25);
	code = -1;
	for (int i = 0; i < WEBHOOK_BODY_TIME_MS / 1000 + 10 && code < 0; i++) {
		if (write(fd, " ", 1) != 1)
			break;
		code = status_within(fd, 1000);
		if (i == 2)
			ck_assert_int_eq(post(port, "/hooks/registry", BEARER, push, strlen(push)),
			                 202);
	}
	ck_assert_msg(code == 408, "a trickled body is answered 408: %d", code);
	ck_assert_int_eq(status_within(fd, 5000), 0); /* and the stream ends */
	close(fd);
	ck_assert_double_eq(metrics_get(m, "imageguard_webhook_rejected_total", big), 1);
	ck_assert_double_eq(metrics_get(m, "imageguard_webhook_rejected_total", len), 1);
	ck_assert_double_eq(metrics_get(m, "imageguard_webhook_rejected_total", slow), 1);
	webhook_free(w);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("webhook");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_loop_test(tc, handle_table, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, parse_envelope);
	tcase_add_loop_test(tc, parse_time, 0, sizeof(times) / sizeof(times[0]));
	tcase_add_test(tc, debounce);
	tcase_add_test(tc, token_file);
	tcase_add_test(tc, serve);
	tcase_add_test(tc, slow_clients);
	tcase_add_test(tc, rejections_rate_limited);
	tcase_add_test(tc, body_caps);
	tcase_add_test(tc, flood_is_one_early_pass_per_repository);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? 1 : 0;
}
