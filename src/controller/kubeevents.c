/* Kubernetes Events for run --kube, correlated as client-go's recorder does (eventcorr.c:
 * a repeat patches count and lastTimestamp, similar ones are combined, a noisy object is
 * throttled; eventTime, a MicroTime, is set so that events.k8s.io/v1 clients can read them),
 * and the same events posted to Flux's notification-controller with
 * --events-addr. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/kube/eventcorr.h"
#include "imageguard/controller/kubeevents.h"
#include "imageguard/controller/kubesource.h"
#include "imageguard/report/report.h"
#include "imageguard/inspect/verify.h"
#include "imageguard/config/config.h"
#include "imageguard/kube/kube.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "imageguard/util/log.h"

#define COMPONENT "imageguard"
#define MAX_MESSAGE EVENTCORR_MAX_MESSAGE

struct kubeevents {
	struct kubesource *source;  /* borrowed: the objects' uid and resourceVersion */
	struct kube_client *client; /* borrowed */
	char image_version[96];     /* "image.toolkit.fluxcd.io/v1" */
	char *addr;                 /* --events-addr, NULL: none */
	struct http_client *http;
	struct eventcorr *corr;
	char host[256];
};

int kubeevents_new(struct kubeevents **out, struct kubesource *source, const char *events_addr,
                   struct error *err)
{
	struct kubeevents *ev = calloc(1, sizeof(*ev));
	struct http_options ho = {0};
	const char *image_api = kubesource_image_api(source);

	*out = NULL;
	if (!ev || eventcorr_new(&ev->corr) < 0 ||
	    (events_addr && !(ev->addr = strdup(events_addr)))) {
		kubeevents_free(ev);
		return error_oom(err);
	}
	ev->source = source;
	ev->client = kubesource_client(source);
	snprintf(ev->image_version, sizeof(ev->image_version), "%s",
	         strncmp(image_api, "/apis/", 6) == 0 ? image_api + 6 : image_api);
	if (gethostname(ev->host, sizeof(ev->host) - 1) < 0)
		snprintf(ev->host, sizeof(ev->host), "imageguard");
	ho.timeout_ms = 5000;
	ho.max_retries = 2;
	if (ev->addr && http_client_new(&ev->http, &ho, err) < 0) {
		kubeevents_free(ev);
		return IG_EFAIL;
	}
	*out = ev;
	return 0;
}

void kubeevents_free(struct kubeevents *ev)
{
	if (!ev)
		return;
	eventcorr_free(ev->corr);
	free(ev->addr);
	http_client_free(ev->http);
	free(ev);
}

bool kubeevents_classify(const struct report_item *it, bool *warning, char *reason, size_t reason_n)
{
	*warning = true;
	if (it->decision == GUARD_ERROR && it->kube_reason) {
		snprintf(reason, reason_n, "%s", it->kube_reason);
		return true;
	}
	if (it->decision == GUARD_ERROR) {
		snprintf(reason, reason_n, "%s",
		         it->reason == GUARD_GIT        ? "GitOperationFailed"
		         : it->reason == GUARD_REGISTRY ? "RegistryOperationFailed"
		                                        : "InvalidConfig");
		return true;
	}
	if (it->decision == GUARD_HOLD && it->reason == GUARD_DOWNGRADE_BLOCKED) {
		snprintf(reason, reason_n, "DowngradeBlocked");
		return true;
	}
	if (it->decision == GUARD_HOLD && it->reason == GUARD_CANDIDATE_MISSING) {
		snprintf(reason, reason_n, "CandidateMissing");
		return true;
	}
	if (it->decision == GUARD_HOLD && it->reason == GUARD_UNVERIFIED) { /* CONTRACT §12 */
		snprintf(reason, reason_n, "SignatureUnverified");
		return true;
	}
	if (it->warnings & GUARD_WARN_CURRENT_MISSING) {
		snprintf(reason, reason_n, "CurrentMissing");
		return true;
	}
	*warning = false;
	if (it->commit && it->decision == GUARD_ROLLBACK) {
		snprintf(reason, reason_n, "RollbackCommitted");
		return true;
	}
	if (it->commit && it->decision == GUARD_UPDATE) {
		snprintf(reason, reason_n, "UpdateCommitted");
		return true;
	}
	return false;
}

/* One line about it: "ns/p apps/a.yaml:7 v1 -> v2 (commit 0123456789ab): message". */
static void describe(char *out, size_t n, const struct report_item *it, const char *reason)
{
	char commit[32] = "";

	if (it->commit)
		snprintf(commit, sizeof(commit), " (commit %.12s)", it->commit);
	(void)reason;
	snprintf(out, n, "%s %s:%zu %s -> %s%s%s%s", it->policy ? it->policy : "-",
	         it->file ? it->file : "-", it->line, it->current ? it->current : "-",
	         it->candidate ? it->candidate : "-", commit, it->message ? ": " : "",
	         it->message ? it->message : "");
}

static void rfc3339(char *out, size_t n, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A MicroTime: RFC 3339 with microseconds, as events.k8s.io/v1's eventTime is written. */
static void microtime(char *out, size_t n, int64_t ns)
{
	char secs[32];

	rfc3339(secs, sizeof(secs), ns);
	snprintf(out, n, "%.19s.%06ldZ", secs, (long)(ns % 1000000000LL / 1000));
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The object reference of kind ns/name, with the uid and resourceVersion it was loaded with
 * (kubectl describe lists the Events whose involvedObject.uid is the object's). */
static json_t *involved(const struct kubeevents *ev, const char *kind, const char *ns,
                        const char *name, const char *uid, const char *rv)
{
	json_t *ref = json_pack("{s:s, s:s, s:s, s:s}", "kind", kind, "namespace", ns, "name", name,
	                        "apiVersion", ev->image_version);

	if (ref && uid)
		json_object_set_new(ref, "uid", json_string(uid));
	if (ref && rv)
		json_object_set_new(ref, "resourceVersion", json_string(rv));
	return ref;
}

static int send_json(struct kubeevents *ev, const char *method, const char *path, const char *type,
                     json_t *body, struct error *err)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int error;

	if (!text)
		return error_oom(err);
	error = kube_send(NULL, ev->client, method, path, type, text, err);
	free(text);
	return error;
}

/* Writes obj (an Event of ns without name, count or message) as the correlator says. */
static void post_kube(struct kubeevents *ev, json_t *obj, const char *ns,
                      const struct eventcorr_event *e, int64_t now)
{
	struct eventcorr_result r;
	struct error err = ERROR_INIT;
	struct buf path = BUF_INIT;
	char first[32], last[32], micro[40];
	json_t *patch = NULL;
	int error = IG_EFAIL;

	if (eventcorr_correlate(&r, ev->corr, e, now) < 0) {
		log_warn("kube.event", "out of memory");
		return;
	}
	if (r.action == EVENTCORR_SKIP)
		return; /* client-go's spam filter: this object had its share */
	rfc3339(first, sizeof(first), r.first_ns);
	rfc3339(last, sizeof(last), now);
	microtime(micro, sizeof(micro), r.first_ns);
	if (r.action == EVENTCORR_PATCH) {
		if ((error = kube_path(&path, "/api/v1", ns, "events", r.name, NULL, "event",
		                       &err)) < 0)
			goto done;
		patch = json_pack("{s:I, s:s, s:s}", "count", (json_int_t)r.count, "lastTimestamp",
		                  last, "message", r.message);
		error = send_json(ev, "PATCH", path.data, "application/strategic-merge-patch+json",
		                  patch, &err);
		json_decref(patch);
		if (error == 0 || err.code != IG_ENOTFOUND)
			goto done;
		error_clear(&err); /* expired or deleted: created again, with its count */
		buf_reset(&path);
	}
	if ((error = kube_path(&path, "/api/v1", ns, "events", NULL, NULL, "event", &err)) < 0)
		goto done;
	if (json_object_set_new(obj, "metadata",
	                        json_pack("{s:s, s:s}", "name", r.name, "namespace", ns)) < 0 ||
	    json_object_set_new(obj, "count", json_integer(r.count)) < 0 ||
	    json_object_set_new(obj, "message", json_string(r.message)) < 0 ||
	    json_object_set_new(obj, "firstTimestamp", json_string(first)) < 0 ||
	    json_object_set_new(obj, "lastTimestamp", json_string(last)) < 0 ||
	    json_object_set_new(obj, "eventTime", json_string(micro)) < 0)
		error = error_oom(&err);
	else
		error = send_json(ev, "POST", path.data, "application/json", obj, &err);
done:
	if (error < 0)
		log_warn("kube.event", "%s", err.msg[0] ? err.msg : "out of memory");
	buf_release(&path);
}

/* The notification-controller payload (fluxcd/pkg apis/event/v1beta1 Event). */
static void post_flux(struct kubeevents *ev, const json_t *ref, bool warning, const char *reason,
                      const char *message, const char *now, const char *revision)
{
	static const char *const headers[] = {"Content-Type: application/json", NULL};
	struct http_response resp = HTTP_RESPONSE_INIT;
	struct http_request req = {0};
	struct error err = ERROR_INIT;
	json_t *e =
	    json_pack("{s:O, s:s, s:s, s:s, s:s, s:s, s:s}", "involvedObject", ref, "severity",
	              warning ? "error" : "info", "timestamp", now, "message", message, "reason",
	              reason, "reportingController", COMPONENT, "reportingInstance", ev->host);
	char *body = NULL, key[160];

	if (e && revision) {
		snprintf(key, sizeof(key), "%.*s/revision", (int)strcspn(ev->image_version, "/"),
		         ev->image_version);
		json_object_set_new(e, "metadata", json_pack("{s:s}", key, revision));
	}
	if (!e || !(body = json_dumps(e, JSON_COMPACT)))
		goto done;
	req.method = "POST";
	req.url = ev->addr;
	req.headers = headers;
	req.form = body;
	req.allow_http = true;
	req.label = "events-addr";
	if (http_do(&resp, ev->http, &req, &err) < 0)
		log_warn("events.post", "--events-addr: %s", err.msg);
	else if (resp.status >= 300)
		log_warn("events.post", "--events-addr: %ld %s", resp.status,
		         http_reason(resp.status));
done:
	http_response_release(&resp);
	json_decref(e);
	free(body);
}

/* One Event on kind ns/name. */
static void emit(struct kubeevents *ev, const char *kind, const char *ns, const char *name,
                 bool warning, const char *reason, const char *message, const char *revision)
{
	json_t *ref, *obj = NULL, *self = kubesource_object(ev->source, kind, ns, name);
	const json_t *md = json_object_get(self, "metadata");
	const char *type = warning ? "Warning" : "Normal",
	           *uid = json_string_value(json_object_get(md, "uid")),
	           *rv = json_string_value(json_object_get(md, "resourceVersion"));
	struct eventcorr_event e;
	int64_t now = now_ns();
	char stamp[32];

	if (uid && !*uid)
		uid = NULL;
	if (rv && !*rv)
		rv = NULL;
	e = (struct eventcorr_event){COMPONENT, ev->host,          kind, ns,     name,
	                             uid,       ev->image_version, type, reason, message,
	                             COMPONENT, ev->host};
	ref = involved(ev, kind, ns, name, uid, rv);
	rfc3339(stamp, sizeof(stamp), now);
	/* with eventTime set (post_kube), an API server requires action and the reporting pair */
	obj = ref ? json_pack("{s:O, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s}", "involvedObject", ref,
	                      "reason", reason, "source", "component", COMPONENT, "host", ev->host,
	                      "type", type, "reportingComponent", COMPONENT, "reportingInstance",
	                      ev->host, "action", "Reconcile")
	          : NULL;
	if (obj)
		post_kube(ev, obj, ns, &e, now);
	if (ref && ev->addr)
		post_flux(ev, ref, warning, reason, message, stamp, revision);
	json_decref(obj);
	json_decref(ref);
	json_decref(self);
}

void kubeevents_record(struct kubeevents *ev, const struct config_automation *a,
                       const struct report_item *const *items, size_t n, const char *failure,
                       long flux_ready)
{
	char reason[64], message[MAX_MESSAGE], revision[200];

	if (flux_ready > 0) {
		snprintf(message, sizeof(message),
		         "Flux's image-automation-controller is running (%ld ready) against this "
		         "automation: it may write the downgrades imageguard refuses",
		         flux_ready);
		emit(ev, "ImageUpdateAutomation", a->ns, a->name, true, "FluxControllerRunning",
		     message, NULL);
	}
	if (failure) {
		snprintf(message, sizeof(message), "%s", failure);
		emit(ev, "ImageUpdateAutomation", a->ns, a->name, true, "GitOperationFailed",
		     message, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		const struct report_item *it = items[i];
		const char *slash = it->policy ? strchr(it->policy, '/') : NULL;
		bool warning;

		if (!kubeevents_classify(it, &warning, reason, sizeof(reason)))
			continue;
		describe(message, sizeof(message), it, reason);
		if (it->commit)
			snprintf(revision, sizeof(revision), "%s@sha1:%s", a->push_branch,
			         it->commit);
		emit(ev, "ImageUpdateAutomation", a->ns, a->name, warning, reason, message,
		     it->commit ? revision : NULL);
		/* an invalid policy's own Event is kubeevents_invalid's */
		if (slash && (size_t)(slash - it->policy) < 64 && !it->object) {
			char ns[64];

			snprintf(ns, sizeof(ns), "%.*s", (int)(slash - it->policy), it->policy);
			emit(ev, "ImagePolicy", ns, slash + 1, warning, reason, message,
			     it->commit ? revision : NULL);
		}
	}
}

void kubeevents_invalid(struct kubeevents *ev, const char *kind, const char *ns, const char *name,
                        const char *reason, const char *message)
{
	char text[MAX_MESSAGE];

	snprintf(text, sizeof(text), "%s", message ? message : "invalid");
	emit(ev, kind, ns, name, true, reason, text, NULL);
}

/* One line about a drifting container: "prod/Deployment/web container web (pod web-0) runs
 * R:v1.0.0 (sha256:...), Git pins v1.1.0 (sha256:...) at apps/web.yaml:7: reason". */
static void describe_drift(char *out, size_t n, const struct verify_result *x)
{
	char pod[160] = "";

	if (x->pod)
		snprintf(pod, sizeof(pod), " (pod %s)", x->pod);
	snprintf(out, n, "%s container %s%s runs %s (%s), Git pins %s (%s) at %s:%zu%s%s",
	         x->workload ? x->workload : "-", x->container ? x->container : "-", pod,
	         x->running_image ? x->running_image : "-",
	         x->running_digest ? x->running_digest : "no digest",
	         x->want_tag ? x->want_tag : "-", x->want_digest ? x->want_digest : "no digest",
	         x->file ? x->file : "-", x->line, x->reason ? ": " : "",
	         x->reason ? x->reason : "");
}

void kubeevents_on_verify(void *arg, const struct config *cfg, const struct verify_report *r)
{
	struct kubeevents *ev = arg;
	char message[MAX_MESSAGE];

	for (size_t i = 0; ev && i < r->len; i++) {
		const struct verify_result *x = &r->items[i];
		const struct config_automation *a;
		const char *slash = x->policy ? strchr(x->policy, '/') : NULL;

		if (x->status != VERIFY_DRIFT || x->automation >= cfg->automations_len)
			continue;
		a = &cfg->automations[x->automation];
		describe_drift(message, sizeof(message), x);
		emit(ev, "ImageUpdateAutomation", a->ns, a->name, true, KUBEEVENTS_REASON_DRIFT,
		     message, NULL);
		if (slash && (size_t)(slash - x->policy) < 64) {
			char ns[64];

			snprintf(ns, sizeof(ns), "%.*s", (int)(slash - x->policy), x->policy);
			emit(ev, "ImagePolicy", ns, slash + 1, true, KUBEEVENTS_REASON_DRIFT,
			     message, NULL);
		}
	}
}
