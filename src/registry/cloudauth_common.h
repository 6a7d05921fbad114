/* What the cloud providers share (cloudauth_common.c), and the table each provider fills for the
 * dispatcher (cloudauth.c): the token, the cache, the one HTTP client, the environment and the
 * clock. Not a public interface. */
#ifndef IMAGEGUARD_CLOUDAUTH_COMMON_H
#define IMAGEGUARD_CLOUDAUTH_COMMON_H

#include <jansson.h>
#include <stdbool.h>

#include "imageguard/registry/cloudauth.h"
#include "imageguard/util/http.h"

#define CLOUDAUTH_MAX_BODY (256u << 10) /* any answer of a token endpoint */
#define CLOUDAUTH_MAX_FILE (64u << 10)  /* a projected token file */

/* A credential: a registry user/password, or (AWS) the keys a chain step gave. */
struct cloudauth_token {
	char *a, *b, *c;  /* owned: user, password / access key, secret, session token */
	long long issued; /* unix seconds */
	long long expires;
};

void cloudauth_token_release(struct cloudauth_token *t);

/* The cached token under key, copied into out when still fresh; false otherwise. */
bool cloudauth_cache_get(struct cloudauth_token *out, const char *key);
/* Stores a copy of t under key (replacing). Out of memory only skips caching. */
void cloudauth_cache_put(const char *key, const struct cloudauth_token *t);
void cloudauth_cache_drop(const char *key);

/* Performs req with the module's HTTP client (created on first use). As http_do. */
int cloudauth_http(struct http_response *out, const struct http_request *req, struct error *err);

/* getenv(name) when set and non-empty, else NULL. */
const char *cloudauth_env(const char *name);
/* The content of the file named by environment variable var, trimmed, newly allocated. A
 * missing variable or unreadable file is IG_EINVALID naming the provider, variable and path. */
int cloudauth_read_env_file(char **out, const char *provider, const char *var, struct error *err);
/* The current unix time. */
long long cloudauth_now(void);
/* A JSON number (integer or real) that is a unix time before the year 10000, truncated to
 * seconds, into *out; false for anything else (so no out-of-range conversion happens). */
bool cloudauth_json_seconds(const json_t *v, long long *out);
/* Sets err from a refused answer: "<what>: <status reason>[: <code>]" with the service's error
 * code (from field code_field of a JSON body, flattened and capped), never the body itself. */
int cloudauth_refused(struct error *err, const char *what, const struct http_response *r);
/* Appends s form-urlencoded (RFC 3986 unreserved kept) to b. */
int cloudauth_form_append(struct buf *b, const char *s);

/* A provider behind the dispatcher's table. */
struct cloudauth_backend {
	const char *name; /* spec.provider */
	/* A new credential for registry_host; id NULL: the pod's identity (the SDKs' chain),
	 * else the object's (cloudauth_creds_as). */
	int (*fetch)(struct cloudauth_token *out, const char *registry_host, bool insecure,
	             const struct cloudauth_identity *id, struct error *err);
	/* Drops the provider's identity entries (the keys a credential chain gave). */
	void (*forget)(const struct cloudauth_identity *id);
};

extern const struct cloudauth_backend cloudauth_aws, cloudauth_gcp, cloudauth_azure;

/* True when registry_host's name (port and a trailing ".localhost" left out: RFC 6761 keeps
 * those names on loopback, which is how mirrors and tests stand in for the cloud) ends with
 * suffix. */
bool cloudauth_host_ends(const char *host, const char *suffix);

#endif
