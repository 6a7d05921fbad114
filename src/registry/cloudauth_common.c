/* What the cloud providers share, beside them (as OpenSMTPD's queue backends share
 * queue_backend.c's helpers): the process-wide token cache, the one HTTP client, environment
 * files, refusals turned into one-line errors, and the time and OAuth answers they parse. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "cloudauth_common.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define CACHE_MAX 256 /* distinct (provider, registry) pairs kept */

struct entry {
	char *key;
	struct cloudauth_token t;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry cache[CACHE_MAX];
static size_t cache_len;
static struct http_client *client;
static void wipe_free(char *s)
{
	if (s)
		memset(s, 0, strlen(s));
	free(s);
}

void cloudauth_token_release(struct cloudauth_token *t)
{
	wipe_free(t->a), wipe_free(t->b), wipe_free(t->c);
	t->a = t->b = t->c = NULL;
}

long long cloudauth_now(void)
{
	return (long long)time(NULL);
}

bool cloudauth_json_seconds(const json_t *v, long long *out)
{
	const double max = 253402300800.0; /* 10000-01-01T00:00:00Z */
	double d;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 || json_integer_value(v) >= (json_int_t)max)
			return false;
		*out = json_integer_value(v);
		return true;
	}
	if (!json_is_real(v) || !((d = json_real_value(v)) >= 0.0 && d < max))
		return false;
	*out = (long long)d;
	return true;
}

/* Fresh while more than a fifth of the lifetime is left (Flux renews ahead of expiry too). */
static bool is_fresh(const struct cloudauth_token *t, long long now)
{
	long long life = t->expires - t->issued;

	if (t->expires == 0)
		return true;
	return now < t->expires - (life > 0 ? life / 5 : 0);
}

static int copy_token(struct cloudauth_token *out, const struct cloudauth_token *t)
{
	*out = (struct cloudauth_token){NULL, NULL, NULL, t->issued, t->expires};
	if ((t->a && !(out->a = strdup(t->a))) || (t->b && !(out->b = strdup(t->b))) ||
	    (t->c && !(out->c = strdup(t->c)))) {
		cloudauth_token_release(out);
		return IG_EFAIL;
	}
	return 0;
}

static struct entry *find(const char *key)
{
	for (size_t i = 0; i < cache_len; i++)
		if (strcmp(cache[i].key, key) == 0)
			return &cache[i];
	return NULL;
}

bool cloudauth_cache_get(struct cloudauth_token *out, const char *key)
{
	struct entry *e;
	bool hit = false;

	pthread_mutex_lock(&lock);
	e = find(key);
	if (e && is_fresh(&e->t, cloudauth_now()))
		hit = copy_token(out, &e->t) == 0;
	pthread_mutex_unlock(&lock);
	return hit;
}

static void drop_locked(struct entry *e)
{
	free(e->key);
	cloudauth_token_release(&e->t);
	*e = cache[--cache_len];
}

void cloudauth_cache_put(const char *key, const struct cloudauth_token *t)
{
	struct entry *e;
	struct cloudauth_token copy;

	if (copy_token(&copy, t) < 0)
		return;
	pthread_mutex_lock(&lock);
	if ((e = find(key)) != NULL)
		drop_locked(e);
	if (cache_len == CACHE_MAX)
		drop_locked(&cache[0]);
	cache[cache_len].key = strdup(key);
	if (cache[cache_len].key) {
		cache[cache_len].t = copy;
		cache_len++;
	} else {
		cloudauth_token_release(&copy);
	}
	pthread_mutex_unlock(&lock);
}

void cloudauth_cache_drop(const char *key)
{
	struct entry *e;

	pthread_mutex_lock(&lock);
	if ((e = find(key)) != NULL)
		drop_locked(e);
	pthread_mutex_unlock(&lock);
}

void cloudauth_reset(void)
{
	pthread_mutex_lock(&lock);
	while (cache_len > 0)
		drop_locked(&cache[0]);
	http_client_free(client);
	client = NULL;
	pthread_mutex_unlock(&lock);
}

int cloudauth_http(struct http_response *out, const struct http_request *req, struct error *err)
{
	struct http_options opts = {.max_retries = 2};
	struct http_client *c;
	int error = 0;

	pthread_mutex_lock(&lock);
	if (!client)
		error = http_client_new(&client, &opts, err);
	c = client;
	pthread_mutex_unlock(&lock);
	if (error < 0)
		return error;
	return http_do(out, c, req, err);
}

const char *cloudauth_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* The error for a token file that buf_read_file could not read (error, and its errno e). */
static int file_error(struct error *err, const char *provider, const char *var, const char *path,
                      int error, int e)
{
	if (error == IG_ENOTFOUND || error == IG_ETOOBIG)
		return error_set(err, IG_EINVALID, "provider '%s': %s '%s': %s", provider, var,
		                 path, error == IG_ENOTFOUND ? "no such file" : "too big");
	return error_set(err, IG_EINVALID, "provider '%s': %s '%s': unreadable: %s", provider, var,
	                 path, strerror(e));
}

int cloudauth_read_env_file(char **out, const char *provider, const char *var, struct error *err)
{
	const char *path = cloudauth_env(var);
	struct buf b = BUF_INIT_MAX(CLOUDAUTH_MAX_FILE);
	struct stat st;
	size_t start = 0;
	int error;

	*out = NULL;
	if (!path)
		return error_set(err, IG_EINVALID, "provider '%s': %s is not set", provider, var);
	/* A token file is a regular file (Kubernetes' projected token: a symlink to one); opening
	 * a FIFO nobody writes to would block the pass for ever, a directory reads as EISDIR. */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return error_set(err, IG_EINVALID, "provider '%s': %s '%s': not a regular file",
		                 provider, var, path);
	if ((error = buf_read_file(&b, path)) < 0) {
		int e = errno;

		buf_release(&b);
		return file_error(err, provider, var, path, error, e);
	}
	while (b.len > 0 && isspace((unsigned char)b.data[b.len - 1]))
		b.data[--b.len] = '\0';
	while (start < b.len && isspace((unsigned char)b.data[start]))
		start++;
	if (start == b.len) {
		buf_release(&b);
		return error_set(err, IG_EINVALID, "provider '%s': %s '%s' is empty", provider, var,
		                 path);
	}
	*out = strdup(b.data + start);
	memset(b.data, 0, b.len);
	buf_release(&b);
	return *out ? 0 : error_oom(err);
}

/* The service's error code from a JSON ("__type", "error", "code", "error.status") or XML
 * (<Code>) body, kept
 * to a short token of name characters; "" when none. */
static void error_code(char *out, size_t n, const struct http_response *r)
{
	static const char *const fields[] = {"__type", "error", "code", "message"};
	const char *src = NULL, *x;
	json_t *j = r->body.data ? json_loadb(r->body.data, r->body.len, 0, NULL) : NULL;
	size_t o = 0;

	for (size_t i = 0; json_is_object(j) && !src && i < 3; i++)
		src = json_string_value(json_object_get(j, fields[i]));
	if (!src) /* Google's {"error": {"code", "message", "status"}} */
		src = json_string_value(json_object_get(json_object_get(j, "error"), "status"));
	if (!src && r->body.data && (x = strstr(r->body.data, "<Code>")) != NULL)
		src = x + 6;
	if (src && strchr(src, '#') && strchr(src, '#') < src + 64)
		src = strchr(src, '#') + 1;
	for (; src && *src && o + 1 < n && o < 64; src++) {
		if (!isalnum((unsigned char)*src) && !strchr("_.-", *src))
			break;
		out[o++] = *src;
	}
	out[o] = '\0';
	json_decref(j);
}

int cloudauth_refused(struct error *err, const char *what, const struct http_response *r)
{
	char code[80];
	int rc = (r->status == 400 || r->status == 401 || r->status == 403) ? IG_EAUTH : IG_EFAIL;

	error_code(code, sizeof(code), r);
	if (*code)
		return error_set(err, rc, "%s: %ld %s: %s", what, r->status, http_reason(r->status),
		                 code);
	return error_set(err, rc, "%s: %ld %s", what, r->status, http_reason(r->status));
}

int cloudauth_form_append(struct buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int error = (isalnum(c) || strchr("-._~", c)) ? buf_append(b, s, 1)
		                                              : buf_printf(b, "%%%02X", c);
		if (error < 0)
			return error;
	}
	return 0;
}

/* n digits at s as a number, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

long long cloudauth_parse_time(const char *s)
{
	static const char shape[] = "0000-00-00T00:00:00";
	struct tm tm = {0};
	const char *p;

	if (!s || strlen(s) < sizeof(shape) - 1)
		return -1;
	for (size_t i = 0; i < sizeof(shape) - 1; i++)
		if (shape[i] != '0' && shape[i] != s[i])
			return -1;
	tm.tm_year = digits(s, 4) - 1900;
	tm.tm_mon = digits(s + 5, 2) - 1;
	tm.tm_mday = digits(s + 8, 2);
	tm.tm_hour = digits(s + 11, 2);
	tm.tm_min = digits(s + 14, 2);
	tm.tm_sec = digits(s + 17, 2);
	if (tm.tm_year < 0 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 ||
	    tm.tm_min > 59 || tm.tm_sec < 0 || tm.tm_sec > 60)
		return -1;
	p = s + sizeof(shape) - 1;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
		return -1;
	return (long long)timegm(&tm);
}

int cloudauth_parse_oauth(char **token, long long *expires_in, const char *json, size_t len,
                          const char *field, struct error *err)
{
	json_t *j = json_loadb(json, len, 0, NULL), *e;
	const char *v;
	int error = 0;

	*token = NULL;
	*expires_in = 0;
	if (!json_is_object(j) || !(v = json_string_value(json_object_get(j, field))) || !*v) {
		error = error_set(err, IG_EINVALID, "answer without '%s'", field);
		goto done;
	}
	e = json_object_get(j, "expires_in");
	if (json_is_integer(e))
		*expires_in = json_integer_value(e);
	else if (json_is_string(e))
		*expires_in = strtoll(json_string_value(e), NULL, 10);
	if (*expires_in < 0 || *expires_in > 366LL * 86400) {
		error = error_set(err, IG_EINVALID, "answer with a bad 'expires_in'");
		goto done;
	}
	if (!(*token = strdup(v)))
		error = error_oom(err);
done:
	json_decref(j);
	return error;
}

bool cloudauth_host_ends(const char *host, const char *suffix)
{
	size_t n = strcspn(host, ":"), s = strlen(suffix);

	if (n > 10 && strncmp(host + n - 10, ".localhost", 10) == 0)
		n -= 10;
	return n >= s && strncmp(host + n - s, suffix, s) == 0;
}
