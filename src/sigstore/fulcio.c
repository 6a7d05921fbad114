/* Fulcio certificates: parsing, the chain to the trust root at the logged signing time, and the
 * OIDC issuer and SANs they certify. */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/sigstore/fulcio.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/error.h"

int fulcio_parse_pem(STACK_OF(X509) * *out, const char *pem, size_t len, size_t max,
                     struct error *err)
{
	STACK_OF(X509) *s = NULL;
	BIO *bio = NULL;
	X509 *c;
	int error = 0;

	*out = NULL;
	if (len > FULCIO_MAX_PEM)
		return error_set(err, IG_ETOOBIG, "certificate: larger than %d bytes",
		                 FULCIO_MAX_PEM);
	if (!(s = sk_X509_new_null()) || !(bio = BIO_new_mem_buf(pem, (int)len))) {
		error = error_set(err, IG_EFAIL, "certificate: out of memory");
		goto done;
	}
	while ((c = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		if ((size_t)sk_X509_num(s) >= max || !sk_X509_push(s, c)) {
			X509_free(c);
			error = error_set(err, IG_ETOOBIG, "certificate: more than %zu in a chain",
			                  max);
			goto done;
		}
	}
	if (sk_X509_num(s) == 0)
		error = error_set(err, IG_EINVALID, "certificate: no PEM certificate");
done:
	ERR_clear_error();
	BIO_free(bio);
	if (error < 0)
		sk_X509_pop_free(s, X509_free);
	else
		*out = s;
	return error;
}

int fulcio_parse_der(X509 **out, const unsigned char *der, size_t len, struct error *err)
{
	const unsigned char *p = der;

	*out = NULL;
	if (len > FULCIO_MAX_DER)
		return error_set(err, IG_ETOOBIG, "certificate: larger than %d bytes",
		                 FULCIO_MAX_DER);
	*out = d2i_X509(NULL, &p, (long)len);
	ERR_clear_error();
	if (*out && p == der + len)
		return 0;
	X509_free(*out);
	*out = NULL;
	return error_set(err, IG_EINVALID, "certificate: not one DER certificate");
}

/* ---- identity ---- */

/* Copies n bytes into out (FULCIO_MAX_NAME) unless they hold a control byte or are too long. */
static bool clean_copy(char *out, const unsigned char *s, size_t n)
{
	if (n == 0 || n >= FULCIO_MAX_NAME)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7f)
			return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

/* The content of the extension oid of cert, or NULL. */
static ASN1_OCTET_STRING *ext_data(X509 *cert, const char *oid)
{
	ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
	int i = obj ? X509_get_ext_by_OBJ(cert, obj, -1) : -1;

	ASN1_OBJECT_free(obj);
	return i < 0 ? NULL : X509_EXTENSION_get_data(X509_get_ext(cert, i));
}

static int issuer(char *out, X509 *cert)
{
	ASN1_OCTET_STRING *v2 = ext_data(cert, FULCIO_OID_ISSUER_V2);
	ASN1_OCTET_STRING *v1 = ext_data(cert, FULCIO_OID_ISSUER_V1);
	ASN1_UTF8STRING *u;
	const unsigned char *p;
	bool ok;

	out[0] = '\0';
	if (v2) {
		p = ASN1_STRING_get0_data(v2);
		u = d2i_ASN1_UTF8STRING(NULL, &p, ASN1_STRING_length(v2));
		ok = u && p == ASN1_STRING_get0_data(v2) + ASN1_STRING_length(v2) &&
		     clean_copy(out, ASN1_STRING_get0_data(u), (size_t)ASN1_STRING_length(u));
		ASN1_UTF8STRING_free(u);
		ERR_clear_error();
		return ok ? 0 : IG_EINVALID;
	}
	if (v1)
		return clean_copy(out, ASN1_STRING_get0_data(v1), (size_t)ASN1_STRING_length(v1))
		           ? 0
		           : IG_EINVALID;
	return 0;
}

static void add_san(struct fulcio_identity *id, const ASN1_STRING *s)
{
	if (s && id->n_sans < FULCIO_MAX_SANS &&
	    clean_copy(id->sans[id->n_sans], ASN1_STRING_get0_data(s),
	               (size_t)ASN1_STRING_length(s)))
		id->n_sans++;
}

/* The SANs of one GENERAL_NAME type, in the certificate's order. */
static void sans_of(struct fulcio_identity *id, GENERAL_NAMES *names, int type)
{
	ASN1_OBJECT *user = type == GEN_OTHERNAME ? OBJ_txt2obj(FULCIO_OID_USERNAME, 1) : NULL;

	for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);

		if (g->type != type)
			continue;
		if (type == GEN_OTHERNAME) {
			if (user && OBJ_cmp(g->d.otherName->type_id, user) == 0 &&
			    g->d.otherName->value->type == V_ASN1_UTF8STRING)
				add_san(id, g->d.otherName->value->value.utf8string);
		} else {
			add_san(id, g->d.ia5);
		}
	}
	ASN1_OBJECT_free(user);
}

int fulcio_identity(struct fulcio_identity *out, X509 *leaf, struct error *err)
{
	static const int order[] = {GEN_DNS, GEN_EMAIL, GEN_URI, GEN_OTHERNAME};
	GENERAL_NAMES *names;

	memset(out, 0, sizeof(*out));
	if (issuer(out->issuer, leaf) < 0)
		return error_set(err, IG_EINVALID, "certificate: malformed OIDC issuer extension");
	names = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		sans_of(out, names, order[i]);
	GENERAL_NAMES_free(names);
	ERR_clear_error();
	return 0;
}

/* ---- the chain ---- */

static X509_STORE *store_at(const struct trustroot *tr, int64_t at)
{
	X509_STORE *store = X509_STORE_new();
	size_t added = 0;

	for (size_t i = 0; store && i < trustroot_ca_count(tr); i++) {
		const struct trustcert *c = trustroot_ca(tr, i);

		if (c->not_before <= at && at <= c->not_after &&
		    X509_STORE_add_cert(store, c->cert))
			added++;
	}
	ERR_clear_error();
	if (store && !added) {
		X509_STORE_free(store);
		store = NULL;
	}
	return store;
}

static bool code_signing(X509 *leaf)
{
	return (X509_get_extension_flags(leaf) & EXFLAG_XKUSAGE) &&
	       (X509_get_extended_key_usage(leaf) & XKU_CODE_SIGN);
}

/* The certificate that issued the leaf in a verified chain, referenced. */
static X509 *chain_issuer(X509_STORE_CTX *ctx)
{
	STACK_OF(X509) *chain = X509_STORE_CTX_get0_chain(ctx);
	X509 *c = chain && sk_X509_num(chain) >= 2 ? sk_X509_value(chain, 1) : NULL;

	if (c)
		X509_up_ref(c);
	return c;
}

int fulcio_verify_chain(X509 **issuer_out, X509 *leaf, STACK_OF(X509) * untrusted,
                        const struct trustroot *tr, int64_t at, char *why, size_t n)
{
	X509_STORE *store = NULL;
	X509_STORE_CTX *ctx = NULL;
	X509_VERIFY_PARAM *param;
	int error = IG_EINVALID;

	if (issuer_out)
		*issuer_out = NULL;
	if (untrusted && sk_X509_num(untrusted) >= FULCIO_MAX_CHAIN) {
		snprintf(why, n, "certificate chain longer than %d", FULCIO_MAX_CHAIN);
		return IG_EINVALID;
	}
	if (!(store = store_at(tr, at))) {
		snprintf(why, n, "no Fulcio CA of the trust root was valid at the signing time");
		goto done;
	}
	if (!(ctx = X509_STORE_CTX_new()) || !X509_STORE_CTX_init(ctx, store, leaf, untrusted)) {
		snprintf(why, n, "out of memory");
		goto done;
	}
	param = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_time(param, (time_t)at);
	X509_VERIFY_PARAM_set_depth(param, FULCIO_MAX_CHAIN - 1);
	/* a CA of the trust root is an anchor even when it is an intermediate */
	X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
	if (X509_verify_cert(ctx) != 1) {
		snprintf(why, n,
		         "certificate does not chain to the trust root at the signing "
		         "time: %s",
		         X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
		goto done;
	}
	if (!code_signing(leaf)) {
		snprintf(why, n, "certificate is not for code signing");
		goto done;
	}
	if (issuer_out && !(*issuer_out = chain_issuer(ctx))) {
		snprintf(why, n, "certificate chain without an issuer");
		goto done;
	}
	error = 0;
done:
	ERR_clear_error();
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return error;
}
