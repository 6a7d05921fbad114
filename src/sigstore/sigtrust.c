/* What every signature format ends in, beside the backends: is this one signature by someone
 * the policy trusts (key, or certificate + transparency log + Fulcio chain + identity)? And the
 * result bookkeeping the backends share. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/sigstore/fulcio.h"
#include "imageguard/sigstore/oidcmatch.h"
#include "imageguard/sigstore/rekor.h"
#include "imageguard/sigstore/sct.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/error.h"
#include "sigstore_private.h"

#define MAX_TLOGS 4 /* log entries of one signature looked at */

int sigtrust_result(struct sigverify_result *out, enum sigverify_status status, const char *fmt,
                    ...)
{
	va_list ap;

	out->status = status;
	if (status != SIGVERIFY_OK)
		out->signer[0] = '\0'; /* a signer is named only for a signature that passed */
	va_start(ap, fmt);
	vsnprintf(out->detail, sizeof(out->detail), fmt, ap);
	va_end(ap);
	error_flatten(out->detail);
	return 0;
}

void sigtrust_keep_best(struct sigverify_result *best, const struct sigverify_result *r)
{
	unsigned requests = best->requests;

	if (best->status == SIGVERIFY_OK)
		return;
	if (r->status == SIGVERIFY_OK || r->status > best->status) {
		*best = *r;
		best->requests = requests;
	}
}

int sigtrust_fetch_failed(struct sigverify_result *out, int code, const struct error *why,
                          const char *what)
{
	if (code != IG_EINVALID && code != IG_ETOOBIG)
		return code;
	sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE, "%s: %s", what, why->msg);
	return 0;
}

static bool verify_with(EVP_PKEY *key, const struct sigtrust_input *in)
{
	if (in->msg)
		return sigcrypto_verify(key, in->msg, in->msg_len, in->sig, in->sig_len);
	return sigcrypto_verify_prehashed(key, in->msg_sha256, in->sig, in->sig_len);
}

/* Every log entry must log this signature and verify (SET and proof, each one present);
 * *time is the earliest integrated time that a SET proves, -1 when none does. */
static int check_tlogs(int64_t *time, const struct sigverify_policy *p,
                       const struct sigtrust_input *in, char *why, size_t n)
{
	struct rekor_claim claim = {in->sig, in->sig_len, in->msg_sha256, in->payload_sha256};

	*time = -1;
	if (in->n_tlogs == 0)
		return snprintf(why, n, "no transparency log entry"), IG_EINVALID;
	for (size_t i = 0; i < in->n_tlogs && i < MAX_TLOGS; i++) {
		const struct rekor_entry *e = &in->tlogs[i];

		if (rekor_check_body(e, &claim, why, n) < 0)
			return IG_EINVALID;
		if (!e->has_set && !e->has_proof)
			return snprintf(why, n, "log entry with neither SET nor inclusion proof"),
			       IG_EINVALID;
		if (e->has_set && !rekor_verify_set(e, p->tr))
			return snprintf(why, n,
			                "signed entry timestamp does not verify against a trusted "
			                "Rekor key"),
			       IG_EINVALID;
		if (e->has_proof && rekor_verify_proof(e, p->tr, why, n) < 0)
			return IG_EINVALID;
		if (e->has_set && (*time < 0 || e->integrated_time < *time))
			*time = e->integrated_time;
	}
	return 0;
}

static void key_signer(struct sigverify_result *out, const struct trustkey *k)
{
	char fp[65];

	sigcrypto_hex(fp, k->id, 32);
	snprintf(out->signer, sizeof(out->signer), "key %s (sha256:%.12s)", k->name, fp);
}

/* A signature that a trusted key verifies: logged as well when the policy can tell. */
static int by_key(struct sigverify_result *out, const struct sigverify_policy *p,
                  const struct sigtrust_input *in, const struct trustkey *k, const char *where)
{
	char why[256];
	int64_t time;

	if ((p->require_tlog || (in->n_tlogs && trustroot_count(p->tr, TRUSTROOT_REKOR))) &&
	    check_tlogs(&time, p, in, why, sizeof(why)) < 0)
		return sigtrust_result(out, SIGVERIFY_NO_TRANSPARENCY_PROOF, "%s: %s", where, why);
	sigtrust_result(out, SIGVERIFY_OK, "%s: signed by %s", where, k->name);
	key_signer(out, k);
	return 0;
}

static const struct trustkey *key_verifying(const struct sigverify_policy *p,
                                            const struct sigtrust_input *in)
{
	for (size_t i = 0; i < trustroot_count(p->tr, TRUSTROOT_SIGNER); i++) {
		const struct trustkey *k = trustroot_key(p->tr, TRUSTROOT_SIGNER, i);

		if (verify_with(k->pkey, in))
			return k;
	}
	return NULL;
}

static void identity_text(char *out, size_t n, const struct fulcio_identity *id)
{
	snprintf(out, n, "%.200s (%.100s)", id->n_sans ? id->sans[0] : "no SAN",
	         id->issuer[0] ? id->issuer : "no issuer");
}

/* The certificate chains to the Fulcio trust root at the logged time and, when the trust root
 * holds CT log keys, carries an SCT of one of them. */
static int chained(const struct sigverify_policy *p, const struct sigtrust_input *in, int64_t time,
                   char *why, size_t n)
{
	X509 *issuer = NULL;
	int rc = fulcio_verify_chain(&issuer, in->cert, in->chain, p->tr, time, why, n);

	if (rc == 0 && trustroot_count(p->tr, TRUSTROOT_CTLOG))
		rc = sct_verify(in->cert, issuer, p->tr, why, n);
	X509_free(issuer);
	return rc;
}

/* A certificate whose key verified the signature: logged, chained, then the identity. */
static int by_certificate(struct sigverify_result *out, const struct sigverify_policy *p,
                          const struct sigtrust_input *in, const char *where)
{
	struct fulcio_identity id;
	struct error err = ERROR_INIT;
	char why[256], text[SIGVERIFY_SIGNER_MAX];
	int64_t time;

	if (check_tlogs(&time, p, in, why, sizeof(why)) < 0)
		return sigtrust_result(out, SIGVERIFY_NO_TRANSPARENCY_PROOF, "%s: %s", where, why);
	if (time < 0)
		return sigtrust_result(out, SIGVERIFY_NO_TRANSPARENCY_PROOF,
		                       "%s: no signed entry timestamp proves the signing time",
		                       where);
	if (chained(p, in, time, why, sizeof(why)) < 0)
		return sigtrust_result(out, SIGVERIFY_UNTRUSTED_SIGNER, "%s: %s", where, why);
	if (fulcio_identity(&id, in->cert, &err) < 0)
		return sigtrust_result(out, SIGVERIFY_UNTRUSTED_SIGNER, "%s: %s", where, err.msg);
	identity_text(text, sizeof(text), &id);
	if (!oidcmatch_test(p->match, &id))
		return sigtrust_result(out, SIGVERIFY_IDENTITY_MISMATCH,
		                       "%s: identity %s matches no rule", where, text);
	sigtrust_result(out, SIGVERIFY_OK, "%s: signed by %s", where, text);
	snprintf(out->signer, sizeof(out->signer), "%s", text);
	return 0;
}

static int judge(struct sigverify_result *out, const struct sigverify_policy *p,
                 const struct sigtrust_input *in, const char *where)
{
	const struct trustkey *k = key_verifying(p, in);
	EVP_PKEY *cert_key;
	bool valid;

	out->signer[0] = '\0';
	if (k)
		return by_key(out, p, in, k, where);
	if (!in->cert)
		return sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE,
		                       "%s: no trusted key verifies the signature", where);
	cert_key = X509_get0_pubkey(in->cert);
	valid = cert_key && verify_with(cert_key, in);
	if (!valid)
		return sigtrust_result(out, SIGVERIFY_BAD_SIGNATURE,
		                       "%s: the signature does not verify under its certificate",
		                       where);
	if (!p->match)
		return sigtrust_result(out, SIGVERIFY_UNTRUSTED_SIGNER,
		                       "%s: signed by a certificate and the secret '%s' holds no "
		                       "Fulcio trust root",
		                       where, trustroot_secret(p->tr));
	return by_certificate(out, p, in, where);
}

void sigtrust_check(struct sigverify_result *out, const struct sigverify_policy *p,
                    const struct sigtrust_input *in, const char *where)
{
	(void)judge(out, p, in, where);
}
