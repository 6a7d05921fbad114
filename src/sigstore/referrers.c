/* Sigstore bundles attached to an image as OCI 1.1 referrers, as a backend: the referrers API
 * (GET /v2/<name>/referrers/<digest>) or, on a registry without it, the tag fallback
 * `sha256-<hex>` (an index the attaching client maintains); then each bundle artifact's
 * manifest and its bundle layer. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/sigstore/bundle.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "sigstore_private.h"

/* One source call, counted; a malformed or oversized answer becomes a bad-signature verdict
 * (*verdict true), a 404 stays IG_ENOTFOUND for the caller. */
struct fetch {
	const struct sigverify_job *job;
	struct sigverify_result *out;
	struct error *err;
	bool verdict;
};

static int fetched(struct fetch *f, int rc, const struct error *why, const char *what)
{
	if (rc >= 0 || rc == IG_ENOTFOUND)
		return rc;
	rc = sigtrust_fetch_failed(f->out, rc, why, what);
	if (rc < 0)
		error_set(f->err, rc, "%s", why->msg);
	else
		f->verdict = true;
	return rc < 0 ? rc : IG_EINVALID;
}

static int get_manifest(struct fetch *f, struct buf *body, const char *ref, const char *what)
{
	struct error why = ERROR_INIT;
	char type[128];

	(*f->job->requests)++;
	return fetched(
	    f, f->job->src->get_manifest(f->job->src->ctx, body, type, sizeof(type), ref, &why),
	    &why, what);
}

/* The index of referrers: the API's answer, else the tag fallback. IG_ENOTFOUND: none. */
static int referrers_index(struct fetch *f, struct buf *body, const char *tag)
{
	const struct sigverify_source *src = f->job->src;
	int listed = src->has_tag ? src->has_tag(src->ctx, tag) : -1;
	struct error why = ERROR_INIT;
	int rc;

	/* a listed fallback tag is what a client writes where the registry has no referrers
	 * API: read it without asking the API */
	if (src->get_referrers && listed != 1) {
		(*f->job->requests)++;
		rc = src->get_referrers(src->ctx, body, f->job->digest, &why);
		if (rc != IG_ENOTFOUND)
			return fetched(f, rc, &why, "referrers");
	}
	if (listed == 0)
		return IG_ENOTFOUND;
	buf_reset(body);
	return get_manifest(f, body, tag, tag);
}

/* The bundle layer of an artifact manifest: its digest, or NULL. */
static const char *bundle_layer(json_t *manifest)
{
	json_t *layers = json_object_get(manifest, "layers"), *l;
	size_t i;

	json_array_foreach(layers, i, l)
	{
		const char *d = json_string_value(json_object_get(l, "digest"));

		if (bundle_is_media_type(json_string_value(json_object_get(l, "mediaType"))) && d &&
		    imageref_is_valid_digest(d, strlen(d)))
			return d;
	}
	return NULL;
}

/* One referrer: its manifest, its bundle blob, the verdict in f->out. */
static int judge_referrer(struct fetch *f, const char *digest)
{
	struct buf man = BUF_INIT_MAX(SIGVERIFY_MAX_MANIFEST), blob = BUF_INIT_MAX(BUNDLE_MAX);
	struct error why = ERROR_INIT;
	char where[200];
	json_t *root = NULL;
	const char *layer;
	int rc;

	snprintf(where, sizeof(where), "bundle %.80s", digest);
	rc = get_manifest(f, &man, digest, where);
	if (rc == IG_ENOTFOUND) {
		sigtrust_result(f->out, SIGVERIFY_BAD_SIGNATURE, "%s: manifest missing", where);
		rc = 0;
	}
	if (rc < 0 || f->out->status != SIGVERIFY_UNSIGNED)
		goto done;
	root = json_loadb(man.data, man.len, JSON_REJECT_DUPLICATES, NULL);
	if (!(layer = bundle_layer(root))) {
		sigtrust_result(f->out, SIGVERIFY_BAD_SIGNATURE, "%s: no bundle layer", where);
		goto done;
	}
	(*f->job->requests)++;
	rc = fetched(f, f->job->src->get_blob(f->job->src->ctx, &blob, layer, &why), &why, where);
	if (rc == IG_ENOTFOUND) {
		sigtrust_result(f->out, SIGVERIFY_BAD_SIGNATURE, "%s: bundle blob missing", where);
		rc = 0;
	} else if (rc == 0) {
		bundle_verify(f->out, f->job->policy, f->job->digest, blob.data ? blob.data : "",
		              blob.len, where);
	}
done:
	json_decref(root);
	buf_release(&man);
	buf_release(&blob);
	return f->verdict ? 0 : rc;
}

static int judge_index(struct sigverify_result *out, const struct sigverify_job *job,
                       const struct buf *body, struct error *err)
{
	json_t *root = json_loadb(body->data, body->len, JSON_REJECT_DUPLICATES, NULL);
	json_t *list = json_object_get(root, "manifests"), *m;
	size_t i, seen = 0;
	int error = 0;

	if (!json_is_object(root) || !json_is_array(list)) {
		sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "referrers: not an image index");
		goto done;
	}
	json_array_foreach(list, i, m)
	{
		struct sigverify_result r = {.status = SIGVERIFY_UNSIGNED};
		struct fetch f = {job, &r, err, false};
		const char *d = json_string_value(json_object_get(m, "digest"));

		if (!bundle_is_media_type(json_string_value(json_object_get(m, "artifactType"))) ||
		    !d || !imageref_is_valid_digest(d, strlen(d)))
			continue;
		if (seen++ >= SIGVERIFY_MAX_ARTIFACTS)
			break;
		if ((error = judge_referrer(&f, d)) < 0)
			break;
		sigtrust_keep_best(out, &r);
		if (out->status == SIGVERIFY_OK)
			break;
	}
done:
	json_decref(root);
	return error;
}

static int bundle_check(struct sigverify_result *out, const struct sigverify_job *job,
                        struct error *err)
{
	struct buf body = BUF_INIT_MAX(SIGVERIFY_MAX_MANIFEST);
	struct fetch f = {job, out, err, false};
	const char *colon = strchr(job->digest, ':');
	char tag[160];
	int rc;

	snprintf(tag, sizeof(tag), "%.*s-%s", (int)(colon - job->digest), job->digest, colon + 1);
	sigtrust_result(out, SIGVERIFY_UNSIGNED, "no Sigstore bundle referrer");
	rc = referrers_index(&f, &body, tag);
	if (rc == IG_ENOTFOUND || f.verdict)
		rc = 0;
	else if (rc == 0) {
		rc = judge_index(out, job, &body, err);
		if (out->status == SIGVERIFY_UNSIGNED)
			sigtrust_result(out, SIGVERIFY_UNSIGNED, "no Sigstore bundle referrer");
	}
	buf_release(&body);
	return rc;
}

const struct sigverify_backend sigverify_backend_bundle = {"bundle", bundle_check};
