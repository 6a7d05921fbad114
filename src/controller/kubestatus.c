/* The status of ImageUpdateAutomations after a pass (run --kube), as Flux's
 * image-automation-controller api/v1 shapes it, written by a merge patch of the status
 * subresource. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/controller/kubeevents.h"
#include "imageguard/controller/kubesource.h"
#include "imageguard/util/metrics.h"
#include "imageguard/controller/kubestatus.h"
#include "imageguard/controller/leader.h"
#include "imageguard/pass/shard.h"
#include "imageguard/report/report.h"
#include "imageguard/config/config.h"
#include "imageguard/kube/kube.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define MAX_KINDS 16 /* distinct decision/reason pairs counted in a message */
/* Flux's own image automation, which would write what imageguard refuses. */
#define FLUX_IAC_PATH "/apis/apps/v1/namespaces/flux-system/deployments/image-automation-controller"
#define FLUX_IAC_METRIC "imageguard_flux_image_automation_ready_replicas"

/* 3 error, 2 downgrade-blocked or candidate-missing, 1 other hold, 0 success. */
static int rank(const struct report_item *it)
{
	if (it->decision == GUARD_ERROR)
		return 3;
	if (it->decision == GUARD_HOLD &&
	    (it->reason == GUARD_DOWNGRADE_BLOCKED || it->reason == GUARD_CANDIDATE_MISSING))
		return 2;
	return it->decision == GUARD_HOLD && it->reason != GUARD_OVERRIDE ? 1 : 0;
}

/* "downgrade-blocked" -> "DowngradeBlocked". */
static void camel(char *out, size_t n, const char *name)
{
	size_t j = 0;
	bool up = true;

	for (const char *p = name; *p && j + 1 < n; p++) {
		if (*p == '-' || *p == '_') {
			up = true;
			continue;
		}
		out[j++] = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
		up = false;
	}
	out[j] = '\0';
}

static void reason_of(char *out, size_t n, const struct report_item *it)
{
	if (it->reason == GUARD_OVERRIDE)
		snprintf(out, n, "RollbackInForce");
	else if (it->decision == GUARD_ERROR && it->kube_reason)
		snprintf(out, n, "%s", it->kube_reason);
	else if (it->decision == GUARD_ERROR)
		snprintf(out, n, "%s",
		         it->reason == GUARD_GIT        ? "GitOperationFailed"
		         : it->reason == GUARD_REGISTRY ? "RegistryOperationFailed"
		                                        : "InvalidConfig");
	else if (it->decision == GUARD_HOLD)
		camel(out, n, guard_reason_name(it->reason));
	else
		snprintf(out, n, "Succeeded");
}

/* "3 markers: 2 none/up-to-date, 1 hold/downgrade-blocked" (kinds in order of first sight). */
static void count_message(struct buf *b, const struct report_item *const *items, size_t n)
{
	struct kind {
		const struct report_item *first;
		size_t count;
	} kinds[MAX_KINDS];
	size_t nk = 0, other = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < nk; k++)
			if (kinds[k].first->decision == items[i]->decision &&
			    kinds[k].first->reason == items[i]->reason)
				break;
		if (k == nk && nk == MAX_KINDS) {
			other++;
			continue;
		}
		if (k == nk)
			kinds[nk++] = (struct kind){items[i], 0};
		kinds[k].count++;
	}
	buf_printf(b, "%zu marker%s:", n, n == 1 ? "" : "s");
	for (size_t k = 0; k < nk; k++)
		buf_printf(b, "%s %zu %s/%s", k ? "," : "", kinds[k].count,
		           guard_decision_name(kinds[k].first->decision),
		           guard_reason_name(kinds[k].first->reason));
	if (other)
		buf_printf(b, ", %zu other", other);
}

bool kubestatus_ready(char *reason, size_t reason_n, char *message, size_t message_n,
                      const struct report_item *const *items, size_t n, const char *failure)
{
	const struct report_item *worst = NULL;
	struct buf b = BUF_INIT;

	if (failure) {
		snprintf(reason, reason_n, "GitOperationFailed");
		snprintf(message, message_n, "%s", failure);
		return false;
	}
	if (!n) {
		snprintf(reason, reason_n, "Succeeded");
		snprintf(message, message_n, "no markers found");
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (!worst || rank(items[i]) > rank(worst) ||
		    (rank(worst) == 0 && items[i]->reason == GUARD_OVERRIDE))
			worst = items[i];
	reason_of(reason, reason_n, worst);
	count_message(&b, items, n);
	if (worst->decision == GUARD_ERROR && worst->message)
		buf_printf(&b, "; %s: %s", worst->policy, worst->message);
	snprintf(message, message_n, "%s", b.data ? b.data : "");
	buf_release(&b);
	return worst->decision != GUARD_ERROR;
}

/* ---- the patch ---- */

static void rfc3339(char *out, size_t n, time_t t)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The value a policy holds after the pass: what it wrote, else what is committed; the
 * digest only where the policy reflects digests (as Flux's ImageRef). */
static json_t *image_ref(const struct config *cfg, const struct report_item *it)
{
	const struct config_policy *pol = config_find_policy_id(cfg, it->policy);
	bool wrote = it->decision == GUARD_UPDATE || it->decision == GUARD_ROLLBACK;
	const char *tag = wrote && it->commit ? it->candidate : it->current;
	const char *digest = wrote && it->commit ? it->digest : it->current_digest;
	json_t *ref;

	if (!tag || !it->image)
		return NULL;
	ref = json_pack("{s:s, s:s}", "name", it->image, "tag", tag);
	if (ref && digest && pol && pol->reflect != CONFIG_REFLECT_NEVER)
		json_object_set_new(ref, "digest", json_string(digest));
	return ref;
}

/* observedPolicies: policy name -> ImageRef; names of the old map that are gone are null
 * (a merge patch removes them). */
static json_t *observed(const struct config *cfg, const struct report_item *const *items, size_t n,
                        const json_t *old)
{
	json_t *m = json_object(), *v;
	const char *k;

	if (!m)
		return NULL;
	json_object_foreach((json_t *)old, k, v) json_object_set_new(m, k, json_null());
	for (size_t i = 0; i < n; i++) {
		const char *slash = items[i]->policy ? strchr(items[i]->policy, '/') : NULL;
		json_t *ref = image_ref(cfg, items[i]);

		if (ref && slash)
			json_object_set_new(m, slash + 1, ref);
		else
			json_decref(ref);
	}
	return m;
}

/* The Ready condition; lastTransitionTime kept while its status stays. */
static json_t *ready_condition(bool ok, const char *reason, const char *message,
                               json_int_t generation, const json_t *old_status, const char *now)
{
	const json_t *c;
	const char *since = now;
	size_t i;

	json_array_foreach(json_object_get(old_status, "conditions"), i, c)
	{
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *st = json_string_value(json_object_get(c, "status"));
		const char *t = json_string_value(json_object_get(c, "lastTransitionTime"));

		if (type && strcmp(type, "Ready") == 0 && st && t &&
		    strcmp(st, ok ? "True" : "False") == 0)
			since = t;
	}
	return json_pack("[{s:s, s:s, s:I, s:s, s:s, s:s}]", "type", "Ready", "status",
	                 ok ? "True" : "False", "observedGeneration", generation,
	                 "lastTransitionTime", since, "reason", reason, "message", message);
}

struct one {
	long flux_ready; /* ready replicas of Flux's image-automation-controller */
	const struct config *cfg;
	const char *id, *ns, *name; /* the automation */
	/* the automation's entry when it was left out of the configuration, else NULL */
	const struct config_invalid *invalid;
	const struct report_item **items;
	size_t n;
	const char *failure;
	const char *commit; /* the pass's commit, NULL: none */
};

static json_t *status_patch(const struct one *o, const json_t *loaded, const json_t *live)
{
	const json_t *md = json_object_get(loaded, "metadata");
	const json_t *old = json_object_get(live, "status");
	json_int_t gen = json_integer_value(json_object_get(md, "generation"));
	const char *req = json_string_value(
	    json_object_get(json_object_get(md, "annotations"), "reconcile.fluxcd.io/requestedAt"));
	char reason[64], message[1024], now[32];
	json_t *st = json_object();
	bool ok;

	if (!st)
		return NULL;
	rfc3339(now, sizeof(now), time(NULL));
	if (o->invalid) { /* as Flux: Ready=False with its reason, nothing else moves */
		snprintf(reason, sizeof(reason), "%s",
		         o->invalid->reason ? o->invalid->reason : CONFIG_REASON_INVALID_CONFIG);
		snprintf(message, sizeof(message), "%s",
		         o->invalid->message ? o->invalid->message : "invalid");
		json_object_set_new(st, "observedGeneration", json_integer(gen));
		json_object_set_new(st, "conditions",
		                    ready_condition(false, reason, message, gen, old, now));
		return json_pack("{s:o}", "status", st);
	}
	ok = kubestatus_ready(reason, sizeof(reason), message, sizeof(message), o->items, o->n,
	                      o->failure);
	if (o->flux_ready > 0)
		snprintf(message + strlen(message), sizeof(message) - strlen(message),
		         "; WARNING: Flux's image-automation-controller is running (%ld ready) and "
		         "may write the changes imageguard refuses: scale it to 0",
		         o->flux_ready);
	json_object_set_new(st, "observedGeneration", json_integer(gen));
	json_object_set_new(st, "conditions", ready_condition(ok, reason, message, gen, old, now));
	json_object_set_new(st, "lastAutomationRunTime", json_string(now));
	json_object_set_new(
	    st, "observedPolicies",
	    observed(o->cfg, o->items, o->n, json_object_get(old, "observedPolicies")));
	if (o->commit) {
		json_object_set_new(st, "lastPushCommit", json_string(o->commit));
		json_object_set_new(st, "lastPushTime", json_string(now));
	}
	if (req)
		json_object_set_new(st, "lastHandledReconcileAt", json_string(req));
	return json_pack("{s:o}", "status", st);
}

static void write_status(struct kubesource *ks, const struct one *o)
{
	struct kube_client *c = kubesource_client(ks);
	json_t *loaded = kubesource_automation(ks, o->id), *live = NULL, *patch = NULL;
	struct error err = ERROR_INIT;
	struct buf path = BUF_INIT, sub = BUF_INIT;
	char *body = NULL;

	if (!loaded ||
	    kube_path(&path, kubesource_image_api(ks), o->ns, "imageupdateautomations", o->name,
	              NULL, "automation", &err) < 0 ||
	    kube_path(&sub, kubesource_image_api(ks), o->ns, "imageupdateautomations", o->name,
	              "status", "automation", &err) < 0 ||
	    kube_get(&live, c, path.data, &err) < 0 || !(patch = status_patch(o, loaded, live)) ||
	    !(body = json_dumps(patch, JSON_COMPACT))) {
		if (loaded)
			log_warn("kube.status", "automation '%s': %s", o->id,
			         err.msg[0] ? err.msg : "out of memory");
		goto done;
	}
	if (kube_send(NULL, c, "PATCH", sub.data, "application/merge-patch+json", body, &err) < 0)
		log_warn("kube.status", "automation '%s': %s", o->id, err.msg);
done:
	buf_release(&path);
	buf_release(&sub);
	free(body);
	json_decref(patch);
	json_decref(live);
	json_decref(loaded);
}

/* Whether item belongs to automation a: its markers' items, and the errors of invalid policies
 * (reported without an automation) in a's namespace, the policies a can select. */
static bool is_its(const struct report_item *it, const struct config_automation *a)
{
	size_t nl = strlen(a->ns);

	if (it->automation)
		return strcmp(it->automation, a->id) == 0;
	return it->decision == GUARD_ERROR && it->policy && strncmp(it->policy, a->ns, nl) == 0 &&
	       it->policy[nl] == '/';
}

long kubestatus_flux_running(struct kube_client *c)
{
	json_t *d = NULL;
	struct error err = ERROR_INIT;
	long ready = 0;
	int error = kube_get(&d, c, FLUX_IAC_PATH, &err);

	if (error == 0)
		ready = (long)json_integer_value(
		    json_object_get(json_object_get(d, "status"), "readyReplicas"));
	else if (error != IG_ENOTFOUND)
		log_debug("kube.flux", "%s", err.msg); /* forbidden or unreachable: unknown */
	json_decref(d);
	return ready;
}

/* Loud when Flux's own controller runs beside imageguard: log, metric, Event, Ready message. */
static long check_flux(struct kubesource *ks, struct metrics *m)
{
	static const char *const none[] = {NULL};
	long ready = kubestatus_flux_running(kubesource_client(ks));

	if (m) {
		metrics_declare(m, FLUX_IAC_METRIC, METRICS_GAUGE,
		                "Ready replicas of Flux's image-automation-controller (should be 0 "
		                "beside imageguard)",
		                NULL, 0, NULL, 0); /* declared already: IG_EINVALID, fine */
		metrics_set(m, FLUX_IAC_METRIC, none, (double)ready);
	}
	if (ready > 0)
		log_warn(
		    "kube.flux",
		    "Flux's image-automation-controller has %ld ready replicas: it may write the "
		    "downgrades imageguard refuses; scale it to 0",
		    ready);
	return ready;
}

/* The objects left out of the configuration, as Flux shows them: an automation gets
 * Ready=False with Flux's reason and the one-line error, and a Warning Event; a policy a
 * Warning Event (imageguard writes no ImagePolicy status). */
static void publish_invalid(struct kubesource *ks, struct kubeevents *ev, const struct config *cfg,
                            struct leader *leader)
{
	for (size_t i = 0; i < cfg->invalid_len; i++) {
		const struct config_invalid *v = &cfg->invalid[i];
		const char *reason = v->reason ? v->reason : CONFIG_REASON_INVALID_CONFIG;
		struct one o = {0, cfg, v->id, v->ns, v->name, v, NULL, 0, NULL, NULL};

		if (!v->id || (leader && !leader_is_leading(leader)))
			continue;
		if (v->kind == CONFIG_KIND_AUTOMATION) {
			write_status(ks, &o);
			if (ev)
				kubeevents_invalid(ev, "ImageUpdateAutomation", v->ns, v->name,
				                   reason, v->message);
		} else if (v->kind == CONFIG_KIND_POLICY && ev) {
			kubeevents_invalid(ev, "ImagePolicy", v->ns, v->name, reason, v->message);
		}
	}
}

void kubestatus_publish(struct kubesource *ks, struct kubeevents *ev, struct metrics *m,
                        const struct config *cfg, const struct report *r,
                        const struct shard_spec *shard, struct leader *leader)
{
	const struct report_item **items = calloc(r->len + 1, sizeof(*items));
	long flux_ready = check_flux(ks, m);

	if (!items) {
		log_error("kube.status", "out of memory");
		return;
	}
	for (size_t i = 0; i < cfg->automations_len; i++) {
		const struct config_automation *a = &cfg->automations[i];
		struct one o = {flux_ready, cfg, a->id, a->ns, a->name, NULL, items, 0, NULL, NULL};

		if (a->suspend)
			continue; /* as Flux: a suspended object's status stays as it was */
		if (!shard_owns(shard, a))
			continue; /* its own shard writes it */
		if (leader && !leader_is_leading(leader)) {
			/* deposed mid-way: the new leader writes these (the client is cut anyway,
			 * and one failure per automation would flood the log) */
			log_warn(
			    "kube.status",
			    "lease '%s' lost: status not written from automation '%s' on (%zu of "
			    "%zu automations), the new leader writes them",
			    leader_lease_name(leader), a->id, cfg->automations_len - i,
			    cfg->automations_len);
			break;
		}
		for (size_t j = 0; j < r->len; j++)
			if (is_its(&r->items[j], a)) {
				items[o.n++] = &r->items[j];
				if (r->items[j].commit)
					o.commit = r->items[j].commit;
			}
		for (size_t j = 0; j < r->failures_len; j++)
			if (strcmp(r->failures[j].automation, a->id) == 0)
				o.failure = r->failures[j].message;
		write_status(ks, &o);
		if (ev)
			kubeevents_record(ev, a, items, o.n, o.failure, flux_ready);
	}
	free(items);
	if (!shard || !shard->shards || shard->index == 0) /* shard 0 reports them */
		publish_invalid(ks, ev, cfg, leader);
}
