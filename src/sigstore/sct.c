/* Embedded SCTs of a Fulcio certificate verified against the trust root's CT log keys: the
 * signed data is RFC 6962's precert entry, rebuilt from the certificate. */
#include <openssl/ct.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/sigstore/sct.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

/* The precertificate's TBS: the leaf's, without the SCT list extension. Owned DER. */
static int precert_tbs(unsigned char **der, X509 *leaf)
{
	X509 *pre = X509_dup(leaf);
	int i = pre ? X509_get_ext_by_NID(pre, NID_ct_precert_scts, -1) : -1, len = -1;

	if (i >= 0) {
		X509_EXTENSION_free(X509_delete_ext(pre, i));
		len = i2d_re_X509_tbs(pre, der);
	}
	X509_free(pre);
	ERR_clear_error();
	return len;
}

static int issuer_key_hash(unsigned char out[32], X509 *issuer)
{
	unsigned char *der = NULL;
	int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(issuer), &der), rc;

	if (len <= 0)
		return IG_EFAIL;
	rc = sigcrypto_sha256(out, der, (size_t)len);
	OPENSSL_free(der);
	return rc;
}

static void put(struct buf *b, uint64_t v, int bytes)
{
	unsigned char p[8];

	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
	(void)buf_append(b, p, (size_t)bytes);
}

/* The data an SCT signs for the precert entry (RFC 6962 §3.2). */
static int signed_data(struct buf *out, const SCT *sct, const unsigned char *tbs, size_t tbs_len,
                       const unsigned char key_hash[32])
{
	unsigned char *ext = NULL;
	size_t ext_len = SCT_get0_extensions(sct, &ext);

	if (tbs_len >= (1u << 24) || ext_len >= (1u << 16))
		return IG_EINVALID;
	put(out, 0, 1); /* v1 */
	put(out, 0, 1); /* certificate_timestamp */
	put(out, SCT_get_timestamp(sct), 8);
	put(out, 1, 2); /* precert_entry */
	(void)buf_append(out, key_hash, 32);
	put(out, tbs_len, 3);
	(void)buf_append(out, tbs, tbs_len);
	put(out, ext_len, 2);
	return buf_append(out, ext, ext_len);
}

static bool one_verifies(const SCT *sct, const struct trustroot *tr, const unsigned char *tbs,
                         size_t tbs_len, const unsigned char key_hash[32])
{
	unsigned char *id = NULL, *sig = NULL;
	size_t sig_len = SCT_get0_signature(sct, &sig);
	int64_t at = (int64_t)(SCT_get_timestamp(sct) / 1000);
	const struct trustkey *k;
	struct buf data = BUF_INIT;
	bool ok;

	if (SCT_get_version(sct) != SCT_VERSION_V1 || SCT_get0_log_id(sct, &id) != 32 ||
	    !(k = trustroot_find(tr, TRUSTROOT_CTLOG, id)) || at < k->not_before ||
	    at > k->not_after)
		return false;
	ok = signed_data(&data, sct, tbs, tbs_len, key_hash) == 0 &&
	     sigcrypto_verify(k->pkey, data.data, data.len, sig, sig_len);
	buf_release(&data);
	return ok;
}

int sct_verify(X509 *leaf, X509 *issuer, const struct trustroot *tr, char *why, size_t n)
{
	STACK_OF(SCT) *scts = X509_get_ext_d2i(leaf, NID_ct_precert_scts, NULL, NULL);
	unsigned char *tbs = NULL, key_hash[32];
	int tbs_len, error = IG_EINVALID;
	bool ok = false;

	ERR_clear_error();
	if (!scts || sk_SCT_num(scts) == 0) {
		snprintf(why, n, "certificate has no readable SCT");
		goto done;
	}
	if ((tbs_len = precert_tbs(&tbs, leaf)) <= 0 || issuer_key_hash(key_hash, issuer) < 0) {
		snprintf(why, n, "cannot rebuild the precertificate");
		goto done;
	}
	for (int i = 0; i < sk_SCT_num(scts) && i < SCT_MAX && !ok; i++)
		ok = one_verifies(sk_SCT_value(scts, i), tr, tbs, (size_t)tbs_len, key_hash);
	if (ok)
		error = 0;
	else
		snprintf(why, n, "no SCT verifies against a trusted CT log key");
done:
	SCT_LIST_free(scts);
	OPENSSL_free(tbs);
	ERR_clear_error();
	return error;
}
