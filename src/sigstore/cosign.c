/* cosign's legacy signature tag as a backend: the manifest at `sha256-<hex>.sig` whose
 * simple-signing layers each carry a signature annotation (and, keyless, the certificate, its
 * chain and the Rekor bundle). Two requests in the common case: the manifest and one payload. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/sigstore/fulcio.h"
#include "imageguard/sigstore/rekor.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/simplesign.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "sigstore_private.h"

#define SIMPLESIGNING_TYPE "application/vnd.dev.cosign.simplesigning.v1+json"
#define ANN_SIGNATURE "dev.cosignproject.cosign/signature"
#define ANN_CERTIFICATE "dev.sigstore.cosign/certificate"
#define ANN_CHAIN "dev.sigstore.cosign/chain"
#define ANN_BUNDLE "dev.sigstore.cosign/bundle"
#define MAX_SIG 2048

/* One layer's signature material, read from its annotations. */
struct layer {
	char where[200];
	const char *digest;
	struct buf sig;
	X509 *cert;
	STACK_OF(X509) * chain;
	struct rekor_entry tlog;
	bool has_tlog;
};

static void layer_release(struct layer *l)
{
	buf_release(&l->sig);
	X509_free(l->cert);
	sk_X509_pop_free(l->chain, X509_free);
	if (l->has_tlog)
		rekor_entry_release(&l->tlog);
}

static const char *annotation(json_t *layer, const char *key)
{
	return json_string_value(json_object_get(json_object_get(layer, "annotations"), key));
}

/* The certificate and chain annotations; a malformed one is a bad signature (why set). */
static int read_certs(struct layer *l, json_t *layer, struct error *why)
{
	const char *cert = annotation(layer, ANN_CERTIFICATE),
	           *chain = annotation(layer, ANN_CHAIN);
	STACK_OF(X509) *one = NULL;
	int rc;

	if (!cert)
		return chain ? error_set(why, IG_EINVALID, "a chain without a certificate") : 0;
	if ((rc = fulcio_parse_pem(&one, cert, strlen(cert), 1, why)) < 0)
		return rc;
	l->cert = sk_X509_shift(one);
	sk_X509_free(one);
	if (chain)
		return fulcio_parse_pem(&l->chain, chain, strlen(chain), FULCIO_MAX_CHAIN - 1, why);
	return 0;
}

static int read_layer(struct layer *l, json_t *layer, struct error *why)
{
	const char *sig = annotation(layer, ANN_SIGNATURE), *bundle = annotation(layer, ANN_BUNDLE);
	json_int_t size = json_integer_value(json_object_get(layer, "size"));
	int rc;

	l->digest = json_string_value(json_object_get(layer, "digest"));
	if (!l->digest || !imageref_is_valid_digest(l->digest, strlen(l->digest)))
		return error_set(why, IG_EINVALID, "layer without a valid digest");
	if (size <= 0 || size > SIMPLESIGN_MAX)
		return error_set(why, IG_EINVALID, "payload size %lld outside 1..%d",
		                 (long long)size, SIMPLESIGN_MAX);
	l->sig.max = MAX_SIG;
	if (!sig || sigcrypto_b64decode(&l->sig, sig, strlen(sig)) < 0 || l->sig.len == 0)
		return error_set(why, IG_EINVALID, "no valid signature annotation");
	if ((rc = read_certs(l, layer, why)) < 0)
		return rc;
	if (bundle) {
		if ((rc = rekor_entry_from_cosign(&l->tlog, bundle, strlen(bundle), why)) < 0)
			return rc;
		l->has_tlog = true;
	}
	return 0;
}

/* The signed payload's claim, once the signature is trusted: this digest, or a replay. */
static int check_claim(struct sigverify_result *out, const struct layer *l, const char *payload,
                       size_t len, const char *digest)
{
	struct simplesign ss;
	struct error err = ERROR_INIT;

	if (simplesign_parse(&ss, payload, len, &err) < 0)
		return sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "%s: %s", l->where, err.msg);
	if (strcmp(ss.digest, digest) != 0)
		return sigtrust_result(out, SIGVERIFY_DIGEST_MISMATCH,
		                       "%s: the signature is for %s, not this digest", l->where,
		                       ss.digest);
	return 0;
}

/* Judges one simple-signing layer; *out is its verdict. Negative: an I/O failure. */
static int judge_layer(struct sigverify_result *out, const struct sigverify_job *job, json_t *layer,
                       size_t i, const char *tag, struct error *err)
{
	struct layer l = {.sig = BUF_INIT};
	struct buf payload = BUF_INIT_MAX(SIMPLESIGN_MAX);
	struct error why = ERROR_INIT;
	struct sigtrust_input in = {0};
	unsigned char md[32];
	int error = 0;

	snprintf(l.where, sizeof(l.where), "%s layer %zu", tag, i);
	if (read_layer(&l, layer, &why) < 0) {
		sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "%s: %s", l.where, why.msg);
		goto done;
	}
	(*job->requests)++;
	if ((error = job->src->get_blob(job->src->ctx, &payload, l.digest, &why)) < 0) {
		if (error == IG_ENOTFOUND) /* the manifest names a payload the registry lacks */
			error = IG_EINVALID;
		error = sigtrust_fetch_failed(out, error, &why, l.where);
		if (error < 0)
			error_set(err, error, "%s", why.msg);
		goto done;
	}
	if (sigcrypto_sha256(md, payload.data, payload.len) < 0) {
		error = error_set(err, IG_EFAIL, "%s: cannot hash the payload", l.where);
		goto done;
	}
	in = (struct sigtrust_input){
	    (unsigned char *)payload.data, payload.len,       md,     NULL,
	    (unsigned char *)l.sig.data,   l.sig.len,         l.cert, l.chain,
	    l.has_tlog ? &l.tlog : NULL,   l.has_tlog ? 1 : 0};
	sigtrust_check(out, job->policy, &in, l.where);
	if (out->status == SIGVERIFY_OK)
		check_claim(out, &l, payload.data, payload.len, job->digest);
done:
	buf_release(&payload);
	layer_release(&l);
	return error;
}

static int judge_manifest(struct sigverify_result *out, const struct sigverify_job *job,
                          const struct buf *body, const char *tag, struct error *err)
{
	json_t *root = json_loadb(body->data, body->len, JSON_REJECT_DUPLICATES, NULL);
	json_t *layers = json_object_get(root, "layers"), *layer;
	size_t i, seen = 0;
	int error = 0;

	sigtrust_result(out, SIGVERIFY_UNSIGNED, "%s: no simple-signing layer", tag);
	if (!json_is_object(root) || !json_is_array(layers)) {
		sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "%s: not an image manifest", tag);
		goto done;
	}
	json_array_foreach(layers, i, layer)
	{
		struct sigverify_result r = {.status = SIGVERIFY_UNSIGNED};
		const char *type = json_string_value(json_object_get(layer, "mediaType"));

		if (!type || strcmp(type, SIMPLESIGNING_TYPE) != 0)
			continue;
		if (seen++ >= SIGVERIFY_MAX_ARTIFACTS)
			break;
		if ((error = judge_layer(&r, job, layer, i, tag, err)) < 0)
			break;
		sigtrust_keep_best(out, &r);
		if (out->status == SIGVERIFY_OK)
			break;
	}
done:
	json_decref(root);
	return error;
}

static int cosign_check(struct sigverify_result *out, const struct sigverify_job *job,
                        struct error *err)
{
	struct buf body = BUF_INIT_MAX(SIGVERIFY_MAX_MANIFEST);
	struct error why = ERROR_INIT;
	char tag[160], type[128];
	const char *colon = strchr(job->digest, ':');
	int error;

	snprintf(tag, sizeof(tag), "%.*s-%s.sig", (int)(colon - job->digest), job->digest,
	         colon + 1);
	sigtrust_result(out, SIGVERIFY_UNSIGNED, "no %s tag", tag);
	if (job->src->has_tag && job->src->has_tag(job->src->ctx, tag) == 0)
		return 0;
	(*job->requests)++;
	error = job->src->get_manifest(job->src->ctx, &body, type, sizeof(type), tag, &why);
	if (error == IG_ENOTFOUND)
		error = 0;
	else if (error < 0 && (error = sigtrust_fetch_failed(out, error, &why, tag)) < 0)
		error_set(err, error, "%s", why.msg);
	else if (error == 0)
		error = judge_manifest(out, job, &body, tag, err);
	buf_release(&body);
	return error;
}

const struct sigverify_backend sigverify_backend_cosign = {"cosign", cosign_check};
