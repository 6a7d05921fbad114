/* One verification pass: markers in each automation's checkout -> the workload container
 * each one sets -> that workload's pods in the cluster -> running digest vs Git's. The
 * per-container comparison, the report and the metrics live in verify_report.c. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/config/config.h"
#include "imageguard/registry/creds.h"
#include "imageguard/pass/scan.h"
#include "imageguard/pass/headcache.h"
#include "imageguard/util/strvec.h"
#include "imageguard/util/vec.h"
#include "imageguard/util/error.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubename.h"
#include "imageguard/util/log.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/safefile.h"
#include "imageguard/registry/registry.h"
#include "imageguard/pass/shard.h"
#include "imageguard/inspect/verify.h"
#include "imageguard/markers/workload.h"
#include "verify_private.h"

/* A workload read once per pass: its live object and pods, or why not. */
struct live {
	char *key; /* "ns/Kind/name" */
	json_t *object;
	json_t *pods; /* array */
	int rc;
	char *message;
};

struct pass {
	const struct verify_options *o;
	struct verify_report *out;
	struct live *lives;
	size_t lives_len, lives_cap;
	struct headcache *heads; /* manifest HEADs, once per policy, image and tag */
	struct strvec notes;     /* why an image could not be resolved, for the report */
};

/* ---- registry: the digest a committed tag resolves to ---- */

/* Credentials and CA of the policy's repository when the Git image is that repository. */
static int load_target(struct registry_target *t, struct registry_creds *creds, char **ca_file,
                       const struct config_policy *pol, const struct imageref *ref,
                       const char *secrets_dir, struct error *err)
{
	const struct config_repository *r = pol ? pol->repository : NULL;
	int error;

	memset(t, 0, sizeof(*t));
	t->ref = ref;
	t->creds = creds;
	if (!r || strcmp(r->ref.registry, ref->registry) != 0 ||
	    strcmp(r->ref.repository, ref->repository) != 0)
		return 0; /* another image than the policy's: anonymous, TLS, system CAs */
	t->insecure = r->insecure;
	t->timeout_ms = (long)r->timeout_ms;
	if ((error = scan_load_access(creds, ca_file, r, secrets_dir, err)) == 0)
		t->ca_file = *ca_file;
	return error;
}

/* The digest a committed image resolves to (*digest), or why not (*why); both borrowed until
 * the pass ends. Returns 0 or IG_EFAIL (out of memory). */
static int resolve(struct pass *p, const char *image, const char *policy_id, const char **digest,
                   const char **why)
{
	const struct config_policy *pol = config_find_policy_id(p->o->config, policy_id);
	struct registry_creds creds = REGISTRY_CREDS_INIT;
	struct imageref ref = IMAGEREF_INIT;
	struct registry_target t;
	struct error err = ERROR_INIT;
	struct headcache_entry *h = NULL;
	char *ca_file = NULL;
	struct buf key = BUF_INIT;
	const char *tag;
	int error = 0;

	*digest = *why = NULL;
	if (imageref_parse(&ref, image, IMAGEREF_ALLOW_TAG | IMAGEREF_ALLOW_DIGEST, &err) < 0)
		goto failed;
	/* keyed by policy and image: the policy decides whose credentials the HEAD carries */
	tag = ref.tag ? ref.tag : "latest";
	if (buf_printf(&key, "%s %s", policy_id, image) < 0) {
		error = IG_EFAIL;
		goto done;
	}
	if (!(h = headcache_find(p->heads, key.data, tag))) {
		if (load_target(&t, &creds, &ca_file, pol, &ref, p->o->secrets_dir, &err) < 0)
			goto failed;
		if (!(h = headcache_get(p->heads, p->o->registry, &t, key.data, tag))) {
			error = IG_EFAIL;
			goto done;
		}
	}
	*digest = h->digest;
	*why = h->error;
	if (h->rc < 0 && !h->logged) {
		h->logged = true;
		log_warn("verify.registry", "image '%s': %s", image, h->error);
	}
	goto done;
failed:
	log_warn("verify.registry", "image '%s': %s", image, err.msg);
	if ((error = strvec_push(&p->notes, err.msg)) == 0)
		*why = p->notes.items[p->notes.len - 1];
done:
	buf_release(&key);
	free(ca_file);
	creds_release(&creds);
	imageref_release(&ref);
	return error < 0 ? IG_EFAIL : 0;
}

/* ---- the cluster: a workload's live object and its pods ---- */

static int read_live(struct live *l, struct pass *p, const struct workload_container *c,
                     struct error *err)
{
	struct buf path = BUF_INIT;
	char *obj_path = NULL, *selector = NULL;
	int error;

	/* names from Git content: checked before they reach a URL */
	if (!kubename_is_namespace(c->ns) || !kubename_is_name(c->name))
		return error_set(err, IG_EINVALID, "%s '%s/%s': not a valid Kubernetes name",
		                 c->kind, c->ns, c->name);
	if (!(obj_path = workload_api_path(c->kind, c->ns, c->name)))
		return error_oom(err);
	if ((error = kube_get(&l->object, p->o->kube, obj_path, err)) < 0)
		goto done;
	if (strcmp(c->kind, "Pod") == 0) {
		if (!(l->pods = json_pack("[O]", l->object)))
			error = error_oom(err);
		goto done;
	}
	if ((error = kube_label_selector(
	         &selector, json_object_get(json_object_get(l->object, "spec"), "selector"), err)) <
	    0) {
		error_prefix(err, "%s '%s/%s'", c->kind, c->ns, c->name);
		goto done;
	}
	if ((error = kube_path(&path, "/api/v1", c->ns, "pods", NULL, NULL, c->kind, err)) < 0)
		goto done;
	error = kube_list(&l->pods, p->o->kube, path.data, selector, err);
done:
	free(obj_path);
	free(selector);
	buf_release(&path);
	return error;
}

static struct live *live_for(struct pass *p, const struct workload_container *c)
{
	struct buf key = BUF_INIT;
	struct error err = ERROR_INIT;
	struct live *l;

	if (buf_printf(&key, "%s/%s/%s", c->ns, c->kind, c->name) < 0)
		return NULL;
	for (size_t i = 0; i < p->lives_len; i++)
		if (strcmp(p->lives[i].key, key.data) == 0) {
			buf_release(&key);
			return &p->lives[i];
		}
	if (!(l = vec_reserve(p->lives, &p->lives_cap, p->lives_len, sizeof(*l), 8))) {
		buf_release(&key);
		return NULL;
	}
	p->lives = l;
	l = &p->lives[p->lives_len++];
	memset(l, 0, sizeof(*l));
	l->key = buf_detach(&key);
	if ((l->rc = read_live(l, p, c, &err)) < 0) {
		l->message = strdup(err.msg);
		if (l->rc != IG_ENOTFOUND)
			log_error("verify.kube", "%s", err.msg);
	}
	return l;
}

/* ---- one marker ---- */

/* The image the live object's pod template gives container (borrowed), or NULL. */
static const char *live_image(const json_t *object, const struct workload_container *c)
{
	const json_t *spec = json_object_get(object, "spec"), *list, *item;
	size_t i;

	if (strcmp(c->kind, "Pod") != 0)
		spec = json_object_get(json_object_get(spec, "template"), "spec");
	list = json_object_get(spec, c->init ? "initContainers" : "containers");
	json_array_foreach(list, i, item)
	{
		const char *name = json_string_value(json_object_get(item, "name"));
		if (name && strcmp(name, c->container) == 0)
			return json_string_value(json_object_get(item, "image"));
	}
	return NULL;
}

static bool pod_counts(const json_t *pod, const char *kind)
{
	const char *phase =
	    json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

	if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
		return false; /* terminating: on its way out of a rollout */
	if (strcmp(kind, "Job") == 0 || strcmp(kind, "Pod") == 0)
		return true;
	return !phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0);
}

static const json_t *container_status(const json_t *pod, const struct workload_container *c)
{
	const json_t *list =
	    json_object_get(json_object_get(pod, "status"),
	                    c->init ? "initContainerStatuses" : "containerStatuses");
	const json_t *st;
	size_t i;

	json_array_foreach(list, i, st)
	{
		const char *name = json_string_value(json_object_get(st, "name"));
		if (name && strcmp(name, c->container) == 0)
			return st;
	}
	return NULL;
}

static int verify_pods(struct pass *p, const struct verify_want *w, const struct live *l)
{
	const char *spec_image = live_image(l->object, w->c);
	const json_t *pod;
	size_t i, n = 0;
	int error;

	json_array_foreach(l->pods, i, pod)
	{
		const char *name =
		    json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
		if (!pod_counts(pod, w->c->kind))
			continue;
		n++;
		if ((error = verify_add_container(p->out, w, name, container_status(pod, w->c),
		                                  spec_image)) < 0)
			return error;
	}
	if (n)
		return 0;
	return verify_add(p->out, w, NULL, VERIFY_NOT_RUNNING, false,
	                  "no running pod matches the %s's selector", w->c->kind);
}

static int verify_marker(struct pass *p, const struct marker *m, const struct workload_container *c)
{
	struct verify_want w = {m, c, NULL, NULL, NULL, false};
	struct imageref_parts parts;
	struct live *l;
	int error = IG_EFAIL;

	if (strcmp(c->kind, "CronJob") == 0)
		return verify_add(p->out, &w, NULL, VERIFY_UNKNOWN, false,
		                  "pods of a CronJob are not verified");
	imageref_split(&parts, c->image, strlen(c->image));
	if (parts.tag_len && !(w.tag = strndup(c->image + parts.tag_start, parts.tag_len)))
		goto done;
	if (!parts.tag_len && !parts.digest_len && !(w.tag = strdup("latest")))
		goto done; /* Kubernetes pulls :latest for a bare name */
	if (parts.digest_len) {
		if (!(w.digest = strndup(c->image + parts.digest_start, parts.digest_len)))
			goto done;
	} else {
		const char *digest, *why;

		if (resolve(p, c->image, m->policy, &digest, &why) < 0 ||
		    (digest && !(w.digest = strdup(digest))))
			goto done;
		w.why_no_digest = why;
		w.resolved = true;
	}
	if (!(l = live_for(p, c)))
		goto done;
	if (l->rc == IG_ENOTFOUND)
		error = verify_add(p->out, &w, NULL, VERIFY_NOT_RUNNING, false,
		                   "%s not found in the cluster", c->kind);
	else if (l->rc < 0)
		error = verify_add(p->out, &w, NULL, VERIFY_UNKNOWN, true, "%s", l->message);
	else
		error = verify_pods(p, &w, l);
done:
	free(w.tag);
	free(w.digest);
	return error;
}

/* ---- markers of one checkout ---- */

static int verify_file(struct pass *p, const char *root, const struct marker *ms, size_t n)
{
	struct buf data = BUF_INIT_MAX(MARKERS_MAX_FILE_SIZE);
	struct workload_set ws = WORKLOAD_SET_INIT;
	struct error err = ERROR_INIT;
	int error = 0, scan;

	/* the checkout is untrusted: no link is followed, only a regular file is read */
	if ((scan = safefile_read(&data, root, ms[0].file, &err)) == 0)
		scan = workload_scan_buffer(&ws, ms[0].file, data.data ? data.data : "", data.len,
		                            &err);
	else {
		char why[256];

		snprintf(why, sizeof(why), "%s", safefile_reason(&err));
		error_set(&err, scan, "'%s': cannot read: %s", ms[0].file, why);
	}
	for (size_t i = 0; i < n && error == 0; i++) {
		const struct workload_container *c = workload_at_line(&ws, ms[i].line);
		struct verify_want w = {&ms[i], NULL, NULL, NULL, NULL, false};

		if (c)
			error = verify_marker(p, &ms[i], c);
		else if (scan < 0)
			error = verify_add(p->out, &w, NULL, VERIFY_UNKNOWN, true, "%s", err.msg);
		else
			error = verify_add(p->out, &w, NULL, VERIFY_UNKNOWN, false,
			                   "not the image of a workload's container");
	}
	workload_set_release(&ws);
	buf_release(&data);
	return error;
}

static int verify_tree(struct pass *p, const char *root, const char *subpath, const char *what)
{
	struct marker_set ms = MARKER_SET_INIT;
	struct error err = ERROR_INIT;
	int error;

	if ((error = markers_scan_tree(&ms, root, subpath, &err)) < 0) {
		struct verify_want w = {NULL, NULL, NULL, NULL, NULL, false};
		log_error("verify.git", "%s: %s", what, err.msg);
		error = verify_add(p->out, &w, NULL, VERIFY_UNKNOWN, true, "%s: %s", what, err.msg);
		goto done;
	}
	for (size_t i = 0; i < ms.problems_len; i++)
		log_warn("verify.markers", "%s:%zu: %s", ms.problems[i].file, ms.problems[i].line,
		         ms.problems[i].message);
	/* markers come sorted by file: one read and parse per file */
	for (size_t i = 0, j; i < ms.len && error == 0; i = j) {
		for (j = i + 1; j < ms.len && strcmp(ms.items[j].file, ms.items[i].file) == 0; j++)
			;
		error = verify_file(p, root, &ms.items[i], j - i);
	}
done:
	markers_release(&ms);
	return error;
}

static int verify_automation(struct pass *p, const struct config_automation *a)
{
	struct gitstore_options go = {0};
	struct gitstore *g = NULL;
	struct error err = ERROR_INIT;
	struct buf what = BUF_INIT;
	char *secret = NULL;
	int error = 0;

	if (buf_printf(&what, "automation '%s'", a->id) < 0)
		return IG_EFAIL;
	if (p->o->repo_dir) {
		error = verify_tree(p, p->o->repo_dir, a->update_path, what.data);
		goto done;
	}
	go.url = a->source->url;
	go.branch = a->checkout_branch;
	go.push_branch = a->push_branch;
	go.state_dir = p->o->state_dir;
	go.author_name = a->author_name;
	go.author_email = a->author_email;
	go.provider = a->source->provider;
	if ((a->source->secret_ref &&
	     config_secret_path(&secret, p->o->secrets_dir, a->source->secret_ref, &err) < 0) ||
	    (go.secret_dir = secret, gitstore_open(&g, &go, &err) < 0)) {
		struct verify_want w = {NULL, NULL, NULL, NULL, NULL, false};
		log_error("verify.git", "%s: %s", what.data, err.msg);
		error = verify_add(p->out, &w, NULL, VERIFY_UNKNOWN, true, "%s: %s", what.data,
		                   err.msg);
		goto done;
	}
	error = verify_tree(p, gitstore_workdir(g), a->update_path, what.data);
done:
	gitstore_free(g);
	free(secret);
	buf_release(&what);
	return error;
}

static void pass_release(struct pass *p)
{
	for (size_t i = 0; i < p->lives_len; i++) {
		free(p->lives[i].key);
		free(p->lives[i].message);
		json_decref(p->lives[i].object);
		json_decref(p->lives[i].pods);
	}
	free(p->lives);
	headcache_free(p->heads);
	strvec_release(&p->notes);
}

int verify_pass(struct verify_report *out, const struct verify_options *o, struct error *err)
{
	struct pass p = {o, out, NULL, 0, 0, NULL, STRVEC_INIT};
	int error = 0;

	if (headcache_new(&p.heads) < 0)
		return error_oom(err);
	for (size_t i = 0; i < o->config->automations_len && error == 0; i++) {
		size_t first = out->len;

		if (o->shard && !shard_owns(o->shard, &o->config->automations[i]))
			continue; /* another shard verifies it (and reports its drift) */
		error = verify_automation(&p, &o->config->automations[i]);
		for (size_t k = first; k < out->len; k++)
			out->items[k].automation = i;
	}
	if (!o->config->automations_len && o->repo_dir && error == 0) {
		size_t first = out->len;

		error = verify_tree(&p, o->repo_dir, NULL, "repository");
		for (size_t k = first; k < out->len; k++)
			out->items[k].automation = VERIFY_NO_AUTOMATION;
	}
	pass_release(&p);
	if (error < 0)
		return error_set(err, error, "verify: out of memory");
	return 0;
}
