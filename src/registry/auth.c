/* Registry authorisation: challenges remembered per host, Bearer tokens cached per
 * realm+service+scope+user, Basic from credentials. Token requests go to the realm the
 * registry names, with the user's credentials when there are some (the distribution token
 * protocol); an http realm is refused for a registry that is not marked insecure. */
#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "imageguard/registry/auth.h"
#include "imageguard/util/buf.h"
#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "imageguard/util/log.h"
#include "imageguard/registry/wwwauth.h"

#define MAX_HOSTS 256
#define MAX_TOKENS 1024
#define MAX_TOKEN_BODY (1u << 20)
#define MIN_EXPIRES 60
#define EXPIRY_MARGIN 5

struct host_entry {
	char *host;
	char *scheme;
	char *realm;
	char *service;
};

struct token_entry {
	char *key;
	char *token;
	time_t expires; /* CLOCK_MONOTONIC seconds */
};

struct auth {
	pthread_mutex_t lock;
	struct host_entry hosts[MAX_HOSTS];
	size_t nhosts;
	struct token_entry tokens[MAX_TOKENS];
	size_t ntokens;
};

static time_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

int auth_new(struct auth **out, struct error *err)
{
	struct auth *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (!a)
		return error_oom(err);
	pthread_mutex_init(&a->lock, NULL);
	*out = a;
	return 0;
}

static void host_entry_release(struct host_entry *h)
{
	free(h->host);
	free(h->scheme);
	free(h->realm);
	free(h->service);
	memset(h, 0, sizeof(*h));
}

static void token_entry_release(struct token_entry *t)
{
	if (t->token)
		memset(t->token, 0, strlen(t->token));
	free(t->key);
	free(t->token);
	memset(t, 0, sizeof(*t));
}

void auth_free(struct auth *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nhosts; i++)
		host_entry_release(&a->hosts[i]);
	for (size_t i = 0; i < a->ntokens; i++)
		token_entry_release(&a->tokens[i]);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Remembers the challenge of host (replacing the previous one). */
static void remember_host(struct auth *a, const char *host, const struct wwwauth_challenge *ch)
{
	struct host_entry e = {strdup(host), strdup(ch->scheme), dup_or_null(ch->realm),
	                       dup_or_null(ch->service)};
	size_t i;

	if (!e.host || !e.scheme) {
		host_entry_release(&e);
		return;
	}
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->nhosts; i++)
		if (strcmp(a->hosts[i].host, host) == 0)
			break;
	if (i == MAX_HOSTS)
		i = 0; /* full: the oldest slot is as good as any to lose */
	if (i < a->nhosts)
		host_entry_release(&a->hosts[i]);
	else
		a->nhosts++;
	a->hosts[i] = e;
	pthread_mutex_unlock(&a->lock);
}

/* Copies what host challenged before into ch; false when it never did. */
static bool recall_host(struct auth *a, const char *host, struct wwwauth_challenge *ch)
{
	bool found = false;

	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->nhosts; i++)
		if (strcmp(a->hosts[i].host, host) == 0) {
			ch->scheme = strdup(a->hosts[i].scheme);
			ch->realm = dup_or_null(a->hosts[i].realm);
			ch->service = dup_or_null(a->hosts[i].service);
			found = ch->scheme != NULL;
			break;
		}
	pthread_mutex_unlock(&a->lock);
	return found;
}

static char *token_lookup(struct auth *a, const char *key, bool drop)
{
	char *out = NULL;
	time_t now = now_mono();

	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->ntokens; i++) {
		if (strcmp(a->tokens[i].key, key) != 0)
			continue;
		if (drop || a->tokens[i].expires <= now) {
			token_entry_release(&a->tokens[i]);
			a->tokens[i] = a->tokens[--a->ntokens];
		} else {
			out = strdup(a->tokens[i].token);
		}
		break;
	}
	pthread_mutex_unlock(&a->lock);
	return out;
}

static void token_store(struct auth *a, const char *key, const char *token, long expires_in)
{
	struct token_entry e = {strdup(key), strdup(token),
	                        now_mono() + expires_in - EXPIRY_MARGIN};
	time_t now = now_mono();
	size_t i, oldest = 0;

	if (!e.key || !e.token) {
		token_entry_release(&e);
		return;
	}
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->ntokens; i++) {
		if (strcmp(a->tokens[i].key, key) == 0 || a->tokens[i].expires <= now)
			break;
		if (a->tokens[i].expires < a->tokens[oldest].expires)
			oldest = i;
	}
	if (i == MAX_TOKENS)
		i = oldest;
	if (i < a->ntokens)
		token_entry_release(&a->tokens[i]);
	else
		a->ntokens++;
	a->tokens[i] = e;
	pthread_mutex_unlock(&a->lock);
}

/* "Basic base64(user:password)", or NULL without a username. */
static int basic_header(char **out, const struct registry_creds *creds)
{
	struct buf plain = BUF_INIT;
	char *enc = NULL;
	int error = 0;

	*out = NULL;
	if (!creds || !creds->username)
		return 0;
	if ((error = buf_printf(&plain, "%s:%s", creds->username,
	                        creds->password ? creds->password : "")) < 0)
		goto done;
	if (!(enc = malloc(6 + (plain.len + 2) / 3 * 4 + 1))) {
		error = IG_EFAIL;
		goto done;
	}
	memcpy(enc, "Basic ", 6);
	EVP_EncodeBlock((unsigned char *)enc + 6, (const unsigned char *)plain.data,
	                (int)plain.len);
	*out = enc;
done:
	if (plain.data)
		memset(plain.data, 0, plain.len);
	buf_release(&plain);
	return error;
}

static char *bearer_value(const char *token)
{
	size_t n = strlen(token) + 8;
	char *v = malloc(n);

	if (v) {
		memcpy(v, "Bearer ", 7);
		memcpy(v + 7, token, n - 7);
	}
	return v;
}

static int token_url(char **out, const char *realm, const char *service, const char *scope)
{
	CURLU *u = curl_url();
	struct buf q = BUF_INIT;
	char *got = NULL;
	int error = IG_EINVALID;

	*out = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, realm, 0) != CURLUE_OK)
		goto done;
	if (service && (buf_printf(&q, "service=%s", service) < 0 ||
	                curl_url_set(u, CURLUPART_QUERY, q.data,
	                             CURLU_APPENDQUERY | CURLU_URLENCODE) != CURLUE_OK))
		goto done;
	buf_reset(&q);
	if (scope && (buf_printf(&q, "scope=%s", scope) < 0 ||
	              curl_url_set(u, CURLUPART_QUERY, q.data,
	                           CURLU_APPENDQUERY | CURLU_URLENCODE) != CURLUE_OK))
		goto done;
	if (curl_url_get(u, CURLUPART_URL, &got, 0) != CURLUE_OK || !(*out = strdup(got)))
		goto done;
	error = 0;
done:
	curl_free(got);
	buf_release(&q);
	curl_url_cleanup(u);
	return error;
}

/* Reads `token` (or `access_token`) and `expires_in` from a token response body. */
static int parse_token(char **token, long *expires_in, const struct buf *body)
{
	json_t *root = json_loadb(body->data, body->len, 0, NULL);
	json_t *t, *e;
	int error = IG_EINVALID;

	*token = NULL;
	*expires_in = MIN_EXPIRES;
	if (!json_is_object(root))
		goto done;
	t = json_object_get(root, "token");
	if (!json_is_string(t) || !json_string_length(t))
		t = json_object_get(root, "access_token");
	if (!json_is_string(t) || !json_string_length(t))
		goto done;
	e = json_object_get(root, "expires_in");
	if (json_is_integer(e) && json_integer_value(e) > MIN_EXPIRES)
		*expires_in = json_integer_value(e) > 86400 ? 86400 : (long)json_integer_value(e);
	error = (*token = strdup(json_string_value(t))) ? 0 : IG_EFAIL;
done:
	json_decref(root);
	return error;
}

static int fetch_token(char **out, long *expires_in, struct http_client *http,
                       const struct auth_target *t, const char *realm, const char *service,
                       const char *scope, struct error *err)
{
	struct http_response resp = HTTP_RESPONSE_INIT;
	struct http_request req = {0};
	char *url = NULL, *basic = NULL, *realm_host = http_host(realm);
	const char *where = realm_host ? realm_host : "?";
	int error;

	*out = NULL;
	if (strncasecmp(realm, "https://", 8) != 0 &&
	    (strncasecmp(realm, "http://", 7) != 0 || !t->insecure)) {
		error = error_set(err, IG_EAUTH, "token realm '%s' is not an https URL", where);
		goto done;
	}
	if (token_url(&url, realm, service, scope) < 0 || basic_header(&basic, t->creds) < 0) {
		error = error_set(err, IG_EINVALID, "token realm '%s': unusable URL", where);
		goto done;
	}
	req.url = url;
	req.authorization = basic;
	req.ca_file = t->ca_file;
	req.allow_http = t->insecure;
	req.timeout_ms = t->timeout_ms;
	req.deadline_ms = t->deadline_ms;
	req.max_body = MAX_TOKEN_BODY;
	req.label = where;
	if ((error = http_do(&resp, http, &req, err)) < 0) {
		error_prefix(err, "token request to '%s'", where);
		goto done;
	}
	if (resp.status == 401 || resp.status == 403) {
		error = error_set(err, IG_EAUTH, "token request to '%s': %ld %s%s", where,
		                  resp.status, http_reason(resp.status),
		                  basic ? " (credentials refused)" : " (credentials required)");
		goto done;
	}
	if (resp.status != 200) {
		error = error_set(err, IG_EFAIL, "token request to '%s': %ld %s", where,
		                  resp.status, http_reason(resp.status));
		goto done;
	}
	if ((error = parse_token(out, expires_in, &resp.body)) < 0)
		error_set(err, error, "token request to '%s': response has no token", where);
	else
		log_debug("auth.token", "token from '%s' for scope '%s', expires in %ld s", where,
		          scope ? scope : "", *expires_in);
done:
	http_response_release(&resp);
	free(url);
	if (basic)
		memset(basic, 0, strlen(basic));
	free(basic);
	free(realm_host);
	return error;
}

static int bearer(char **out, struct auth *a, struct http_client *http, const struct auth_target *t,
                  const struct wwwauth_challenge *ch, const char *scope, bool stale,
                  struct error *err)
{
	struct buf key = BUF_INIT;
	char *token = NULL;
	long expires_in = 0;
	int error;

	*out = NULL;
	/* A registry token from the secret is used as it is. */
	if (t->creds && t->creds->token && !t->creds->username) {
		if (stale)
			return error_set(err, IG_EAUTH, "bearer token refused");
		return (*out = bearer_value(t->creds->token)) ? 0 : IG_EFAIL;
	}
	if (!ch->realm)
		return error_set(err, IG_EINVALID, "Bearer challenge without realm");
	if ((error = buf_printf(&key, "%s\n%s\n%s\n%s", ch->realm, ch->service ? ch->service : "",
	                        scope ? scope : "",
	                        t->creds && t->creds->username ? t->creds->username : "")) < 0)
		goto done;
	if (!(token = token_lookup(a, key.data, stale))) {
		if ((error = fetch_token(&token, &expires_in, http, t, ch->realm, ch->service,
		                         scope, err)) < 0)
			goto done;
		token_store(a, key.data, token, expires_in);
	}
	error = (*out = bearer_value(token)) ? 0 : IG_EFAIL;
done:
	if (token)
		memset(token, 0, strlen(token));
	free(token);
	buf_release(&key);
	return error;
}

static int answer(char **out, struct auth *a, struct http_client *http, const struct auth_target *t,
                  const struct wwwauth_challenge *ch, const char *scope, bool stale,
                  struct error *err)
{
	if (strcmp(ch->scheme, "bearer") == 0)
		return bearer(out, a, http, t, ch, scope, stale, err);
	if (strcmp(ch->scheme, "basic") == 0) {
		if (!t->creds || !t->creds->username)
			return error_set(err, IG_EAUTH,
			                 "401 unauthorized: credentials required (Basic)");
		if (stale)
			return error_set(err, IG_EAUTH, "401 unauthorized: credentials refused");
		return basic_header(out, t->creds);
	}
	return error_set(err, IG_EAUTH, "unsupported auth scheme '%.32s'", ch->scheme);
}

int auth_authorize(char **out, struct auth *a, struct http_client *http,
                   const struct auth_target *t, const char *challenge, bool stale,
                   struct error *err)
{
	struct wwwauth_challenge ch = WWWAUTH_CHALLENGE_INIT;
	const char *scope = t->scope;
	int error = 0;

	*out = NULL;
	if (!challenge) {
		if (recall_host(a, t->host, &ch))
			error = answer(out, a, http, t, &ch, scope, false, err);
		goto done;
	}
	if ((error = wwwauth_parse(&ch, challenge, err)) < 0) {
		if (error == IG_ENOTFOUND)
			error = error_set(err, IG_EAUTH, "401 unauthorized without a challenge");
		goto done;
	}
	remember_host(a, t->host, &ch);
	if (ch.scope)
		scope = ch.scope;
	if (ch.error && strcmp(ch.error, "invalid_token") == 0)
		stale = true;
	error = answer(out, a, http, t, &ch, scope, stale, err);
done:
	wwwauth_release(&ch);
	return error;
}

int auth_parse_token(char **token, long *expires_in, const char *data, size_t len)
{
	/* parse_token only reads the body. */
	const struct buf body = {(char *)data, len, len, 0};

	return parse_token(token, expires_in, &body);
}
