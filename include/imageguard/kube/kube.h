/* A small Kubernetes API client over libcurl + jansson: GET one object, LIST a collection
 * with `limit` + `continue` pagination. TLS verified against the configured CA, bearer token
 * or client certificate, capped bodies, timeouts. One client is for one thread at a time. */
#ifndef IMAGEGUARD_KUBE_H
#define IMAGEGUARD_KUBE_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>

struct buf;
struct error;
struct kubeconfig;

struct kube_options {
	long connect_timeout_ms; /* default 10000 */
	long timeout_ms;         /* one request, default 30000 */
	size_t page_limit;       /* `limit` asked for in lists, default 500 */
	size_t max_pages;        /* pages followed in one list, default 1000 */
	size_t max_body;         /* one response body, default 16 MiB */
	size_t max_items;        /* items in one list, default 100000 */
	unsigned max_retries;    /* on transport errors, 429 and 5xx, default 2 */
	/* When non-NULL and set (SIGTERM), a request in flight ends within about a second, no
	 * retry starts, and the call fails with IG_EFAIL "stopping". Default NULL. */
	const volatile sig_atomic_t *stop;
};

/* Fills the defaults above. */
void kube_options_init(struct kube_options *o);

struct kube_client;

/* Makes a client for cfg (copied: cfg may be released afterwards). A token file is read here,
 * so a fresh client picks up a rotated service account token. opts NULL: defaults. Returns 0,
 * IG_EINVALID (unreadable token file, bad server URL) or IG_EFAIL; free with kube_client_free. */
int kube_client_new(struct kube_client **out, const struct kubeconfig *cfg,
                    const struct kube_options *opts, struct error *err);
void kube_client_free(struct kube_client *c);

/* GET path (absolute API path, e.g. "/apis/apps/v1/namespaces/prod/deployments/web").
 * Returns 0 with *out a new JSON object reference (json_decref it), or IG_ENOTFOUND (404),
 * IG_EAUTH (401, 403), IG_ETIMEOUT, IG_ETOOBIG, IG_EINVALID (not JSON), IG_EFAIL. Errors are
 * one line naming the method, path and HTTP status with the API's Status message. */
int kube_get(json_t **out, struct kube_client *c, const char *path, struct error *err);

/* LIST the collection at path, with labelSelector (NULL: all), following metadata.continue
 * until the last page. Returns 0 with *out a new JSON array of every item (json_decref it), or
 * the errors of kube_get; a list cut by max_pages/max_items is IG_ETOOBIG, never shorter. */
int kube_list(json_t **out, struct kube_client *c, const char *path, const char *label_selector,
              struct error *err);

/* The labelSelector query value of a LabelSelector object ({matchLabels, matchExpressions}):
 * "a=b,c in (d,e),!f". Returns 0 with *out newly allocated (free() it); IG_EINVALID (err
 * says why) for an empty selector (it would select every pod), an unknown operator or
 * non-string values; IG_EFAIL out of memory. */
int kube_label_selector(char **out, const json_t *selector, struct error *err);

/* Sends body (a NUL-terminated JSON text) with method (POST, PUT, PATCH) and content_type
 * (e.g. "application/merge-patch+json") to path. Returns 0 on 200/201 with *out the response
 * object (out may be NULL), or IG_ENOTFOUND (404), IG_EAUTH (401, 403), IG_ECONFLICT (409:
 * the resourceVersion moved, or the object exists), IG_ETIMEOUT, IG_EINVALID, IG_EFAIL; the
 * error names the method, path and the API's Status message. No retries: the caller decides
 * (a conflict needs a fresh read). */
int kube_send(json_t **out, struct kube_client *c, const char *method, const char *path,
              const char *content_type, const char *body, struct error *err);

/* One item of a list as kube_list_each reads it (borrowed: json_incref what is kept). Returns
 * 0, or a negative code (err set) that ends the list with it. */
typedef int (*kube_item_fn)(void *ctx, json_t *item, struct error *err);

/* kube_list_at without the whole list in memory: each page's items go to fn as the page
 * arrives, and the page is dropped before the next is asked for, so a caller that keeps part
 * of a large collection never holds all of it. The same caps and errors as kube_list_at. */
int kube_list_each(char **rv, struct kube_client *c, const char *path, const char *label_selector,
                   kube_item_fn fn, void *ctx, struct error *err);

/* kube_list, and *rv the list's metadata.resourceVersion (newly allocated, free() it): where
 * a watch of the same collection starts. */
int kube_list_at(json_t **out, char **rv, struct kube_client *c, const char *path,
                 const char *label_selector, struct error *err);

/* One watch event (a borrowed {"type", "object"}); a negative return ends the watch with it. */
typedef int (*kube_watch_fn)(void *ctx, json_t *event);

/* GET path (with its query: watch=true, resourceVersion, allowWatchBookmarks, timeoutSeconds,
 * labelSelector) as a stream: every line is an event handed to fn, in order, until the server
 * ends the stream, max_seconds pass (0 both ways: the caller watches again from its last
 * version), *stop becomes non-zero (checked about once a second; stop may be NULL), or fn
 * fails (its code). A line over the body cap is IG_ETOOBIG, a line that is not JSON
 * IG_EINVALID; an HTTP error is IG_ENOTFOUND, IG_EAUTH, IG_ECONFLICT (410 Gone: relist) or
 * IG_EFAIL with the Status message. The client is busy for the whole stream. */
int kube_watch(struct kube_client *c, const char *path, long max_seconds, kube_watch_fn fn,
               void *ctx, const volatile sig_atomic_t *stop, struct error *err);

/* s percent-encoded for a query value, newly allocated (free() it); NULL out of memory. */
char *kube_escape(const char *s);

/* The path of a namespaced resource appended to out: api ("/api/v1", "/apis/G/V"), then
 * "/namespaces/NS/PLURAL", then "/NAME" when name is not NULL and "/SUB" when sub is not NULL.
 * ns must be a namespace and name an object name (kubename), checked here, and each goes in
 * percent-encoded: a name an object gives never names another path ("..", "a/b", "%2f").
 * Returns 0; IG_EINVALID with err naming what (e.g. "secret") and the value refused; IG_EFAIL
 * out of memory. */
int kube_path(struct buf *out, const char *api, const char *ns, const char *plural,
              const char *name, const char *sub, const char *what, struct error *err);

/* The default namespace of the client's configuration (borrowed). */
const char *kube_namespace(const struct kube_client *c);

#endif
