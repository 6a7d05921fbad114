/* Git URLs split as the transport reads them (gitauth_load) into scheme, user info, host, port
 * and path: one parser for everything that needs a URL's host (the transport, shard units), so
 * that they never disagree on one. Pure, no allocation, no libgit2 (the front binary links it). */
#ifndef IMAGEGUARD_GITURL_H
#define IMAGEGUARD_GITURL_H

#include <stdbool.h>
#include <stddef.h>

enum giturl_form {
	GITURL_PATH,   /* a local path: path is the whole URL */
	GITURL_SCHEME, /* scheme://authority/path; file:// has no authority (host NULL) */
	GITURL_SCP,    /* scp-like "[user@]host:path": the first ':' before any '/', and not
	                * starting with '.' (a relative path) */
};

struct giturl {
	enum giturl_form form;
	const char *scheme; /* SCHEME: the text before "://", as written; else NULL */
	size_t scheme_len;
	const char *user; /* the userinfo up to its first ':', NULL without an '@' */
	size_t user_len;
	const char *password; /* the userinfo after its first ':', NULL without one */
	size_t password_len;
	const char *host; /* without an IPv6 literal's brackets; NULL for PATH and file:// */
	size_t host_len;
	unsigned port;    /* 1..65535, 0 when none is given */
	const char *path; /* SCHEME: from the '/' after the authority ("" without one), or all
	                   * after "file://"; SCP: after the ':'; PATH: the URL */
};

/* Splits url into *out: spans borrowed from url, nothing allocated. Returns 0 or IG_EINVALID
 * (a scheme that is not ALPHA *(ALPHA / DIGIT / "+" / "-" / "."), an empty host, an unclosed
 * '[' or text after its ']' other than ":port", a port that is not 1..65535 in digits). Which
 * schemes are supported is the caller's choice (gitauth_load: ssh, https, http, file). */
int giturl_parse(struct giturl *out, const char *url);

#endif
