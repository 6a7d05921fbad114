/* Shared cryptography of the Sigstore formats: base64, SHA-256 in hex, public keys and
 * signature checks over libcrypto. Nothing here knows a format. */
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define MIN_RSA_BITS 2048

static int b64value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int sigcrypto_b64decode(struct buf *out, const char *in, size_t len)
{
	unsigned char byte;
	uint32_t acc = 0;
	size_t n = 0, pad = 0;
	int bits = 0, rc;

	buf_reset(out);
	for (size_t i = 0; i < len; i++) {
		int v;

		if (in[i] == '\r' || in[i] == '\n')
			continue; /* as Go's decoder, which cosign uses: line breaks are skipped */
		if (in[i] == '=' && ++pad)
			continue;
		if (pad || (v = b64value((unsigned char)in[i])) < 0)
			return IG_EINVALID;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		n++;
		if (bits >= 8) {
			bits -= 8;
			byte = (unsigned char)(acc >> bits);
			if ((rc = buf_append(out, &byte, 1)) < 0)
				return rc;
		}
	}
	if (pad > 2 || (pad && (n + pad) % 4 != 0) || n % 4 == 1)
		return IG_EINVALID;
	/* the bits left over must be zero: one text, one decoding */
	if (bits && (acc & ((1u << bits) - 1)) != 0)
		return IG_EINVALID;
	return buf_append(out, "", 0);
}

int sigcrypto_b64encode(struct buf *out, const unsigned char *data, size_t len)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char q[4];
	int rc;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)data[i + 1] << 8;
		if (i + 2 < len)
			v |= data[i + 2];
		q[0] = a[(v >> 18) & 63];
		q[1] = a[(v >> 12) & 63];
		q[2] = i + 1 < len ? a[(v >> 6) & 63] : '=';
		q[3] = i + 2 < len ? a[v & 63] : '=';
		if ((rc = buf_append(out, q, 4)) < 0)
			return rc;
	}
	return buf_append(out, "", 0);
}

int sigcrypto_sha256(unsigned char out[32], const void *data, size_t len)
{
	unsigned int n = 0;

	if (EVP_Digest(len ? data : "", len, out, &n, EVP_sha256(), NULL) != 1 || n != 32) {
		ERR_clear_error();
		return IG_EFAIL;
	}
	return 0;
}

void sigcrypto_hex(char *out, const unsigned char *md, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool sigcrypto_unhex(unsigned char *out, size_t n, const char *s, size_t len)
{
	if (len != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

bool sigcrypto_equal(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

/* The curve of an EC key ("P-256"...), or NULL. */
static const char *ec_curve(EVP_PKEY *key, char *name, size_t n)
{
	size_t len = 0;

	if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, name, n, &len) != 1)
		return NULL;
	if (strcmp(name, "prime256v1") == 0 || strcmp(name, "P-256") == 0)
		return "P-256";
	if (strcmp(name, "secp384r1") == 0 || strcmp(name, "P-384") == 0)
		return "P-384";
	if (strcmp(name, "secp521r1") == 0 || strcmp(name, "P-521") == 0)
		return "P-521";
	return NULL;
}

static int check_type(EVP_PKEY *key, struct error *err)
{
	char name[64];

	switch (EVP_PKEY_get_base_id(key)) {
	case EVP_PKEY_EC:
		return ec_curve(key, name, sizeof(name))
		           ? 0
		           : error_set(err, IG_EINVALID, "unsupported elliptic curve");
	case EVP_PKEY_ED25519:
		return 0;
	case EVP_PKEY_RSA:
	case EVP_PKEY_RSA_PSS:
		return EVP_PKEY_get_bits(key) >= MIN_RSA_BITS
		           ? 0
		           : error_set(err, IG_EINVALID, "RSA key shorter than %d bits",
		                       MIN_RSA_BITS);
	default:
		return error_set(err, IG_EINVALID, "unsupported key type");
	}
}

int sigcrypto_key_parse(EVP_PKEY **out, const unsigned char *data, size_t len, struct error *err)
{
	const unsigned char *p = data;
	EVP_PKEY *key = NULL;
	BIO *bio = NULL;
	int error;

	*out = NULL;
	if (len > 0 && data[0] == 0x30) {
		key = d2i_PUBKEY(NULL, &p, (long)len);
		if (key && p != data + len) {
			EVP_PKEY_free(key);
			key = NULL;
		}
	} else if ((bio = BIO_new_mem_buf(data, (int)len))) {
		key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	}
	BIO_free(bio);
	ERR_clear_error();
	if (!key)
		return error_set(err, IG_EINVALID, "not a PEM or DER public key");
	if ((error = check_type(key, err)) < 0) {
		EVP_PKEY_free(key);
		return error;
	}
	*out = key;
	return 0;
}

int sigcrypto_key_id(unsigned char out[32], EVP_PKEY *key)
{
	unsigned char *der = NULL;
	int len = i2d_PUBKEY(key, &der), rc;

	if (len <= 0) {
		ERR_clear_error();
		return IG_EFAIL;
	}
	rc = sigcrypto_sha256(out, der, (size_t)len);
	OPENSSL_free(der);
	return rc;
}

const char *sigcrypto_key_type(char *buf, size_t n, EVP_PKEY *key)
{
	char name[64];
	const char *curve;

	switch (EVP_PKEY_get_base_id(key)) {
	case EVP_PKEY_EC:
		curve = ec_curve(key, name, sizeof(name));
		snprintf(buf, n, "ecdsa-%s", curve ? curve : "?");
		return buf;
	case EVP_PKEY_ED25519:
		return "ed25519";
	default:
		snprintf(buf, n, "rsa-%d", EVP_PKEY_get_bits(key));
		return buf;
	}
}

/* One EVP_DigestVerify with md (NULL for Ed25519) and, for RSA, the padding. */
static bool digest_verify(EVP_PKEY *key, const EVP_MD *md, int padding, const void *msg, size_t len,
                          const unsigned char *sig, size_t sig_len)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	bool ok = false;

	if (!ctx)
		return false;
	if (EVP_DigestVerifyInit(ctx, &pctx, md, NULL, key) != 1)
		goto done;
	if (padding && (EVP_PKEY_CTX_set_rsa_padding(pctx, padding) != 1 ||
	                (padding == RSA_PKCS1_PSS_PADDING &&
	                 EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_AUTO) != 1)))
		goto done;
	ok = EVP_DigestVerify(ctx, sig, sig_len, msg, len) == 1;
done:
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

/* The hashes an ECDSA signature by key may use: the curve's own, then SHA-256. */
static void ec_hashes(EVP_PKEY *key, const EVP_MD *mds[2])
{
	char name[64];
	const char *curve = ec_curve(key, name, sizeof(name));

	mds[0] = EVP_sha256();
	mds[1] = NULL;
	if (curve && strcmp(curve, "P-384") == 0)
		mds[0] = EVP_sha384(), mds[1] = EVP_sha256();
	else if (curve && strcmp(curve, "P-521") == 0)
		mds[0] = EVP_sha512(), mds[1] = EVP_sha256();
}

bool sigcrypto_verify(EVP_PKEY *key, const void *msg, size_t len, const unsigned char *sig,
                      size_t sig_len)
{
	const EVP_MD *mds[2];

	if (!key || !sig || !sig_len)
		return false;
	msg = len ? msg : "";
	switch (EVP_PKEY_get_base_id(key)) {
	case EVP_PKEY_EC:
		ec_hashes(key, mds);
		for (int i = 0; i < 2 && mds[i]; i++)
			if (digest_verify(key, mds[i], 0, msg, len, sig, sig_len))
				return true;
		return false;
	case EVP_PKEY_ED25519:
		return digest_verify(key, NULL, 0, msg, len, sig, sig_len);
	case EVP_PKEY_RSA:
		return digest_verify(key, EVP_sha256(), RSA_PKCS1_PADDING, msg, len, sig,
		                     sig_len) ||
		       digest_verify(key, EVP_sha256(), RSA_PKCS1_PSS_PADDING, msg, len, sig,
		                     sig_len);
	case EVP_PKEY_RSA_PSS:
		return digest_verify(key, EVP_sha256(), RSA_PKCS1_PSS_PADDING, msg, len, sig,
		                     sig_len);
	default:
		return false;
	}
}

static bool pkey_verify(EVP_PKEY *key, int padding, const unsigned char digest[32],
                        const unsigned char *sig, size_t sig_len)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
	bool ok = false;

	if (!ctx)
		return false;
	if (EVP_PKEY_verify_init(ctx) != 1 || EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1)
		goto done;
	if (padding && (EVP_PKEY_CTX_set_rsa_padding(ctx, padding) != 1 ||
	                (padding == RSA_PKCS1_PSS_PADDING &&
	                 EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_AUTO) != 1)))
		goto done;
	ok = EVP_PKEY_verify(ctx, sig, sig_len, digest, 32) == 1;
done:
	EVP_PKEY_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

bool sigcrypto_verify_prehashed(EVP_PKEY *key, const unsigned char digest[32],
                                const unsigned char *sig, size_t sig_len)
{
	if (!key || !sig || !sig_len)
		return false;
	switch (EVP_PKEY_get_base_id(key)) {
	case EVP_PKEY_EC:
		return pkey_verify(key, 0, digest, sig, sig_len);
	case EVP_PKEY_RSA:
		return pkey_verify(key, RSA_PKCS1_PADDING, digest, sig, sig_len) ||
		       pkey_verify(key, RSA_PKCS1_PSS_PADDING, digest, sig, sig_len);
	case EVP_PKEY_RSA_PSS:
		return pkey_verify(key, RSA_PKCS1_PSS_PADDING, digest, sig, sig_len);
	default:
		return false;
	}
}
