/* The webhook's listener: POST /hooks/registry over libmicrohttpd with the health endpoint's
 * limits (httpd_private.h). A request without the token is answered 401 from its headers, before
 * any of its body is kept; an authenticated body is collected up to WEBHOOK_BODY_MAX (the rest
 * is read and dropped, then 400) and handed to webhook_handle. Nothing else runs on this
 * thread. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/controller/webhook.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "httpd_private.h"
#include "webhook_private.h"

#define WEBHOOK_CONN_MEMORY ((size_t)64 << 10) /* headers and read buffer per connection */

struct request {
	struct buf body; /* capped at WEBHOOK_BODY_MAX */
	bool oversized;
};

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
	case WEBHOOK_UNAUTHORIZED:
		return reply(c, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
	case WEBHOOK_BAD_REQUEST:
		break;
	}
	return reply(c, MHD_HTTP_BAD_REQUEST, "bad request\n");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
	struct request *rq = *con_cls;

	(void)version;
	if (strcmp(url, "/hooks/registry") != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, "not found\n");
	if (strcmp(method, "POST") != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (!rq) {
		if (!webhook_token_matches(
		        cls, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		                                         MHD_HTTP_HEADER_AUTHORIZATION)))
			return answer(cls, c, &(struct request){BUF_INIT, false});
		if (!(rq = calloc(1, sizeof(*rq))))
			return MHD_NO;
		rq->body.max = WEBHOOK_BODY_MAX;
		*con_cls = rq;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!rq->oversized && buf_append(&rq->body, upload, *upload_size) < 0) {
			rq->oversized = true;
			buf_release(&rq->body);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return answer(cls, c, rq);
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
