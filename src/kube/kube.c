/* Kubernetes API requests over the one HTTP client (util/http.c: pooled keep-alive handles):
 * TLS settings from the kubeconfig, the bearer token as an Authorization that never leaves the
 * API server's origin and is never logged, capped bodies, Status errors. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/kubename.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "imageguard/util/log.h"

struct kube_client {
	struct kube_options opts;
	struct kubeconfig cfg; /* owned copies */
	char *authorization;   /* "Bearer ..." (secret), or NULL */
	struct http_tls tls;   /* borrows cfg */
	struct http_client *http;
};

void kube_options_init(struct kube_options *o)
{
	o->connect_timeout_ms = 10000;
	o->timeout_ms = 30000;
	o->page_limit = 500;
	o->max_pages = 1000;
	o->max_body = 16u << 20;
	o->max_items = 100000;
	o->max_retries = 2;
	o->stop = NULL;
}

static int copy_str(char **dst, const char *s)
{
	if (!s)
		return 0;
	return (*dst = strdup(s)) ? 0 : -1;
}

static int copy_config(struct kubeconfig *d, const struct kubeconfig *s)
{
	if (copy_str(&d->source, s->source) || copy_str(&d->server, s->server) ||
	    copy_str(&d->ca_file, s->ca_file) || copy_str(&d->ca_pem, s->ca_pem) ||
	    copy_str(&d->token, s->token) || copy_str(&d->token_file, s->token_file) ||
	    copy_str(&d->cert_file, s->cert_file) || copy_str(&d->cert_pem, s->cert_pem) ||
	    copy_str(&d->key_file, s->key_file) || copy_str(&d->key_pem, s->key_pem) ||
	    copy_str(&d->ns, s->ns ? s->ns : "default"))
		return IG_EFAIL;
	d->insecure = s->insecure;
	return 0;
}

/* The bearer token: given, or the first line of the token file (read now, so that a new
 * client sees a rotated projected token). */
static int load_token(struct kube_client *c, struct error *err)
{
	struct buf tok = BUF_INIT_MAX(KUBECONFIG_MAX_TOKEN_BYTES), hdr = BUF_INIT;
	const char *t = c->cfg.token;
	int error = 0;

	if (!t && c->cfg.token_file) {
		if ((error = buf_read_file(&tok, c->cfg.token_file)) < 0) {
			error = error_set(err, IG_EINVALID, "%s: token file '%s': %s",
			                  c->cfg.source, c->cfg.token_file,
			                  error == IG_ENOTFOUND ? "no such file" : "cannot read");
			goto done;
		}
		while (tok.len && (tok.data[tok.len - 1] == '\n' || tok.data[tok.len - 1] == '\r' ||
		                   tok.data[tok.len - 1] == ' '))
			tok.data[--tok.len] = '\0';
		t = tok.data ? tok.data : "";
	}
	if (!t)
		goto done;
	if (!*t || strpbrk(t, "\r\n")) {
		error = error_set(err, IG_EINVALID, "%s: the token is empty or has several lines",
		                  c->cfg.source);
		goto done;
	}
	if (buf_printf(&hdr, "Bearer %s", t) < 0) {
		error = error_oom(err);
		goto done;
	}
	c->authorization = buf_detach(&hdr);
done:
	/* the token was in these buffers: wipe before freeing */
	if (tok.data)
		memset(tok.data, 0, tok.cap);
	buf_release(&tok);
	buf_release(&hdr);
	return error;
}

int kube_client_new(struct kube_client **out, const struct kubeconfig *cfg,
                    const struct kube_options *opts, struct error *err)
{
	struct kube_client *c = calloc(1, sizeof(*c));
	struct http_options ho = {0};
	int error;

	*out = NULL;
	if (!c)
		return error_oom(err);
	if (opts)
		c->opts = *opts;
	else
		kube_options_init(&c->opts);
	if (copy_config(&c->cfg, cfg) < 0) {
		error = error_oom(err);
		goto fail;
	}
	ho.connect_timeout_ms = c->opts.connect_timeout_ms;
	ho.timeout_ms = c->opts.timeout_ms;
	ho.max_retries = c->opts.max_retries;
	ho.base_backoff_ms = 200;
	ho.max_backoff_ms = 2000;
	ho.stop = c->opts.stop;
	if ((error = http_client_new(&c->http, &ho, err)) < 0)
		goto fail;
	c->tls =
	    (struct http_tls){c->cfg.ca_pem,  c->cfg.ca_file,  c->cfg.cert_pem, c->cfg.cert_file,
	                      c->cfg.key_pem, c->cfg.key_file, c->cfg.insecure};
	if (!c->cfg.server || (strncmp(c->cfg.server, "https://", 8) != 0 &&
	                       strncmp(c->cfg.server, "http://", 7) != 0)) {
		error = error_set(err, IG_EINVALID, "%s: no https:// server", c->cfg.source);
		goto fail;
	}
	if ((error = load_token(c, err)) < 0)
		goto fail;
	if (c->cfg.insecure)
		log_warn("kube.insecure",
		         "%s: insecure-skip-tls-verify is set: the API server's "
		         "certificate is not verified",
		         c->cfg.source);
	*out = c;
	return 0;
fail:
	kube_client_free(c);
	return error;
}

void kube_client_free(struct kube_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	if (c->authorization)
		memset(c->authorization, 0, strlen(c->authorization));
	free(c->authorization);
	if (c->cfg.token)
		memset(c->cfg.token, 0, strlen(c->cfg.token));
	kubeconfig_release(&c->cfg);
	free(c);
}

const char *kube_namespace(const struct kube_client *c)
{
	return c->cfg.ns;
}

/* The Status message of an error body, or a reason phrase. */
static void status_error(struct error *err, int code, const char *what, long status,
                         const struct buf *body)
{
	json_t *j = body->data ? json_loadb(body->data, body->len, 0, NULL) : NULL;
	const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
	const char *reason = status == 401   ? "unauthorized"
	                     : status == 403 ? "forbidden"
	                     : status == 404 ? "not found"
	                     : status == 410 ? "gone (continue token expired)"
	                     : status == 429 ? "too many requests"
	                                     : "unexpected status";

	if (msg && *msg)
		error_set(err, code, "kubernetes api '%s': %ld %s: %.300s", what, status, reason,
		          msg);
	else
		error_set(err, code, "kubernetes api '%s': %ld %s", what, status, reason);
	json_decref(j);
}

/* The code of a final status: ok (200; 201 too for writes), else IG_ENOTFOUND (404), IG_EAUTH
 * (401, 403), IG_ECONFLICT (409, writes) or IG_EFAIL. */
static int status_code(long status, bool write)
{
	if (status == 200 || (write && status == 201))
		return 0;
	return status == 404                    ? IG_ENOTFOUND
	       : status == 401 || status == 403 ? IG_EAUTH
	       : write && status == 409         ? IG_ECONFLICT
	                                        : IG_EFAIL;
}

/* http_do's failure in the kube client's words: "kubernetes api 'GET /path': ...". */
static void kube_transport_error(const struct kube_client *c, struct error *err, int code,
                                 const char *what, size_t cap)
{
	const char *cause = strstr(err->msg, "': ");
	char why[sizeof(err->msg)];

	snprintf(why, sizeof(why), "%s", cause ? cause + 3 : err->msg);
	if (code == IG_ETIMEOUT)
		error_set(err, code, "kubernetes api '%s': timed out after %ld ms", what,
		          c->opts.timeout_ms);
	else if (code == IG_ETOOBIG)
		error_set(err, code, "kubernetes api '%s': response larger than %zu bytes", what,
		          cap);
	else
		error_set(err, code, "kubernetes api '%s': %s", what, why);
}

/* One request: method (GET retried on transport errors, 429 and 5xx; writes never), body
 * (NULL for GET), the answer in *out when out is non-NULL and the status is ok (200, or 201
 * for writes). The error names "METHOD path" (without the query: a continue token is noise). */
static int request(json_t **out, struct kube_client *c, const char *method, const char *path,
                   const char *content_type, const char *body, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT, ctype = BUF_INIT;
	const char *headers[] = {"Accept: application/json", NULL, NULL};
	bool write = strcmp(method, "GET") != 0;
	struct http_request req = {0};
	char what[512];
	int error;

	if (out)
		*out = NULL;
	snprintf(what, sizeof(what), "%s %.*s", method, (int)strcspn(path, "?"), path);
	if (buf_printf(&url, "%s%s", c->cfg.server, path) < 0 ||
	    (content_type && buf_printf(&ctype, "Content-Type: %s", content_type) < 0)) {
		error = error_oom(err);
		goto done;
	}
	headers[1] = ctype.data;
	req.method = method;
	req.url = url.data;
	req.headers = headers;
	req.authorization = c->authorization;
	req.body = body;
	req.tls = &c->tls;
	req.allow_http = true; /* a kubeconfig may name an http:// server */
	req.max_body = c->opts.max_body;
	req.label = "kubernetes";
	req.no_retry = write;
	req.no_redirect = true;
	if ((error = http_do(&r, c->http, &req, err)) < 0) {
		kube_transport_error(c, err, error, what, r.body.max);
		goto done;
	}
	error = status_code(r.status, write);
	if (error < 0)
		status_error(err, error, what, r.status, &r.body);
	else if (out && !(*out = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL)))
		error =
		    error_set(err, IG_EINVALID, "kubernetes api '%s': the body is not JSON", what);
	else if (out && !write && !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		error =
		    error_set(err, IG_EINVALID,
		              "kubernetes api '%s': 200 but the body is not a JSON object", what);
	}
done:
	http_response_release(&r);
	buf_release(&url);
	buf_release(&ctype);
	return error;
}

int kube_get(json_t **out, struct kube_client *c, const char *path, struct error *err)
{
	return request(out, c, "GET", path, NULL, NULL, err);
}

/* path?limit=N[&labelSelector=S][&continue=T], values escaped. */
static int list_path(struct buf *out, struct kube_client *c, const char *path, const char *selector,
                     const char *cont)
{
	char *s = selector ? http_escape(selector) : NULL;
	char *t = cont ? http_escape(cont) : NULL;
	int error = IG_EFAIL;

	buf_reset(out);
	if ((selector && !s) || (cont && !t))
		goto done;
	error = buf_printf(out, "%s%slimit=%zu%s%s%s%s", path, strchr(path, '?') ? "&" : "?",
	                   c->opts.page_limit, s ? "&labelSelector=" : "", s ? s : "",
	                   t ? "&continue=" : "", t ? t : "");
done:
	free(s);
	free(t);
	return error;
}

/* Appends the page's items to all, or with fn hands each to fn (which may keep a reference);
 * *seen counts them for max_items; *cont the next continue token (borrowed from page). */
static int take_page(json_t *all, kube_item_fn fn, void *ctx, size_t *seen, json_t *page,
                     const char **cont, const char *path, size_t max_items, struct error *err)
{
	json_t *items = json_object_get(page, "items"), *it;
	const char *t =
	    json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
	size_t i;
	int error;

	if (!json_is_array(items) && !json_is_null(items) && items)
		return error_set(err, IG_EINVALID, "kubernetes api 'GET %s': items is not a list",
		                 path);
	if (*seen + json_array_size(items) > max_items)
		return error_set(err, IG_ETOOBIG, "kubernetes api 'GET %s': more than %zu items",
		                 path, max_items);
	*seen += json_array_size(items);
	if (fn)
		json_array_foreach(items, i, it) if ((error = fn(ctx, it, err)) < 0) return error;
	if (!fn && items && json_is_array(items) && json_array_extend(all, items) < 0)
		return error_oom(err);
	*cont = t && *t ? t : NULL;
	return 0;
}

/* The one paginated list loop: every page's items into *out (or, with fn, to fn one by one,
 * *out left NULL), and (rv non-NULL) the last page's metadata.resourceVersion. */
static int list_pages(json_t **out, char **rv, struct kube_client *c, const char *path,
                      const char *label_selector, kube_item_fn fn, void *ctx, struct error *err)
{
	json_t *all = json_array(), *page = NULL;
	struct buf p = BUF_INIT;
	char *cont = NULL;
	const char *next = NULL, *v;
	size_t pages = 0, seen = 0;
	int error = 0;

	*out = NULL;
	if (rv)
		*rv = NULL;
	if (!all)
		return error_oom(err);
	do {
		if (++pages > c->opts.max_pages) {
			error = error_set(err, IG_ETOOBIG,
			                  "kubernetes api 'GET %s': more than %zu pages", path,
			                  c->opts.max_pages);
			goto done;
		}
		json_decref(page);
		page = NULL;
		if (list_path(&p, c, path, label_selector, cont) < 0) {
			error = error_oom(err);
			goto done;
		}
		if ((error = request(&page, c, "GET", p.data, NULL, NULL, err)) < 0 ||
		    (error = take_page(all, fn, ctx, &seen, page, &next, path, c->opts.max_items,
		                       err)) < 0)
			goto done;
		free(cont);
		cont = NULL;
		if (next && !(cont = strdup(next))) {
			error = error_oom(err);
			goto done;
		}
	} while (cont);
	if (rv) {
		v = json_string_value(
		    json_object_get(json_object_get(page, "metadata"), "resourceVersion"));
		if (!v || !*v) {
			error = error_set(err, IG_EINVALID,
			                  "kubernetes api 'GET %s': no resourceVersion", path);
			goto done;
		}
		if (!(*rv = strdup(v))) {
			error = error_oom(err);
			goto done;
		}
	}
	if (!fn) {
		*out = all;
		all = NULL;
	}
done:
	json_decref(page);
	json_decref(all);
	free(cont);
	buf_release(&p);
	return error;
}

int kube_list(json_t **out, struct kube_client *c, const char *path, const char *label_selector,
              struct error *err)
{
	return list_pages(out, NULL, c, path, label_selector, NULL, NULL, err);
}

/* One matchExpressions entry: "k in (a,b)", "k notin (a)", "k", "!k". */
static int selector_expr(struct buf *b, const json_t *e, struct error *err)
{
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *op = json_string_value(json_object_get(e, "operator"));
	const json_t *values = json_object_get(e, "values"), *v;
	size_t i;

	if (!key || !op)
		return error_set(err, IG_EINVALID,
		                 "selector: matchExpressions entry without key "
		                 "or operator");
	if (strcmp(op, "Exists") == 0)
		return buf_puts(b, key);
	if (strcmp(op, "DoesNotExist") == 0)
		return buf_printf(b, "!%s", key);
	if (strcmp(op, "In") != 0 && strcmp(op, "NotIn") != 0)
		return error_set(err, IG_EINVALID, "selector: unknown operator '%.40s'", op);
	if (!json_is_array(values) || json_array_size(values) == 0)
		return error_set(err, IG_EINVALID, "selector: '%s' %s needs values", key, op);
	if (buf_printf(b, "%s %s (", key, strcmp(op, "In") == 0 ? "in" : "notin") < 0)
		return IG_EFAIL;
	json_array_foreach(values, i, v)
	{
		if (!json_is_string(v))
			return error_set(err, IG_EINVALID,
			                 "selector: '%s': a value is not a string", key);
		if (buf_printf(b, "%s%s", i ? "," : "", json_string_value(v)) < 0)
			return IG_EFAIL;
	}
	return buf_puts(b, ")");
}

int kube_label_selector(char **out, const json_t *selector, struct error *err)
{
	const json_t *labels = json_object_get(selector, "matchLabels");
	const json_t *exprs = json_object_get(selector, "matchExpressions"), *v;
	struct buf b = BUF_INIT;
	const char *k;
	size_t i;
	int error = 0;

	*out = NULL;
	json_object_foreach((json_t *)labels, k, v)
	{
		if (!json_is_string(v)) {
			error =
			    error_set(err, IG_EINVALID, "selector: label '%s' is not a string", k);
			goto done;
		}
		if ((error = buf_printf(&b, "%s%s=%s", b.len ? "," : "", k, json_string_value(v))) <
		    0)
			goto oom;
	}
	json_array_foreach(exprs, i, v)
	{
		if (b.len && (error = buf_puts(&b, ",")) < 0)
			goto oom;
		if ((error = selector_expr(&b, v, err)) < 0) {
			if (error == IG_EINVALID)
				goto done;
			goto oom;
		}
	}
	if (!b.len) {
		error = error_set(err, IG_EINVALID, "selector: empty (it would select every pod)");
		goto done;
	}
	*out = buf_detach(&b);
	goto done;
oom:
	error = error_oom(err);
done:
	buf_release(&b);
	return error;
}

/* ---- writes, lists with their resourceVersion, watches (run --kube) ---- */

int kube_send(json_t **out, struct kube_client *c, const char *method, const char *path,
              const char *content_type, const char *body, struct error *err)
{
	return request(out, c, method, path, content_type, body, err);
}

int kube_list_at(json_t **out, char **rv, struct kube_client *c, const char *path,
                 const char *label_selector, struct error *err)
{
	return list_pages(out, rv, c, path, label_selector, NULL, NULL, err);
}

int kube_list_each(char **rv, struct kube_client *c, const char *path, const char *label_selector,
                   kube_item_fn fn, void *ctx, struct error *err)
{
	json_t *none = NULL;

	return list_pages(&none, rv, c, path, label_selector, fn, ctx, err);
}

/* One watch stream being read: complete lines go to fn, a line longer than the body cap
 * ends the stream. */
struct watch_sink {
	struct buf line;
	kube_watch_fn fn;
	void *ctx;
	const char *what;
	bool failed; /* the stream's own error (fn's, or a line too long or not JSON) is in err */
};

static int watch_line(struct watch_sink *w, struct error *err)
{
	json_t *ev;
	int error;

	if (!w->line.len)
		return 0;
	if (!(ev = json_loadb(w->line.data, w->line.len, 0, NULL)))
		return error_set(err, IG_EINVALID, "kubernetes api '%s': an event is not JSON",
		                 w->what);
	error = w->fn(w->ctx, ev);
	json_decref(ev);
	buf_reset(&w->line);
	return error;
}

static int watch_begin(void *ctx, struct error *err)
{
	struct watch_sink *w = ctx;

	(void)err;
	buf_reset(&w->line);
	return 0;
}

static int watch_write(void *ctx, const char *data, size_t len, struct error *err)
{
	struct watch_sink *w = ctx;
	int error;

	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n') {
			if (buf_append(&w->line, data + i, 1) < 0)
				return error_set(
				    err, IG_ETOOBIG,
				    "kubernetes api '%s': an event larger than %zu bytes", w->what,
				    w->line.max);
			continue;
		}
		if ((error = watch_line(w, err)) < 0)
			return error;
	}
	return 0;
}

int kube_watch(struct kube_client *c, const char *path, long max_seconds, kube_watch_fn fn,
               void *ctx, const volatile sig_atomic_t *stop, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT;
	const char *headers[] = {"Accept: application/json", NULL};
	char what[512];
	struct watch_sink w = {BUF_INIT_MAX(c->opts.max_body), fn, ctx, what, false};
	struct http_stream stream = {watch_begin, watch_write, &w, true};
	struct http_request req = {0};
	int error;

	snprintf(what, sizeof(what), "GET %.*s", (int)strcspn(path, "?"), path);
	if (buf_printf(&url, "%s%s", c->cfg.server, path) < 0) {
		error = error_oom(err);
		goto done;
	}
	req.url = url.data;
	req.headers = headers;
	req.authorization = c->authorization;
	req.tls = &c->tls;
	req.allow_http = true;
	req.timeout_ms = max_seconds * 1000L;
	req.max_body = 64u << 10; /* an error's Status body */
	req.label = "kubernetes";
	req.stream = &stream;
	req.no_retry = true;
	req.no_redirect = true;
	req.stop = stop;
	error = http_do(&r, c->http, &req, err);
	if ((stop && *stop) || error == IG_ETIMEOUT) {
		/* stopped, or the stream's own end: the caller watches again from its version */
		error = 0;
	} else if (error < 0) {
		if (!w.failed)
			kube_transport_error(c, err, error, what, r.body.max);
	} else if (r.status == 200) {
		error = watch_line(&w, err);
	} else {
		error = status_code(r.status, false);
		error = error == IG_EFAIL && r.status == 410 ? IG_ECONFLICT : error;
		status_error(err, error, what, r.status, &r.body);
	}
done:
	http_response_release(&r);
	buf_release(&url);
	buf_release(&w.line);
	return error;
}

char *kube_escape(const char *s)
{
	return http_escape(s);
}

int kube_path(struct buf *out, const char *api, const char *ns, const char *plural,
              const char *name, const char *sub, const char *what, struct error *err)
{
	char *ens = NULL, *ename = NULL;
	int error = 0;

	if (!kubename_is_namespace(ns))
		return error_set(err, IG_EINVALID, "%s '%s/%s': '%s' is not a valid namespace",
		                 what, ns ? ns : "", name ? name : "", ns ? ns : "");
	if (name && !kubename_is_name(name))
		return error_set(err, IG_EINVALID, "%s '%s/%s': '%s' is not a valid name", what, ns,
		                 name, name);
	if (!(ens = http_escape(ns)) || (name && !(ename = http_escape(name))) ||
	    buf_printf(out, "%s/namespaces/%s/%s%s%s%s%s", api, ens, plural, name ? "/" : "",
	               name ? ename : "", sub ? "/" : "", sub ? sub : "") < 0)
		error = error_oom(err);
	free(ens);
	free(ename);
	return error;
}
