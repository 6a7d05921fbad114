/* A small Kubernetes API client over libcurl + jansson: GET one object, LIST a collection
 * with `limit` + `continue` pagination. TLS verified against the configured CA, bearer token
 * or client certificate, capped bodies, timeouts. One client is for one thread at a time. */
#ifndef IMAGEGUARD_KUBE_H
#define IMAGEGUARD_KUBE_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>

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

/* The default namespace of the client's configuration (borrowed). */
const char *kube_namespace(const struct kube_client *c);

#endif
