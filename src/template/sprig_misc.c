/* Sprig's arithmetic, conversions, hashes and base64, paths, type reflection and fail. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "template_private.h"
#include "tsha.h"

static const struct tval *int64_value(struct texec *x, long long v)
{
	return texec_check(x, tval_int(x->arena, v, "int64"));
}

/* Go's int64 arithmetic wraps on overflow. */
static long long wrap_add(long long a, long long b)
{
	return (long long)((unsigned long long)a + (unsigned long long)b);
}

static const struct tval *fn_add(struct texec *x, const struct tval *const *a, size_t n)
{
	long long sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum = wrap_add(sum, tconv_int64(a[i]));
	return int64_value(x, sum);
}

static const struct tval *fn_add1(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return int64_value(x, wrap_add(tconv_int64(a[0]), 1));
}

static const struct tval *fn_sub(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return int64_value(x, (long long)((unsigned long long)tconv_int64(a[0]) -
	                                  (unsigned long long)tconv_int64(a[1])));
}

static const struct tval *fn_mul(struct texec *x, const struct tval *const *a, size_t n)
{
	unsigned long long p = (unsigned long long)tconv_int64(a[0]);
	size_t i;

	for (i = 1; i < n; i++)
		p *= (unsigned long long)tconv_int64(a[i]);
	return int64_value(x, (long long)p);
}

static const struct tval *div_mod(struct texec *x, const struct tval *const *a, bool mod)
{
	long long l = tconv_int64(a[0]), r = tconv_int64(a[1]);

	if (r == 0)
		return texec_fail(x, IG_EINVALID,
		                  "error calling %s: runtime error: integer divide by zero",
		                  mod ? "mod" : "div");
	if (r == -1)
		return int64_value(x, mod ? 0 : (long long)(0ULL - (unsigned long long)l));
	return int64_value(x, mod ? l % r : l / r);
}

static const struct tval *fn_div(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return div_mod(x, a, false);
}

static const struct tval *fn_mod(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return div_mod(x, a, true);
}

static const struct tval *min_max(struct texec *x, const struct tval *const *a, size_t n, bool max)
{
	long long r = tconv_int64(a[0]);
	size_t i;

	for (i = 1; i < n; i++) {
		long long v = tconv_int64(a[i]);

		if (max ? v > r : v < r)
			r = v;
	}
	return int64_value(x, r);
}

static const struct tval *fn_max(struct texec *x, const struct tval *const *a, size_t n)
{
	return min_max(x, a, n, true);
}

static const struct tval *fn_min(struct texec *x, const struct tval *const *a, size_t n)
{
	return min_max(x, a, n, false);
}

static const struct tval *float_minmax(struct texec *x, const struct tval *const *a, size_t n,
                                       bool max)
{
	double r = tconv_float64(a[0]);
	size_t i;

	for (i = 1; i < n; i++)
		r = max ? fmax(r, tconv_float64(a[i])) : fmin(r, tconv_float64(a[i]));
	return texec_check(x, tval_float(x->arena, r));
}

static const struct tval *fn_maxf(struct texec *x, const struct tval *const *a, size_t n)
{
	return float_minmax(x, a, n, true);
}

static const struct tval *fn_minf(struct texec *x, const struct tval *const *a, size_t n)
{
	return float_minmax(x, a, n, false);
}

/* strconv.Atoi with errors as 0. */
static const struct tval *fn_atoi(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s;
	size_t len, i = 0;
	long long v = 0;
	bool neg = false;

	(void)n;
	if (!targ_string(x, "atoi", a[0], &s, &len))
		return NULL;
	if (len && (s[0] == '+' || s[0] == '-'))
		neg = s[i++] == '-';
	if (i == len)
		return texec_check(x, tval_int(x->arena, 0, "int"));
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - 9) / 10)
			return texec_check(x, tval_int(x->arena, 0, "int"));
		v = v * 10 + (s[i] - '0');
	}
	return texec_check(x, tval_int(x->arena, neg ? -v : v, "int"));
}

static const struct tval *fn_int(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return texec_check(x, tval_int(x->arena, tconv_int64(a[0]), "int"));
}

static const struct tval *fn_int64(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return int64_value(x, tconv_int64(a[0]));
}

static const struct tval *fn_float64(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return texec_check(x, tval_float(x->arena, tconv_float64(a[0])));
}

static const struct tval *fn_ceil(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return texec_check(x, tval_float(x->arena, ceil(tconv_float64(a[0]))));
}

static const struct tval *fn_floor(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return texec_check(x, tval_float(x->arena, floor(tconv_float64(a[0]))));
}

static const struct tval *fn_round(struct texec *x, const struct tval *const *a, size_t n)
{
	double on = .5, val = tconv_float64(a[0]), pow10, digit, ip;
	long long places;

	if (!targ_int(x, "round", a[1], &places))
		return NULL;
	if (n > 2) {
		if (a[2]->kind != TV_FLOAT)
			return texec_fail(x, IG_EINVALID,
			                  "wrong type for value; expected float64; got %s",
			                  a[2]->type);
		on = a[2]->f;
	}
	pow10 = pow(10, (double)places);
	digit = pow10 * val;
	return texec_check(
	    x, tval_float(x->arena, (modf(digit, &ip) >= on ? ceil(digit) : floor(digit)) / pow10));
}

/* ---- encodings and hashes ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static const struct tval *fn_b64enc(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const unsigned char *s;
	size_t len, i;
	int rc = 0;

	(void)n;
	if (!targ_string(x, "b64enc", a[0], (const char **)&s, &len))
		return NULL;
	for (i = 0; rc == 0 && i < len; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0) |
		             (i + 2 < len ? s[i + 2] : 0);
		char q[4] = {b64[v >> 18], b64[(v >> 12) & 63],
		             i + 1 < len ? b64[(v >> 6) & 63] : '=',
		             i + 2 < len ? b64[v & 63] : '='};

		rc = buf_append(&b, q, 4);
	}
	return texec_string(x, &b, rc);
}

static int b64_value(unsigned char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

static bool is_nl(unsigned char c)
{
	return c == '\n' || c == '\r';
}

/* Go's base64.StdEncoding quantum decoder: bytes appended, *err_at = -1 or the bad offset. */
static size_t b64_quantum(const unsigned char *s, size_t len, size_t si, unsigned char *out,
                          size_t *dlen_out, long *err_at)
{
	int dbuf[4] = {0};
	size_t j, dlen = 4;

	for (j = 0; j < 4; j++) {
		int v;

		if (si == len) {
			if (j == 0)
				return *dlen_out = 0, si;
			*err_at = (long)(si - j);
			return si;
		}
		if ((v = b64_value(s[si++])) >= 0) {
			dbuf[j] = v;
			continue;
		}
		if (is_nl(s[si - 1])) {
			j--;
			continue;
		}
		if (s[si - 1] != '=' || j < 2) {
			*err_at = (long)(si - 1);
			return si;
		}
		if (j == 2) {
			while (si < len && is_nl(s[si]))
				si++;
			if (si == len || s[si] != '=') {
				*err_at = (long)(si == len ? len : si - 1);
				return si;
			}
			si++;
		}
		while (si < len && is_nl(s[si]))
			si++;
		if (si < len)
			*err_at = (long)si;
		dlen = j;
		break;
	}
	unsigned val = (unsigned)dbuf[0] << 18 | (unsigned)dbuf[1] << 12 | (unsigned)dbuf[2] << 6 |
	               (unsigned)dbuf[3];
	out[0] = (unsigned char)(val >> 16);
	out[1] = (unsigned char)(val >> 8);
	out[2] = (unsigned char)val;
	*dlen_out = dlen - 1;
	return si;
}

static const struct tval *fn_b64dec(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const unsigned char *s;
	size_t len, si = 0, got;
	long err_at = -1;
	int rc = 0;

	(void)n;
	if (!targ_string(x, "b64dec", a[0], (const char **)&s, &len))
		return NULL;
	while (rc == 0 && si < len && err_at < 0) {
		unsigned char q[3];

		si = b64_quantum(s, len, si, q, &got, &err_at);
		if (err_at < 0 && got)
			rc = buf_append(&b, q, got);
		if (got == 0 && err_at < 0)
			break;
		if (got < 3)
			break;
	}
	if (err_at >= 0) {
		buf_reset(&b);
		rc = buf_printf(&b, "illegal base64 data at input byte %ld", err_at);
	}
	return texec_string(x, &b, rc);
}

static const struct tval *digest(struct texec *x, const struct tval *v, const char *fn, bool sha1)
{
	unsigned char sum[32];
	unsigned len = sha1 ? 20 : 32, i;
	struct buf b = BUF_INIT;
	const char *s;
	size_t slen;
	int rc = 0;

	if (!targ_string(x, fn, v, &s, &slen))
		return NULL;
	if (sha1)
		tsha1(sum, s, slen);
	else
		tsha256(sum, s, slen);
	for (i = 0; rc == 0 && i < len; i++)
		rc = buf_printf(&b, "%02x", sum[i]);
	return texec_string(x, &b, rc);
}

static const struct tval *fn_sha256sum(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return digest(x, a[0], "sha256sum", false);
}

static const struct tval *fn_sha1sum(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return digest(x, a[0], "sha1sum", true);
}

static const struct tval *fn_adler32sum(struct texec *x, const struct tval *const *a, size_t n)
{
	unsigned long s1 = 1, s2 = 0;
	struct buf b = BUF_INIT;
	const unsigned char *s;
	size_t len, i;

	(void)n;
	if (!targ_string(x, "adler32sum", a[0], (const char **)&s, &len))
		return NULL;
	for (i = 0; i < len; i++) {
		s1 = (s1 + s[i]) % 65521;
		s2 = (s2 + s1) % 65521;
	}
	return texec_string(x, &b, buf_printf(&b, "%lu", s2 << 16 | s1));
}

/* ---- paths (Go's path package) ---- */

/* path.Clean, appended to b. */
static int clean_path(struct buf *b, const char *p, size_t n)
{
	size_t r = 0, dotdot;
	bool rooted = n && p[0] == '/';
	int rc = 0;

	if (n == 0)
		return buf_puts(b, ".");
	if (rooted)
		rc = buf_puts(b, "/"), r = 1;
	dotdot = b->len;
	while (rc == 0 && r < n) {
		if (p[r] == '/') {
			r++;
		} else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
			r++;
		} else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
			r += 2;
			if (b->len > dotdot) {
				while (b->len > dotdot && b->data[b->len - 1] != '/')
					b->len--;
				if (b->len > dotdot)
					b->len--;
				b->data[b->len] = 0;
			} else if (!rooted) {
				rc = buf_puts(b, b->len ? "/.." : "..");
				dotdot = b->len;
			}
		} else {
			if ((rooted && b->len != 1) || (!rooted && b->len))
				rc = buf_puts(b, "/");
			while (rc == 0 && r < n && p[r] != '/')
				rc = buf_append(b, &p[r++], 1);
		}
	}
	return rc ? rc : (b->len ? 0 : buf_puts(b, "."));
}

static const struct tval *fn_clean(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const char *s;
	size_t len;

	(void)n;
	if (!targ_string(x, "clean", a[0], &s, &len))
		return NULL;
	return texec_string(x, &b, clean_path(&b, s, len));
}

static const struct tval *fn_base(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s, *slash;
	size_t len;

	(void)n;
	if (!targ_string(x, "base", a[0], &s, &len))
		return NULL;
	if (len == 0)
		return texec_check(x, tval_cstring(x->arena, "."));
	while (len > 0 && s[len - 1] == '/')
		len--;
	if (len == 0)
		return texec_check(x, tval_cstring(x->arena, "/"));
	for (slash = s + len; slash > s && slash[-1] != '/'; slash--)
		;
	return texec_check(x, tval_string(x->arena, slash, len - (size_t)(slash - s)));
}

static const struct tval *fn_dir(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const char *s;
	size_t len, i;

	(void)n;
	if (!targ_string(x, "dir", a[0], &s, &len))
		return NULL;
	for (i = len; i > 0 && s[i - 1] != '/'; i--)
		;
	return texec_string(x, &b, clean_path(&b, s, i));
}

static const struct tval *fn_ext(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s;
	size_t len, i;

	(void)n;
	if (!targ_string(x, "ext", a[0], &s, &len))
		return NULL;
	for (i = len; i > 0 && s[i - 1] != '/'; i--)
		if (s[i - 1] == '.')
			return texec_check(x, tval_string(x->arena, s + i - 1, len - i + 1));
	return texec_check(x, tval_cstring(x->arena, ""));
}

static const struct tval *fn_is_abs(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s;
	size_t len;

	(void)n;
	if (!targ_string(x, "isAbs", a[0], &s, &len))
		return NULL;
	return tval_bool(len && s[0] == '/');
}

/* ---- reflection, fail ---- */

static const struct tval *fn_type_of(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return texec_check(x, tval_cstring(x->arena, a[0]->kind == TV_NIL ? "<nil>" : a[0]->type));
}

static const struct tval *fn_kind_of(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return texec_check(x, tval_cstring(x->arena, tval_kind_name(a[0])));
}

static const struct tval *is_named(struct texec *x, const struct tval *const *a, const char *fn,
                                   const char *name)
{
	const char *t;
	size_t len;

	if (!targ_string(x, fn, a[0], &t, &len))
		return NULL;
	return tval_bool(strlen(name) == len && !memcmp(name, t, len));
}

static const struct tval *fn_type_is(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return is_named(x, a, "typeIs", a[1]->kind == TV_NIL ? "<nil>" : a[1]->type);
}

static const struct tval *fn_kind_is(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return is_named(x, a, "kindIs", tval_kind_name(a[1]));
}

static const struct tval *fn_deep_equal(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)x, (void)n;
	return tval_bool(tval_deep_equal(a[0], a[1]));
}

static const struct tval *fn_fail(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s;
	size_t len;

	(void)n;
	if (!targ_string(x, "fail", a[0], &s, &len))
		return NULL;
	return texec_fail(x, IG_EINVALID, "error calling fail: %.*s", (int)(len > 300 ? 300 : len),
	                  s);
}

const struct tfunc_entry sprig_misc_table[] = {
    {"add", fn_add, 0, -1},
    {"add1", fn_add1, 1, 1},
    {"sub", fn_sub, 2, 2},
    {"mul", fn_mul, 1, -1},
    {"div", fn_div, 2, 2},
    {"mod", fn_mod, 2, 2},
    {"max", fn_max, 1, -1},
    {"biggest", fn_max, 1, -1},
    {"min", fn_min, 1, -1},
    {"maxf", fn_maxf, 1, -1},
    {"minf", fn_minf, 1, -1},
    {"atoi", fn_atoi, 1, 1},
    {"int", fn_int, 1, 1},
    {"int64", fn_int64, 1, 1},
    {"float64", fn_float64, 1, 1},
    {"ceil", fn_ceil, 1, 1},
    {"floor", fn_floor, 1, 1},
    {"round", fn_round, 2, 3},
    {"b64enc", fn_b64enc, 1, 1},
    {"b64dec", fn_b64dec, 1, 1},
    {"sha256sum", fn_sha256sum, 1, 1},
    {"sha1sum", fn_sha1sum, 1, 1},
    {"adler32sum", fn_adler32sum, 1, 1},
    {"clean", fn_clean, 1, 1},
    {"base", fn_base, 1, 1},
    {"dir", fn_dir, 1, 1},
    {"ext", fn_ext, 1, 1},
    {"isAbs", fn_is_abs, 1, 1},
    {"typeOf", fn_type_of, 1, 1},
    {"kindOf", fn_kind_of, 1, 1},
    {"typeIs", fn_type_is, 2, 2},
    {"kindIs", fn_kind_is, 2, 2},
    {"deepEqual", fn_deep_equal, 2, 2},
    {"fail", fn_fail, 1, 1},
    {NULL, NULL, 0, 0},
};
