/* AWS Signature Version 4, written from AWS's description of the signing process (canonical
 * request, string to sign, derived key) and checked against AWS's published test suite. */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "imageguard/registry/sigv4.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define SIGV4_MAX_PARTS 256 /* headers or query parameters in one request */

struct part {
	char *name, *value; /* owned */
};

struct parts {
	struct part v[SIGV4_MAX_PARTS];
	size_t n;
};

static void parts_release(struct parts *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].name), free(p->v[i].value);
	p->n = 0;
}

static bool is_unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int encode(struct buf *out, const char *s, size_t n, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
		int error = (is_unreserved(c) || (keep_slash && c == '/'))
		                ? buf_append(out, &s[i], 1)
		                : buf_append(out, esc, 3);
		if (error < 0)
			return error;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* s[0..n) percent-decoded then strictly re-encoded, newly allocated; NULL on a bad escape. */
static char *requote(const char *s, size_t n)
{
	struct buf raw = BUF_INIT, out = BUF_INIT;
	char *res = NULL;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
			int lo = hi >= 0 ? hexval(s[i + 2]) : -1;

			if (lo < 0)
				goto done;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (buf_append(&raw, &c, 1) < 0)
			goto done;
	}
	if (encode(&out, raw.data ? raw.data : "", raw.len, false) == 0)
		res = buf_detach(&out);
done:
	buf_release(&raw);
	buf_release(&out);
	return res;
}

static int cmp_parts(const void *a, const void *b)
{
	const struct part *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

static int parse_query(struct parts *out, const char *q, struct error *err)
{
	while (q && *q) {
		size_t len = strcspn(q, "&");
		const char *eq = memchr(q, '=', len);
		size_t klen = eq ? (size_t)(eq - q) : len;

		if (len > 0) {
			if (out->n == SIGV4_MAX_PARTS)
				return error_set(err, IG_ETOOBIG,
				                 "sigv4: too many query parameters");
			out->v[out->n].name = requote(q, klen);
			out->v[out->n].value = eq ? requote(eq + 1, len - klen - 1) : strdup("");
			out->n++;
			if (!out->v[out->n - 1].name || !out->v[out->n - 1].value)
				return error_set(err, IG_EINVALID, "sigv4: malformed query escape");
		}
		q += len + (q[len] == '&');
	}
	qsort(out->v, out->n, sizeof(out->v[0]), cmp_parts);
	return 0;
}

/* The value trimmed, runs of spaces made one, newly allocated. */
static char *trim_value(const char *v)
{
	size_t n = strlen(v), o = 0;
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if ((*v == ' ' || *v == '\t') && (o == 0 || s[o - 1] == ' '))
			continue;
		s[o++] = (*v == '\t') ? ' ' : *v;
	}
	while (o > 0 && s[o - 1] == ' ')
		o--;
	s[o] = '\0';
	return s;
}

/* Appends a header; a repeated name joins its values with ',' in the order given. */
static int add_header(struct parts *out, const char *line, struct error *err)
{
	const char *colon = strchr(line, ':');
	size_t nlen = colon ? (size_t)(colon - line) : 0;
	char *name, *value;

	if (!colon || nlen == 0)
		return error_set(err, IG_EINVALID, "sigv4: header line without a name");
	if (!(name = strndup(line, nlen)) || !(value = trim_value(colon + 1))) {
		free(name);
		return error_oom(err);
	}
	for (char *p = name; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	for (size_t i = 0; i < out->n; i++) {
		struct buf joined = BUF_INIT;

		if (strcmp(out->v[i].name, name) != 0)
			continue;
		free(name);
		if (buf_printf(&joined, "%s,%s", out->v[i].value, value) < 0) {
			free(value);
			return error_oom(err);
		}
		free(value);
		free(out->v[i].value);
		out->v[i].value = buf_detach(&joined);
		return 0;
	}
	if (out->n == SIGV4_MAX_PARTS) {
		free(name), free(value);
		return error_set(err, IG_ETOOBIG, "sigv4: too many headers");
	}
	out->v[out->n++] = (struct part){name, value};
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(((const struct part *)a)->name, ((const struct part *)b)->name);
}

static int parse_headers(struct parts *out, const char *const *headers, struct error *err)
{
	int error;

	for (size_t i = 0; headers && headers[i]; i++)
		if ((error = add_header(out, headers[i], err)) < 0)
			return error;
	qsort(out->v, out->n, sizeof(out->v[0]), cmp_names);
	return 0;
}

static void hex_encode(char *out, const unsigned char *d, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * n] = '\0';
}

static void sha256_hex(char out[65], const void *data, size_t n)
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256(data ? data : (const void *)"", n, md);
	hex_encode(out, md, sizeof(md));
}

static int append_signed_names(struct buf *out, const struct parts *h)
{
	for (size_t i = 0; i < h->n; i++)
		if (buf_printf(out, "%s%s", i ? ";" : "", h->v[i].name) < 0)
			return IG_EFAIL;
	return 0;
}

static int write_canonical(struct buf *out, const struct sigv4_request *req, const struct parts *q,
                           const struct parts *h)
{
	const char *path = req->path && *req->path ? req->path : "/";
	char payload[65];

	if (buf_printf(out, "%s\n", req->method) < 0 || encode(out, path, strlen(path), true) < 0 ||
	    buf_puts(out, "\n") < 0)
		return IG_EFAIL;
	for (size_t i = 0; i < q->n; i++)
		if (buf_printf(out, "%s%s=%s", i ? "&" : "", q->v[i].name, q->v[i].value) < 0)
			return IG_EFAIL;
	if (buf_puts(out, "\n") < 0)
		return IG_EFAIL;
	for (size_t i = 0; i < h->n; i++)
		if (buf_printf(out, "%s:%s\n", h->v[i].name, h->v[i].value) < 0)
			return IG_EFAIL;
	sha256_hex(payload, req->payload, req->payload_len);
	if (buf_puts(out, "\n") < 0 || append_signed_names(out, h) < 0 ||
	    buf_printf(out, "\n%s", payload) < 0)
		return IG_EFAIL;
	return 0;
}

/* Canonical request and signed-header names of req; the struct parts are big: heap them. */
static int canonicalize(struct buf *creq, struct buf *names, const struct sigv4_request *req,
                        struct error *err)
{
	struct parts *q = calloc(1, sizeof(*q)), *h = calloc(1, sizeof(*h));
	int error = IG_EFAIL;

	if (!q || !h) {
		error_oom(err);
		goto done;
	}
	if ((error = parse_query(q, req->query, err)) < 0 ||
	    (error = parse_headers(h, req->headers, err)) < 0)
		goto done;
	if ((error = write_canonical(creq, req, q, h)) < 0 ||
	    (names && (error = append_signed_names(names, h)) < 0))
		error_oom(err);
done:
	if (q)
		parts_release(q);
	if (h)
		parts_release(h);
	free(q), free(h);
	return error;
}

int sigv4_canonical_request(struct buf *out, const struct sigv4_request *req, struct error *err)
{
	return canonicalize(out, NULL, req, err);
}

static void hmac(unsigned char out[32], const void *key, size_t klen, const char *msg)
{
	unsigned int len = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len);
}

/* The derived signing key: HMAC chain over date, region, service and "aws4_request". */
static void signing_key(unsigned char out[32], const struct sigv4_key *key, const char *date8)
{
	struct buf k = BUF_INIT;
	unsigned char a[32], b[32];

	buf_printf(&k, "AWS4%s", key->secret_access_key);
	hmac(a, k.data ? k.data : "", k.len, date8);
	buf_release(&k);
	hmac(b, a, 32, key->region);
	hmac(a, b, 32, key->service);
	hmac(out, a, 32, "aws4_request");
}

int sigv4_sign(struct buf *out, const struct sigv4_request *req, const struct sigv4_key *key,
               const char *amz_date, struct error *err)
{
	struct buf creq = BUF_INIT, names = BUF_INIT, sts = BUF_INIT;
	char date8[9], creq_hash[65], sig[65];
	unsigned char kSigning[32], mac[32];
	int error;

	if (strlen(amz_date) != 16)
		return error_set(err, IG_EINVALID, "sigv4: malformed date");
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	if ((error = canonicalize(&creq, &names, req, err)) < 0)
		goto done;
	sha256_hex(creq_hash, creq.data, creq.len);
	error = IG_EFAIL;
	if (buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date, date8,
	               key->region, key->service, creq_hash) < 0)
		goto oom;
	signing_key(kSigning, key, date8);
	hmac(mac, kSigning, 32, sts.data);
	hex_encode(sig, mac, 32);
	if (buf_printf(out,
	               "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
	               "Signature=%s",
	               key->access_key_id, date8, key->region, key->service, names.data, sig) < 0)
		goto oom;
	error = 0;
	goto done;
oom:
	error_oom(err);
done:
	OPENSSL_cleanse(kSigning, sizeof(kSigning));
	buf_release(&creq);
	buf_release(&names);
	buf_release(&sts);
	return error;
}

void sigv4_format_date(char out[17], long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}
