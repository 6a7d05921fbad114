/* The one HTTP client over libcurl (registries, token endpoints, the Kubernetes API, Flux's
 * notification endpoint): a pool of handles (plus DNS and TLS session caches) per client shared
 * by every request and thread, capped bodies, timeouts, retries with backoff and redirects
 * followed by hand so that credentials never leave the origin they were meant for. */
#ifndef IMAGEGUARD_HTTP_H
#define IMAGEGUARD_HTTP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imageguard/util/buf.h"

struct error;

struct http_options {
	long connect_timeout_ms; /* 0: 10000 */
	long timeout_ms;         /* one attempt, whole request; 0: 30000 */
	unsigned max_retries;    /* on 429, 5xx and transport errors */
	long base_backoff_ms;    /* first wait; 0: 250 */
	long max_backoff_ms;     /* cap of one wait (Retry-After included); 0: 30000 */
	/* Called after every response (code 0: transport failure); label comes from the request. */
	void (*observe)(void *ctx, const char *label, long http_code);
	void *observe_ctx;
	/* When non-NULL and set (SIGTERM), a request in flight ends within about a second and
	 * no retry or redirect starts: http_do returns IG_EFAIL "stopping". */
	const volatile sig_atomic_t *stop;
};

struct http_client; /* thread-safe */

/* Where the body of a 200 response goes instead of http_response.body, as it arrives. */
struct http_stream {
	/* Called before every attempt (retries, redirects, auth rounds): forget what an earlier
	 * attempt delivered. Returns 0 or a negative code (the request fails with it). */
	int (*begin)(void *ctx, struct error *err);
	/* The next bytes of a 200 body. A negative return stops the transfer, and http_do returns
	 * that code with the message the callback put in err. */
	int (*write)(void *ctx, const char *data, size_t len, struct error *err);
	void *ctx;
	/* The stream caps what it keeps (a watch's lines): its bytes do not count against the
	 * request's max_body, which then caps only error bodies. */
	bool self_capped;
};

/* TLS of a server with its own trust (a kubeconfig): the CA given is the only trust anchor. */
struct http_tls {
	const char *ca_pem;    /* PEM text; or NULL */
	const char *ca_file;   /* used when ca_pem is NULL; or NULL: system CAs */
	const char *cert_pem;  /* client certificate, PEM text; or NULL */
	const char *cert_file; /* used when cert_pem is NULL; or NULL */
	const char *key_pem;   /* its key, PEM text; or NULL */
	const char *key_file;  /* used when key_pem is NULL; or NULL */
	bool insecure;         /* the server's certificate is not verified (the caller warns) */
};

/* Returns 0 or IG_EFAIL. The client owns its curl share handle; free with http_client_free. */
int http_client_new(struct http_client **out, const struct http_options *opts, struct error *err);
void http_client_free(struct http_client *c);

struct http_request {
	const char *method; /* "GET", "HEAD", "POST", "PUT", "PATCH"...; NULL: GET */
	const char *url;
	const char *const *headers; /* NULL-terminated "Name: value" lines, or NULL */
	const char *authorization;  /* Authorization value, sent only to url's origin; or NULL */
	const char *form;           /* POST body (application/x-www-form-urlencoded), or NULL */
	const char *body;    /* the body of a method other than GET/HEAD (its Content-Type among
	                      * headers); NULL: form, or empty */
	const char *ca_file; /* NULL: system CAs */
	const struct http_tls *tls; /* NULL: ca_file or the system CAs, no client certificate */
	const char *tls_hint;       /* appended to a TLS handshake failure over https, or NULL */
	bool allow_http;            /* a redirect from https to http is refused unless set */
	long timeout_ms;            /* 0: the client's */
	size_t max_body;            /* body cap (a stream's bytes count too); 0: 4 MiB */
	const char *label;          /* for observe() and log lines ("ghcr.io") */
	const struct http_stream *stream; /* NULL: a 200 body goes into http_response.body */
	int64_t deadline_ms; /* http_now_ms() instant by which everything ends, retries and
	                      * backoff included (IG_ETIMEOUT); 0: none */
	bool no_retry;       /* one attempt (a write whose retry the caller decides) */
	bool no_redirect;    /* a 3xx is the final response, as any other status */
	/* Besides the client's stop flag (http_options.stop), this request's own; or NULL. */
	const volatile sig_atomic_t *stop;
};

struct http_response {
	long status;       /* final HTTP status */
	struct buf body;   /* capped by max_body */
	struct buf header; /* the final response's header lines, "\r\n"-separated */
	char *url;         /* the URL that produced the final response (owned) */
	unsigned attempts; /* requests made, retries and redirects included */
};

#define HTTP_RESPONSE_INIT                                                                         \
	{                                                                                          \
		0, BUF_INIT, BUF_INIT, NULL, 0                                                     \
	}

/* Performs req. Transport errors, 429 and 5xx are retried up to max_retries times (exponential
 * backoff with full jitter, Retry-After honoured up to the cap); up to 10 redirects are followed,
 * dropping Authorization once the origin (scheme, host, port) changes. Returns 0 with whatever
 * final status the server gave (the caller judges it; a 5xx still there after the retries is
 * returned as such), or IG_ETIMEOUT, IG_ETOOBIG (body past max_body) or IG_EFAIL (transport,
 * bad redirect) with err set to a one-line message without the URL's query. out is caller-owned:
 * release it with http_response_release. */
int http_do(struct http_response *out, struct http_client *c, const struct http_request *req,
            struct error *err);

/* Sets the client's stop flag (see http_options.stop); call while no request runs. */
void http_client_set_stop(struct http_client *c, const volatile sig_atomic_t *stop);

/* Monotonic milliseconds, the clock of http_request.deadline_ms. */
int64_t http_now_ms(void);
void http_response_release(struct http_response *r);

/* Every value of header name (case-insensitive) joined with ", " and trimmed, newly allocated
 * (free() it); NULL when absent. */
char *http_header(const struct http_response *r, const char *name);

/* A short reason phrase for status ("not found", "too many requests"), static storage. */
const char *http_reason(long status);

/* Resolves ref (absolute or relative) against base into a newly allocated URL (free() it);
 * NULL when either does not parse. */
char *http_resolve(const char *base, const char *ref);

/* True when a and b share scheme, host and port (default ports made explicit). */
bool http_same_origin(const char *a, const char *b);

/* The host[:port] of url, newly allocated (free() it), or NULL. */
char *http_host(const char *url);

/* s percent-encoded for a URL's path segment or query value (RFC 3986 unreserved kept), newly
 * allocated (free() it); NULL when out of memory. */
char *http_escape(const char *s);

#endif
