/* Trust material from a Secret folder: signer keys, Fulcio CAs, Rekor and CT log keys (PEM
 * files or a Sigstore trusted_root.json), and the fingerprint that keys the result cache. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/duration.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

#define NKINDS 3
#define RECORD 49 /* fingerprint record: kind, 32-byte id, two 8-byte instants */

struct trustroot {
	char secret[128];
	struct trustkey keys[NKINDS][TRUSTROOT_MAX_ITEMS];
	size_t nkeys[NKINDS];
	struct trustcert cas[TRUSTROOT_MAX_ITEMS];
	size_t ncas;
	char fingerprint[72];
};

int trustroot_new(struct trustroot **out, const char *secret, struct error *err)
{
	struct trustroot *tr = calloc(1, sizeof(*tr));

	*out = NULL;
	if (!tr)
		return error_set(err, IG_EFAIL, "secret '%s': out of memory", secret);
	snprintf(tr->secret, sizeof(tr->secret), "%s", secret);
	*out = tr;
	return 0;
}

void trustroot_free(struct trustroot *tr)
{
	if (!tr)
		return;
	for (int k = 0; k < NKINDS; k++)
		for (size_t i = 0; i < tr->nkeys[k]; i++)
			EVP_PKEY_free(tr->keys[k][i].pkey);
	for (size_t i = 0; i < tr->ncas; i++)
		X509_free(tr->cas[i].cert);
	free(tr);
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool has_suffix(const char *s, const char *x)
{
	size_t n = strlen(s), m = strlen(x);

	return n >= m && strcmp(s + n - m, x) == 0;
}

/* -1 for a name that holds no trust material. */
enum file_kind { FILE_NONE = -1, FILE_SIGNER, FILE_REKOR, FILE_CTLOG, FILE_CA, FILE_ROOT };

static enum file_kind classify(const char *key)
{
	if (key[0] == '.')
		return FILE_NONE;
	if (strcmp(key, "trusted_root.json") == 0)
		return FILE_ROOT;
	if (has_prefix(key, "fulcio") && has_suffix(key, ".crt.pem"))
		return FILE_CA;
	if (!has_suffix(key, ".pub"))
		return FILE_NONE;
	if (has_prefix(key, "rekor"))
		return FILE_REKOR;
	if (has_prefix(key, "ctfe") || has_prefix(key, "ctlog"))
		return FILE_CTLOG;
	return FILE_SIGNER;
}

static int fail(const struct trustroot *tr, const char *key, int code, const char *reason,
                struct error *err)
{
	return error_set(err, code, "secret '%s' key '%s': %s", tr->secret, key, reason);
}

/* Adds a parsed key (taking it) with its id (NULL: the SubjectPublicKeyInfo's hash). */
static int push_key(struct trustroot *tr, enum trustroot_kind kind, const char *key, EVP_PKEY *pkey,
                    const unsigned char *id, int64_t from, int64_t to, struct error *err)
{
	struct trustkey *k;

	if (tr->nkeys[kind] >= TRUSTROOT_MAX_ITEMS) {
		EVP_PKEY_free(pkey);
		return fail(tr, key, IG_ETOOBIG, "more than 32 keys of one kind", err);
	}
	k = &tr->keys[kind][tr->nkeys[kind]];
	if (id)
		memcpy(k->id, id, 32);
	else if (sigcrypto_key_id(k->id, pkey) < 0) {
		EVP_PKEY_free(pkey);
		return fail(tr, key, IG_EFAIL, "cannot hash the key", err);
	}
	snprintf(k->name, sizeof(k->name), "%s", key);
	k->pkey = pkey;
	k->not_before = from;
	k->not_after = to;
	tr->nkeys[kind]++;
	return 0;
}

static int add_pem_key(struct trustroot *tr, enum trustroot_kind kind, const char *key,
                       const unsigned char *data, size_t len, struct error *err)
{
	struct error why = ERROR_INIT;
	EVP_PKEY *pkey;

	if (sigcrypto_key_parse(&pkey, data, len, &why) < 0)
		return fail(tr, key, IG_EINVALID, why.msg, err);
	return push_key(tr, kind, key, pkey, NULL, INT64_MIN, INT64_MAX, err);
}

static int push_cert(struct trustroot *tr, const char *key, X509 *cert, int64_t from, int64_t to,
                     struct error *err)
{
	if (tr->ncas >= TRUSTROOT_MAX_ITEMS) {
		X509_free(cert);
		return fail(tr, key, IG_ETOOBIG, "more than 32 CA certificates", err);
	}
	tr->cas[tr->ncas].cert = cert;
	tr->cas[tr->ncas].not_before = from;
	tr->cas[tr->ncas].not_after = to;
	tr->ncas++;
	return 0;
}

/* Every certificate of a PEM file; at least one. */
static int add_pem_certs(struct trustroot *tr, const char *key, const unsigned char *data,
                         size_t len, struct error *err)
{
	BIO *bio = BIO_new_mem_buf(data, (int)len);
	size_t n = 0;
	X509 *cert;
	int error = 0;

	if (!bio)
		return fail(tr, key, IG_EFAIL, "out of memory", err);
	while ((cert = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		n++;
		if ((error = push_cert(tr, key, cert, INT64_MIN, INT64_MAX, err)) < 0)
			break;
	}
	ERR_clear_error();
	BIO_free(bio);
	if (!error && n == 0)
		error = fail(tr, key, IG_EINVALID, "no PEM certificate", err);
	return error;
}

/* ---- trusted_root.json ---- */

/* validFor {start, end} into [from, to]; absent bounds are open. */
static int valid_for(int64_t *from, int64_t *to, json_t *v)
{
	const char *start = json_string_value(json_object_get(v, "start"));
	const char *end = json_string_value(json_object_get(v, "end"));
	time_t t;

	*from = INT64_MIN;
	*to = INT64_MAX;
	if (v && !json_is_object(v))
		return IG_EINVALID;
	if (start) {
		if (rfc3339_parse(&t, start, NULL) < 0)
			return IG_EINVALID;
		*from = (int64_t)t;
	}
	if (end) {
		if (rfc3339_parse(&t, end, NULL) < 0)
			return IG_EINVALID;
		*to = (int64_t)t;
	}
	return 0;
}

/* A base64 field of obj (rawBytes, keyId) into b. */
static int b64_field(struct buf *b, json_t *obj, const char *name)
{
	const char *s = json_string_value(json_object_get(obj, name));

	return s ? sigcrypto_b64decode(b, s, strlen(s)) : IG_EINVALID;
}

static int root_log(struct trustroot *tr, enum trustroot_kind kind, const char *key, json_t *log,
                    struct error *err)
{
	struct buf der = BUF_INIT_MAX(TRUSTROOT_MAX_FILE), id = BUF_INIT_MAX(64);
	json_t *pk = json_object_get(log, "publicKey");
	struct error why = ERROR_INIT;
	int64_t from, to;
	EVP_PKEY *pkey = NULL;
	int error;

	if (b64_field(&der, pk, "rawBytes") < 0 ||
	    valid_for(&from, &to, json_object_get(pk, "validFor")) < 0 ||
	    (json_object_get(log, "logId") &&
	     (b64_field(&id, json_object_get(log, "logId"), "keyId") < 0 || id.len != 32))) {
		error = fail(tr, key, IG_EINVALID, "malformed log entry", err);
		goto done;
	}
	if (sigcrypto_key_parse(&pkey, (unsigned char *)der.data, der.len, &why) < 0) {
		error = fail(tr, key, IG_EINVALID, why.msg, err);
		goto done;
	}
	error =
	    push_key(tr, kind, key, pkey, id.len ? (unsigned char *)id.data : NULL, from, to, err);
done:
	buf_release(&der);
	buf_release(&id);
	return error;
}

static int root_ca(struct trustroot *tr, const char *key, json_t *ca, struct error *err)
{
	json_t *certs = json_object_get(json_object_get(ca, "certChain"), "certificates"), *c;
	struct buf der = BUF_INIT_MAX(TRUSTROOT_MAX_FILE);
	int64_t from, to;
	int error = 0;
	size_t i;

	if (!json_is_array(certs) || json_array_size(certs) == 0 ||
	    valid_for(&from, &to, json_object_get(ca, "validFor")) < 0)
		return fail(tr, key, IG_EINVALID, "malformed certificate authority", err);
	json_array_foreach(certs, i, c)
	{
		const unsigned char *p;
		X509 *cert;

		if (b64_field(&der, c, "rawBytes") < 0) {
			error = fail(tr, key, IG_EINVALID, "malformed certificate", err);
			break;
		}
		p = (unsigned char *)der.data;
		if (!(cert = d2i_X509(NULL, &p, (long)der.len))) {
			ERR_clear_error();
			error = fail(tr, key, IG_EINVALID, "a certificate does not parse", err);
			break;
		}
		if ((error = push_cert(tr, key, cert, from, to, err)) < 0)
			break;
	}
	buf_release(&der);
	return error;
}

/* Applies fn to every element of the array member name (absent: none). */
static int root_list(struct trustroot *tr, const char *key, json_t *root, const char *name,
                     int kind, struct error *err)
{
	json_t *list = json_object_get(root, name), *e;
	int error = 0;
	size_t i;

	if (!list)
		return 0;
	if (!json_is_array(list))
		return fail(tr, key, IG_EINVALID, "malformed trusted root", err);
	json_array_foreach(list, i, e)
	{
		error = kind == FILE_CA ? root_ca(tr, key, e, err)
		                        : root_log(tr, (enum trustroot_kind)kind, key, e, err);
		if (error < 0)
			break;
	}
	return error;
}

static int add_trusted_root(struct trustroot *tr, const char *key, const unsigned char *data,
                            size_t len, struct error *err)
{
	json_t *root = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, NULL);
	int error;

	if (!json_is_object(root)) {
		json_decref(root);
		return fail(tr, key, IG_EINVALID, "not a JSON object", err);
	}
	if ((error = root_list(tr, key, root, "tlogs", FILE_REKOR, err)) >= 0 &&
	    (error = root_list(tr, key, root, "ctlogs", FILE_CTLOG, err)) >= 0)
		error = root_list(tr, key, root, "certificateAuthorities", FILE_CA, err);
	json_decref(root);
	return error;
}

int trustroot_add(struct trustroot *tr, const char *key, const unsigned char *data, size_t len,
                  struct error *err)
{
	enum file_kind kind = classify(key);

	if (kind == FILE_NONE)
		return 0;
	if (len > (kind == FILE_ROOT ? TRUSTROOT_MAX_JSON : TRUSTROOT_MAX_FILE))
		return fail(tr, key, IG_ETOOBIG, "too large", err);
	if (len == 0)
		return fail(tr, key, IG_EINVALID, "empty", err);
	switch (kind) {
	case FILE_ROOT:
		return add_trusted_root(tr, key, data, len, err);
	case FILE_CA:
		return add_pem_certs(tr, key, data, len, err);
	default:
		return add_pem_key(tr, (enum trustroot_kind)kind, key, data, len, err);
	}
}

/* ---- fingerprint ---- */

static void put64(unsigned char *p, int64_t v)
{
	uint64_t u = (uint64_t)v;

	for (int i = 7; i >= 0; i--, u >>= 8)
		p[i] = (unsigned char)u;
}

static void record(unsigned char *r, int kind, const unsigned char id[32], int64_t from, int64_t to)
{
	r[0] = (unsigned char)kind;
	memcpy(r + 1, id, 32);
	put64(r + 33, from);
	put64(r + 41, to);
}

static int cmp_record(const void *a, const void *b)
{
	return memcmp(a, b, RECORD);
}

static int cert_id(unsigned char out[32], X509 *cert)
{
	unsigned char *der = NULL;
	int len = i2d_X509(cert, &der), rc;

	if (len <= 0) {
		ERR_clear_error();
		return IG_EFAIL;
	}
	rc = sigcrypto_sha256(out, der, (size_t)len);
	OPENSSL_free(der);
	return rc;
}

static int fingerprint(struct trustroot *tr)
{
	unsigned char recs[(NKINDS + 1) * TRUSTROOT_MAX_ITEMS][RECORD], id[32], md[32];
	size_t n = 0;

	for (int k = 0; k < NKINDS; k++)
		for (size_t i = 0; i < tr->nkeys[k]; i++, n++)
			record(recs[n], k, tr->keys[k][i].id, tr->keys[k][i].not_before,
			       tr->keys[k][i].not_after);
	for (size_t i = 0; i < tr->ncas; i++, n++) {
		if (cert_id(id, tr->cas[i].cert) < 0)
			return IG_EFAIL;
		record(recs[n], NKINDS, id, tr->cas[i].not_before, tr->cas[i].not_after);
	}
	qsort(recs, n, RECORD, cmp_record);
	if (sigcrypto_sha256(md, recs, n * RECORD) < 0)
		return IG_EFAIL;
	memcpy(tr->fingerprint, "sha256:", 7);
	sigcrypto_hex(tr->fingerprint + 7, md, 32);
	return 0;
}

int trustroot_finish(struct trustroot *tr, struct error *err)
{
	if (tr->nkeys[TRUSTROOT_SIGNER] == 0 && !trustroot_has_keyless(tr))
		return error_set(err, IG_EINVALID,
		                 "secret '%s': no public key (*.pub) and no Fulcio and Rekor trust "
		                 "root (fulcio*.crt.pem and rekor*.pub, or trusted_root.json)",
		                 tr->secret);
	if (fingerprint(tr) < 0)
		return error_set(err, IG_EFAIL, "secret '%s': cannot hash the trust root",
		                 tr->secret);
	return 0;
}

/* ---- the folder ---- */

/* The names of the folder's entries that hold trust material, sorted (a stable order of
 * keys and of messages). */
static int list_keys(struct strvec *out, const char *dir, const char *secret, struct error *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int error = 0;

	if (!d)
		return error_set(err, errno == ENOENT ? IG_ENOTFOUND : IG_EFAIL,
		                 "secret '%s': cannot open '%s'", secret, dir);
	while ((e = readdir(d))) {
		if (classify(e->d_name) == FILE_NONE)
			continue;
		if (out->len >= TRUSTROOT_MAX_FILES) {
			error = error_set(err, IG_ETOOBIG, "secret '%s': more than %d keys", secret,
			                  TRUSTROOT_MAX_FILES);
			break;
		}
		if (strvec_push(out, e->d_name) < 0) {
			error = error_set(err, IG_EFAIL, "secret '%s': out of memory", secret);
			break;
		}
	}
	closedir(d);
	strvec_sort(out);
	return error;
}

static int add_file(struct trustroot *tr, const char *dir, const char *key, struct error *err)
{
	struct buf path = BUF_INIT,
	           data = BUF_INIT_MAX(strcmp(key, "trusted_root.json") ? TRUSTROOT_MAX_FILE
	                                                                : TRUSTROOT_MAX_JSON);
	struct stat st;
	int error;

	if (buf_printf(&path, "%s/%s", dir, key) < 0) {
		error = fail(tr, key, IG_EFAIL, "out of memory", err);
		goto done;
	}
	if (stat(path.data, &st) < 0 || !S_ISREG(st.st_mode)) {
		error = 0; /* a folder or a dangling link named like a key holds nothing */
		goto done;
	}
	error = buf_read_file(&data, path.data);
	if (error == IG_ETOOBIG)
		error = fail(tr, key, error, "too large", err);
	else if (error < 0)
		error = fail(tr, key, error, "cannot read", err);
	else
		error = trustroot_add(tr, key, (unsigned char *)(data.data ? data.data : ""),
		                      data.len, err);
done:
	buf_release(&path);
	buf_release(&data);
	return error;
}

int trustroot_load(struct trustroot **out, const char *dir, const char *secret, struct error *err)
{
	struct strvec keys = STRVEC_INIT;
	struct trustroot *tr = NULL;
	int error;

	*out = NULL;
	if ((error = trustroot_new(&tr, secret, err)) < 0 ||
	    (error = list_keys(&keys, dir, secret, err)) < 0)
		goto done;
	for (size_t i = 0; i < keys.len; i++)
		if ((error = add_file(tr, dir, keys.items[i], err)) < 0)
			goto done;
	if ((error = trustroot_finish(tr, err)) < 0)
		goto done;
	*out = tr;
	tr = NULL;
done:
	strvec_release(&keys);
	trustroot_free(tr);
	return error;
}

/* ---- getters ---- */

const char *trustroot_secret(const struct trustroot *tr)
{
	return tr->secret;
}

const char *trustroot_fingerprint(const struct trustroot *tr)
{
	return tr->fingerprint;
}

size_t trustroot_count(const struct trustroot *tr, enum trustroot_kind kind)
{
	return tr->nkeys[kind];
}

const struct trustkey *trustroot_key(const struct trustroot *tr, enum trustroot_kind kind, size_t i)
{
	return i < tr->nkeys[kind] ? &tr->keys[kind][i] : NULL;
}

const struct trustkey *trustroot_find(const struct trustroot *tr, enum trustroot_kind kind,
                                      const unsigned char id[32])
{
	for (size_t i = 0; i < tr->nkeys[kind]; i++)
		if (memcmp(tr->keys[kind][i].id, id, 32) == 0)
			return &tr->keys[kind][i];
	return NULL;
}

size_t trustroot_ca_count(const struct trustroot *tr)
{
	return tr->ncas;
}

const struct trustcert *trustroot_ca(const struct trustroot *tr, size_t i)
{
	return i < tr->ncas ? &tr->cas[i] : NULL;
}

bool trustroot_has_keyless(const struct trustroot *tr)
{
	return tr->ncas > 0 && tr->nkeys[TRUSTROOT_REKOR] > 0;
}
