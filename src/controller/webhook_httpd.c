/* The webhook's listener: POST /hooks/registry over libmicrohttpd with the health endpoint's
 * limits (httpd_private.h). A request without the token is answered 401 from its headers, before
 * any of its body is kept (logged at most once per interval per client address: webhook_reject.c).
 * An authenticated body must announce its length: without Content-Length (chunked) it is 411,
 * over WEBHOOK_BODY_MAX it is 413, both answered from the headers before any body is read, so
 * no body is ever longer than the cap. One still arriving at WEBHOOK_BODY_TIME_MS (trickled) is
 * answered 408: libmicrohttpd 0.9.75 cannot queue an answer in the middle of a body, so the
 * 408 is written on the socket directly, its sending side shut, and the connection closed.
 * Each refusal is counted and logged with its reason. A complete body goes to webhook_handle.
 * Nothing else runs on this thread. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "imageguard/controller/webhook.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "httpd_private.h"
#include "webhook_private.h"

#define WEBHOOK_CONN_MEMORY ((size_t)64 << 10) /* headers and read buffer per connection */

struct request {
	struct buf body; /* capped at WEBHOOK_BODY_MAX */
	bool oversized;
	bool cut;            /* answered 413/408 before the body's end: nothing more is read */
	int64_t deadline_ms; /* monotonic: the whole body by then */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The client's address as text ("unknown" when libmicrohttpd does not say). */
static void client_of(char *out, size_t n, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(out, n, "unknown");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
		          (socklen_t)n);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
		          out, (socklen_t)n);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer(struct webhook *w, struct MHD_Connection *c, struct request *rq)
{
	const char *auth =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	switch (webhook_handle(w, auth, rq->body.data ? rq->body.data : "", rq->body.len,
	                       rq->oversized)) {
	case WEBHOOK_ACCEPTED:
		return reply(c, MHD_HTTP_ACCEPTED, "accepted\n");
	case WEBHOOK_IGNORED:
		return reply(c, MHD_HTTP_ACCEPTED, "ignored\n");
	case WEBHOOK_UNAUTHORIZED: {
		char client[64];

		client_of(client, sizeof(client), c);
		webhook_rejected(w, client, "unauthorized", "missing or wrong bearer token");
		return reply(c, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
	}
	case WEBHOOK_BAD_REQUEST:
		break;
	}
	return reply(c, MHD_HTTP_BAD_REQUEST, "bad request\n");
}

/* Cuts an authenticated request from its headers, before any body (411 or 413): counted,
 * logged (rate-limited) and answered; libmicrohttpd then closes the connection unread. */
static enum MHD_Result refuse(struct webhook *w, struct MHD_Connection *c, struct request *rq,
                              unsigned status)
{
	bool big = status == MHD_HTTP_CONTENT_TOO_LARGE;
	char client[64];

	rq->cut = true;
	client_of(client, sizeof(client), c);
	webhook_rejected(w, client, big ? "too-large" : "length-required",
	                 big ? "body over 1 MiB" : "no Content-Length (chunked body)");
	return reply(c, status, big ? "payload too large\n" : "length required\n");
}

/* Cuts a body still arriving at its deadline with 408. libmicrohttpd cannot queue an answer
 * in the middle of a body, so the answer goes on the socket itself (non-blocking, one try: a
 * client that stopped reading just sees the close), then the sending side is shut and the
 * connection closed: the client reads the 408 and then the end of the stream. */
static enum MHD_Result timed_out(struct webhook *w, struct MHD_Connection *c, struct request *rq)
{
	static const char answer408[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
	                                "Content-Type: text/plain; charset=utf-8\r\n"
	                                "Content-Length: 16\r\n\r\nrequest timeout\n";
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	char client[64];

	rq->cut = true;
	client_of(client, sizeof(client), c);
	webhook_rejected(w, client, "timeout", "body not received within 10 s");
	if (ci && ci->connect_fd != MHD_INVALID_SOCKET) {
		(void)send(ci->connect_fd, answer408, sizeof(answer408) - 1,
		           MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)shutdown(ci->connect_fd, SHUT_WR);
	}
	return MHD_NO;
}

/* What the headers announce: 0 a body within the cap, else the status refusing it (411 without
 * Content-Length, also for a chunked body; 413 over WEBHOOK_BODY_MAX). */
static unsigned announced(struct MHD_Connection *c)
{
	const char *v =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	size_t n = 0;

	if (!v ||
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return MHD_HTTP_LENGTH_REQUIRED;
	for (; *v >= '0' && *v <= '9'; v++)
		if ((n = n * 10 + (size_t)(*v - '0')) > WEBHOOK_BODY_MAX)
			return MHD_HTTP_CONTENT_TOO_LARGE;
	return 0;
}

/* One call with upload bytes: kept while within the caps, else the request is cut. */
static enum MHD_Result take_upload(struct webhook *w, struct MHD_Connection *c, struct request *rq,
                                   const char *data, size_t *size)
{
	size_t n = *size;

	*size = 0;
	if (rq->cut)
		return MHD_NO;
	if (now_ms() > rq->deadline_ms)
		return timed_out(w, c, rq);
	if (buf_append(&rq->body, data, n) < 0) /* Content-Length was checked: memory */
		return MHD_NO;
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
	struct request *rq = *con_cls;
	unsigned status;

	(void)version;
	if (strcmp(url, "/hooks/registry") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, "not found\n");
	if (strcmp(method, "POST") != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (!rq) {
		if (!webhook_token_matches(
		        cls, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		                                         MHD_HTTP_HEADER_AUTHORIZATION)))
			return answer(cls, c, &(struct request){BUF_INIT, false, false, 0});
		if (!(rq = calloc(1, sizeof(*rq))))
			return MHD_NO;
		rq->body.max = WEBHOOK_BODY_MAX;
		rq->deadline_ms = now_ms() + WEBHOOK_BODY_TIME_MS;
		*con_cls = rq;
		if ((status = announced(c)) != 0)
			return refuse(cls, c, rq, status);
		return MHD_YES;
	}
	if (*upload_size)
		return take_upload(cls, c, rq, upload, upload_size);
	return rq->cut ? MHD_YES : answer(cls, c, rq);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	struct request *rq = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (rq) {
		buf_release(&rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

int webhook_listen(struct webhook *w, const char *listen, struct error *err)
{
	w->daemon = httpd_daemon_start(listen, handle, w, completed, NULL, WEBHOOK_CONN_MEMORY,
	                               &w->port, err);
	return w->daemon ? 0 : error_prefix(err, "--webhook-listen");
}

unsigned webhook_port(const struct webhook *w)
{
	return w->port;
}

void webhook_stop_listener(struct webhook *w)
{
	if (w->daemon)
		MHD_stop_daemon(w->daemon);
	w->daemon = NULL;
}
