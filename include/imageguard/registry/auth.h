/* Registry authorisation: the challenge each registry host last sent (so later requests can
 * authorise up front), Bearer tokens from the realm cached per realm+service+scope+user until
 * they expire, and Basic. Thread-safe. */
#ifndef IMAGEGUARD_AUTH_H
#define IMAGEGUARD_AUTH_H

#include <stdbool.h>
#include <stdint.h>

struct error;
struct http_client;
struct registry_creds;

struct auth; /* the caches */

int auth_new(struct auth **out, struct error *err);
void auth_free(struct auth *a);

/* What a request needs authorising for. Borrowed pointers. */
struct auth_target {
	const char *host;                   /* registry host[:port] */
	const char *scope;                  /* "repository:org/app:pull" */
	const struct registry_creds *creds; /* NULL: anonymous */
	bool insecure;                      /* plain HTTP allowed (realm included) */
	const char *ca_file;
	long timeout_ms;
	int64_t
	    deadline_ms; /* the pass's (http_request.deadline_ms): token requests end by it too */
};

/* Sets *out to the Authorization value to send (owned, free() it), or NULL to go anonymous.
 * With challenge NULL it answers from what the host challenged before (a cached token, Basic),
 * fetching a token when needed. With challenge set (the WWW-Authenticate of a 401) it records
 * it and answers it; `stale` says the Authorization just sent was refused, so a cached token
 * for it is dropped and a new one fetched. Returns 0, IG_EAUTH (token refused, no usable
 * scheme, credentials required), IG_EINVALID (bad challenge or token response) or a transport
 * code, with err naming the realm host, never a secret. */
int auth_authorize(char **out, struct auth *a, struct http_client *http,
                   const struct auth_target *t, const char *challenge, bool stale,
                   struct error *err);

/* The token response parser of auth_authorize, public for the fuzz targets and unit tests:
 * reads `token` (else `access_token`) and `expires_in` (clamped to [60, 86400], default 60)
 * from data[0..len). Returns 0 with *token owned by the caller (free() it), IG_EINVALID (no
 * token) with *token NULL, or IG_EFAIL (out of memory). */
int auth_parse_token(char **token, long *expires_in, const char *data, size_t len);

#endif
