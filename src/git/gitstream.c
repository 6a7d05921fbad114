/* A plain TCP git_stream for libgit2 that refuses every endpoint but the one the running
 * operation was configured for. libgit2 1.5 follows a redirect to another port of the same
 * host even with GIT_REMOTE_REDIRECT_NONE, and sends its custom headers (our bearer token)
 * there: refusing the connection is the one place that stops every such request. It is also
 * where Git's waits get their bounds (libgit2 1.5 has no server timeouts): every connect, read
 * and write polls in short slices, ends after the operation's inactivity timeout, and ends
 * when the stop flag (SIGTERM) is set and the peer has been silent for STOP_GRACE_MS, so a
 * push that is moving finishes while a stalled host cannot hold a shutdown. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/stream.h>

#include "imageguard/util/error.h"
#include "imageguard/git/gitstream.h"

struct tcp {
	git_stream parent;
	char *host, *port;
	int fd;
};

/* Per thread, because each libgit2 operation runs on its caller's thread and automations
 * run on several: the endpoint of the operation in progress here (set by gitauth_begin). */
static _Thread_local const char *allowed_host;
static _Thread_local unsigned allowed_port;
static _Thread_local const volatile sig_atomic_t *stop_flag;
static _Thread_local long io_timeout_ms = GITSTREAM_TIMEOUT_DEFAULT_MS;
static _Thread_local long deadline_at; /* CLOCK_MONOTONIC ms; 0: none */

#define SLICE_MS 100
#define STOP_GRACE_MS 1000

void gitstream_allow(const char *host, unsigned port)
{
	allowed_host = host;
	allowed_port = port;
}

void gitstream_bound(const volatile sig_atomic_t *stop, long timeout_ms)
{
	stop_flag = stop;
	io_timeout_ms = timeout_ms > 0 ? timeout_ms : GITSTREAM_TIMEOUT_DEFAULT_MS;
	deadline_at = 0;
}

void gitstream_deadline(long deadline_ms)
{
	deadline_at = deadline_ms > 0 ? deadline_ms : 0;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int net_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int net_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	git_error_set_str(GIT_ERROR_NET, msg);
	return -1;
}

/* Waits until fd is ready for events, in slices: 0, or -1 with libgit2's error set when the
 * peer stays silent past the timeout or past STOP_GRACE_MS after the stop flag was set. */
static int wait_ready(int fd, short events, const char *host, const char *what)
{
	long start = now_ms(), stopped = 0;
	struct pollfd p = {fd, events, 0};

	for (;;) {
		long t = now_ms();
		int rc;

		if (stop_flag && *stop_flag) {
			if (!stopped)
				stopped = t;
			else if (t - stopped >= STOP_GRACE_MS)
				return net_error("%s %s: stopping", what, host);
		}
		if (t - start >= io_timeout_ms)
			return net_error("%s %s: no answer for %ld ms (timed out)", what, host,
			                 io_timeout_ms);
		if (deadline_at && t >= deadline_at)
			return net_error("%s %s: past its deadline (timed out)", what, host);
		if ((rc = poll(&p, 1, SLICE_MS)) > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return net_error("%s %s: %s", what, host, strerror(errno));
	}
}

/* A non-blocking connect bounded as every other wait: 0, -1 (errno set), or -2 when the wait
 * ended it (timed out, stopping: libgit2's error says so). */
static int connect_bounded(int fd, const struct sockaddr *addr, socklen_t len, const char *host)
{
	int flags = fcntl(fd, F_GETFL), err = 0;
	socklen_t elen = sizeof(err);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	if (connect(fd, addr, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	if (wait_ready(fd, POLLOUT, host, "connecting to") < 0)
		return -2;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
		errno = err ? err : errno;
		return -1;
	}
	return 0;
}

static int refuse(const char *host, const char *port)
{
	return net_error("refusing a connection to '%s' port %s: not the configured origin "
	                 "(a redirect?)",
	                 host, port);
}

static int tcp_connect(git_stream *s)
{
	struct tcp *t = (struct tcp *)s;
	struct addrinfo hints, *info = NULL, *p;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_family = AF_UNSPEC;
	if ((rc = getaddrinfo(t->host, t->port, &hints, &info)) != 0) {
		return net_error("failed to resolve address for %s: %s", t->host, gai_strerror(rc));
	}
	for (p = info; p && t->fd < 0 && rc != -2; p = p->ai_next) {
		int fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);

		if (fd >= 0 && (rc = connect_bounded(fd, p->ai_addr, p->ai_addrlen, t->host)) == 0)
			t->fd = fd;
		else if (fd >= 0)
			close(fd);
	}
	freeaddrinfo(info);
	if (rc == -2)
		return -1; /* timed out or stopping: the wait's message says it */
	if (t->fd < 0) {
		return net_error("failed to connect to %s: %s", t->host, strerror(errno));
	}
	return 0;
}

static ssize_t tcp_read(git_stream *s, void *data, size_t len)
{
	struct tcp *t = (struct tcp *)s;
	ssize_t n;

	do {
		if (wait_ready(t->fd, POLLIN, t->host, "reading from") < 0)
			return -1;
		n = recv(t->fd, data, len, MSG_DONTWAIT);
	} while (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK));
	if (n < 0)
		net_error("error receiving data from socket: %s", strerror(errno));
	return n;
}

static ssize_t tcp_write(git_stream *s, const char *data, size_t len, int flags)
{
	struct tcp *t = (struct tcp *)s;
	ssize_t n;

	(void)flags;
	do {
		if (wait_ready(t->fd, POLLOUT, t->host, "sending to") < 0)
			return -1;
		n = send(t->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK));
	if (n < 0)
		net_error("error sending data to socket: %s", strerror(errno));
	return n;
}

static int tcp_close(git_stream *s)
{
	struct tcp *t = (struct tcp *)s;
	int rc = t->fd >= 0 ? close(t->fd) : 0;

	t->fd = -1;
	return rc;
}

static void tcp_free(git_stream *s)
{
	struct tcp *t = (struct tcp *)s;

	if (t->fd >= 0)
		close(t->fd);
	free(t->host);
	free(t->port);
	free(t);
}

static bool is_allowed(const char *host, const char *port)
{
	char *end;
	unsigned long p = strtoul(port, &end, 10);

	return allowed_host && *end == '\0' && p == allowed_port &&
	       strcasecmp(host, allowed_host) == 0;
}

static int tcp_new(git_stream **out, const char *host, const char *port)
{
	struct tcp *t;

	if (!is_allowed(host, port))
		return refuse(host, port);
	if (!(t = calloc(1, sizeof(*t))) || !(t->host = strdup(host)) ||
	    !(t->port = strdup(port))) {
		if (t)
			free(t->host);
		free(t);
		return net_error("out of memory");
	}
	t->fd = -1;
	t->parent.version = GIT_STREAM_VERSION;
	t->parent.connect = tcp_connect;
	t->parent.read = tcp_read;
	t->parent.write = tcp_write;
	t->parent.close = tcp_close;
	t->parent.free = tcp_free;
	*out = &t->parent;
	return 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_rc;

static void install(void)
{
	git_stream_registration r = {GIT_STREAM_VERSION, tcp_new, NULL};

	install_rc = git_stream_register(GIT_STREAM_STANDARD, &r) < 0 ? IG_EFAIL : 0;
}

int gitstream_install(void)
{
	pthread_once(&once, install);
	return install_rc;
}
