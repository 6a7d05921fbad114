/* GitHub App installation tokens for Git over HTTPS: an RS256 JWT signed with the app's key
 * (OpenSSL), then POST {api}/app/installations/{id}/access_tokens, the installation found by
 * owner (organisation, then user) when no id is given, as Flux's auth/githubapp does. The token
 * cache is module state on purpose (like Flux's token cache): tokens must outlive one pass. */
#include <ctype.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/git/githubapp.h"
#include "imageguard/registry/cloudauth.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "imageguard/util/log.h"

#define API_URL "https://api.github.com/"
#define SECRET_MAX (64u << 10)
#define CACHE_MAX 32
#define API_VERSION "X-GitHub-Api-Version: 2022-11-28"

struct app {
	char *id, *installation, *owner, *key, *base; /* owned; installation or owner NULL */
	size_t key_len;
	unsigned char hash[SHA256_DIGEST_LENGTH]; /* of everything: the cache key */
};

struct entry {
	unsigned char hash[SHA256_DIGEST_LENGTH];
	char *token;
	long long issued, expires;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry cache[CACHE_MAX];
static size_t cache_len;
static struct http_client *client;

static void wipe_free(char *s)
{
	if (s)
		OPENSSL_cleanse(s, strlen(s));
	free(s);
}

static void app_release(struct app *a)
{
	free(a->id), free(a->installation), free(a->owner), free(a->base);
	if (a->key)
		OPENSSL_cleanse(a->key, a->key_len);
	free(a->key);
	memset(a, 0, sizeof(*a));
}

/* secret_dir/name trimmed, or NULL when absent; IG_EINVALID when unreadable or too big. */
static int read_field(char **out, size_t *len, const char *dir, const char *name, struct error *err)
{
	struct buf path = BUF_INIT, b = BUF_INIT_MAX(SECRET_MAX);
	int rc;

	*out = NULL;
	if (buf_printf(&path, "%s/%s", dir, name) < 0)
		return error_oom(err);
	rc = buf_read_file(&b, path.data);
	if (rc == IG_ENOTFOUND)
		rc = 0;
	else if (rc < 0)
		error_set(err, IG_EINVALID, "provider 'github': secret file '%s': %s", path.data,
		          rc == IG_ETOOBIG ? "too big" : "unreadable");
	while (rc == 0 && b.len > 0 && isspace((unsigned char)b.data[b.len - 1]))
		b.data[--b.len] = '\0';
	if (rc == 0 && b.len > 0) {
		*out = buf_detach(&b);
		if (len)
			*len = strlen(*out);
	}
	buf_release(&path);
	buf_release(&b);
	return rc;
}

static bool is_number(const char *s)
{
	if (!s || !*s || strlen(s) > 20)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static void hash_app(struct app *a)
{
	const char *parts[] = {a->id, a->installation, a->owner, a->key, a->base};
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int n = 0;

	memset(a->hash, 0, sizeof(a->hash));
	if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1)
		goto done;
	for (size_t i = 0; i < 5; i++)
		EVP_DigestUpdate(c, parts[i] ? parts[i] : "", parts[i] ? strlen(parts[i]) + 1 : 1);
	EVP_DigestFinal_ex(c, a->hash, &n);
done:
	EVP_MD_CTX_free(c);
}

static int need(const char *v, const char *dir, const char *name, struct error *err)
{
	return v ? 0
	         : error_set(err, IG_EINVALID, "provider 'github': secret '%s' has no %s", dir,
	                     name);
}

static int app_load(struct app *a, const char *dir, struct error *err)
{
	int rc;

	memset(a, 0, sizeof(*a));
	if (!dir)
		return error_set(err, IG_EINVALID, "provider 'github' needs spec.secretRef");
	if ((rc = read_field(&a->id, NULL, dir, "githubAppID", err)) < 0 ||
	    (rc = read_field(&a->installation, NULL, dir, "githubAppInstallationID", err)) < 0 ||
	    (rc = read_field(&a->owner, NULL, dir, "githubAppInstallationOwner", err)) < 0 ||
	    (rc = read_field(&a->key, &a->key_len, dir, "githubAppPrivateKey", err)) < 0 ||
	    (rc = read_field(&a->base, NULL, dir, "githubAppBaseURL", err)) < 0 ||
	    (rc = need(a->id, dir, "githubAppID", err)) < 0 ||
	    (rc = need(a->key, dir, "githubAppPrivateKey", err)) < 0)
		goto fail;
	rc = IG_EINVALID;
	if (!is_number(a->id)) {
		error_set(err, rc, "provider 'github': secret '%s': githubAppID must be a number",
		          dir);
		goto fail;
	}
	if (!a->installation == !a->owner) {
		error_set(err, rc,
		          "provider 'github': secret '%s' needs exactly one of "
		          "githubAppInstallationID and githubAppInstallationOwner",
		          dir);
		goto fail;
	}
	if (a->installation && !is_number(a->installation)) {
		error_set(err, rc,
		          "provider 'github': secret '%s': githubAppInstallationID must be a "
		          "number",
		          dir);
		goto fail;
	}
	hash_app(a);
	return 0;
fail:
	app_release(a);
	return rc;
}

int githubapp_check(const char *secret_dir, struct error *err)
{
	struct app a;
	int rc = app_load(&a, secret_dir, err);

	app_release(&a);
	return rc;
}

/* ---- the JWT ---- */

static int b64url(struct buf *out, const unsigned char *d, size_t n)
{
	size_t cap = 4 * ((n + 2) / 3) + 1;
	unsigned char *tmp = malloc(cap);
	int len, rc = 0;

	if (!tmp)
		return IG_EFAIL;
	len = EVP_EncodeBlock(tmp, d, (int)n);
	while (len > 0 && tmp[len - 1] == '=')
		len--;
	for (int i = 0; i < len; i++)
		tmp[i] = tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : tmp[i];
	rc = buf_append(out, tmp, (size_t)len);
	free(tmp);
	return rc;
}

static int rs256(struct buf *out, EVP_PKEY *k, const char *input)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *sig = NULL;
	size_t len = 0;
	int rc = IG_EFAIL;

	if (ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k) == 1 &&
	    EVP_DigestSign(ctx, NULL, &len, (const unsigned char *)input, strlen(input)) == 1 &&
	    (sig = malloc(len)) &&
	    EVP_DigestSign(ctx, sig, &len, (const unsigned char *)input, strlen(input)) == 1)
		rc = b64url(out, sig, len);
	free(sig);
	EVP_MD_CTX_free(ctx);
	return rc;
}

static EVP_PKEY *load_key(const char *pem, size_t len)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *k = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;

	BIO_free(bio);
	if (k && EVP_PKEY_base_id(k) != EVP_PKEY_RSA) {
		EVP_PKEY_free(k);
		k = NULL;
	}
	return k;
}

int githubapp_jwt(char **out, const char *app_id, const char *pem, size_t pem_len, long long now,
                  struct error *err)
{
	static const char header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
	struct buf claims = BUF_INIT, jwt = BUF_INIT;
	EVP_PKEY *k = load_key(pem, pem_len);
	int rc = IG_EFAIL;

	*out = NULL;
	if (!k)
		return error_set(
		    err, IG_EINVALID,
		    "provider 'github': githubAppPrivateKey is not a PEM RSA private key");
	if (buf_printf(&claims, "{\"iat\":%lld,\"exp\":%lld,\"iss\":\"%s\"}", now - 30, now + 90,
	               app_id) < 0 ||
	    b64url(&jwt, (const unsigned char *)header, strlen(header)) < 0 ||
	    buf_puts(&jwt, ".") < 0 ||
	    b64url(&jwt, (const unsigned char *)claims.data, claims.len) < 0)
		goto done;
	{
		char *input = strdup(jwt.data);

		rc = input && buf_puts(&jwt, ".") == 0 ? rs256(&jwt, k, input) : IG_EFAIL;
		free(input);
	}
done:
	if (rc < 0)
		error_set(err, rc, "provider 'github': cannot sign the app's JWT");
	else
		*out = buf_detach(&jwt);
	EVP_PKEY_free(k);
	buf_release(&claims);
	buf_release(&jwt);
	return rc;
}

/* ---- GitHub's API ---- */

int githubapp_parse_token(char **token, long long *expires, const char *json, size_t len,
                          struct error *err)
{
	json_t *j = json_loadb(json, len, 0, NULL);
	const char *t = json_string_value(json_object_get(j, "token"));
	int rc = 0;

	*token = NULL;
	*expires = cloudauth_parse_time(json_string_value(json_object_get(j, "expires_at")));
	if (!t || !*t || *expires < 0)
		rc = error_set(err, IG_EINVALID, "github answer without %s",
		               t && *t ? "a valid 'expires_at'" : "'token'");
	else if (!(*token = strdup(t)))
		rc = error_oom(err);
	json_decref(j);
	return rc;
}

static int call(struct http_response *r, const char *method, const char *url, const char *jwt,
                struct error *err)
{
	static const char *const headers[] = {"Accept: application/vnd.github+json", API_VERSION,
	                                      NULL};
	struct http_options opts = {.max_retries = 2};
	struct buf authz = BUF_INIT;
	struct http_client *c;
	int rc = 0;

	pthread_mutex_lock(&lock);
	if (!client)
		rc = http_client_new(&client, &opts, err);
	c = client;
	pthread_mutex_unlock(&lock);
	if (rc < 0 || (rc = buf_printf(&authz, "Bearer %s", jwt)) < 0)
		return rc < 0 && !err->msg[0] ? error_oom(err) : rc;
	struct http_request req = {.method = method,
	                           .url = url,
	                           .headers = headers,
	                           .authorization = authz.data,
	                           .form = "",
	                           .label = "github-app",
	                           .allow_http = true,
	                           .max_body = 256u << 10};
	if (strcmp(method, "GET") == 0)
		req.form = NULL;
	rc = http_do(r, c, &req, err);
	OPENSSL_cleanse(authz.data, authz.len);
	buf_release(&authz);
	return rc;
}

static int refused(struct error *err, const char *what, long status)
{
	return error_set(err, status == 401 || status == 403 || status == 404 ? IG_EAUTH : IG_EFAIL,
	                 "github %s: %ld %s", what, status, http_reason(status));
}

/* The installation of the owner: as an organisation, then as a user. */
static int find_installation(char **out, const struct app *a, const char *base, const char *jwt,
                             struct error *err)
{
	static const char *const kinds[] = {"orgs", "users"};
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT;
	long status = 0;
	int rc = 0;

	*out = NULL;
	for (size_t i = 0; i < 2 && !*out && rc == 0; i++) {
		json_t *j;

		buf_reset(&url);
		http_response_release(&r);
		if (buf_printf(&url, "%s%s/%s/installation", base, kinds[i], a->owner) < 0 ||
		    (rc = call(&r, "GET", url.data, jwt, err)) < 0)
			break;
		status = r.status;
		if (r.status != 200)
			continue;
		j = json_loadb(r.body.data, r.body.len, 0, NULL);
		if (json_is_integer(json_object_get(j, "id"))) {
			struct buf id = BUF_INIT;

			buf_printf(&id, "%lld",
			           (long long)json_integer_value(json_object_get(j, "id")));
			*out = buf_detach(&id);
		}
		json_decref(j);
	}
	if (rc == 0 && !*out)
		rc = refused(err, "installation of owner", status);
	http_response_release(&r);
	buf_release(&url);
	return rc;
}

static int new_token(struct entry *e, const struct app *a, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf base = BUF_INIT, url = BUF_INIT;
	char *jwt = NULL, *inst = NULL;
	const char *b = a->base ? a->base : API_URL;
	int rc;

	if ((rc = githubapp_jwt(&jwt, a->id, a->key, a->key_len, (long long)time(NULL), err)) < 0)
		return rc;
	if (buf_printf(&base, "%s%s", b, b[strlen(b) - 1] == '/' ? "" : "/") < 0) {
		rc = error_oom(err);
		goto done;
	}
	if (a->owner && (rc = find_installation(&inst, a, base.data, jwt, err)) < 0)
		goto done;
	if (buf_printf(&url, "%sapp/installations/%s/access_tokens", base.data,
	               inst ? inst : a->installation) < 0 ||
	    (rc = call(&r, "POST", url.data, jwt, err)) < 0)
		goto done;
	if (r.status != 201 && r.status != 200) {
		rc = refused(err, "installation token", r.status);
		goto done;
	}
	e->issued = (long long)time(NULL);
	rc = githubapp_parse_token(&e->token, &e->expires, r.body.data, r.body.len, err);
done:
	if (rc < 0)
		error_prefix(err, "provider 'github': app %s at '%s'", a->id,
		             base.data ? base.data : b);
	wipe_free(jwt);
	free(inst);
	buf_release(&base);
	buf_release(&url);
	http_response_release(&r);
	return rc;
}

/* ---- the cache ---- */

static struct entry *find(const unsigned char *hash)
{
	for (size_t i = 0; i < cache_len; i++)
		if (memcmp(cache[i].hash, hash, sizeof(cache[i].hash)) == 0)
			return &cache[i];
	return NULL;
}

static void drop_locked(struct entry *e)
{
	wipe_free(e->token);
	*e = cache[--cache_len];
}

static char *cached(const unsigned char *hash)
{
	struct entry *e;
	char *tok = NULL;
	long long now = (long long)time(NULL);

	pthread_mutex_lock(&lock);
	e = find(hash);
	if (e && now < e->expires - (e->expires - e->issued) / 5)
		tok = strdup(e->token);
	pthread_mutex_unlock(&lock);
	return tok;
}

static void store(const struct entry *n)
{
	struct entry *e;
	char *tok = strdup(n->token);

	if (!tok)
		return;
	pthread_mutex_lock(&lock);
	if ((e = find(n->hash)) != NULL)
		drop_locked(e);
	if (cache_len == CACHE_MAX)
		drop_locked(&cache[0]);
	cache[cache_len] = *n;
	cache[cache_len++].token = tok;
	pthread_mutex_unlock(&lock);
}

int githubapp_token(char **out, const char *secret_dir, struct error *err)
{
	struct app a;
	struct entry e = {0};
	int rc;

	*out = NULL;
	if ((rc = app_load(&a, secret_dir, err)) < 0)
		return rc;
	if ((*out = cached(a.hash)) != NULL)
		goto done;
	if ((rc = new_token(&e, &a, err)) < 0)
		goto done;
	memcpy(e.hash, a.hash, sizeof(e.hash));
	store(&e);
	log_info("githubapp.token",
	         "provider 'github': app %s: new installation token, %lld s left", a.id,
	         e.expires - (long long)time(NULL));
	*out = e.token;
done:
	app_release(&a);
	return rc;
}

void githubapp_forget(const char *secret_dir)
{
	struct app a;
	struct error ignored = ERROR_INIT;
	struct entry *e;

	if (app_load(&a, secret_dir, &ignored) < 0)
		return;
	pthread_mutex_lock(&lock);
	if ((e = find(a.hash)) != NULL)
		drop_locked(e);
	pthread_mutex_unlock(&lock);
	app_release(&a);
}
