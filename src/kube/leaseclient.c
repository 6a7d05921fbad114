/* coordination.k8s.io/v1 Leases through the kube client, for leader election: the object kept
 * between calls as client-go's LeaseLock keeps it, the record mapped to and from its spec. */
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/leaseclient.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

struct leaseclient {
	struct kube_client *c;
	char ns[254], name[LEASE_MAX_NAME];
	char path[512];
	json_t *obj; /* the Lease read or written last; NULL before the first */
};

void lease_generate_id(char *out, size_t n, const char *base, const char *const *additions,
                       size_t k)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *ctx;
	bool any = false;

	if (n == 0)
		return;
	*out = '\0';
	if (!base || !*base)
		return;
	for (size_t i = 0; i < k; i++)
		any = any || (additions[i] && *additions[i]);
	if (!any || !(ctx = EVP_MD_CTX_new())) {
		snprintf(out, n, "%s", base);
		return;
	}
	/* the additions concatenated, as Flux's GenerateID hashes them ("bar", "", "baz" is
	 * "barbaz") */
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
		bool ok = true;

		for (size_t i = 0; i < k && ok; i++)
			if (additions[i])
				ok = EVP_DigestUpdate(ctx, additions[i], strlen(additions[i])) == 1;
		if (!ok || EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
			mdlen = 0;
	}
	EVP_MD_CTX_free(ctx);
	if (mdlen < 4) { /* no digest: never one name for every shard */
		*out = '\0';
		return;
	}
	snprintf(out, n, "%s-%02x%02x%02x%02x", base, md[0], md[1], md[2], md[3]);
}

void lease_name(char out[LEASE_MAX_NAME], const char *shard_key)
{
	lease_generate_id(out, LEASE_MAX_NAME, LEASE_NAME_BASE, &shard_key, 1);
}

const char *lease_namespace(const struct kubeconfig *cfg)
{
	const char *ns = getenv("POD_NAMESPACE");

	return ns && *ns ? ns : cfg->ns && *cfg->ns ? cfg->ns : "default";
}

char *lease_identity(void)
{
	unsigned char r[16];
	char host[256] = "", *out;
	size_t n = sizeof(host) + 40;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return NULL;
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* version 4 */
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	if (gethostname(host, sizeof(host) - 1) < 0 || !*host)
		snprintf(host, sizeof(host), "imageguard");
	if (!(out = malloc(n)))
		return NULL;
	snprintf(out, n, "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         host, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
	         r[12], r[13], r[14], r[15]);
	return out;
}

void leaseclient_wall(void *ctx, char out[LEASE_MAX_TIME])
{
	struct timespec ts;
	struct tm tm;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (strftime(out, LEASE_MAX_TIME, "%Y-%m-%dT%H:%M:%S", &tm) != 19) {
		snprintf(out, LEASE_MAX_TIME, "1970-01-01T00:00:00.000000Z");
		return;
	}
	snprintf(out + 19, LEASE_MAX_TIME - 19, ".%06dZ", (int)(ts.tv_nsec / 1000 % 1000000));
}

int leaseclient_new(struct leaseclient **out, struct kube_client *c, const char *ns,
                    const char *name, struct error *err)
{
	struct leaseclient *lc;
	struct buf path = BUF_INIT;
	int error;

	*out = NULL;
	/* the namespace comes from the pod or the kubeconfig: checked as any name before a URL */
	if ((error = kube_path(&path, "/apis/coordination.k8s.io/v1", ns, "leases", name, NULL,
	                       "lease", err)) < 0)
		return error;
	buf_release(&path);
	if (!(lc = calloc(1, sizeof(*lc))))
		return error_oom(err);
	lc->c = c;
	snprintf(lc->ns, sizeof(lc->ns), "%s", ns);
	snprintf(lc->name, sizeof(lc->name), "%s", name);
	snprintf(lc->path, sizeof(lc->path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
	         lc->ns);
	*out = lc;
	return 0;
}

void leaseclient_free(struct leaseclient *lc)
{
	if (!lc)
		return;
	json_decref(lc->obj);
	free(lc);
}

static void keep(struct leaseclient *lc, json_t *obj)
{
	json_decref(lc->obj);
	lc->obj = obj;
}

static void copy_str(char *dst, size_t n, const json_t *v)
{
	snprintf(dst, n, "%s", json_is_string(v) ? json_string_value(v) : "");
}

/* The record of a Lease's spec; absent fields are empty or 0, as client-go reads them. */
void leaseclient_record(struct lease_record *out, const json_t *obj)
{
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *d = json_object_get(spec, "leaseDurationSeconds");
	const json_t *t = json_object_get(spec, "leaseTransitions");

	memset(out, 0, sizeof(*out));
	copy_str(out->holder, sizeof(out->holder), json_object_get(spec, "holderIdentity"));
	copy_str(out->acquire_time, sizeof(out->acquire_time),
	         json_object_get(spec, "acquireTime"));
	copy_str(out->renew_time, sizeof(out->renew_time), json_object_get(spec, "renewTime"));
	out->duration_s = json_is_integer(d) ? (long)json_integer_value(d) : 0;
	out->transitions = json_is_integer(t) ? (long)json_integer_value(t) : 0;
}

static json_t *spec_of(const struct lease_record *r)
{
	return json_pack("{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", r->holder,
	                 "leaseDurationSeconds", (json_int_t)r->duration_s, "acquireTime",
	                 r->acquire_time, "renewTime", r->renew_time, "leaseTransitions",
	                 (json_int_t)r->transitions);
}

static int lc_get(void *ctx, struct lease_record *out, struct error *err)
{
	struct leaseclient *lc = ctx;
	char path[600];
	json_t *obj = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", lc->path, lc->name);
	if ((rc = kube_get(&obj, lc->c, path, err)) < 0)
		return rc;
	leaseclient_record(out, obj);
	keep(lc, obj);
	return 0;
}

/* Sends obj (stolen) with method to path; the answer is kept. */
static int send_obj(struct leaseclient *lc, const char *method, const char *path, json_t *obj,
                    struct error *err)
{
	char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_t *got = NULL;
	int rc;

	json_decref(obj);
	if (!body)
		return error_oom(err);
	rc = kube_send(&got, lc->c, method, path, "application/json", body, err);
	free(body);
	if (rc == 0)
		keep(lc, got);
	return rc;
}

static int lc_create(void *ctx, const struct lease_record *rec, struct error *err)
{
	struct leaseclient *lc = ctx;
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o*}", "apiVersion",
	                        "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
	                        lc->name, "namespace", lc->ns, "spec", spec_of(rec));

	return send_obj(lc, "POST", lc->path, obj, err);
}

static int lc_update(void *ctx, const struct lease_record *rec, struct error *err)
{
	struct leaseclient *lc = ctx;
	char path[600];
	json_t *obj;

	if (!lc->obj)
		return error_set(err, IG_EFAIL, "lease '%s/%s': not read yet", lc->ns, lc->name);
	if (!(obj = json_deep_copy(lc->obj)) ||
	    json_object_set_new(obj, "spec", spec_of(rec)) < 0) {
		json_decref(obj);
		return error_oom(err);
	}
	snprintf(path, sizeof(path), "%s/%s", lc->path, lc->name);
	return send_obj(lc, "PUT", path, obj, err);
}

void leaseclient_use(struct leaseclient *lc, struct kube_client *c)
{
	lc->c = c;
}

void leaseclient_bind(struct lease_client *out, struct leaseclient *lc)
{
	out->ctx = lc;
	out->get = lc_get;
	out->create = lc_create;
	out->update = lc_update;
}
