/* Verification results: the per-container verdict, appending and counting results, the drift
 * log line and the imageguard_running_drift gauge. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/kube/kubeimage.h"
#include "imageguard/util/log.h"
#include "imageguard/util/metrics.h"
#include "imageguard/inspect/verify.h"
#include "imageguard/util/vec.h"
#include "verify_private.h"
#include "imageguard/report/audit.h"

const char *verify_status_name(enum verify_status s)
{
	switch (s) {
	case VERIFY_OK:
		return "ok";
	case VERIFY_DRIFT:
		return "drift";
	case VERIFY_NOT_RUNNING:
		return "not-running";
	case VERIFY_UNKNOWN:
		break;
	}
	return "unknown";
}

/* "sha256:" and 12 hex digits: enough to tell digests apart in a message. */
static int short_digest(struct buf *b, const char *d)
{
	return buf_printf(b, "%.19s", d);
}

static int compare_into(enum verify_status *out, struct buf *why, const char *want_tag,
                        const char *want_digest, const char *running_image, const char *image_id)
{
	struct error err = ERROR_INIT;
	char *digest = NULL, *tag = NULL;
	int error, rc;

	if ((error = kubeimage_tag(&tag, running_image)) < 0)
		goto done;
	rc = kubeimage_digest(&digest, image_id, &err);
	if (rc == IG_EFAIL) {
		error = rc;
		goto done;
	}
	if (want_tag && tag && strcmp(want_tag, tag) != 0) {
		*out = VERIFY_DRIFT;
		error = buf_printf(why, "runs tag %s, Git has %s", tag, want_tag);
	} else if (rc < 0 && (!image_id || !*image_id)) {
		*out = VERIFY_NOT_RUNNING;
		error = buf_puts(why, "container has not started (no imageID)");
	} else if (rc < 0) {
		*out = VERIFY_UNKNOWN;
		error = buf_puts(why, err.msg);
	} else if (!want_digest) {
		*out = VERIFY_UNKNOWN;
		error = buf_puts(why, "the digest of the committed tag is unknown");
	} else if (strcmp(digest, want_digest) != 0) {
		*out = VERIFY_DRIFT;
		if ((error = buf_puts(why, "runs ")) < 0 ||
		    (error = short_digest(why, digest)) < 0 ||
		    (error = buf_puts(why, ", Git wants ")) < 0 ||
		    (error = short_digest(why, want_digest)) < 0)
			goto done;
		if (want_tag)
			error = buf_printf(why, " (%s)", want_tag);
	} else {
		*out = VERIFY_OK;
		error = buf_puts(why, "runs the digest Git wants");
	}
done:
	free(digest);
	free(tag);
	return error < 0 ? IG_EFAIL : 0;
}

int verify_compare(enum verify_status *out, char **reason, const char *want_tag,
                   const char *want_digest, const char *running_image, const char *image_id)
{
	struct buf why = BUF_INIT;
	int error = compare_into(out, &why, want_tag, want_digest, running_image, image_id);

	*reason = error < 0 ? NULL : buf_detach(&why);
	buf_release(&why);
	return error < 0 || !*reason ? IG_EFAIL : 0;
}

static void result_release(struct verify_result *x)
{
	free(x->policy);
	free(x->file);
	free(x->workload);
	free(x->kind);
	free(x->ns);
	free(x->name);
	free(x->container);
	free(x->pod);
	free(x->image);
	free(x->want_tag);
	free(x->want_digest);
	free(x->running_image);
	free(x->running_digest);
	free(x->reason);
}

void verify_report_release(struct verify_report *r)
{
	for (size_t i = 0; i < r->len; i++)
		result_release(&r->items[i]);
	free(r->items);
	memset(r, 0, sizeof(*r));
}

static int dup(char **dst, const char *s)
{
	*dst = NULL;
	return !s || (*dst = strdup(s)) ? 0 : -1;
}

static int fill(struct verify_result *x, const struct verify_want *w, const char *pod)
{
	const struct workload_container *c = w->c;
	struct buf b = BUF_INIT;

	if (c && buf_printf(&b, "%s/%s/%s", c->ns, c->kind, c->name) < 0)
		return -1;
	x->workload = c ? buf_detach(&b) : NULL;
	x->line = w->m ? w->m->line : 0;
	if (dup(&x->policy, w->m ? w->m->policy : NULL) ||
	    dup(&x->file, w->m ? w->m->file : NULL) || dup(&x->kind, c ? c->kind : NULL) ||
	    dup(&x->ns, c ? c->ns : NULL) || dup(&x->name, c ? c->name : NULL) ||
	    dup(&x->container, c ? c->container : NULL) || dup(&x->pod, pod) ||
	    dup(&x->image, c      ? c->image
	                   : w->m ? w->m->value
	                          : NULL) ||
	    dup(&x->want_tag, w->tag) || dup(&x->want_digest, w->digest))
		return -1;
	return 0;
}

/* Appends x (taking its strings) and counts it; logs a drift. */
static int append(struct verify_report *r, struct verify_result *x)
{
	void *p = vec_reserve(r->items, &r->cap, r->len, sizeof(*r->items), 16);

	if (!p)
		return IG_EFAIL;
	r->items = p;
	r->items[r->len++] = *x;
	r->counts[x->status]++;
	if (x->failed)
		r->failures++;
	if (x->status == VERIFY_DRIFT)
		log_warn("verify.drift", "policy '%s' %s '%s' container '%s' pod '%s': %s",
		         x->policy ? x->policy : "-", x->kind, x->workload, x->container,
		         x->pod ? x->pod : "-", x->reason);
	return 0;
}

int verify_add(struct verify_report *r, const struct verify_want *w, const char *pod,
               enum verify_status status, bool failed, const char *fmt, ...)
{
	struct verify_result x;
	struct buf why = BUF_INIT;
	va_list ap;
	int error;

	memset(&x, 0, sizeof(x));
	va_start(ap, fmt);
	error = buf_vprintf(&why, fmt, ap);
	va_end(ap);
	x.status = status;
	x.failed = failed;
	if (error < 0 || fill(&x, w, pod) < 0 || !(x.reason = buf_detach(&why)) ||
	    append(r, &x) < 0) {
		buf_release(&why);
		result_release(&x);
		return IG_EFAIL;
	}
	return 0;
}

int verify_add_container(struct verify_report *r, const struct verify_want *w, const char *pod,
                         const json_t *status, const char *spec_image)
{
	const char *image = json_string_value(json_object_get(status, "image"));
	const char *id = json_string_value(json_object_get(status, "imageID"));
	struct error err = ERROR_INIT;
	struct verify_result x;
	struct buf why = BUF_INIT;
	char *digest = NULL;
	int error = IG_EFAIL;

	memset(&x, 0, sizeof(x));
	if (fill(&x, w, pod) < 0 || dup(&x.running_image, image) < 0)
		goto fail;
	if (!status) {
		x.status = VERIFY_NOT_RUNNING;
		if (buf_puts(&why, "the pod reports no status for the container yet") < 0)
			goto fail;
	} else if (compare_into(&x.status, &why, w->tag, w->digest, image, id) < 0) {
		goto fail;
	}
	if (kubeimage_digest(&digest, id, &err) == 0)
		x.running_digest = digest;
	if (x.status == VERIFY_UNKNOWN && !w->digest && w->why_no_digest &&
	    buf_printf(&why, ": %s", w->why_no_digest) < 0)
		goto fail;
	x.failed = x.status == VERIFY_UNKNOWN && !w->digest && w->resolved;
	if (x.status == VERIFY_DRIFT && spec_image && w->c &&
	    strcmp(spec_image, w->c->image) != 0 &&
	    buf_printf(&why, "; the cluster's %s still specifies %s (Git's change not applied)",
	               w->c->kind, spec_image) < 0)
		goto fail;
	if (!(x.reason = buf_detach(&why)) || append(r, &x) < 0)
		goto fail;
	return 0;
fail:
	buf_release(&why);
	result_release(&x);
	return error;
}

int verify_metrics_declare(struct metrics *m)
{
	static const char *const labels[] = {"policy", "workload"};

	return metrics_declare(m, VERIFY_METRIC_DRIFT, METRICS_GAUGE,
	                       "1 when a container of the workload runs another image than Git "
	                       "pins for the policy, else 0",
	                       labels, 2, NULL, 0);
}

/* 1: a drifting container; 0: checked, none drifts; -1: only failed checks (unknown). */
static int pair_value(const struct verify_report *r, const char *policy, const char *workload)
{
	int v = -1;

	for (size_t i = 0; i < r->len; i++) {
		const struct verify_result *x = &r->items[i];

		if (!x->policy || !x->workload || strcmp(x->policy, policy) != 0 ||
		    strcmp(x->workload, workload) != 0 || x->failed)
			continue;
		if (x->status == VERIFY_DRIFT)
			return 1;
		v = 0;
	}
	return v;
}

int verify_metrics_publish(struct metrics *m, const struct verify_report *r)
{
	int error;

	/* A failed check says nothing about what runs: with failures in the report, the
	 * series are updated rather than replaced, so a pair that could not be checked keeps
	 * its last known value (no false all-clear while the API is down). */
	if (!r->failures && (error = metrics_clear(m, VERIFY_METRIC_DRIFT)) < 0)
		return error;
	for (size_t i = 0; i < r->len; i++) {
		const struct verify_result *x = &r->items[i];
		const char *values[2] = {x->policy, x->workload};
		int v;

		if (!x->policy || !x->workload || (v = pair_value(r, x->policy, x->workload)) < 0)
			continue;
		if ((error = metrics_set(m, VERIFY_METRIC_DRIFT, values, (double)v)) < 0)
			return error;
	}
	return 0;
}

void verify_result_record(struct verify_record *out, const struct verify_result *x)
{
	*out = (struct verify_record){.policy = x->policy,
	                              .workload = x->workload,
	                              .kind = x->kind,
	                              .ns = x->ns,
	                              .name = x->name,
	                              .container = x->container,
	                              .pod = x->pod,
	                              .file = x->file,
	                              .line = x->line,
	                              .image = x->image,
	                              .expected_tag = x->want_tag,
	                              .expected_digest = x->want_digest,
	                              .running_image = x->running_image,
	                              .running_digest = x->running_digest,
	                              .status = verify_status_name(x->status),
	                              .reason = x->reason};
}
