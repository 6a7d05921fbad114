/* Kubernetes API requests over one reused curl handle (keep-alive): TLS settings from the
 * kubeconfig, bearer token in a header that is never logged, capped bodies, Status errors. */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/util/log.h"
#include "imageguard/util/version.h"

struct kube_client {
	struct kube_options opts;
	struct kubeconfig cfg; /* owned copies */
	char *auth_header;     /* "Authorization: Bearer ..." (secret), or NULL */
	CURL *h;
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
	if (buf_printf(&hdr, "Authorization: Bearer %s", t) < 0) {
		error = error_set(err, IG_EFAIL, "out of memory");
		goto done;
	}
	c->auth_header = buf_detach(&hdr);
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
	int error;

	*out = NULL;
	if (!c)
		return error_set(err, IG_EFAIL, "out of memory");
	if (opts)
		c->opts = *opts;
	else
		kube_options_init(&c->opts);
	if (copy_config(&c->cfg, cfg) < 0 || !(c->h = curl_easy_init())) {
		error = error_set(err, IG_EFAIL, "out of memory");
		goto fail;
	}
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
	if (c->h)
		curl_easy_cleanup(c->h);
	if (c->auth_header)
		memset(c->auth_header, 0, strlen(c->auth_header));
	free(c->auth_header);
	if (c->cfg.token)
		memset(c->cfg.token, 0, strlen(c->cfg.token));
	kubeconfig_release(&c->cfg);
	free(c);
}

const char *kube_namespace(const struct kube_client *c)
{
	return c->cfg.ns;
}

struct sink {
	struct buf body;
	int error; /* the buf error that stopped the transfer */
	const volatile sig_atomic_t *stop;
	bool stopped;
};

static bool is_stopping(const volatile sig_atomic_t *stop)
{
	return stop && *stop;
}

/* curl calls this at least once a second, idle or not: the cancel check. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	struct sink *s = ctx;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	s->stopped = is_stopping(s->stop);
	return s->stopped;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct sink *s = ctx;

	if ((s->error = buf_append(&s->body, data, size * n)) < 0)
		return 0;
	return size * n;
}

static void set_blob(CURL *h, CURLoption opt, const char *pem)
{
	struct curl_blob blob = {(void *)pem, strlen(pem), CURL_BLOB_COPY};

	curl_easy_setopt(h, opt, &blob);
}

/* Sets every option of one GET of url on the reused handle. */
static void prepare(struct kube_client *c, const char *url, struct curl_slist *headers,
                    struct sink *body)
{
	CURL *h = c->h;

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, body);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->opts.timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "imageguard/" IMAGEGUARD_VERSION);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	/* A configured CA is the only trust anchor (as client-go): no system CA file or path. */
	if (c->cfg.ca_pem || c->cfg.ca_file)
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	if (c->cfg.ca_pem) {
		curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
		set_blob(h, CURLOPT_CAINFO_BLOB, c->cfg.ca_pem);
	} else if (c->cfg.ca_file) {
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cfg.ca_file);
	}
	if (c->cfg.insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->cfg.cert_pem)
		set_blob(h, CURLOPT_SSLCERT_BLOB, c->cfg.cert_pem);
	else if (c->cfg.cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cfg.cert_file);
	if (c->cfg.key_pem)
		set_blob(h, CURLOPT_SSLKEY_BLOB, c->cfg.key_pem);
	else if (c->cfg.key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->cfg.key_file);
}

/* "METHOD path" without the query, for messages (a continue token is noise). */
static void describe(char *out, size_t n, const char *path)
{
	size_t len = strcspn(path, "?");

	snprintf(out, n, "GET %.*s", (int)(len > 400 ? 400 : len), path);
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

static bool is_retryable(CURLcode cc, long status)
{
	if (cc != CURLE_OK)
		return cc == CURLE_COULDNT_CONNECT || cc == CURLE_RECV_ERROR ||
		       cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING ||
		       cc == CURLE_PARTIAL_FILE;
	return status == 429 || status >= 500;
}

/* Waits before a retry in short steps; false when the stop flag cut it short. */
static bool backoff(unsigned attempt, const volatile sig_atomic_t *stop)
{
	long steps = 2L << (attempt > 2 ? 2 : attempt); /* 100 ms each: 200, 400, 800 ms */
	struct timespec ts = {0, 100000000L};

	for (long i = 0; i < steps; i++) {
		if (is_stopping(stop))
			return false;
		nanosleep(&ts, NULL);
	}
	return !is_stopping(stop);
}

/* One GET with retries; *out the parsed JSON object. */
static int request(json_t **out, struct kube_client *c, const char *path, struct error *err)
{
	struct buf url = BUF_INIT;
	struct sink sink = {BUF_INIT_MAX(c->opts.max_body), 0, c->opts.stop, false};
	struct curl_slist *headers = NULL;
	char what[512];
	long status = 0;
	CURLcode cc = CURLE_OK;
	json_error_t jerr;
	int error = 0;

	*out = NULL;
	describe(what, sizeof(what), path);
	if (buf_printf(&url, "%s%s", c->cfg.server, path) < 0 ||
	    !(headers = curl_slist_append(NULL, "Accept: application/json")) ||
	    (c->auth_header && !curl_slist_append(headers, c->auth_header))) {
		error = error_set(err, IG_EFAIL, "out of memory");
		goto done;
	}
	for (unsigned attempt = 0;; attempt++) {
		buf_reset(&sink.body);
		sink.error = 0;
		if ((sink.stopped = is_stopping(c->opts.stop)))
			break;
		prepare(c, url.data, headers, &sink);
		cc = curl_easy_perform(c->h);
		status = 0;
		if (cc == CURLE_OK)
			curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
		if (attempt >= c->opts.max_retries || !is_retryable(cc, status))
			break;
		log_debug("kube.retry", "kubernetes api '%s': attempt %u failed (%s, status %ld)",
		          what, attempt + 1, curl_easy_strerror(cc), status);
		if (!backoff(attempt, c->opts.stop)) {
			sink.stopped = true;
			break;
		}
	}
	if (sink.stopped) {
		error = error_set(err, IG_EFAIL, "kubernetes api '%s': stopping", what);
	} else if (cc == CURLE_WRITE_ERROR && sink.error == IG_ETOOBIG) {
		error = error_set(err, IG_ETOOBIG,
		                  "kubernetes api '%s': response larger than %zu "
		                  "bytes",
		                  what, sink.body.max);
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		error = error_set(err, IG_ETIMEOUT, "kubernetes api '%s': timed out after %ld ms",
		                  what, c->opts.timeout_ms);
	} else if (cc != CURLE_OK) {
		error = error_set(err, IG_EFAIL, "kubernetes api '%s': %s", what,
		                  curl_easy_strerror(cc));
	} else if (status != 200) {
		error = status == 404                    ? IG_ENOTFOUND
		        : status == 401 || status == 403 ? IG_EAUTH
		                                         : IG_EFAIL;
		status_error(err, error, what, status, &sink.body);
	} else if (!(*out = json_loadb(sink.body.data ? sink.body.data : "", sink.body.len, 0,
	                               &jerr)) ||
	           !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		error = error_set(err, IG_EINVALID,
		                  "kubernetes api '%s': 200 but the body is not a "
		                  "JSON object",
		                  what);
	}
done:
	curl_slist_free_all(headers);
	buf_release(&url);
	buf_release(&sink.body);
	return error;
}

int kube_get(json_t **out, struct kube_client *c, const char *path, struct error *err)
{
	return request(out, c, path, err);
}

/* path?limit=N[&labelSelector=S][&continue=T], values escaped. */
static int list_path(struct buf *out, struct kube_client *c, const char *path, const char *selector,
                     const char *cont)
{
	char *s = selector ? curl_easy_escape(c->h, selector, 0) : NULL;
	char *t = cont ? curl_easy_escape(c->h, cont, 0) : NULL;
	int error = IG_EFAIL;

	buf_reset(out);
	if ((selector && !s) || (cont && !t))
		goto done;
	error = buf_printf(out, "%s%slimit=%zu%s%s%s%s", path, strchr(path, '?') ? "&" : "?",
	                   c->opts.page_limit, s ? "&labelSelector=" : "", s ? s : "",
	                   t ? "&continue=" : "", t ? t : "");
done:
	curl_free(s);
	curl_free(t);
	return error;
}

/* Appends the page's items to all; *cont the next continue token (borrowed from page). */
static int take_page(json_t *all, json_t *page, const char **cont, const char *path,
                     size_t max_items, struct error *err)
{
	json_t *items = json_object_get(page, "items");
	const char *t =
	    json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));

	if (!json_is_array(items) && !json_is_null(items) && items)
		return error_set(err, IG_EINVALID, "kubernetes api 'GET %s': items is not a list",
		                 path);
	if (json_array_size(all) + json_array_size(items) > max_items)
		return error_set(err, IG_ETOOBIG, "kubernetes api 'GET %s': more than %zu items",
		                 path, max_items);
	if (items && json_is_array(items) && json_array_extend(all, items) < 0)
		return error_set(err, IG_EFAIL, "out of memory");
	*cont = t && *t ? t : NULL;
	return 0;
}

int kube_list(json_t **out, struct kube_client *c, const char *path, const char *label_selector,
              struct error *err)
{
	json_t *all = json_array(), *page = NULL;
	struct buf p = BUF_INIT;
	char *cont = NULL;
	const char *next = NULL;
	size_t pages = 0;
	int error = 0;

	*out = NULL;
	if (!all)
		return error_set(err, IG_EFAIL, "out of memory");
	do {
		if (++pages > c->opts.max_pages) {
			error = error_set(err, IG_ETOOBIG,
			                  "kubernetes api 'GET %s': more than %zu "
			                  "pages",
			                  path, c->opts.max_pages);
			goto done;
		}
		if (list_path(&p, c, path, label_selector, cont) < 0) {
			error = error_set(err, IG_EFAIL, "out of memory");
			goto done;
		}
		json_decref(page);
		page = NULL;
		if ((error = request(&page, c, p.data, err)) < 0 ||
		    (error = take_page(all, page, &next, path, c->opts.max_items, err)) < 0)
			goto done;
		free(cont);
		cont = NULL;
		if (next && !(cont = strdup(next))) {
			error = error_set(err, IG_EFAIL, "out of memory");
			goto done;
		}
	} while (cont);
	*out = all;
	all = NULL;
done:
	json_decref(page);
	json_decref(all);
	free(cont);
	buf_release(&p);
	return error;
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
	error = error_set(err, IG_EFAIL, "out of memory");
done:
	buf_release(&b);
	return error;
}

/* ---- writes, lists with their resourceVersion, watches (run --kube) ---- */

int kube_send(json_t **out, struct kube_client *c, const char *method, const char *path,
              const char *content_type, const char *body, struct error *err)
{
	struct buf url = BUF_INIT, ctype = BUF_INIT;
	struct sink sink = {BUF_INIT_MAX(c->opts.max_body), 0, c->opts.stop, false};
	struct curl_slist *headers = NULL;
	char what[512];
	long status = 0;
	CURLcode cc;
	int error = 0;

	if (out)
		*out = NULL;
	snprintf(what, sizeof(what), "%s %.*s", method, (int)strcspn(path, "?"), path);
	if (buf_printf(&url, "%s%s", c->cfg.server, path) < 0 ||
	    buf_printf(&ctype, "Content-Type: %s", content_type) < 0 ||
	    !(headers = curl_slist_append(NULL, "Accept: application/json")) ||
	    !curl_slist_append(headers, ctype.data) ||
	    (c->auth_header && !curl_slist_append(headers, c->auth_header))) {
		error = error_set(err, IG_EFAIL, "out of memory");
		goto done;
	}
	prepare(c, url.data, headers, &sink);
	curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	cc = curl_easy_perform(c->h);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		error = error_set(err, IG_ETIMEOUT, "kubernetes api '%s': timed out after %ld ms",
		                  what, c->opts.timeout_ms);
	} else if (cc != CURLE_OK) {
		error = error_set(err, IG_EFAIL, "kubernetes api '%s': %s", what,
		                  curl_easy_strerror(cc));
	} else if (status != 200 && status != 201) {
		error = status == 404                    ? IG_ENOTFOUND
		        : status == 401 || status == 403 ? IG_EAUTH
		        : status == 409                  ? IG_ECONFLICT
		                                         : IG_EFAIL;
		status_error(err, error, what, status, &sink.body);
	} else if (out && !(*out = json_loadb(sink.body.data ? sink.body.data : "", sink.body.len,
	                                      0, NULL))) {
		error =
		    error_set(err, IG_EINVALID, "kubernetes api '%s': the body is not JSON", what);
	}
done:
	curl_slist_free_all(headers);
	buf_release(&url);
	buf_release(&ctype);
	buf_release(&sink.body);
	return error;
}

int kube_list_at(json_t **out, char **rv, struct kube_client *c, const char *path,
                 const char *label_selector, struct error *err)
{
	json_t *all = json_array(), *page = NULL;
	struct buf p = BUF_INIT;
	char *cont = NULL;
	const char *next = NULL, *v;
	size_t pages = 0;
	int error = 0;

	*out = NULL;
	*rv = NULL;
	if (!all)
		return error_set(err, IG_EFAIL, "out of memory");
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
			error = error_set(err, IG_EFAIL, "out of memory");
			goto done;
		}
		if ((error = request(&page, c, p.data, err)) < 0 ||
		    (error = take_page(all, page, &next, path, c->opts.max_items, err)) < 0)
			goto done;
		free(cont);
		cont = NULL;
		if (next && !(cont = strdup(next))) {
			error = error_set(err, IG_EFAIL, "out of memory");
			goto done;
		}
	} while (cont);
	v = json_string_value(
	    json_object_get(json_object_get(page, "metadata"), "resourceVersion"));
	if (!v || !*v) {
		error = error_set(err, IG_EINVALID, "kubernetes api 'GET %s': no resourceVersion",
		                  path);
		goto done;
	}
	if (!(*rv = strdup(v))) {
		error = error_set(err, IG_EFAIL, "out of memory");
		goto done;
	}
	*out = all;
	all = NULL;
done:
	json_decref(page);
	json_decref(all);
	free(cont);
	buf_release(&p);
	return error;
}

/* One watch stream being read: complete lines go to fn, a line longer than the body cap
 * ends the stream. */
struct watch_sink {
	struct buf line;
	kube_watch_fn fn;
	void *ctx;
	int error;                         /* fn's or the cap's, stops the transfer */
	const volatile sig_atomic_t *stop; /* may be NULL */
};

static int watch_line(struct watch_sink *w)
{
	json_t *ev;
	int error;

	if (!w->line.len)
		return 0;
	if (!(ev = json_loadb(w->line.data, w->line.len, 0, NULL)))
		return IG_EINVALID;
	error = w->fn(w->ctx, ev);
	json_decref(ev);
	buf_reset(&w->line);
	return error;
}

static size_t on_watch(char *data, size_t size, size_t n, void *ctx)
{
	struct watch_sink *w = ctx;
	size_t len = size * n;

	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n') {
			if ((w->error = buf_append(&w->line, data + i, 1)) < 0)
				return 0;
			continue;
		}
		if ((w->error = watch_line(w)) < 0)
			return 0;
	}
	return len;
}

static int on_watch_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	const struct watch_sink *w = ctx;

	(void)a, (void)b, (void)c, (void)d;
	return w->stop && *w->stop ? 1 : 0;
}

int kube_watch(struct kube_client *c, const char *path, long max_seconds, kube_watch_fn fn,
               void *ctx, const volatile sig_atomic_t *stop, struct error *err)
{
	struct buf url = BUF_INIT;
	struct sink errbody = {BUF_INIT_MAX(64u << 10), 0, c->opts.stop, false};
	struct watch_sink w = {BUF_INIT_MAX(c->opts.max_body), fn, ctx, 0, stop};
	struct curl_slist *headers = NULL;
	char what[512];
	long status = 0;
	CURLcode cc;
	int error = 0;

	snprintf(what, sizeof(what), "GET %.*s", (int)strcspn(path, "?"), path);
	if (buf_printf(&url, "%s%s", c->cfg.server, path) < 0 ||
	    !(headers = curl_slist_append(NULL, "Accept: application/json")) ||
	    (c->auth_header && !curl_slist_append(headers, c->auth_header))) {
		error = error_set(err, IG_EFAIL, "out of memory");
		goto done;
	}
	prepare(c, url.data, headers, &errbody);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_watch);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, max_seconds * 1000L);
	curl_easy_setopt(c->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->h, CURLOPT_XFERINFOFUNCTION, on_watch_progress);
	curl_easy_setopt(c->h, CURLOPT_XFERINFODATA, &w);
	cc = curl_easy_perform(c->h);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
	if (cc == CURLE_ABORTED_BY_CALLBACK || (cc == CURLE_OK && status == 200)) {
		error = cc == CURLE_OK && w.line.len ? watch_line(&w) : 0;
	} else if (cc == CURLE_WRITE_ERROR && w.error < 0) {
		error = w.error == IG_ETOOBIG
		            ? error_set(err, IG_ETOOBIG,
		                        "kubernetes api '%s': an event larger than "
		                        "%zu bytes",
		                        what, w.line.max)
		        : w.error == IG_EINVALID
		            ? error_set(err, IG_EINVALID,
		                        "kubernetes api '%s': an event is not JSON", what)
		            : w.error;
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		error = 0; /* the stream's own end: the caller watches again from its version */
	} else if (cc != CURLE_OK) {
		error = error_set(err, IG_EFAIL, "kubernetes api '%s': %s", what,
		                  curl_easy_strerror(cc));
	} else {
		error = status == 404                    ? IG_ENOTFOUND
		        : status == 401 || status == 403 ? IG_EAUTH
		        : status == 410                  ? IG_ECONFLICT
		                                         : IG_EFAIL;
		status_error(err, error, what, status, &errbody.body);
	}
done:
	curl_slist_free_all(headers);
	buf_release(&url);
	buf_release(&errbody.body);
	buf_release(&w.line);
	return error;
}

char *kube_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0), *copy;

	if (!e)
		return NULL;
	copy = strdup(e);
	curl_free(e);
	return copy;
}
