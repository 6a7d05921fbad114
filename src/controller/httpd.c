/* /healthz, /readyz and /metrics over libmicrohttpd (internal polling thread): the server
 * never touches reconcile state except the ready flag and the thread-safe metrics registry. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/controller/httpd.h"
#include "imageguard/util/metrics.h"
#include "httpd_private.h"

/* Health under load: the liveness probe must be answered while clients hold connections
 * open. Each client address gets at most HTTPD_PER_IP connections (a slow or hostile client
 * is refused beyond them and cannot take the others' slots); a connection idle for
 * HTTPD_IDLE_S is closed; and the budget of connections is large (epoll, no FD_SETSIZE),
 * so starving the probe takes more addresses than the NetworkPolicy admits times the
 * per-address cap. A request is small (HTTPD_CONN_MEMORY per connection). */
#define HTTPD_PER_IP 8u
#define HTTPD_IDLE_S 5u
#define HTTPD_MAX_CONNECTIONS 1024u
#define HTTPD_CONN_MEMORY ((size_t)16 << 10)
#define HTTPD_BACKLOG 256u

struct httpd {
	struct MHD_Daemon *daemon;
	struct metrics *metrics;
	atomic_bool ready;
	unsigned port;
};

static int parse_port(unsigned *out, const char *s)
{
	char *end;
	unsigned long v;

	if (!*s || *s < '0' || *s > '9')
		return IG_EUSAGE;
	v = strtoul(s, &end, 10);
	if (*end || v > 65535)
		return IG_EUSAGE;
	*out = (unsigned)v;
	return 0;
}

int httpd_parse_listen(struct sockaddr_storage *out, const char *listen, struct error *err)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
	char host[64];
	const char *colon;
	unsigned port;
	size_t hlen;

	memset(out, 0, sizeof(*out));
	colon = listen ? strrchr(listen, ':') : NULL;
	if (!colon || parse_port(&port, colon + 1) < 0)
		goto bad;
	hlen = (size_t)(colon - listen);
	if (hlen >= 2 && listen[0] == '[' && listen[hlen - 1] == ']') {
		if (hlen - 2 >= sizeof(host))
			goto bad;
		memcpy(host, listen + 1, hlen - 2);
		host[hlen - 2] = '\0';
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &v6->sin6_addr) != 1)
			goto bad;
		return 0;
	}
	if (hlen >= sizeof(host))
		goto bad;
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	v4->sin_family = AF_INET;
	v4->sin_port = htons((uint16_t)port);
	if (hlen == 0)
		v4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (strcmp(host, "localhost") == 0)
		v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
		goto bad;
	return 0;
bad:
	return error_set(err, IG_EUSAGE,
	                 "listen address '%s': expected ADDR:PORT, [ADDR]:PORT or :PORT",
	                 listen ? listen : "");
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	char *body = strdup(text);

	if (!body)
		return MHD_NO;
	return reply(c, status, "text/plain; charset=utf-8", body, strlen(body));
}

static enum MHD_Result serve_metrics(struct httpd *h, struct MHD_Connection *c)
{
	struct buf out = BUF_INIT;
	size_t len;

	if (metrics_render(&out, h->metrics) < 0) {
		buf_release(&out);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics unavailable\n");
	}
	len = out.len;
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf_detach(&out),
	             len);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
	struct httpd *h = cls;

	(void)version;
	(void)upload;
	(void)con_cls;
	if (*upload_size)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "no body expected\n");
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (strcmp(url, "/healthz") == 0)
		return reply_text(c, MHD_HTTP_OK, "ok\n");
	if (strcmp(url, "/readyz") == 0)
		return atomic_load(&h->ready)
		           ? reply_text(c, MHD_HTTP_OK, "ready\n")
		           : reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
	if (strcmp(url, "/metrics") == 0)
		return serve_metrics(h, c);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* The connection budget: HTTPD_MAX_CONNECTIONS, or half the descriptors the process may
 * open when that is less (the rest are for registries, Git and the state dir). */
static unsigned connection_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < HTTPD_MAX_CONNECTIONS)
		return rl.rlim_cur / 2 > HTTPD_PER_IP ? (unsigned)(rl.rlim_cur / 2) : HTTPD_PER_IP;
	return HTTPD_MAX_CONNECTIONS;
}

struct MHD_Daemon *httpd_daemon_start(const char *listen, MHD_AccessHandlerCallback handler,
                                      void *cls, MHD_RequestCompletedCallback done, void *done_cls,
                                      size_t conn_memory, unsigned *port, struct error *err)
{
	struct sockaddr_storage addr;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	struct MHD_Daemon *d;

	*port = 0;
	if (httpd_parse_listen(&addr, listen, err) < 0)
		return NULL;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d = MHD_start_daemon(
	    flags, 0, NULL, NULL, handler, cls, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_CONNECTION_LIMIT, connection_budget(), MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    HTTPD_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT, HTTPD_IDLE_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, conn_memory ? conn_memory : HTTPD_CONN_MEMORY,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, HTTPD_BACKLOG, MHD_OPTION_NOTIFY_COMPLETED, done,
	    done_cls, MHD_OPTION_END);
	if (!d) {
		error_set(err, IG_EFAIL, "listen '%s': cannot bind (address in use?)", listen);
		return NULL;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	*port = info ? info->port : 0;
	return d;
}

int httpd_start(struct httpd **out, const char *listen, struct metrics *m, struct error *err)
{
	struct httpd *h = NULL;

	*out = NULL;
	if (!(h = calloc(1, sizeof(*h))))
		return error_set(err, IG_EFAIL, "listen '%s': out of memory", listen);
	h->metrics = m;
	atomic_init(&h->ready, false);
	h->daemon = httpd_daemon_start(listen, handle, h, NULL, NULL, 0, &h->port, err);
	if (!h->daemon) {
		free(h);
		return err->code;
	}
	*out = h;
	return 0;
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->daemon);
	free(h);
}

void httpd_set_ready(struct httpd *h, bool ready)
{
	if (h)
		atomic_store(&h->ready, ready);
}

unsigned httpd_port(const struct httpd *h)
{
	return h->port;
}
