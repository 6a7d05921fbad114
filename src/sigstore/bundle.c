/* Sigstore bundles read strictly and judged as the signature of one image digest: the
 * material, the log entries and the content go to sigtrust; the content must name the digest. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/sigstore/bundle.h"
#include "imageguard/sigstore/dsse.h"
#include "imageguard/sigstore/fulcio.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/sigjson.h"
#include "imageguard/util/error.h"
#include "sigstore_private.h"

static const char *const media_types[] = {
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle.v0.3+json",
};

bool bundle_is_media_type(const char *media_type)
{
	for (size_t i = 0; media_type && i < sizeof(media_types) / sizeof(media_types[0]); i++)
		if (strcmp(media_type, media_types[i]) == 0)
			return true;
	return false;
}

void bundle_release(struct bundle *b)
{
	X509_free(b->cert);
	sk_X509_pop_free(b->chain, X509_free);
	for (size_t i = 0; i < b->n_tlogs; i++)
		rekor_entry_release(&b->tlogs[i]);
	buf_release(&b->payload);
	buf_release(&b->sig);
	b->cert = NULL;
	b->chain = NULL;
	b->n_tlogs = 0;
}

static const char *const root_keys[] = {"mediaType", "verificationMaterial", "messageSignature",
                                        "dsseEnvelope", NULL};
static const char *const vm_keys[] = {"publicKey",   "x509CertificateChain",      "certificate",
                                      "tlogEntries", "timestampVerificationData", NULL};
static const char *const hint_keys[] = {"hint", NULL};
static const char *const chain_keys[] = {"certificates", NULL};
static const char *const cert_keys[] = {"rawBytes", NULL};
static const char *const ms_keys[] = {"messageDigest", "signature", NULL};
static const char *const md_keys[] = {"algorithm", "digest", NULL};
static const char *const env_keys[] = {"payload", "payloadType", "signatures", NULL};
static const char *const sig_keys[] = {"sig", "keyid", NULL};

/* The base64 string member name of obj into out (capped by max). */
static int b64_member(struct buf *out, json_t *obj, const char *name, size_t max)
{
	return sigjson_b64(out, sigjson_get(obj, name), max);
}

static int der_cert(X509 **out, json_t *c, struct error *err)
{
	struct buf der = BUF_INIT;
	int rc = sigjson_only(c, cert_keys) ? b64_member(&der, c, "rawBytes", FULCIO_MAX_DER)
	                                    : IG_EINVALID;

	if (rc == 0)
		rc = fulcio_parse_der(out, (unsigned char *)der.data, der.len, err);
	else
		error_set(err, rc, "bundle: malformed certificate");
	buf_release(&der);
	return rc;
}

static int cert_chain(struct bundle *b, json_t *chain, struct error *err)
{
	json_t *certs = sigjson_get(chain, "certificates"), *c;
	size_t i;
	int rc;

	if (!sigjson_only(chain, chain_keys) || !json_is_array(certs) ||
	    json_array_size(certs) == 0)
		return error_set(err, IG_EINVALID, "bundle: empty certificate chain");
	if (json_array_size(certs) > FULCIO_MAX_CHAIN)
		return error_set(err, IG_ETOOBIG, "bundle: chain longer than %d", FULCIO_MAX_CHAIN);
	if (!(b->chain = sk_X509_new_null()))
		return error_set(err, IG_EFAIL, "bundle: out of memory");
	json_array_foreach(certs, i, c)
	{
		X509 *x;

		if ((rc = der_cert(&x, c, err)) < 0)
			return rc;
		if (i == 0)
			b->cert = x;
		else if (!sk_X509_push(b->chain, x)) {
			X509_free(x);
			return error_set(err, IG_EFAIL, "bundle: out of memory");
		}
	}
	return 0;
}

static int tlog_entries(struct bundle *b, json_t *list, struct error *err)
{
	json_t *e;
	size_t i;
	int rc;

	if (!list)
		return 0;
	if (!json_is_array(list))
		return error_set(err, IG_EINVALID, "bundle: tlogEntries is not a list");
	if (json_array_size(list) > BUNDLE_MAX_TLOGS)
		return error_set(err, IG_ETOOBIG, "bundle: more than %d log entries",
		                 BUNDLE_MAX_TLOGS);
	json_array_foreach(list, i, e)
	{
		if ((rc = rekor_entry_from_json(&b->tlogs[i], e, err)) < 0)
			return rc;
		b->n_tlogs++;
	}
	return 0;
}

static int material(struct bundle *b, json_t *vm, struct error *err)
{
	json_t *pk = sigjson_get(vm, "publicKey"), *chain = sigjson_get(vm, "x509CertificateChain");
	json_t *cert = sigjson_get(vm, "certificate");
	const char *hint = json_string_value(sigjson_get(pk, "hint"));
	int rc;

	if (!sigjson_only(vm, vm_keys) || (!!pk + !!chain + !!cert) != 1 ||
	    (pk && !sigjson_only(pk, hint_keys)))
		return error_set(err, IG_EINVALID,
		                 "bundle: verification material is not one of publicKey, "
		                 "x509CertificateChain, certificate");
	if (hint)
		snprintf(b->key_hint, sizeof(b->key_hint), "%s", hint);
	if (chain && (rc = cert_chain(b, chain, err)) < 0)
		return rc;
	if (cert && (rc = der_cert(&b->cert, cert, err)) < 0)
		return rc;
	return tlog_entries(b, sigjson_get(vm, "tlogEntries"), err);
}

static int message_signature(struct bundle *b, json_t *ms, struct error *err)
{
	json_t *md = sigjson_get(ms, "messageDigest");
	const char *algo = json_string_value(sigjson_get(md, "algorithm"));
	struct buf digest = BUF_INIT;
	bool ok;

	if (!sigjson_only(ms, ms_keys) || !sigjson_only(md, md_keys))
		return error_set(err, IG_EINVALID, "bundle: malformed message signature");
	if (!algo || strcmp(algo, "SHA2_256") != 0)
		return error_set(err, IG_EINVALID, "bundle: message digest is not SHA2_256");
	ok = b64_member(&digest, md, "digest", 64) == 0 && digest.len == 32;
	if (ok)
		memcpy(b->message_digest, digest.data, 32);
	buf_release(&digest);
	if (!ok)
		return error_set(err, IG_EINVALID, "bundle: malformed message digest");
	if (b64_member(&b->sig, ms, "signature", BUNDLE_MAX_SIG) < 0 || b->sig.len == 0)
		return error_set(err, IG_EINVALID, "bundle: malformed signature");
	return 0;
}

static int dsse_envelope(struct bundle *b, json_t *env, struct error *err)
{
	const char *type = json_string_value(sigjson_get(env, "payloadType"));
	json_t *sigs = sigjson_get(env, "signatures");
	int rc;

	b->is_dsse = true;
	if (!sigjson_only(env, env_keys) || !type || strlen(type) >= sizeof(b->payload_type))
		return error_set(err, IG_EINVALID, "bundle: envelope without a payload type");
	snprintf(b->payload_type, sizeof(b->payload_type), "%s", type);
	if ((rc = b64_member(&b->payload, env, "payload", DSSE_MAX_PAYLOAD)) < 0)
		return error_set(err, rc, "bundle: malformed envelope payload");
	if (json_array_size(sigs) != 1 || !sigjson_only(json_array_get(sigs, 0), sig_keys))
		return error_set(err, IG_EINVALID, "bundle: envelope with %zu signatures, not one",
		                 json_array_size(sigs));
	if (b64_member(&b->sig, json_array_get(sigs, 0), "sig", BUNDLE_MAX_SIG) < 0 ||
	    b->sig.len == 0)
		return error_set(err, IG_EINVALID, "bundle: malformed envelope signature");
	return 0;
}

static int media_minor(struct bundle *b, const char *type)
{
	if (!bundle_is_media_type(type))
		return IG_EINVALID;
	b->minor = strstr(type, "0.1") ? 1 : strstr(type, "0.2") ? 2 : 3;
	return 0;
}

int bundle_parse(struct bundle *out, const char *data, size_t len, struct error *err)
{
	json_t *root = NULL, *ms, *env;
	int error;

	memset(out, 0, sizeof(*out));
	out->payload.max = DSSE_MAX_PAYLOAD;
	if (len > BUNDLE_MAX)
		return error_set(err, IG_ETOOBIG, "bundle: larger than %u bytes", BUNDLE_MAX);
	root = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	ms = sigjson_get(root, "messageSignature");
	env = sigjson_get(root, "dsseEnvelope");
	if (!sigjson_only(root, root_keys) ||
	    media_minor(out, json_string_value(json_object_get(root, "mediaType"))) < 0) {
		error = error_set(err, IG_EINVALID, "bundle: not a Sigstore bundle");
		goto done;
	}
	if (!!ms + !!env != 1) {
		error = error_set(err, IG_EINVALID,
		                  "bundle: content is not one of messageSignature, dsseEnvelope");
		goto done;
	}
	if ((error = material(out, sigjson_get(root, "verificationMaterial"), err)) < 0)
		goto done;
	error = ms ? message_signature(out, ms, err) : dsse_envelope(out, env, err);
done:
	json_decref(root);
	return error;
}

/* ---- verification ---- */

/* The DSSE payload's claim, once the signature is trusted: a statement about digest. */
static int dsse_claim(struct sigverify_result *out, const struct bundle *b, const char *digest,
                      const char *where)
{
	struct error err = ERROR_INIT;
	bool found;

	if (strcmp(b->payload_type, DSSE_INTOTO_TYPE) != 0)
		return sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE,
		                       "%s: envelope payload type is not in-toto", where);
	if (dsse_statement_has_subject(&found, b->payload.data ? b->payload.data : "",
	                               b->payload.len, digest, &err) < 0)
		return sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "%s: %s", where, err.msg);
	if (!found)
		sigtrust_result(out, SIGVERIFY_DIGEST_MISMATCH,
		                "%s: the statement has no subject with this digest", where);
	return 0;
}

static int message_claim(struct sigverify_result *out, const struct bundle *b, const char *digest,
                         const char *where)
{
	char hex[65];

	sigcrypto_hex(hex, b->message_digest, 32);
	if (strncmp(digest, "sha256:", 7) != 0 || strcmp(digest + 7, hex) != 0)
		sigtrust_result(out, SIGVERIFY_DIGEST_MISMATCH,
		                "%s: the signature is for sha256:%s, not this digest", where, hex);
	return 0;
}

static void judge(struct sigverify_result *out, const struct sigverify_policy *p,
                  const struct bundle *b, const char *digest, const char *where)
{
	struct buf pae = BUF_INIT;
	unsigned char msg_md[32], payload_md[32];
	struct sigtrust_input in = {.sig = (unsigned char *)b->sig.data,
	                            .sig_len = b->sig.len,
	                            .cert = b->cert,
	                            .chain = b->chain,
	                            .tlogs = b->tlogs,
	                            .n_tlogs = b->n_tlogs};

	if (b->is_dsse) {
		if (dsse_pae(&pae, b->payload_type, (unsigned char *)b->payload.data,
		             b->payload.len) < 0 ||
		    sigcrypto_sha256(msg_md, pae.data, pae.len) < 0 ||
		    sigcrypto_sha256(payload_md, b->payload.data, b->payload.len) < 0) {
			sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "%s: out of memory", where);
			goto done;
		}
		in.msg = (unsigned char *)pae.data;
		in.msg_len = pae.len;
		in.msg_sha256 = msg_md;
		in.payload_sha256 = payload_md;
	} else {
		in.msg_sha256 = b->message_digest; /* the artifact itself is not at hand */
	}
	sigtrust_check(out, p, &in, where);
	if (out->status == SIGVERIFY_OK)
		(void)(b->is_dsse ? dsse_claim : message_claim)(out, b, digest, where);
done:
	buf_release(&pae);
}

void bundle_verify(struct sigverify_result *out, const struct sigverify_policy *p,
                   const char *digest, const char *data, size_t len, const char *where)
{
	struct bundle b;
	struct error err = ERROR_INIT;

	out->signer[0] = '\0';
	if (bundle_parse(&b, data, len, &err) < 0)
		sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "%s: %s", where, err.msg);
	else
		judge(out, p, &b, digest, where);
	bundle_release(&b);
}
