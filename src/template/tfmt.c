/* Go's fmt over template values: Sprint, Sprintln and Sprintf with Go's verbs, flags, widths
 * and precisions, its %v of lists, maps and structs, and its %!verb(type=value) complaints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template_private.h"

struct spec {
	bool minus, plus, sharp, space, zero;
	bool has_width, has_prec;
	int width, prec;
	char verb;
};

size_t tutf8_decode(const char *str, size_t n, unsigned *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len, i;
	unsigned c;

	*cp = 0xFFFD;
	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return *cp = s[0], 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, c = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, c = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, c = s[0] & 0x07;
	else
		return 1;
	if (n < len)
		return 1;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 1;
		c = c << 6 | (s[i] & 0x3F);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xD800 && c < 0xE000))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10FFFF)))
		return 1;
	*cp = c;
	return len;
}

size_t tutf8_encode(char out[4], unsigned cp)
{
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
		cp = 0xFFFD;
	if (cp < 0x80)
		return out[0] = (char)cp, 1;
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

static size_t rune_count(const char *s, size_t n)
{
	size_t count = 0, i = 0;
	unsigned cp;

	while (i < n) {
		i += tutf8_decode(s + i, n - i, &cp);
		count++;
	}
	return count;
}

/* strconv.IsPrint, for the code points Go's %q treats specially. */
bool tfmt_is_print(unsigned cp)
{
	if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD)
		return false;
	if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
	    (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF ||
	    (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000)
		return false;
	return true;
}

static int quote_rune(struct buf *out, unsigned cp, size_t width, const char *raw, char q,
                      bool ascii)
{
	static const char esc_from[] = "\a\b\f\n\r\t\v", esc_to[] = "abfnrtv";
	const char *e;

	if (cp == (unsigned char)q || cp == '\\')
		return buf_printf(out, "\\%c", (char)cp);
	if (width == 1 && cp == 0xFFFD && (unsigned char)raw[0] >= 0x80)
		return buf_printf(out, "\\x%02x", (unsigned char)raw[0]);
	if (cp < 0x80 && cp && (e = strchr(esc_from, (int)cp)))
		return buf_printf(out, "\\%c", esc_to[e - esc_from]);
	if (tfmt_is_print(cp) && (!ascii || cp < 0x80))
		return buf_append(out, raw, width);
	if (cp < 0x20 || cp == 0x7F)
		return buf_printf(out, "\\x%02x", cp);
	return cp < 0x10000 ? buf_printf(out, "\\u%04x", cp) : buf_printf(out, "\\U%08x", cp);
}

static int quote_with(struct buf *out, const char *s, size_t len, char q, bool ascii)
{
	size_t i = 0;
	int rc = buf_append(out, &q, 1);

	while (rc == 0 && i < len) {
		unsigned cp;
		size_t w = tutf8_decode(s + i, len - i, &cp);

		rc = quote_rune(out, cp, w, s + i, q, ascii);
		i += w;
	}
	return rc ? rc : buf_append(out, &q, 1);
}

int tfmt_quote(struct buf *out, const char *s, size_t len)
{
	return quote_with(out, s, len, '"', false);
}

/* ---- padding ---- */

static int pad(struct buf *out, const struct spec *sp, const char *s, size_t len, bool number)
{
	size_t runes = rune_count(s, len), i;
	size_t w = sp->has_width && sp->width > 0 ? (size_t)sp->width : 0;
	char c = sp->zero && !sp->minus && number ? '0' : ' ';
	int rc = 0;

	if (runes >= w)
		return buf_append(out, s, len);
	if (sp->minus)
		rc = buf_append(out, s, len);
	if (c == '0' && len && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) {
		rc = buf_append(out, s, 1);
		s++, len--;
	}
	for (i = runes; rc == 0 && i < w; i++)
		rc = buf_append(out, sp->minus ? " " : &c, 1);
	return rc || sp->minus ? rc : buf_append(out, s, len);
}

static int pad_buf(struct buf *out, const struct spec *sp, struct buf *tmp, bool number)
{
	int rc = pad(out, sp, tmp->data ? tmp->data : "", tmp->len, number);

	buf_release(tmp);
	return rc;
}

/* ---- numbers ---- */

static int fmt_integer(struct buf *out, const struct spec *sp, long long v, char verb)
{
	char digits[80];
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	unsigned base = verb == 'x' || verb == 'X'   ? 16
	                : verb == 'o' || verb == 'O' ? 8
	                : verb == 'b'                ? 2
	                                             : 10;
	const char *set = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
	struct buf tmp = BUF_INIT;
	int n = 0, prec = sp->has_prec ? sp->prec : 1, i, rc = 0;
	struct spec plain = *sp;

	if (sp->has_prec && sp->prec == 0 && u == 0)
		return pad(out, sp, "", 0, false);
	if (!sp->has_prec && sp->zero && sp->has_width && !sp->minus) {
		prec = sp->width - (v < 0 || sp->plus || sp->space);
		plain.zero = false;
	}
	if (prec > 64)
		prec = 64;
	do {
		digits[n++] = set[u % base];
		u /= base;
	} while (u && n < 70);
	while (n < prec)
		digits[n++] = '0';
	if (v < 0)
		rc = buf_puts(&tmp, "-");
	else if (sp->plus)
		rc = buf_puts(&tmp, "+");
	else if (sp->space)
		rc = buf_puts(&tmp, " ");
	if (rc == 0 && verb == 'O')
		rc = buf_puts(&tmp, "0o");
	else if (rc == 0 && sp->sharp && base != 10)
		rc = buf_puts(&tmp, base == 16  ? (verb == 'X' ? "0X" : "0x")
		                    : base == 2 ? "0b"
		                                : (digits[n - 1] == '0' ? "" : "0"));
	for (i = n - 1; rc == 0 && i >= 0; i--)
		rc = buf_append(&tmp, &digits[i], 1);
	if (rc < 0)
		return buf_release(&tmp), rc;
	return pad_buf(out, &plain, &tmp, false);
}

static int fmt_char(struct buf *out, const struct spec *sp, long long v, char verb)
{
	unsigned cp = v < 0 || v > 0x10FFFF ? 0xFFFD : (unsigned)v;
	struct buf tmp = BUF_INIT;
	char u[4];
	size_t w = tutf8_encode(u, cp);
	int rc;

	if (verb == 'c')
		return pad(out, sp, u, w, false);
	if (verb == 'U') {
		rc = buf_printf(&tmp, "U+%04X", cp);
		if (rc == 0 && sp->sharp && tfmt_is_print(cp))
			rc = buf_printf(&tmp, " '%.*s'", (int)w, u);
	} else {
		char q = '\'';

		rc = buf_append(&tmp, &q, 1);
		if (rc == 0)
			rc = quote_rune(&tmp, cp, w, u, '\'', sp->plus);
		if (rc == 0)
			rc = buf_append(&tmp, &q, 1);
	}
	if (rc < 0)
		return buf_release(&tmp), rc;
	return pad_buf(out, sp, &tmp, false);
}

/* The shortest decimal that reads back as f: digits (no dot) and the decimal exponent. */
static void shortest(double f, char *digits, size_t cap, int *exp10)
{
	char tmp[64], *e;
	int p;
	size_t n = 0, i;

	for (p = 1; p <= 17; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p - 1, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	e = strchr(tmp, 'e');
	*exp10 = e ? (int)strtol(e + 1, NULL, 10) : 0;
	for (i = 0; tmp + i < e && n + 1 < cap; i++)
		if (tmp[i] >= '0' && tmp[i] <= '9')
			digits[n++] = tmp[i];
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = 0;
}

/* Go's %v / shortest %g / %e / %f of a finite non-negative f. */
static int fmt_shortest(struct buf *b, double f, char verb)
{
	char d[32];
	int exp10, nd, i, rc = 0;

	shortest(f, d, sizeof(d), &exp10);
	nd = (int)strlen(d);
	if (f == 0)
		exp10 = 0;
	if (verb == 'e' || verb == 'E' || (verb == 'g' && (exp10 < -4 || exp10 >= 6))) {
		rc = buf_append(b, d, 1);
		if (rc == 0 && nd > 1)
			rc = buf_printf(b, ".%s", d + 1);
		return rc ? rc
		          : buf_printf(b, "%c%c%02d", verb == 'E' ? 'E' : 'e',
		                       exp10 < 0 ? '-' : '+', abs(exp10));
	}
	if (exp10 < 0) {
		rc = buf_puts(b, "0.");
		for (i = 0; rc == 0 && i < -exp10 - 1; i++)
			rc = buf_puts(b, "0");
		return rc ? rc : buf_puts(b, d);
	}
	for (i = 0; rc == 0 && i <= exp10; i++)
		rc = buf_append(b, i < nd ? &d[i] : "0", 1);
	if (rc == 0 && nd > exp10 + 1)
		rc = buf_printf(b, ".%s", d + exp10 + 1);
	return rc;
}

int tfmt_float_shortest(struct buf *out, double f, char mode)
{
	int rc = signbit(f) && f != 0 ? buf_puts(out, "-") : 0;

	return rc ? rc : fmt_shortest(out, fabs(f), mode);
}

static int fmt_float(struct buf *out, const struct spec *sp, double f, char verb)
{
	struct buf tmp = BUF_INIT;
	char cfmt[16], *c = cfmt;
	int rc;

	if (isnan(f) || isinf(f)) {
		struct spec s = *sp;

		s.zero = false;
		rc = buf_puts(&tmp, isnan(f)    ? (sp->plus    ? "+NaN"
		                                   : sp->space ? " NaN"
		                                               : "NaN")
		                    : f < 0     ? "-Inf"
		                    : sp->space ? " Inf"
		                                : "+Inf");
		return rc ? (buf_release(&tmp), rc) : pad_buf(out, &s, &tmp, false);
	}
	if (verb == 'v')
		verb = 'g';
	if (signbit(f))
		rc = buf_puts(&tmp, "-");
	else
		rc = buf_puts(&tmp, sp->plus ? "+" : sp->space ? " " : "");
	if (rc == 0 && !sp->has_prec && (verb == 'g' || verb == 'G')) {
		rc = fmt_shortest(&tmp, fabs(f), verb == 'G' ? 'E' : 'g');
	} else if (rc == 0) {
		*c++ = '%';
		if (sp->sharp)
			*c++ = '#';
		*c++ = '.';
		*c++ = '*';
		*c++ = verb == 'F' ? 'f' : verb;
		*c = 0;
		rc = buf_printf(&tmp, cfmt, sp->has_prec ? sp->prec : 6, fabs(f));
	}
	if (rc < 0)
		return buf_release(&tmp), rc;
	return pad_buf(out, sp, &tmp, true);
}

/* ---- values ---- */

static int fmt_value(struct buf *out, const struct spec *sp, const struct tval *v, int depth);

static int bad_verb(struct buf *out, const struct spec *sp, const struct tval *v)
{
	int rc = buf_printf(out, "%%!%c(", sp->verb);

	if (rc == 0 && v->kind == TV_NIL)
		return buf_puts(out, "<nil>)");
	if (rc == 0)
		rc = buf_printf(out, "%s=", v->type);
	if (rc == 0)
		rc = tfmt_value(out, v);
	return rc ? rc : buf_puts(out, ")");
}

static int fmt_string(struct buf *out, const struct spec *sp, const char *s, size_t len)
{
	struct buf tmp = BUF_INIT;
	size_t i, n = len;
	int rc = 0;

	if (sp->has_prec) {
		unsigned cp;
		int runes = 0;

		for (n = 0; n < len && runes < sp->prec; runes++)
			n += tutf8_decode(s + n, len - n, &cp);
	}
	switch (sp->verb) {
	case 'v':
	case 's':
		return pad(out, sp, s, n, false);
	case 'q':
		rc = sp->sharp && !memchr(s, '`', n) && !memchr(s, '\n', n)
		         ? ((buf_puts(&tmp, "`") < 0 || buf_append(&tmp, s, n) < 0 ||
		             buf_puts(&tmp, "`") < 0)
		                ? IG_ETOOBIG
		                : 0)
		         : quote_with(&tmp, s, n, '"', sp->plus);
		break;
	default: /* x, X */
		for (i = 0; rc == 0 && i < n; i++) {
			if (sp->space && i > 0)
				rc = buf_puts(&tmp, " ");
			if (rc == 0 && sp->sharp && (sp->space || i == 0))
				rc = buf_puts(&tmp, sp->verb == 'X' ? "0X" : "0x");
			if (rc == 0)
				rc = buf_printf(&tmp, sp->verb == 'X' ? "%02X" : "%02x",
				                (unsigned char)s[i]);
		}
	}
	if (rc < 0)
		return buf_release(&tmp), rc;
	return pad_buf(out, sp, &tmp, false);
}

static int fmt_composite(struct buf *out, const struct spec *sp, const struct tval *v, int depth)
{
	size_t i;
	int rc = buf_puts(out, v->kind == TV_LIST ? "[" : v->kind == TV_MAP ? "map[" : "{");
	bool first = true;

	for (i = 0; rc == 0 && i < v->len; i++) {
		if (v->kind == TV_STRUCT && v->fields[i].method)
			continue;
		if (!first)
			rc = buf_puts(out, " ");
		first = false;
		if (rc == 0 && v->kind == TV_MAP) {
			rc = fmt_value(out, sp, v->items[i], depth + 1);
			if (rc == 0)
				rc = buf_puts(out, ":");
		}
		if (rc == 0 && v->kind == TV_STRUCT && sp->plus && sp->verb == 'v')
			rc = buf_printf(out, "%s:", v->fields[i].name);
		if (rc == 0)
			rc = fmt_value(out, sp,
			               v->kind == TV_LIST  ? v->items[i]
			               : v->kind == TV_MAP ? v->vals[i]
			                                   : v->fields[i].v,
			               depth + 1);
	}
	return rc ? rc : buf_puts(out, v->kind == TV_STRUCT ? "}" : "]");
}

static int fmt_value(struct buf *out, const struct spec *sp, const struct tval *v, int depth)
{
	char verb = sp->verb;

	if (v->kind == TV_STRUCT && v->stringer && strchr("vsxXq", verb))
		return fmt_string(out, sp, v->stringer, strlen(v->stringer));
	switch (v->kind) {
	case TV_NIL:
		if (depth > 0 || verb == 'v')
			return pad(out, sp, "<nil>", 5, false);
		return bad_verb(out, sp, v);
	case TV_BOOL:
		if (verb == 'v' || verb == 't')
			return pad(out, sp, v->b ? "true" : "false", v->b ? 4 : 5, false);
		return bad_verb(out, sp, v);
	case TV_INT:
		if (verb == 'v' || verb == 'd')
			return fmt_integer(out, sp, v->i, 'd');
		if (strchr("xXobO", verb))
			return fmt_integer(out, sp, v->i, verb);
		if (strchr("cqU", verb))
			return fmt_char(out, sp, v->i, verb);
		return bad_verb(out, sp, v);
	case TV_FLOAT:
		if (strchr("veEfFgG", verb))
			return fmt_float(out, sp, v->f, verb);
		return bad_verb(out, sp, v);
	case TV_STRING:
		if (strchr("vsqxX", verb))
			return fmt_string(out, sp, v->s, v->len);
		return bad_verb(out, sp, v);
	default:
		return fmt_composite(out, sp, v, depth);
	}
}

int tfmt_value(struct buf *out, const struct tval *v)
{
	struct spec sp = {.verb = 'v'};

	return fmt_value(out, &sp, v, 0);
}

int tfmt_sprint(struct buf *out, const struct tval *const *args, size_t n)
{
	size_t i;
	int rc = 0;
	bool prev_string = false;

	for (i = 0; rc == 0 && i < n; i++) {
		bool is_string = args[i]->kind == TV_STRING;

		if (i > 0 && !is_string && !prev_string)
			rc = buf_puts(out, " ");
		if (rc == 0)
			rc = tfmt_value(out, args[i]);
		prev_string = is_string;
	}
	return rc;
}

int tfmt_sprintln(struct buf *out, const struct tval *const *args, size_t n)
{
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < n; i++) {
		if (i > 0)
			rc = buf_puts(out, " ");
		if (rc == 0)
			rc = tfmt_value(out, args[i]);
	}
	return rc ? rc : buf_puts(out, "\n");
}

/* ---- Sprintf ---- */

struct printf_state {
	const char *f, *end;
	const struct tval *const *args;
	size_t n, argnum;
	bool reordered, good_argnum;
};

static void parse_flags(struct printf_state *st, struct spec *sp)
{
	for (; st->f < st->end; st->f++) {
		switch (*st->f) {
		case '#':
			sp->sharp = true;
			break;
		case '0':
			sp->zero = true;
			break;
		case '+':
			sp->plus = true;
			break;
		case '-':
			sp->minus = true;
			break;
		case ' ':
			sp->space = true;
			break;
		default:
			return;
		}
	}
}

/* `[n]`: an explicit argument index. */
static void arg_index(struct printf_state *st)
{
	const char *close;
	long idx = 0;

	if (st->f >= st->end || *st->f != '[')
		return;
	st->reordered = true;
	close = memchr(st->f, ']', (size_t)(st->end - st->f));
	if (close) {
		const char *p;

		for (p = st->f + 1; p < close && *p >= '0' && *p <= '9' && idx < 1000000; p++)
			idx = idx * 10 + (*p - '0');
		if (p == close && p > st->f + 1 && idx >= 1 && (size_t)idx <= st->n) {
			st->argnum = (size_t)idx - 1;
			st->f = close + 1;
			return;
		}
	}
	st->good_argnum = false;
	st->f = close ? close + 1 : st->end;
}

static bool parse_num(struct printf_state *st, int *out)
{
	int v = 0;
	bool any = false;

	while (st->f < st->end && *st->f >= '0' && *st->f <= '9') {
		if (v < 1000000)
			v = v * 10 + (*st->f - '0');
		st->f++;
		any = true;
	}
	*out = v;
	return any;
}

/* `*` or digits; returns false after writing Go's complaint for a bad `*` argument. */
static int width_or_prec(struct buf *out, struct printf_state *st, int *val, bool *has,
                         const char *bad)
{
	arg_index(st);
	if (st->f < st->end && *st->f == '*') {
		st->f++;
		if (st->argnum < st->n && st->args[st->argnum]->kind == TV_INT &&
		    st->args[st->argnum]->i >= -1000000 && st->args[st->argnum]->i <= 1000000) {
			*val = (int)st->args[st->argnum++]->i;
			*has = true;
			return 0;
		}
		st->argnum += st->argnum < st->n;
		return buf_puts(out, bad);
	}
	*has = parse_num(st, val);
	return 0;
}

static int one_verb(struct buf *out, struct printf_state *st)
{
	struct spec sp = {0};
	int rc;

	st->good_argnum = true;
	parse_flags(st, &sp);
	if ((rc = width_or_prec(out, st, &sp.width, &sp.has_width, "%!(BADWIDTH)")) < 0)
		return rc;
	if (sp.has_width && sp.width < 0)
		sp.minus = true, sp.width = -sp.width;
	if (st->f < st->end && *st->f == '.') {
		st->f++;
		if ((rc = width_or_prec(out, st, &sp.prec, &sp.has_prec, "%!(BADPREC)")) < 0)
			return rc;
		if (sp.prec < 0)
			sp.has_prec = false;
		else
			sp.has_prec = true;
	}
	if (!sp.has_prec || !sp.has_width)
		arg_index(st);
	if (st->f >= st->end)
		return buf_puts(out, "%!(NOVERB)");
	sp.verb = *st->f++;
	if (sp.verb == '%')
		return buf_puts(out, "%");
	if (!st->good_argnum)
		return buf_printf(out, "%%!%c(BADINDEX)", sp.verb);
	if (st->argnum >= st->n)
		return buf_printf(out, "%%!%c(MISSING)", sp.verb);
	if (sp.verb == 'T')
		return pad(out, &sp, st->args[st->argnum]->type, strlen(st->args[st->argnum]->type),
		           false),
		       st->argnum++, 0;
	if (sp.verb == 'v' && sp.sharp)
		return IG_EINVALID; /* Go syntax (%#v) is refused, not approximated */
	return fmt_value(out, &sp, st->args[st->argnum++], 0);
}

int tfmt_sprintf(struct buf *out, const char *format, size_t flen, const struct tval *const *args,
                 size_t n)
{
	struct printf_state st = {format, format + flen, args, n, 0, false, true};
	int rc = 0;
	size_t i;

	while (rc == 0 && st.f < st.end) {
		const char *pct = memchr(st.f, '%', (size_t)(st.end - st.f));

		if (!pct)
			pct = st.end;
		rc = buf_append(out, st.f, (size_t)(pct - st.f));
		st.f = pct;
		if (rc == 0 && st.f < st.end) {
			st.f++;
			rc = one_verb(out, &st);
		}
	}
	if (rc == 0 && !st.reordered && st.argnum < n) {
		rc = buf_puts(out, "%!(EXTRA ");
		for (i = st.argnum; rc == 0 && i < n; i++) {
			if (i > st.argnum)
				rc = buf_puts(out, ", ");
			if (rc == 0 && args[i]->kind == TV_NIL)
				rc = buf_puts(out, "<nil>");
			else if (rc == 0 && (rc = buf_printf(out, "%s=", args[i]->type)) == 0)
				rc = tfmt_value(out, args[i]);
		}
		if (rc == 0)
			rc = buf_puts(out, ")");
	}
	return rc;
}

const struct tval *tfmt_strval(struct texec *x, const struct tval *v)
{
	struct buf b = BUF_INIT_MAX(x->out->max ? x->out->max : 1 << 20);
	const struct tval *s;

	if (v->kind == TV_STRING)
		return v;
	if (v->kind == TV_STRUCT && v->stringer)
		return texec_check(x, tval_cstring(x->arena, v->stringer));
	if (tfmt_value(&b, v) < 0) {
		buf_release(&b);
		return texec_fail(x, IG_ETOOBIG, "value too long to print");
	}
	s = texec_check(x, tval_string(x->arena, b.data ? b.data : "", b.len));
	buf_release(&b);
	return s;
}
