/* Sprig's string functions as its v3 source defines them (argument order included: the
 * string comes last so that `x | trimPrefix "v"` reads naturally). */
#include <locale.h>
#include <string.h>
#include <wctype.h>

#include "template_private.h"

#define S(i, var, len)                                                                             \
	const char *var;                                                                           \
	size_t len;                                                                                \
	if (!targ_string(x, fname, a[i], &var, &len))                                              \
	return NULL
#define I(i, var)                                                                                  \
	long long var;                                                                             \
	if (!targ_int(x, fname, a[i], &var))                                                       \
	return NULL

static const struct tval *str(struct texec *x, const char *s, size_t len)
{
	return texec_check(x, tval_string(x->arena, s, len));
}

/* unicode.IsSpace */
static bool is_space_rune(unsigned cp)
{
	return (cp >= '\t' && cp <= '\r') || cp == ' ' || cp == 0x85 || cp == 0xA0 ||
	       cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Length of the space rune at s (0 when none). */
static size_t space_at(const char *s, size_t n)
{
	unsigned cp;
	size_t w = tutf8_decode(s, n, &cp);

	return w && is_space_rune(cp) && !(cp == 0xFFFD && w == 1) ? w : 0;
}

static bool in_cutset(const char *cut, size_t clen, const char *s, size_t w)
{
	size_t i = 0;
	unsigned cp, want;

	tutf8_decode(s, w, &want);
	while (i < clen) {
		size_t cw = tutf8_decode(cut + i, clen - i, &cp);

		if (cp == want && !(want == 0xFFFD && (w == 1) != (cw == 1)))
			return true;
		i += cw;
	}
	return false;
}

/* strings.Trim (cut != NULL) and strings.TrimSpace (cut == NULL). */
static const struct tval *trim_runes(struct texec *x, const char *s, size_t len, const char *cut,
                                     size_t clen)
{
	size_t i = 0, j, end, w;
	unsigned cp;

	while (i < len) {
		w = tutf8_decode(s + i, len - i, &cp);
		if (cut ? !in_cutset(cut, clen, s + i, w) : !space_at(s + i, len - i))
			break;
		i += w;
	}
	for (end = j = i; j < len;) {
		w = tutf8_decode(s + j, len - j, &cp);
		if (cut ? !in_cutset(cut, clen, s + j, w) : !space_at(s + j, len - j))
			end = j + w;
		j += w;
	}
	return str(x, s + i, end - i);
}

static const struct tval *fn_trim(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "trim";
	S(0, s, len);

	(void)n;
	return trim_runes(x, s, len, NULL, 0);
}

static const struct tval *fn_trim_all(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "trimAll";
	S(0, cut, clen);
	S(1, s, len);

	(void)n;
	return trim_runes(x, s, len, cut, clen);
}

static const struct tval *fn_trim_prefix(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "trimPrefix";
	S(0, p, plen);
	S(1, s, len);

	(void)n;
	if (plen <= len && !memcmp(s, p, plen))
		return str(x, s + plen, len - plen);
	return a[1];
}

static const struct tval *fn_trim_suffix(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "trimSuffix";
	S(0, p, plen);
	S(1, s, len);

	(void)n;
	if (plen <= len && !memcmp(s + len - plen, p, plen))
		return str(x, s, len - plen);
	return a[1];
}

/* Unicode case mapping (Go's simple mapping) through the C.UTF-8 locale. */
static const struct tval *map_case(struct texec *x, const char *fname, const char *s, size_t len,
                                   int mode)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	locale_t loc = (locale_t)0;
	unsigned prev = ' ';
	size_t i = 0;
	int rc = 0;

	while (rc == 0 && i < len) {
		unsigned cp, out;
		size_t w = tutf8_decode(s + i, len - i, &cp);
		char u[4];
		bool sep = prev < 0x80 ? !(prev == '_' || (prev >= '0' && prev <= '9') ||
		                           ((prev | 0x20) >= 'a' && (prev | 0x20) <= 'z'))
		                       : is_space_rune(prev);

		if (cp >= 0x80 && !(cp == 0xFFFD && w == 1) && !loc &&
		    !(loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0))) {
			buf_release(&b);
			return texec_fail(x, IG_EFAIL,
			                  "%s: no C.UTF-8 locale for Unicode case mapping", fname);
		}
		out = cp;
		if (cp == 0xFFFD && w == 1) {
			/* Go's strings.Map writes U+FFFD for an invalid byte */
			rc = buf_append(&b, "\xef\xbf\xbd", 3);
			prev = cp;
			i++;
			continue;
		}
		if (mode == 'u' || (mode == 't' && sep))
			out = cp < 0x80 ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp)
			                : (unsigned)towupper_l((wint_t)cp, loc);
		else if (mode == 'l')
			out = cp < 0x80 ? (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp)
			                : (unsigned)towlower_l((wint_t)cp, loc);
		rc = buf_append(&b, u, tutf8_encode(u, out));
		prev = cp;
		i += w;
	}
	if (loc)
		freelocale(loc);
	return texec_string(x, &b, rc);
}

static const struct tval *fn_upper(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "upper";
	S(0, s, len);

	(void)n;
	return map_case(x, fname, s, len, 'u');
}

static const struct tval *fn_lower(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "lower";
	S(0, s, len);

	(void)n;
	return map_case(x, fname, s, len, 'l');
}

static const struct tval *fn_title(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "title";
	S(0, s, len);

	(void)n;
	return map_case(x, fname, s, len, 't');
}

static const struct tval *fn_repeat(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "repeat";
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	long long i;
	int rc = 0;
	I(0, count);
	S(1, s, len);

	(void)n;
	if (count < 0)
		return texec_fail(x, IG_EINVALID, "error calling repeat: negative Repeat count");
	if (len == 0)
		count = 0; /* Go's strings.Repeat: nothing to repeat is no work */
	for (i = 0; rc == 0 && i < count; i++)
		rc = buf_append(&b, s, len);
	return texec_string(x, &b, rc);
}

static const struct tval *fn_substr(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "substr";
	I(0, start);
	I(1, end);
	S(2, s, len);

	(void)n;
	if (start < 0) {
		if (end < 0 || (unsigned long long)end > len)
			return texec_fail(x, IG_EINVALID,
			                  "error calling substr: slice bounds out of range");
		return str(x, s, (size_t)end);
	}
	if (end < 0 || (unsigned long long)end > len) {
		if ((unsigned long long)start > len)
			return texec_fail(x, IG_EINVALID,
			                  "error calling substr: slice bounds out of range");
		return str(x, s + start, len - (size_t)start);
	}
	if (start > end)
		return texec_fail(x, IG_EINVALID,
		                  "error calling substr: slice bounds out of range");
	return str(x, s + start, (size_t)(end - start));
}

static const struct tval *fn_nospace(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "nospace";
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	size_t i = 0, w;
	int rc = 0;
	S(0, s, len);

	(void)n;
	while (rc == 0 && i < len) {
		unsigned cp;

		if ((w = space_at(s + i, len - i))) {
			i += w;
			continue;
		}
		w = tutf8_decode(s + i, len - i, &cp);
		rc = buf_append(&b, s + i, w);
		i += w;
	}
	return texec_string(x, &b, rc);
}

static const struct tval *fn_trunc(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "trunc";
	I(0, c);
	S(1, s, len);

	(void)n;
	if (c < 0 && (long long)len + c > 0)
		return str(x, s + len + c, (size_t)-c);
	if (c >= 0 && (unsigned long long)c < len)
		return str(x, s, (size_t)c);
	return a[1];
}

static const struct tval *fn_abbrev(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "abbrev";
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	int rc;
	I(0, width);
	S(1, s, len);

	(void)n;
	if (width < 4 || len <= (unsigned long long)width)
		return a[1];
	rc = buf_append(&b, s, (size_t)width - 3);
	return texec_string(x, &b, rc ? rc : buf_puts(&b, "..."));
}

static const struct tval *affix(struct texec *x, const struct tval *const *a, const char *fname,
                                int where)
{
	const char *p, *s;
	size_t plen, len, i;

	if (!targ_string(x, fname, a[0], &p, &plen) || !targ_string(x, fname, a[1], &s, &len))
		return NULL;
	if (plen > len)
		return tval_bool(false);
	if (where == 'p')
		return tval_bool(!memcmp(s, p, plen));
	if (where == 's')
		return tval_bool(!memcmp(s + len - plen, p, plen));
	/* a naive search: its worst case is charged */
	if (!texec_charge(x, ((len - plen) / 64 + 1) * (plen / 64 + 1)))
		return NULL;
	for (i = 0; i + plen <= len; i++)
		if (!memcmp(s + i, p, plen))
			return tval_bool(true);
	return tval_bool(false);
}

static const struct tval *fn_contains(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return affix(x, a, "contains", 'c');
}

static const struct tval *fn_has_prefix(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return affix(x, a, "hasPrefix", 'p');
}

static const struct tval *fn_has_suffix(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return affix(x, a, "hasSuffix", 's');
}

/* quote, squote and cat: each non-nil argument through strval, joined by spaces. */
static const struct tval *join_args(struct texec *x, const struct tval *const *a, size_t n,
                                    int style)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const struct tval *s;
	size_t i;
	int rc = 0;
	bool first = true;

	for (i = 0; rc == 0 && i < n; i++) {
		if (a[i]->kind == TV_NIL)
			continue;
		if (!(s = tfmt_strval(x, a[i])))
			return buf_release(&b), NULL;
		if (!first)
			rc = buf_puts(&b, " ");
		first = false;
		if (rc == 0 && style == 'q')
			rc = tfmt_quote(&b, s->s, s->len);
		else if (rc == 0 && style == '\'')
			rc = buf_puts(&b, "'") || buf_append(&b, s->s, s->len) || buf_puts(&b, "'")
			         ? IG_ETOOBIG
			         : 0;
		else if (rc == 0)
			rc = buf_append(&b, s->s, s->len);
	}
	return texec_string(x, &b, rc);
}

static const struct tval *fn_quote(struct texec *x, const struct tval *const *a, size_t n)
{
	return join_args(x, a, n, 'q');
}

static const struct tval *fn_squote(struct texec *x, const struct tval *const *a, size_t n)
{
	return join_args(x, a, n, '\'');
}

static const struct tval *fn_cat(struct texec *x, const struct tval *const *a, size_t n)
{
	return join_args(x, a, n, 'c');
}

static const struct tval *do_indent(struct texec *x, const struct tval *const *a, const char *fname,
                                    bool newline)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	long long i;
	size_t k;
	int rc = 0;
	I(0, spaces);
	S(1, s, len);

	if (newline)
		rc = buf_puts(&b, "\n");
	for (i = 0; rc == 0 && i < spaces; i++)
		rc = buf_puts(&b, " ");
	for (k = 0; rc == 0 && k < len; k++) {
		rc = buf_append(&b, s + k, 1);
		for (i = 0; rc == 0 && s[k] == '\n' && i < spaces; i++)
			rc = buf_puts(&b, " ");
	}
	return texec_string(x, &b, rc);
}

static const struct tval *fn_indent(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return do_indent(x, a, "indent", false);
}

static const struct tval *fn_nindent(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return do_indent(x, a, "nindent", true);
}

static const struct tval *fn_replace(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "replace";
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	size_t i = 0;
	int rc = 0;
	S(0, old, olen);
	S(1, new, nlen);
	S(2, s, len);

	(void)n;
	if (olen == 0) { /* Go: an empty old inserts new before every rune and at the end */
		while (rc == 0 && i <= len) {
			unsigned cp;
			size_t w = i < len ? tutf8_decode(s + i, len - i, &cp) : 0;

			rc = buf_append(&b, new, nlen);
			if (rc == 0 && w)
				rc = buf_append(&b, s + i, w);
			i += w ? w : 1;
		}
		return texec_string(x, &b, rc);
	}
	if (!texec_charge(x, (len / 64 + 1) * (olen / 64 + 1))) { /* the naive search's worst */
		buf_release(&b);
		return NULL;
	}
	while (rc == 0 && i < len) {
		if (i + olen <= len && !memcmp(s + i, old, olen)) {
			rc = buf_append(&b, new, nlen);
			i += olen;
		} else {
			rc = buf_append(&b, s + i++, 1);
		}
	}
	return texec_string(x, &b, rc);
}

static const struct tval *fn_plural(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *fname = "plural";
	S(0, one, olen);
	S(1, many, mlen);
	I(2, count);

	(void)n, (void)one, (void)olen, (void)many, (void)mlen;
	return count == 1 ? a[0] : a[1];
}

static const struct tval *fn_to_string(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return tfmt_strval(x, a[0]);
}

static const struct tval *fn_hello(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)a, (void)n;
	return str(x, "Hello!", 6);
}

const struct tfunc_entry sprig_strings_table[] = {
    {"trim", fn_trim, 1, 1},
    {"trimAll", fn_trim_all, 2, 2},
    {"trimall", fn_trim_all, 2, 2},
    {"trimPrefix", fn_trim_prefix, 2, 2},
    {"trimSuffix", fn_trim_suffix, 2, 2},
    {"upper", fn_upper, 1, 1},
    {"lower", fn_lower, 1, 1},
    {"title", fn_title, 1, 1},
    {"repeat", fn_repeat, 2, 2},
    {"substr", fn_substr, 3, 3},
    {"nospace", fn_nospace, 1, 1},
    {"trunc", fn_trunc, 2, 2},
    {"abbrev", fn_abbrev, 2, 2},
    {"contains", fn_contains, 2, 2},
    {"hasPrefix", fn_has_prefix, 2, 2},
    {"hasSuffix", fn_has_suffix, 2, 2},
    {"quote", fn_quote, 0, -1},
    {"squote", fn_squote, 0, -1},
    {"cat", fn_cat, 0, -1},
    {"indent", fn_indent, 2, 2},
    {"nindent", fn_nindent, 2, 2},
    {"replace", fn_replace, 3, 3},
    {"plural", fn_plural, 3, 3},
    {"toString", fn_to_string, 1, 1},
    {"hello", fn_hello, 0, 0},
    {NULL, NULL, 0, 0},
};
