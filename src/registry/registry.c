/* The OCI Distribution client: tag listings that are complete or an error (pagination, caps,
 * page-size negotiation) and manifest HEADs with the index digest. Transport and auth live in
 * http.c and auth.c; this file knows the protocol. */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/auth.h"
#include "imageguard/util/buf.h"
#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/linkheader.h"
#include "imageguard/registry/listmemo.h"
#include "imageguard/util/log.h"
#include "imageguard/registry/registry.h"
#include "imageguard/registry/taglist.h"

#define MAX_MANIFEST (4u << 20)
#define MAX_AUTH_ROUNDS 3

static const char *const manifest_accept[] = {
    "Accept: application/vnd.oci.image.index.v1+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json",
    NULL,
};
static const char *const json_accept[] = {"Accept: application/json", NULL};

struct registry_client {
	struct registry_options opts;
	struct http_client *http;
	struct auth *auth;
	int64_t pass_deadline_ms; /* 0: none */
	struct listmemo *memo;    /* with opts.memo_listings */
};

size_t registry_max_bytes(size_t budget)
{
	/* budget / 2 rounded down to a MiB: the tags of a listing cost about 1.3 times its bytes
	 * (packed strings and one pointer each), 1.7 when they must be sorted (qsort's temporary
	 * array), measured by bench/listing_rss.sh; the rest is slack for the page in flight. */
	size_t cap = budget / 2;

	return cap > ((size_t)1 << 20) ? cap & ~(((size_t)1 << 20) - 1) : cap;
}

void registry_options_init(struct registry_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->connect_timeout_ms = 10000;
	opts->timeout_ms = 30000;
	opts->page_size = 1000;
	opts->max_pages = 10000;
	opts->max_bytes = registry_max_bytes(REGISTRY_MEMORY_BUDGET_DEFAULT);
	opts->max_tags = TAGLIST_MAX_TAGS;
	opts->listing_timeout_ms = 300000;
	opts->max_retries = 4;
	opts->max_backoff_ms = 30000;
}

int registry_client_new(struct registry_client **out, const struct registry_options *opts,
                        struct error *err)
{
	struct registry_client *c = calloc(1, sizeof(*c));
	struct http_options ho = {0};
	int error;

	*out = NULL;
	if (!c)
		return error_oom(err);
	c->opts = *opts;
	ho.connect_timeout_ms = opts->connect_timeout_ms;
	ho.timeout_ms = opts->timeout_ms;
	ho.max_retries = opts->max_retries;
	ho.max_backoff_ms = opts->max_backoff_ms;
	ho.observe = opts->observe;
	ho.observe_ctx = opts->observe_ctx;
	if ((error = http_client_new(&c->http, &ho, err)) < 0 ||
	    (error = auth_new(&c->auth, err)) < 0 ||
	    (opts->memo_listings && listmemo_new(&c->memo) < 0 && (error = error_oom(err)) < 0)) {
		registry_client_free(c);
		return error;
	}
	*out = c;
	return 0;
}

void registry_client_set_stop(struct registry_client *c, const volatile sig_atomic_t *stop)
{
	http_client_set_stop(c->http, stop);
}

void registry_client_set_deadline(struct registry_client *c, int64_t deadline_ms)
{
	c->pass_deadline_ms = deadline_ms;
}

void registry_client_set_budget(struct registry_client *c, size_t budget)
{
	c->opts.max_bytes = registry_max_bytes(budget);
	if (c->memo)
		listmemo_set_cap(c->memo, budget / 8);
}

void registry_client_free(struct registry_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	auth_free(c->auth);
	listmemo_free(c->memo);
	free(c);
}

void registry_client_next_pass(struct registry_client *c)
{
	if (c->memo)
		listmemo_next_pass(c->memo);
}

void registry_listing_release(struct registry_listing *l)
{
	free(l->tags.items); /* the strings are the arena's */
	memset(&l->tags, 0, sizeof(l->tags));
	tagarena_release(&l->arena);
	l->pages = 0;
	l->sha256[0] = '\0';
}

static void hex(char *out, const unsigned char *md, unsigned n)
{
	static const char digits[] = "0123456789abcdef";

	for (unsigned i = 0; i < n; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * n] = '\0';
}

void registry_tags_sha256(char out[65], const struct strvec *sorted_tags)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	char chunk[4096];
	size_t used = 0;
	unsigned n = 0;

	out[0] = '\0';
	if (!ctx)
		return;
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	/* joined in a buffer first: two EVP calls per tag cost more than the hashing */
	for (size_t i = 0; i < sorted_tags->len; i++) {
		const char *t = sorted_tags->items[i];
		size_t n = strlen(t);

		if (used + n + 1 > sizeof(chunk)) {
			EVP_DigestUpdate(ctx, chunk, used);
			used = 0;
		}
		if (i)
			chunk[used++] = '\n';
		if (n >= sizeof(chunk)) {
			EVP_DigestUpdate(ctx, chunk, used);
			EVP_DigestUpdate(ctx, t, n);
			used = 0;
			continue;
		}
		memcpy(chunk + used, t, n);
		used += n;
	}
	if (used)
		EVP_DigestUpdate(ctx, chunk, used);
	if (EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 32)
		hex(out, md, n);
	EVP_MD_CTX_free(ctx);
}

/* What every request of one call shares: where to go, how to name it, how to authorise. */
struct call {
	struct registry_client *c;
	const struct registry_target *t;
	char *name; /* "host/repository", the subject of messages */
	char *base; /* "https://host" */
	char *scope;
	int64_t deadline_ms; /* every request of the call ends by it; 0: none */
};

/* The earlier of two deadlines, 0 meaning none. */
static int64_t earlier(int64_t a, int64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

static void call_release(struct call *k)
{
	free(k->name);
	free(k->base);
	free(k->scope);
}

static int call_init(struct call *k, struct registry_client *c, const struct registry_target *t,
                     struct error *err)
{
	struct buf base = BUF_INIT, scope = BUF_INIT;

	memset(k, 0, sizeof(*k));
	k->c = c;
	k->t = t;
	if (!(k->name = imageref_name(t->ref)) ||
	    buf_printf(&base, "%s://%s", t->insecure ? "http" : "https", t->ref->registry) < 0 ||
	    buf_printf(&scope, "repository:%s:pull", t->ref->repository) < 0) {
		buf_release(&base);
		buf_release(&scope);
		call_release(k);
		return error_oom(err);
	}
	k->base = buf_detach(&base);
	k->scope = buf_detach(&scope);
	return 0;
}

/* One line from an OCI error body: "CODE: message[; CODE: message]", or "" when the body is
 * not one. Registries send HTML and plain text too; those are not echoed. */
static void oci_errors(char *out, size_t n, const struct buf *body)
{
	json_t *root = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
	json_t *errors = json_object_get(root, "errors"), *e;
	size_t i, used = 0;

	out[0] = '\0';
	json_array_foreach(errors, i, e)
	{
		const char *code = json_string_value(json_object_get(e, "code"));
		const char *msg = json_string_value(json_object_get(e, "message"));
		int w;

		if (!code && !msg)
			continue;
		w = snprintf(out + used, n - used, "%s%s%s%s", used ? "; " : "", code ? code : "",
		             code && msg ? ": " : "", msg ? msg : "");
		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
		if (i >= 3)
			break;
	}
	/* The registry's words go into one-line messages and logs: no line breaks or controls. */
	error_flatten(out);
	json_decref(root);
}

static int status_error(const struct call *k, const struct http_response *r, const char *what,
                        struct error *err)
{
	char detail[512];
	int code = r->status == 401 || r->status == 403 ? IG_EAUTH
	           : r->status == 404                   ? IG_ENOTFOUND
	                                                : IG_EFAIL;

	oci_errors(detail, sizeof(detail), &r->body);
	/* a registry may echo what it was sent: never let our credentials into a message */
	if (k->t && k->t->creds) {
		error_scrub_secret(detail, sizeof(detail), k->t->creds->password);
		error_scrub_secret(detail, sizeof(detail), k->t->creds->token);
	}
	return error_set(err, code, "registry '%s': %s%s%ld %s", k->name, what ? what : "",
	                 what ? ": " : "", r->status, detail[0] ? detail : http_reason(r->status));
}

static void log_ratelimit(const struct call *k, const struct http_response *r)
{
	char *v = http_header(r, "ratelimit-remaining");

	if (v) {
		long left = strtol(v, NULL, 10);

		if (left <= 10)
			log_info("registry.ratelimit", "registry '%s': %ld requests left (%s)",
			         k->t->ref->registry, left, v);
		else
			log_debug("registry.ratelimit", "registry '%s': ratelimit-remaining %s",
			          k->t->ref->registry, v);
	}
	free(v);
}

/* A request with the authorisation dance: preemptive from what the host challenged before,
 * then one answer per 401 (a refused token is fetched again once). */
static int request(struct http_response *out, struct call *k, const char *method, const char *url,
                   const char *const *headers, size_t max_body, const struct http_stream *stream,
                   struct error *err)
{
	const struct registry_target *t = k->t;
	struct auth_target at = {t->ref->registry, k->scope,      t->creds,      t->insecure,
	                         t->ca_file,       t->timeout_ms, k->deadline_ms};
	struct http_request req = {0};
	char *authz = NULL, *challenge = NULL;
	int error;

	req.method = method;
	req.url = url;
	req.headers = headers;
	req.ca_file = t->ca_file;
	req.tls_hint = "a registry that speaks plain HTTP? set spec.insecure: true on its "
	               "ImageRepository";
	req.allow_http = t->insecure;
	req.timeout_ms = t->timeout_ms;
	req.max_body = max_body;
	req.label = t->ref->registry;
	req.stream = stream;
	req.deadline_ms = k->deadline_ms;
	if ((error = auth_authorize(&authz, k->c->auth, k->c->http, &at, NULL, false, err)) < 0)
		goto fail;
	for (int round = 0;; round++) {
		req.authorization = authz;
		http_response_release(out);
		if ((error = http_do(out, k->c->http, &req, err)) < 0)
			goto fail;
		log_ratelimit(k, out);
		if (out->status != 401 || round + 1 >= MAX_AUTH_ROUNDS)
			break;
		free(challenge);
		if (!(challenge = http_header(out, "WWW-Authenticate")))
			break;
		free(authz);
		if ((error = auth_authorize(&authz, k->c->auth, k->c->http, &at, challenge,
		                            req.authorization != NULL, err)) < 0)
			goto fail;
		if (!authz)
			break;
	}
	error = 0;
	goto done;
fail:
	error_prefix(err, "registry '%s'", k->name);
done:
	if (authz)
		memset(authz, 0, strlen(authz));
	free(authz);
	free(challenge);
	return error;
}

static int first_url(char **out, const struct call *k, size_t n)
{
	struct buf u = BUF_INIT;

	if (buf_printf(&u, "%s/v2/%s/tags/list", k->base, k->t->ref->repository) < 0 ||
	    (n && buf_printf(&u, "?n=%zu", n) < 0)) {
		buf_release(&u);
		return IG_EFAIL;
	}
	*out = buf_detach(&u);
	return 0;
}

/* The tag-list body of a 200 goes straight into the listing's reader. */
struct page_stream {
	struct taglist *reader;
	size_t bytes; /* of the current page */
	/* With a memo, a first page is held (up to LISTMEMO_BODY_MAX) to be looked up whole
	 * before it is parsed; past that it streams as any other page. */
	bool may_hold, holding;
	struct buf hold;
};

static int page_begin(void *ctx, struct error *err)
{
	struct page_stream *ps = ctx;

	ps->bytes = 0;
	ps->hold.len = 0; /* a retried page starts again */
	ps->holding = ps->may_hold;
	return taglist_page_begin(ps->reader, err);
}

static int page_write(void *ctx, const char *data, size_t len, struct error *err)
{
	struct page_stream *ps = ctx;
	int rc;

	ps->bytes += len;
	if (ps->holding) {
		if (len <= LISTMEMO_BODY_MAX - ps->hold.len)
			return buf_append(&ps->hold, data, len) < 0 ? error_oom(err) : 0;
		ps->holding = false; /* too large to keep: what was held goes first */
		if (ps->hold.len &&
		    (rc = taglist_push(ps->reader, ps->hold.data, ps->hold.len, err)) < 0)
			return rc;
	}
	return taglist_push(ps->reader, data, len, err);
}

/* The URLs a listing has followed, as 64-bit hashes: a next link seen before is a loop. */
struct visited {
	uint64_t *h;
	size_t len, cap;
};

static uint64_t url_hash(const char *url)
{
	uint64_t h = 14695981039346656037ull;

	for (const unsigned char *p = (const unsigned char *)url; *p; p++) {
		h ^= *p;
		h *= 1099511628211ull; /* FNV-1a */
	}
	return h;
}

/* Records url; true when it was there already. *oom set when it cannot be recorded. */
static bool visited_add(struct visited *v, const char *url, bool *oom)
{
	uint64_t h = url_hash(url);

	for (size_t i = 0; i < v->len; i++)
		if (v->h[i] == h)
			return true;
	if (v->len == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		uint64_t *p = realloc(v->h, cap * sizeof(*p));

		if (!p) {
			*oom = true;
			return false;
		}
		v->h = p;
		v->cap = cap;
	}
	v->h[v->len++] = h;
	return false;
}

/* Follows the page's Link to the next page; *next NULL on the last page. */
static int next_page(char **next, const struct call *k, const struct http_response *r,
                     const char *url, struct error *err)
{
	char *link = http_header(r, "Link");
	int error = 0;

	*next = NULL;
	if (link && (error = linkheader_next(next, link, url, err)) < 0)
		error_prefix(err, "registry '%s'", k->name);
	else if (*next && !http_same_origin(url, *next)) {
		char *host = http_host(*next);

		error = error_set(err, IG_EINVALID, "registry '%s': refusing a next link to '%s'",
		                  k->name, host ? host : "another host");
		free(host);
	} else if (*next && strcmp(*next, url) == 0) {
		error = error_set(err, IG_EINVALID, "registry '%s': next link points to itself",
		                  k->name);
	}
	if (error < 0) {
		free(*next);
		*next = NULL;
	}
	free(link);
	return error;
}

/* Registries that reject a large `n` (ECR: 400 above 1000) get a smaller one. */
static bool smaller_page(size_t *n)
{
	if (*n > 1000)
		*n = 1000;
	else if (*n > 100)
		*n = 100;
	else if (*n)
		*n = 0;
	else
		return false;
	return true;
}

/* A listing's use of the memo: its key once the first page was held whole and is the last. */
struct memo_probe {
	unsigned char key[LISTMEMO_KEY_LEN];
	bool keyed, hit;
};

/* What one listing carries from page to page. */
struct listing_walk {
	struct call *k;
	struct page_stream ps;
	struct visited seen;
	size_t n, total, *pages;
	char *url;
	struct strvec *tags;
	struct tagarena *arena;
	struct memo_probe *probe;
};

/* A held single page: the memo's listing of it when it has one (probe->hit), else the
 * page parsed as it would have streamed. */
static int held_page(struct listing_walk *w, const char *next, struct error *err)
{
	struct page_stream *ps = &w->ps;
	int rc;

	if (!next && *w->pages == 1 && w->tags->len == 0 && w->arena->len == 0 &&
	    (w->probe->keyed = listmemo_key(w->probe->key, w->url,
	                                    ps->hold.data ? ps->hold.data : "", ps->hold.len))) {
		if ((rc = listmemo_get(w->k->c->memo, w->probe->key, w->tags, w->arena)) < 0)
			return error_set(err, IG_EFAIL, "registry '%s': out of memory", w->k->name);
		if ((w->probe->hit = rc == 1))
			return 0;
	}
	if (ps->hold.len && (rc = taglist_push(ps->reader, ps->hold.data, ps->hold.len, err)) < 0)
		return rc;
	return taglist_page_end(ps->reader, err);
}

/* The cap checks before a page is asked for. */
static int before_page(const struct listing_walk *w, struct error *err)
{
	const struct registry_options *o = &w->k->c->opts;

	if (*w->pages >= o->max_pages)
		return error_set(err, IG_ETOOBIG, "registry '%s': more than %zu pages", w->k->name,
		                 o->max_pages);
	if (w->total >= o->max_bytes)
		return error_set(err, IG_ETOOBIG, "registry '%s': tag list larger than %zu bytes",
		                 w->k->name, o->max_bytes);
	return 0;
}

/* A request error of a page, reworded where the listing's own caps are what ended it. */
static int page_error(const struct listing_walk *w, int error, struct error *err)
{
	const struct registry_options *o = &w->k->c->opts;

	if (error == IG_ETOOBIG && strstr(err->msg, "entries") == NULL)
		error_set(err, error, "registry '%s': tag list larger than %zu bytes", w->k->name,
		          o->max_bytes);
	else if (error == IG_ETIMEOUT && w->k->deadline_ms && http_now_ms() >= w->k->deadline_ms)
		error_set(err, error,
		          "registry '%s': tag list timed out (its deadline passed after %zu pages)",
		          w->k->name, *w->pages);
	return error;
}

/* Fetches the page at w->url; *next is the next page's URL, NULL after the last. */
static int fetch_page(struct listing_walk *w, char **next, struct error *err)
{
	struct http_stream stream = {page_begin, page_write, &w->ps, false};
	const struct registry_options *o = &w->k->c->opts;
	struct http_response r = HTTP_RESPONSE_INIT;
	bool oom = false;
	int error;

	*next = NULL;
	w->ps.may_hold = w->k->c->memo && *w->pages == 0;
	if ((error = request(&r, w->k, "GET", w->url, json_accept, o->max_bytes - w->total, &stream,
	                     err)) < 0) {
		error = page_error(w, error, err);
		goto done;
	}
	if (r.status == 400 && *w->pages == 0 && smaller_page(&w->n)) {
		log_info("registry.page-size", "registry '%s': 400 for the page size, asking %zu",
		         w->k->name, w->n);
		free(w->url);
		w->url = NULL;
		if ((error = first_url(&w->url, w->k, w->n)) < 0)
			error =
			    error_set(err, IG_EFAIL, "registry '%s': out of memory", w->k->name);
		else
			*next = strdup(w->url); /* ask again from the start */
		goto done;
	}
	if (r.status != 200) {
		error = status_error(w->k, &r, NULL, err);
		goto done;
	}
	(*w->pages)++;
	w->total += w->ps.bytes;
	if (w->ps.holding) {
		if ((error = next_page(next, w->k, &r, r.url, err)) < 0 ||
		    (error = held_page(w, *next, err)) < 0 || !*next) {
			if (error < 0) {
				free(*next);
				*next = NULL;
			}
			goto done;
		}
	} else if ((error = taglist_page_end(w->ps.reader, err)) < 0 ||
	           (error = next_page(next, w->k, &r, r.url, err)) < 0 || !*next) {
		goto done;
	}
	if (visited_add(&w->seen, *next, &oom) || oom) {
		error =
		    oom ? error_set(err, IG_EFAIL, "registry '%s': out of memory", w->k->name)
		        : error_set(err, IG_EINVALID,
		                    "registry '%s': next link loops back to a page already read "
		                    "(page %zu)",
		                    w->k->name, *w->pages);
		free(*next);
		*next = NULL;
	}
done:
	http_response_release(&r);
	return error;
}

static int fetch_all(struct strvec *tags, struct tagarena *arena, size_t *pages, struct call *k,
                     struct memo_probe *probe, struct error *err)
{
	const struct registry_options *o = &k->c->opts;
	struct taglist_limits lim = {0, o->max_tags};
	struct listing_walk w = {.k = k,
	                         .ps = {.hold = BUF_INIT},
	                         .n = o->page_size,
	                         .pages = pages,
	                         .tags = tags,
	                         .arena = arena,
	                         .probe = probe};
	bool oom = false;
	char *next = NULL;
	int error;

	if ((error = taglist_new(&w.ps.reader, tags, k->name, &lim, err)) < 0)
		return error;
	taglist_set_arena(w.ps.reader, arena);
	if ((error = first_url(&w.url, k, w.n)) < 0 || (visited_add(&w.seen, w.url, &oom), oom)) {
		error = error_set(err, IG_EFAIL, "registry '%s': out of memory", k->name);
		goto done;
	}
	for (;;) {
		if ((error = before_page(&w, err)) < 0 ||
		    (error = fetch_page(&w, &next, err)) < 0 || !next)
			break;
		free(w.url);
		w.url = next;
		next = NULL;
	}
done:
	taglist_free(w.ps.reader);
	buf_release(&w.ps.hold);
	free(w.seen.h);
	free(w.url);
	return error;
}

/* Listings up to this many bytes of tags are packed into one exact block once complete. */
#define LISTING_COMPACT_MAX ((size_t)64 * 1024)

/* Gives back the vector's spare capacity: a pass keeps every listing until it ends. */
static void trim(struct strvec *v)
{
	char **p;

	if (!v->items || v->cap <= v->len + 1 ||
	    !(p = realloc(v->items, (v->len + 1) * sizeof(*p))))
		return;
	v->items = p;
	v->cap = v->len + 1;
}

int registry_list_tags(struct registry_listing *out, struct registry_client *c,
                       const struct registry_target *t, struct error *err)
{
	long budget_ms = t->listing_timeout_ms ? t->listing_timeout_ms : c->opts.listing_timeout_ms;
	struct memo_probe probe = {.keyed = false};
	struct call k;
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = call_init(&k, c, t, err)) < 0)
		return error;
	k.deadline_ms = c->pass_deadline_ms;
	if (budget_ms > 0)
		k.deadline_ms = earlier(k.deadline_ms, http_now_ms() + budget_ms);
	if ((error = fetch_all(&out->tags, &out->arena, &out->pages, &k, &probe, err)) < 0) {
		registry_listing_release(out);
		goto done;
	}
	if (!probe.hit) { /* the memo's listing is sorted, packed and trimmed already */
		taglist_sort_unique(&out->tags);
		(void)tagarena_compact(&out->arena, &out->tags,
		                       LISTING_COMPACT_MAX); /* best effort */
		trim(&out->tags);
		if (probe.keyed)
			listmemo_put(c->memo, probe.key, &out->arena, &out->tags);
	}
	if ((out->keyed = probe.keyed))
		memcpy(out->key, probe.key, sizeof(out->key));
	if (!c->opts.skip_digest)
		registry_tags_sha256(out->sha256, &out->tags);
	log_debug("registry.tags", "registry '%s': %zu tags in %zu pages%s", k.name, out->tags.len,
	          out->pages, probe.hit ? ", the same page as the pass before" : "");
done:
	call_release(&k);
	return error;
}

static int body_digest(char **out, const struct buf *body)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	char *d = malloc(7 + 65);

	if (!d || EVP_Digest(body->data, body->len, md, &n, EVP_sha256(), NULL) != 1 || n != 32) {
		free(d);
		return IG_EFAIL;
	}
	memcpy(d, "sha256:", 7);
	hex(d + 7, md, n);
	*out = d;
	return 0;
}

/* The manifest GET when HEAD gave no digest: the digest is computed from the body, and a
 * header that disagrees with the body is an error. */
static int get_digest(char **out, struct call *k, const char *url, const char *what,
                      struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	char *header = NULL;
	int error;

	if ((error = request(&r, k, "GET", url, manifest_accept, MAX_MANIFEST, NULL, err)) < 0)
		goto done;
	if (r.status != 200) {
		error = status_error(k, &r, what, err);
		goto done;
	}
	if ((error = body_digest(out, &r.body)) < 0) {
		error_set(err, error, "registry '%s': %s: cannot hash the manifest", k->name, what);
		goto done;
	}
	header = http_header(&r, "Docker-Content-Digest");
	if (header && strncmp(header, "sha256:", 7) == 0 && strcmp(header, *out) != 0) {
		error =
		    error_set(err, IG_EINVALID,
		              "registry '%s': %s: Docker-Content-Digest does not match the body",
		              k->name, what);
		free(*out);
		*out = NULL;
	}
done:
	free(header);
	http_response_release(&r);
	return error;
}

int registry_head_manifest(char **digest_out, struct registry_client *c,
                           const struct registry_target *t, const char *reference,
                           struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT, what = BUF_INIT;
	size_t len = strlen(reference);
	char *digest = NULL;
	struct call k;
	int error;

	*digest_out = NULL;
	if ((error = call_init(&k, c, t, err)) < 0)
		return error;
	if (!imageref_is_valid_tag(reference, len) && !imageref_is_valid_digest(reference, len)) {
		error =
		    error_set(err, IG_EINVALID, "registry '%s': '%.140s' is not a tag or digest",
		              k.name, reference);
		goto done;
	}
	if (buf_printf(&url, "%s/v2/%s/manifests/%s", k.base, t->ref->repository, reference) < 0 ||
	    buf_printf(&what, "manifest '%s'", reference) < 0) {
		error = error_set(err, IG_EFAIL, "registry '%s': out of memory", k.name);
		goto done;
	}
	if ((error = request(&r, &k, "HEAD", url.data, manifest_accept, MAX_MANIFEST, NULL, err)) <
	    0)
		goto done;
	if (r.status != 200) {
		error = status_error(&k, &r, what.data, err);
		goto done;
	}
	digest = http_header(&r, "Docker-Content-Digest");
	if (digest && !imageref_is_valid_digest(digest, strlen(digest))) {
		error = error_set(err, IG_EINVALID,
		                  "registry '%s': %s: malformed Docker-Content-Digest", k.name,
		                  what.data);
		goto done;
	}
	if (!digest && (error = get_digest(&digest, &k, url.data, what.data, err)) < 0)
		goto done;
	*digest_out = digest;
	digest = NULL;
done:
	free(digest);
	http_response_release(&r);
	buf_release(&url);
	buf_release(&what);
	call_release(&k);
	return error;
}

/* ---- image configs ---- */

#define MAX_CONFIG (8u << 20)
#define MAX_INDEX_DEPTH 3 /* an index of indexes is legal; a loop of them is not */

/* True when body hashes to digest ("sha256:<hex>" or "sha512:<hex>"). */
static bool body_matches(const struct buf *body, const char *digest)
{
	const char *colon = strchr(digest, ':');
	unsigned char md[EVP_MAX_MD_SIZE];
	char algo[16], hexd[2 * EVP_MAX_MD_SIZE + 1];
	const EVP_MD *type;
	unsigned n = 0;

	if (!colon || colon - digest >= (long)sizeof(algo))
		return false;
	memcpy(algo, digest, (size_t)(colon - digest));
	algo[colon - digest] = '\0';
	if (strcmp(algo, "sha256") != 0 && strcmp(algo, "sha512") != 0)
		return false;
	if (!(type = EVP_get_digestbyname(algo)) ||
	    EVP_Digest(body->data ? body->data : "", body->len, md, &n, type, NULL) != 1)
		return false;
	hex(hexd, md, n);
	return strcmp(hexd, colon + 1) == 0;
}

/* GET /v2/<repo>/<kind>/<digest> into r, 200 and matching its digest. */
static int get_by_digest(struct http_response *r, struct call *k, const char *kind,
                         const char *digest, size_t max, struct error *err)
{
	struct buf url = BUF_INIT, what = BUF_INIT;
	int error;

	if (buf_printf(&url, "%s/v2/%s/%s/%s", k->base, k->t->ref->repository, kind, digest) < 0 ||
	    buf_printf(&what, "%s '%s'", strcmp(kind, "blobs") ? "manifest" : "config blob",
	               digest) < 0) {
		error = error_set(err, IG_EFAIL, "registry '%s': out of memory", k->name);
		goto done;
	}
	error = request(r, k, "GET", url.data, strcmp(kind, "blobs") ? manifest_accept : NULL, max,
	                NULL, err);
	if (error == IG_ETOOBIG)
		error_set(err, error, "registry '%s': %s: larger than %zu bytes", k->name,
		          what.data, max);
	if (error < 0)
		goto done;
	if (r->status != 200)
		error = status_error(k, r, what.data, err);
	else if (!body_matches(&r->body, digest))
		error = error_set(err, IG_EINVALID,
		                  "registry '%s': %s: the body does not match "
		                  "its digest",
		                  k->name, what.data);
done:
	buf_release(&url);
	buf_release(&what);
	return error;
}

/* From the manifest `digest` down to the config descriptor, through indexes. *found false
 * (and out->why) when an index has no entry for the platform. */
static int config_descriptor(struct imageconfig_ref *ref, bool *found, struct call *k,
                             const char *digest, const char *platform,
                             struct imageconfig_created *out, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	char current[IMAGECONFIG_DIGEST_MAX + 1];
	int error = 0;

	*found = true;
	snprintf(current, sizeof(current), "%s", digest);
	for (int depth = 0;; depth++) {
		if (depth >= MAX_INDEX_DEPTH) {
			error =
			    error_set(err, IG_EINVALID,
			              "registry '%s': manifest '%s': indexes nested deeper than %d",
			              k->name, digest, MAX_INDEX_DEPTH);
			break;
		}
		if ((error = get_by_digest(&r, k, "manifests", current, MAX_MANIFEST, err)) < 0)
			break;
		error = imageconfig_manifest(ref, &r.body, platform, err);
		if (error == IG_ENOTFOUND) {
			*found = false;
			snprintf(out->why, sizeof(out->why), "%.150s", err->msg);
			error_clear(err);
			error = 0;
			break;
		}
		if (error < 0) {
			error_prefix(err, "registry '%s': manifest '%s'", k->name, current);
			break;
		}
		if (!ref->is_index)
			break;
		memcpy(current, ref->digest, sizeof(current));
	}
	http_response_release(&r);
	return error;
}

int registry_image_created(struct imageconfig_created *out, struct registry_client *c,
                           const struct registry_target *t, const char *digest,
                           const char *platform, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct imageconfig_ref ref;
	bool found;
	struct call k;
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = call_init(&k, c, t, err)) < 0)
		return error;
	if (!imageref_is_valid_digest(digest, strlen(digest)) ||
	    strlen(digest) > IMAGECONFIG_DIGEST_MAX) {
		error = error_set(err, IG_EINVALID, "registry '%s': '%.140s' is not a digest",
		                  k.name, digest);
		goto done;
	}
	if ((error = config_descriptor(&ref, &found, &k, digest, platform, out, err)) < 0 || !found)
		goto done;
	if (ref.size > (int64_t)MAX_CONFIG) {
		error = error_set(err, IG_ETOOBIG,
		                  "registry '%s': config blob '%s': %lld bytes, more than %u",
		                  k.name, ref.digest, (long long)ref.size, MAX_CONFIG);
		goto done;
	}
	if ((error = get_by_digest(&r, &k, "blobs", ref.digest, MAX_CONFIG, err)) < 0)
		goto done;
	if ((error = imageconfig_created(out, &r.body, err)) < 0)
		error_prefix(err, "registry '%s': config blob '%s'", k.name, ref.digest);
done:
	http_response_release(&r);
	call_release(&k);
	return error;
}

/* ---- raw GETs for signature artifacts (sigfetch.c) ---- */

static const char *const index_accept[] = {"Accept: application/vnd.oci.image.index.v1+json", NULL};

/* GET url into out (moved from the response), the Content-Type into *media_type. */
static int get_raw(struct buf *out, char **media_type, struct call *k, const char *url,
                   const char *const *accept, size_t max, const char *what, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	int error;

	if (media_type)
		*media_type = NULL;
	error = request(&r, k, "GET", url, accept, max, NULL, err);
	if (error == IG_ETOOBIG)
		error_set(err, error, "registry '%s': %s: larger than %zu bytes", k->name, what,
		          max);
	if (error < 0)
		goto done;
	if (r.status != 200) {
		error = status_error(k, &r, what, err);
		goto done;
	}
	if (media_type)
		*media_type = http_header(&r, "Content-Type");
	buf_release(out);
	*out = r.body;
	r.body = (struct buf)BUF_INIT;
done:
	http_response_release(&r);
	return error;
}

/* The URL /v2/<repo>/<kind>/<ref> and "<what> '<ref>'" for messages. */
static int raw_url(struct buf *url, struct buf *what, const struct call *k, const char *kind,
                   const char *noun, const char *ref, struct error *err)
{
	if (buf_printf(url, "%s/v2/%s/%s/%s", k->base, k->t->ref->repository, kind, ref) < 0 ||
	    buf_printf(what, "%s '%s'", noun, ref) < 0)
		return error_set(err, IG_EFAIL, "registry '%s': out of memory", k->name);
	return 0;
}

/* One GET of kind/ref; with check, the body must hash to ref (a digest). */
static int get_ref(struct buf *out, char **media_type, struct registry_client *c,
                   const struct registry_target *t, const char *kind, const char *noun,
                   const char *ref, const char *const *accept, size_t max, bool check,
                   struct error *err)
{
	struct buf url = BUF_INIT, what = BUF_INIT;
	struct call k;
	int error;

	if ((error = call_init(&k, c, t, err)) < 0)
		return error;
	if ((error = raw_url(&url, &what, &k, kind, noun, ref, err)) < 0 ||
	    (error = get_raw(out, media_type, &k, url.data, accept, max ? max : MAX_MANIFEST,
	                     what.data, err)) < 0)
		goto done;
	if (check && !body_matches(out, ref)) {
		error = error_set(err, IG_EINVALID,
		                  "registry '%s': %s: the body does not match its digest", k.name,
		                  what.data);
		buf_release(out);
	}
done:
	if (error < 0 && media_type) {
		free(*media_type);
		*media_type = NULL;
	}
	buf_release(&url);
	buf_release(&what);
	call_release(&k);
	return error;
}

int registry_get_manifest(struct buf *out, char **media_type, struct registry_client *c,
                          const struct registry_target *t, const char *reference, size_t max,
                          struct error *err)
{
	size_t len = strlen(reference);
	bool digest = imageref_is_valid_digest(reference, len);

	if (!digest && !imageref_is_valid_tag(reference, len))
		return error_set(err, IG_EINVALID, "registry '%s': '%.140s' is not a tag or digest",
		                 t->ref->registry, reference);
	return get_ref(out, media_type, c, t, "manifests", "manifest", reference, manifest_accept,
	               max, digest, err);
}

int registry_get_blob(struct buf *out, struct registry_client *c, const struct registry_target *t,
                      const char *digest, size_t max, struct error *err)
{
	if (!imageref_is_valid_digest(digest, strlen(digest)))
		return error_set(err, IG_EINVALID, "registry '%s': '%.140s' is not a digest",
		                 t->ref->registry, digest);
	return get_ref(out, NULL, c, t, "blobs", "blob", digest, NULL, max, true, err);
}

int registry_get_referrers(struct buf *out, struct registry_client *c,
                           const struct registry_target *t, const char *digest, size_t max,
                           struct error *err)
{
	if (!imageref_is_valid_digest(digest, strlen(digest)))
		return error_set(err, IG_EINVALID, "registry '%s': '%.140s' is not a digest",
		                 t->ref->registry, digest);
	return get_ref(out, NULL, c, t, "referrers", "referrers of", digest, index_accept, max,
	               false, err);
}

int registry_parse_tag_list(struct strvec *tags, const char *name, const char *data, size_t len,
                            struct error *err)
{
	return taglist_parse(tags, name, data, len, err);
}

void registry_oci_errors(char *out, size_t n, const char *data, size_t len)
{
	const struct buf body = {(char *)data, len, len, 0};

	oci_errors(out, n, &body);
}
