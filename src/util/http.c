/* HTTP over libcurl: pooled handles that keep their connections, capped bodies, retries with
 * backoff, redirects followed by hand so Authorization is never forwarded to another origin. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "imageguard/util/log.h"
#include "imageguard/util/version.h"

#define DEFAULT_MAX_BODY (4u << 20)
#define MAX_HEADER_BYTES (64u << 10)
#define MAX_REDIRECTS 10

/* Idle easy handles kept for the next request: curl_easy_perform on a fresh handle builds a
 * multi handle and its wakeup socketpair each time, a reused one keeps them and its own
 * keep-alive connections. At most as many as requests ever ran at once (one per worker
 * thread). The connections are not in the share: every thread would take its lock several
 * times per request (docs/performance.md, "Figures that were code comments"); DNS and TLS
 * sessions still are shared. */
#define POOL_MAX 64

/* A pooled handle; set: set_shared ran on it since its last reset, so it holds the options
 * every request shares, kept from one plain GET to the next instead of curl_easy_reset and a
 * dozen setopt calls each time. */
struct handle {
	CURL *h;
	bool set;
};

struct http_client {
	struct http_options opts;
	CURLSH *share;
	pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_lock;
	struct handle idle[POOL_MAX];
	size_t nidle;
};

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ctx)
{
	struct http_client *c = ctx;

	(void)h;
	(void)access;
	pthread_mutex_lock(&c->locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
	struct http_client *c = ctx;

	(void)h;
	pthread_mutex_unlock(&c->locks[data]);
}

int http_client_new(struct http_client **out, const struct http_options *opts, struct error *err)
{
	struct http_client *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return error_oom(err);
	c->opts = *opts;
	if (!c->opts.connect_timeout_ms)
		c->opts.connect_timeout_ms = 10000;
	if (!c->opts.timeout_ms)
		c->opts.timeout_ms = 30000;
	if (!c->opts.base_backoff_ms)
		c->opts.base_backoff_ms = 250;
	if (!c->opts.max_backoff_ms)
		c->opts.max_backoff_ms = 30000;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->locks[i], NULL);
	pthread_mutex_init(&c->pool_lock, NULL);
	if (!(c->share = curl_share_init())) {
		http_client_free(c);
		return error_set(err, IG_EFAIL, "http: cannot create a connection pool");
	}
	curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	*out = c;
	return 0;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	/* the handles first: a share still in use by one cannot be cleaned up */
	for (size_t i = 0; i < c->nidle; i++)
		curl_easy_cleanup(c->idle[i].h);
	if (c->share)
		curl_share_cleanup(c->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->locks[i]);
	pthread_mutex_destroy(&c->pool_lock);
	free(c);
}

/* An idle handle, or a new one; hd->h NULL when out of memory. */
static void handle_get(struct http_client *c, struct handle *hd)
{
	hd->h = NULL;
	pthread_mutex_lock(&c->pool_lock);
	if (c->nidle)
		*hd = c->idle[--c->nidle];
	pthread_mutex_unlock(&c->pool_lock);
	if (!hd->h) {
		hd->h = curl_easy_init();
		hd->set = false;
	}
}

/* Back to the pool with nothing of this request on it: after a plain GET (no CA file, no
 * body) only its headers and callback data were its own, and they are cleared; after any other
 * request the handle goes back to curl's defaults. Credentials only ever travel in the header
 * list, so none stays on an idle handle. */
static void handle_put(struct http_client *c, struct handle *hd, bool plain)
{
	if (!hd->h)
		return;
	if (plain && hd->set) {
		curl_easy_setopt(hd->h, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(hd->h, CURLOPT_WRITEDATA, NULL);
		curl_easy_setopt(hd->h, CURLOPT_HEADERDATA, NULL);
		curl_easy_setopt(hd->h, CURLOPT_XFERINFODATA, NULL);
	} else {
		curl_easy_reset(hd->h);
		hd->set = false;
	}
	pthread_mutex_lock(&c->pool_lock);
	if (c->nidle < POOL_MAX) {
		c->idle[c->nidle++] = *hd;
		hd->h = NULL;
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (hd->h)
		curl_easy_cleanup(hd->h);
}

void http_response_release(struct http_response *r)
{
	buf_release(&r->body);
	buf_release(&r->header);
	free(r->url);
	r->url = NULL;
	r->status = 0;
}

struct sink {
	struct buf *body;
	struct buf *header;
	bool too_big;
	CURL *h;
	const struct http_stream *stream; /* NULL: everything into body */
	size_t streamed;                  /* bytes given to the stream, against body->max */
	int stream_error;                 /* the stream's negative verdict */
	struct error *err;                /* where the stream writes its message */
	const volatile sig_atomic_t *stop, *req_stop;
	int64_t deadline_ms;
	bool stopped, expired;
};

int64_t http_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool is_stopping(const volatile sig_atomic_t *stop)
{
	return stop && *stop;
}

/* A 200 body goes to the stream when there is one; other bodies (errors) are kept. */
static size_t to_stream(struct sink *s, const char *p, size_t n)
{
	if (!s->stream->self_capped && n > s->body->max - s->streamed) {
		s->too_big = true;
		return 0;
	}
	s->streamed += n;
	if ((s->stream_error = s->stream->write(s->stream->ctx, p, n, s->err)) < 0)
		return 0;
	return n;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct sink *s = ctx;
	long status = 0;

	if (s->stream) {
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
		if (status == 200)
			return to_stream(s, p, size * n);
	}
	if (buf_append(s->body, p, size * n) < 0) {
		s->too_big = true;
		return 0;
	}
	return size * n;
}

/* curl calls this at least once a second, idle or not: the cancel and deadline check. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	struct sink *s = ctx;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (is_stopping(s->stop) || is_stopping(s->req_stop))
		s->stopped = true;
	else if (s->deadline_ms && http_now_ms() >= s->deadline_ms)
		s->expired = true;
	return s->stopped || s->expired;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct sink *s = ctx;

	/* A new status line (1xx, proxy CONNECT) starts the header set again. */
	if (size * n >= 5 && memcmp(p, "HTTP/", 5) == 0)
		buf_reset(s->header);
	if (buf_append(s->header, p, size * n) < 0)
		return 0;
	return size * n;
}

char *http_header(const struct http_response *r, const char *name)
{
	struct buf out = BUF_INIT;
	size_t nlen = strlen(name);
	const char *line = r->header.data;

	while (line && *line) {
		const char *end = strstr(line, "\n");
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len > nlen && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			const char *v = line + nlen + 1;
			const char *e = line + len;

			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
				e--;
			if ((out.len && buf_puts(&out, ", ") < 0) ||
			    buf_append(&out, v, (size_t)(e - v)) < 0) {
				buf_release(&out);
				return NULL;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return out.data;
}

const char *http_reason(long status)
{
	switch (status) {
	case 400:
		return "bad request";
	case 401:
		return "unauthorized";
	case 403:
		return "forbidden";
	case 404:
		return "not found";
	case 405:
		return "method not allowed";
	case 408:
		return "request timeout";
	case 429:
		return "too many requests";
	case 500:
		return "internal server error";
	case 502:
		return "bad gateway";
	case 503:
		return "service unavailable";
	case 504:
		return "gateway timeout";
	default:
		return status >= 500   ? "server error"
		       : status >= 400 ? "client error"
		                       : "unexpected status";
	}
}

char *http_resolve(const char *base, const char *ref)
{
	CURLU *u = curl_url();
	char *got = NULL, *out = NULL;

	if (!u)
		return NULL;
	if (curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_URL, ref, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &got, 0) != CURLUE_OK)
		goto done;
	out = strdup(got);
done:
	curl_free(got);
	curl_url_cleanup(u);
	return out;
}

/* scheme://host:port, with the default port made explicit, lower-cased by curl. */
static char *origin(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;
	size_t n;

	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
		goto done;
	n = strlen(scheme) + strlen(host) + strlen(port) + 5;
	if ((out = malloc(n)))
		snprintf(out, n, "%s://%s:%s", scheme, host, port);
	for (char *p = out; p && *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return out;
}

bool http_same_origin(const char *a, const char *b)
{
	char *oa = origin(a), *ob = origin(b);
	bool same = oa && ob && strcmp(oa, ob) == 0;

	free(oa);
	free(ob);
	return same;
}

char *http_host(const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *out = NULL;
	size_t n;

	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		goto done;
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	n = strlen(host) + (port ? strlen(port) : 0) + 2;
	if ((out = malloc(n)))
		snprintf(out, n, "%s%s%s", host, port ? ":" : "", port ? port : "");
done:
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return out;
}

char *http_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0), *copy;

	if (!e)
		return NULL;
	copy = strdup(e);
	curl_free(e);
	return copy;
}

/* The URL without query or fragment, for messages: queries may carry scopes or tokens. */
static void url_for_message(char *out, size_t n, const char *url)
{
	size_t len = strcspn(url, "?#");

	snprintf(out, n, "%.*s", (int)(len > 200 ? 200 : len), url);
}

static bool is_https(const char *url)
{
	return strncasecmp(url, "https://", 8) == 0;
}

struct attempt {
	const char *method;
	const char *url;
	const char *authorization;
};

static int set_headers(struct curl_slist **list, const struct http_request *req,
                       const char *authorization)
{
	struct curl_slist *l = NULL, *t;
	char line[8192];

	for (size_t i = 0; req->headers && req->headers[i]; i++) {
		if (!(t = curl_slist_append(l, req->headers[i])))
			goto fail;
		l = t;
	}
	if (authorization) {
		if ((size_t)snprintf(line, sizeof(line), "Authorization: %s", authorization) >=
		    sizeof(line))
			goto fail;
		if (!(t = curl_slist_append(l, line)))
			goto fail;
		l = t;
	}
	*list = l;
	return 0;
fail:
	curl_slist_free_all(l);
	return IG_EFAIL;
}

/* What one attempt ended with besides its curl code. */
struct outcome {
	bool too_big, stopped, expired;
	int stream_error; /* negative: the stream refused the body (message in err) */
};

/* The per-attempt timeout: the request's (or client's), cut to what the deadline leaves. */
static long attempt_timeout_ms(const struct http_client *c, const struct http_request *req)
{
	long t = req->timeout_ms ? req->timeout_ms : c->opts.timeout_ms;
	int64_t left;

	if (req->deadline_ms) {
		left = req->deadline_ms - http_now_ms();
		if (left < t)
			t = left < 1 ? 1 : (long)left;
	}
	return t;
}

/* Always the pointer handed over: curl copies it (CURL_BLOB_COPY). */
static void set_blob(CURL *h, CURLoption opt, const char *pem)
{
	struct curl_blob blob = {(void *)pem, strlen(pem), CURL_BLOB_COPY};

	curl_easy_setopt(h, opt, &blob);
}

/* A configured CA is the only trust anchor (as client-go): no system CA file or path. */
static void set_tls(CURL *h, const struct http_tls *t)
{
	if (t->ca_pem || t->ca_file)
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	if (t->ca_pem) {
		curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
		set_blob(h, CURLOPT_CAINFO_BLOB, t->ca_pem);
	} else if (t->ca_file) {
		curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_file);
	}
	if (t->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (t->cert_pem)
		set_blob(h, CURLOPT_SSLCERT_BLOB, t->cert_pem);
	else if (t->cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, t->cert_file);
	if (t->key_pem)
		set_blob(h, CURLOPT_SSLKEY_BLOB, t->key_pem);
	else if (t->key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, t->key_file);
}

/* What every request of this client sets alike. */
static void set_shared(CURL *h, struct http_client *c)
{
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "imageguard/" IMAGEGUARD_VERSION);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}

static void set_options(struct handle *hd, struct http_client *c, const struct http_request *req,
                        const struct attempt *a, struct curl_slist *headers, struct sink *sink)
{
	CURL *h = hd->h;

	if (!hd->set)
		set_shared(h, c);
	hd->set = true;
	curl_easy_setopt(h, CURLOPT_URL, a->url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, attempt_timeout_ms(c, req));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, sink);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, sink);
	if (req->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, req->ca_file);
	if (req->tls)
		set_tls(h, req->tls);
	if (strcmp(a->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(a->method, "GET") != 0) {
		if (strcmp(a->method, "POST") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, a->method);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS,
		                 req->body   ? req->body
		                 : req->form ? req->form
		                             : "");
	}
}

/* One request, no retry, no redirect. Returns the curl code; the response is reset first. */
static CURLcode perform(struct http_client *c, const struct http_request *req,
                        const struct attempt *a, struct http_response *out, struct outcome *oc,
                        struct error *err)
{
	struct sink sink = {
	    &out->body, &out->header,     false, NULL, req->stream, 0, 0, err, c->opts.stop,
	    req->stop,  req->deadline_ms, false, false};
	struct curl_slist *headers = NULL;
	struct handle hd;
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	CURL *h;

	handle_get(c, &hd);
	h = hd.h;

	buf_release(&out->body);
	buf_release(&out->header);
	out->body.max = req->max_body ? req->max_body : DEFAULT_MAX_BODY;
	out->header.max = MAX_HEADER_BYTES;
	out->status = 0;
	memset(oc, 0, sizeof(*oc));
	if (req->stream && (oc->stream_error = req->stream->begin(req->stream->ctx, err)) < 0) {
		rc = CURLE_ABORTED_BY_CALLBACK;
		goto done;
	}
	if (!h || set_headers(&headers, req, a->authorization) < 0)
		goto done;
	sink.h = h;
	set_options(&hd, c, req, a, headers, &sink);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
	oc->too_big = sink.too_big;
	oc->stopped = sink.stopped;
	oc->expired = sink.expired;
	oc->stream_error = sink.stream_error;
	if (!out->body.data)
		buf_append(&out->body, "", 0);
done:
	handle_put(c, &hd, !req->ca_file && !req->tls && strcmp(a->method, "GET") == 0);
	curl_slist_free_all(headers);
	return rc;
}

static bool retryable_status(long status)
{
	return status == 429 || (status >= 500 && status <= 599 && status != 501);
}

static bool retryable_transport(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

/* Retry-After as delta-seconds or an HTTP-date; -1 when absent or unparseable. */
static long retry_after_ms(const struct http_response *r)
{
	char *v = http_header(r, "Retry-After");
	long ms = -1;

	if (v) {
		char *end;
		long secs = strtol(v, &end, 10);

		if (end != v && *end == '\0' && secs >= 0)
			ms = secs > 86400 ? 86400000L : secs * 1000;
		else {
			time_t when = curl_getdate(v, NULL);

			if (when != -1)
				ms = when > time(NULL) ? (long)(when - time(NULL)) * 1000 : 0;
		}
	}
	free(v);
	return ms;
}

static long backoff_ms(const struct http_options *o, unsigned attempt, unsigned *seed)
{
	long d = o->base_backoff_ms;

	for (unsigned i = 0; i < attempt && d < o->max_backoff_ms; i++)
		d *= 2;
	if (d > o->max_backoff_ms)
		d = o->max_backoff_ms;
	/* Half fixed, half random: waits spread out yet never collapse to nothing. */
	return d / 2 + (long)(rand_r(seed) % (unsigned)(d / 2 + 1));
}

/* Sleeps ms in short steps; false when the stop flag or the deadline cut the wait short. */
static bool wait_ms(long ms, const volatile sig_atomic_t *stop,
                    const volatile sig_atomic_t *req_stop, int64_t deadline_ms)
{
	int64_t end = http_now_ms() + ms;

	if (deadline_ms && end > deadline_ms)
		end = deadline_ms;
	for (;;) {
		int64_t left = end - http_now_ms();
		long step = left > 100 ? 100 : (long)left;
		struct timespec ts = {0, step * 1000000L};

		if (is_stopping(stop) || is_stopping(req_stop))
			return false;
		if (left <= 0)
			return !(deadline_ms && http_now_ms() >= deadline_ms);
		nanosleep(&ts, NULL);
	}
}

static int transport_error(struct error *err, CURLcode rc, const struct outcome *oc, size_t cap,
                           const struct http_request *req, const char *url)
{
	char where[256];

	url_for_message(where, sizeof(where), url);
	if (oc && oc->stream_error < 0)
		return oc->stream_error; /* the stream's own message is in err */
	if (oc && oc->too_big)
		return error_set(err, IG_ETOOBIG, "'%s': response larger than %zu bytes", where,
		                 cap);
	if (oc && oc->stopped)
		return error_set(err, IG_EFAIL, "'%s': stopping", where);
	if ((oc && oc->expired) || rc == CURLE_OPERATION_TIMEDOUT)
		return error_set(err, IG_ETIMEOUT, "'%s': timed out", where);
	if (rc == CURLE_SSL_CONNECT_ERROR && strncmp(url, "https://", 8) == 0 && req->tls_hint)
		return error_set(err, IG_EFAIL, "'%s': %s (%s)", where, curl_easy_strerror(rc),
		                 req->tls_hint);
	return error_set(err, IG_EFAIL, "'%s': %s", where, curl_easy_strerror(rc));
}

/* Before an attempt: a stop or a passed deadline ends the request. */
static int may_start(struct http_client *c, const struct http_request *req, const char *url,
                     struct error *err)
{
	struct outcome oc = {false, false, false, 0};

	oc.stopped = is_stopping(c->opts.stop) || is_stopping(req->stop);
	oc.expired = req->deadline_ms && http_now_ms() >= req->deadline_ms;
	if (!oc.stopped && !oc.expired)
		return 0;
	return transport_error(err, CURLE_OK, &oc, 0, req, url);
}

/* One hop with retries. */
static int perform_retrying(struct http_response *out, struct http_client *c,
                            const struct http_request *req, const struct attempt *a,
                            struct error *err)
{
	/* clock() would be a system call per request (CLOCK_PROCESS_CPUTIME_ID); the monotonic
	 * clock is read in user space */
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)out ^ (unsigned)http_now_ms();
	const char *label = req->label ? req->label : "http";
	struct outcome oc;
	CURLcode rc;
	int error;

	for (unsigned attempt = 0;; attempt++) {
		long wait;

		if ((error = may_start(c, req, a->url, err)) < 0)
			return error;
		rc = perform(c, req, a, out, &oc, err);
		out->attempts++;
		if (c->opts.observe)
			c->opts.observe(c->opts.observe_ctx, label,
			                rc == CURLE_OK ? out->status : 0);
		if (oc.too_big || oc.stream_error < 0 || oc.stopped || oc.expired)
			return transport_error(err, rc, &oc, out->body.max, req, a->url);
		if (rc == CURLE_OK && !retryable_status(out->status))
			return 0;
		if (rc != CURLE_OK && !retryable_transport(rc))
			return transport_error(err, rc, &oc, 0, req, a->url);
		if (attempt >= c->opts.max_retries || req->no_retry)
			return rc == CURLE_OK ? 0 : transport_error(err, rc, &oc, 0, req, a->url);
		wait = rc == CURLE_OK ? retry_after_ms(out) : -1;
		if (wait < 0)
			wait = backoff_ms(&c->opts, attempt, &seed);
		if (wait > c->opts.max_backoff_ms)
			wait = c->opts.max_backoff_ms;
		log_info("http.retry", "%s: %s %s, retry %u/%u in %ld ms", label, a->method,
		         rc == CURLE_OK ? http_reason(out->status) : curl_easy_strerror(rc),
		         attempt + 1, c->opts.max_retries, wait);
		if (!wait_ms(wait, c->opts.stop, req->stop, req->deadline_ms))
			return may_start(c, req, a->url, err);
	}
}

void http_client_set_stop(struct http_client *c, const volatile sig_atomic_t *stop)
{
	c->opts.stop = stop;
}

static bool is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

int http_do(struct http_response *out, struct http_client *c, const struct http_request *req,
            struct error *err)
{
	struct attempt a = {req->method ? req->method : "GET", req->url, req->authorization};
	char *url = strdup(req->url), *next = NULL, *location = NULL;
	char where[256];
	int error = 0;

	out->attempts = 0;
	if (!url)
		return error_oom(err);
	for (int hop = 0;; hop++) {
		a.url = url;
		if ((error = perform_retrying(out, c, req, &a, err)) < 0)
			goto done;
		if (!is_redirect(out->status) || req->no_redirect)
			break;
		url_for_message(where, sizeof(where), url);
		if (hop >= MAX_REDIRECTS) {
			error = error_set(err, IG_EFAIL, "'%s': more than %d redirects", where,
			                  MAX_REDIRECTS);
			goto done;
		}
		free(location);
		if (!(location = http_header(out, "Location")) ||
		    !(next = http_resolve(url, location))) {
			error =
			    error_set(err, IG_EFAIL, "'%s': %ld redirect without a usable Location",
			              where, out->status);
			goto done;
		}
		if (is_https(url) && !is_https(next) && !req->allow_http) {
			error = error_set(err, IG_EFAIL,
			                  "'%s': refusing a redirect from https to http", where);
			goto done;
		}
		/* Credentials belong to the origin they were given for: once a redirect leaves it,
		 * nothing is sent again, even if a later hop comes back. */
		if (a.authorization && !http_same_origin(req->url, next)) {
			a.authorization = NULL;
			log_debug("http.redirect",
			          "%s: redirect to another origin, credentials dropped",
			          req->label ? req->label : "http");
		}
		/* As browsers do: 303 (and 301/302 after a POST) become GET; HEAD stays HEAD. */
		if (strcmp(a.method, "HEAD") != 0 &&
		    (out->status == 303 ||
		     (out->status != 307 && out->status != 308 && strcmp(a.method, "POST") == 0)))
			a.method = "GET";
		free(url);
		url = next;
		next = NULL;
	}
done:
	free(location);
	free(next);
	free(out->url);
	out->url = url;
	return error;
}
