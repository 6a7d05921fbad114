/* Go's text/template builtins (and, or, not, len, index, print*, eq..ge, html, js, urlquery,
 * call), the argument conversions Go applies to function parameters, and the function table. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "template_private.h"

/* ---- arguments ---- */

static bool wrong_type(struct texec *x, const char *fn, const struct tval *v, const char *want)
{
	if (v->kind == TV_NIL)
		texec_fail(x, IG_EINVALID, "error calling %s: invalid value; expected %s", fn,
		           want);
	else
		texec_fail(x, IG_EINVALID, "wrong type for value; expected %s; got %s", want,
		           v->type);
	return false;
}

bool targ_string(struct texec *x, const char *fn, const struct tval *v, const char **s, size_t *len)
{
	if (v->kind != TV_STRING)
		return wrong_type(x, fn, v, "string");
	*s = v->s;
	if (len)
		*len = v->len;
	return true;
}

bool targ_int(struct texec *x, const char *fn, const struct tval *v, long long *i)
{
	if (v->kind != TV_INT || strcmp(v->type, "int") != 0)
		return wrong_type(x, fn, v, "int");
	*i = v->i;
	return true;
}

bool targ_bool(struct texec *x, const char *fn, const struct tval *v, bool *b)
{
	if (v->kind != TV_BOOL)
		return wrong_type(x, fn, v, "bool");
	*b = v->b;
	return true;
}

/* spf13/cast's trimZeroDecimal: "7.00" -> "7" (only zeros after the point). */
static void trim_zero_decimal(char *s)
{
	size_t i = strlen(s);
	bool zero = false;

	while (i > 0) {
		char c = s[--i];

		if (c == '.' && zero) {
			s[i] = 0;
			return;
		}
		if (c != '0')
			return;
		zero = true;
	}
}

/* spf13/cast's ToInt64E with errors as 0, as Sprig calls it. */
long long tconv_int64(const struct tval *v)
{
	char tmp[64], *end;
	long long r;
	size_t n;

	switch (v->kind) {
	case TV_INT:
		return v->i;
	case TV_FLOAT:
		/* out of range: what Go's conversion gives on amd64 (the "integer indefinite") */
		return v->f > -9223372036854775808.0 && v->f < 9223372036854775808.0
		           ? (long long)v->f
		           : LLONG_MIN;
	case TV_BOOL:
		return v->b;
	case TV_STRING:
		n = v->len < sizeof(tmp) - 1 ? v->len : sizeof(tmp) - 1;
		memcpy(tmp, v->s, n);
		tmp[n] = 0;
		trim_zero_decimal(tmp);
		if (n == 0 || n != v->len || strchr(" \t\n\v\f\r", tmp[0]))
			return 0;
		errno = 0;
		r = strtoll(tmp, &end, 0);
		return *end || errno ? 0 : r;
	default:
		return 0;
	}
}

double tconv_float64(const struct tval *v)
{
	char tmp[64], *end;
	double r;

	switch (v->kind) {
	case TV_INT:
		return (double)v->i;
	case TV_FLOAT:
		return v->f;
	case TV_BOOL:
		return v->b;
	case TV_STRING:
		if (v->len == 0 || v->len >= sizeof(tmp) || v->s[0] == ' ')
			return 0;
		memcpy(tmp, v->s, v->len);
		tmp[v->len] = 0;
		r = strtod(tmp, &end);
		return *end ? 0 : r;
	default:
		return 0;
	}
}

/* ---- printing ---- */

static const struct tval *fn_print(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));

	return texec_string(x, &b, tfmt_sprint(&b, a, n));
}

static const struct tval *fn_println(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));

	return texec_string(x, &b, tfmt_sprintln(&b, a, n));
}

static const struct tval *fn_printf(struct texec *x, const struct tval *const *a, size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const char *f;
	size_t flen;
	int rc;

	if (!targ_string(x, "printf", a[0], &f, &flen))
		return NULL;
	if ((rc = tfmt_sprintf(&b, f, flen, a + 1, n - 1)) == IG_EINVALID) {
		buf_release(&b);
		return texec_fail(x, IG_EINVALID, "printf: %%#v (Go syntax) is not implemented");
	}
	return texec_string(x, &b, rc);
}

/* Go's evalArgs for html/js/urlquery: one string as is, anything else through Sprint. */
static const struct tval *joined(struct texec *x, const struct tval *const *a, size_t n)
{
	if (n == 1 && a[0]->kind == TV_STRING)
		return a[0];
	return fn_print(x, a, n);
}

static const struct tval *fn_html(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *s = joined(x, a, n);
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	size_t i;
	int rc = 0;

	for (i = 0; s && rc == 0 && i < s->len; i++) {
		switch (s->s[i]) {
		case '"':
			rc = buf_puts(&b, "&#34;");
			break;
		case '\'':
			rc = buf_puts(&b, "&#39;");
			break;
		case '&':
			rc = buf_puts(&b, "&amp;");
			break;
		case '<':
			rc = buf_puts(&b, "&lt;");
			break;
		case '>':
			rc = buf_puts(&b, "&gt;");
			break;
		case 0:
			rc = buf_puts(&b, "\xef\xbf\xbd");
			break;
		default:
			rc = buf_append(&b, &s->s[i], 1);
		}
	}
	return s ? texec_string(x, &b, rc) : (buf_release(&b), NULL);
}

static const struct tval *fn_js(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *s = joined(x, a, n);
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	size_t i = 0;
	int rc = 0;

	while (s && rc == 0 && i < s->len) {
		unsigned cp;
		size_t w = tutf8_decode(s->s + i, s->len - i, &cp);
		char c = s->s[i];

		if (c == '\\' || c == '\'' || c == '"')
			rc = buf_printf(&b, "\\%c", c);
		else if (c == '<' || c == '>' || c == '&' || c == '=' || (cp < 0x80 && cp < ' '))
			rc = buf_printf(&b, "\\u%04X", cp);
		else if (cp >= 0x80 && !tfmt_is_print(cp))
			rc = buf_printf(&b, "\\u%04X", cp);
		else
			rc = buf_append(&b, s->s + i, w);
		i += w;
	}
	return s ? texec_string(x, &b, rc) : (buf_release(&b), NULL);
}

static const struct tval *fn_urlquery(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *s = joined(x, a, n);
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	size_t i;
	int rc = 0;

	for (i = 0; s && rc == 0 && i < s->len; i++) {
		unsigned char c = (unsigned char)s->s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~')
			rc = buf_append(&b, &s->s[i], 1);
		else if (c == ' ')
			rc = buf_puts(&b, "+");
		else
			rc = buf_printf(&b, "%%%02X", c);
	}
	return s ? texec_string(x, &b, rc) : (buf_release(&b), NULL);
}

/* ---- logic and comparison ---- */

static const struct tval *fn_not(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)x, (void)n;
	return tval_bool(!tval_truth(a[0]));
}

static const struct tval *fn_unused(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)a, (void)n;
	return texec_fail(x, IG_EINVALID, "internal: and/or are evaluated lazily");
}

static bool comparable_basic(const struct tval *v)
{
	return v->kind == TV_BOOL || v->kind == TV_INT || v->kind == TV_FLOAT ||
	       v->kind == TV_STRING;
}

/* Go's eq for one pair: 1 equal, 0 not, -1 error (set). */
static int eq_pair(struct texec *x, const struct tval *a, const struct tval *b)
{
	if (a->kind != b->kind) {
		if (a->kind != TV_NIL && b->kind != TV_NIL)
			return texec_fail(x, IG_EINVALID,
			                  "error calling eq: incompatible types for comparison"),
			       -1;
		return 0;
	}
	if (a->kind == TV_LIST || a->kind == TV_MAP)
		return texec_fail(x, IG_EINVALID, "error calling eq: non-comparable type %s",
		                  a->type),
		       -1;
	if (a->kind == TV_STRUCT && strcmp(a->type, b->type) != 0)
		return texec_fail(x, IG_EINVALID,
		                  "error calling eq: incompatible types for comparison"),
		       -1;
	return tval_deep_equal(a, b);
}

static const struct tval *fn_eq(struct texec *x, const struct tval *const *a, size_t n)
{
	size_t i;

	if (n < 2)
		return texec_fail(x, IG_EINVALID,
		                  "error calling eq: missing argument for comparison");
	for (i = 1; i < n; i++) {
		int r = eq_pair(x, a[0], a[i]);

		if (r < 0)
			return NULL;
		if (r)
			return tval_bool(true);
	}
	return tval_bool(false);
}

static const struct tval *fn_ne(struct texec *x, const struct tval *const *a, size_t n)
{
	int r = eq_pair(x, a[0], a[1]);

	(void)n;
	return r < 0 ? NULL : tval_bool(!r);
}

/* Go's lt: -1 error, else 1 when a < b. */
static int less(struct texec *x, const char *fn, const struct tval *a, const struct tval *b)
{
	size_t m;
	int c;

	if (!comparable_basic(a) || !comparable_basic(b) || a->kind == TV_BOOL ||
	    b->kind == TV_BOOL)
		return texec_fail(x, IG_EINVALID, "error calling %s: invalid type for comparison",
		                  fn),
		       -1;
	if (a->kind != b->kind)
		return texec_fail(x, IG_EINVALID,
		                  "error calling %s: incompatible types for comparison", fn),
		       -1;
	switch (a->kind) {
	case TV_INT:
		return a->i < b->i;
	case TV_FLOAT:
		return a->f < b->f;
	default:
		m = a->len < b->len ? a->len : b->len;
		c = memcmp(a->s, b->s, m);
		return c < 0 || (c == 0 && a->len < b->len);
	}
}

static const struct tval *compare(struct texec *x, const char *fn, const struct tval *a,
                                  const struct tval *b, bool swap, bool or_equal)
{
	int lt = swap ? less(x, fn, b, a) : less(x, fn, a, b), eq;

	if (lt < 0)
		return NULL;
	if (lt || !or_equal)
		return tval_bool(lt);
	eq = eq_pair(x, a, b);
	return eq < 0 ? NULL : tval_bool(eq);
}

static const struct tval *fn_lt(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return compare(x, "lt", a[0], a[1], false, false);
}

static const struct tval *fn_le(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return compare(x, "le", a[0], a[1], false, true);
}

static const struct tval *fn_gt(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return compare(x, "gt", a[0], a[1], true, false);
}

static const struct tval *fn_ge(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	return compare(x, "ge", a[0], a[1], true, true);
}

/* ---- len, index, call ---- */

static const struct tval *fn_len(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	if (a[0]->kind != TV_STRING && a[0]->kind != TV_LIST && a[0]->kind != TV_MAP)
		return texec_fail(x, IG_EINVALID, "error calling len: len of type %s",
		                  a[0]->kind == TV_NIL ? "<nil>" : a[0]->type);
	return texec_check(x, tval_int(x->arena, (long long)a[0]->len, "int"));
}

static const struct tval *index_one(struct texec *x, const struct tval *item, const struct tval *i)
{
	const struct tval *v;

	if (item->kind == TV_LIST || item->kind == TV_STRING) {
		if (i->kind != TV_INT)
			return texec_fail(
			    x, IG_EINVALID,
			    "error calling index: cannot index slice/array with type %s", i->type);
		if (i->i < 0 || (unsigned long long)i->i >= item->len)
			return texec_fail(x, IG_EINVALID,
			                  "error calling index: index out of range: %lld", i->i);
		if (item->kind == TV_LIST)
			return item->items[i->i];
		return texec_check(x, tval_int(x->arena, (unsigned char)item->s[i->i], "uint8"));
	}
	if (item->kind == TV_MAP) {
		if (i->kind == TV_NIL || (item->len && item->items[0]->kind != i->kind) ||
		    (!item->len && i->kind != TV_STRING))
			return texec_fail(x, IG_EINVALID,
			                  "error calling index: value has type %s; should be %s",
			                  i->type, item->len ? item->items[0]->type : "string");
		if ((v = tval_map_get(item, i)))
			return v;
		return item->elem == TV_STRING ? texec_check(x, tval_cstring(x->arena, ""))
		                               : tval_nil();
	}
	if (item->kind == TV_NIL)
		return texec_fail(x, IG_EINVALID, "error calling index: index of untyped nil");
	return texec_fail(x, IG_EINVALID, "error calling index: can't index item of type %s",
	                  item->type);
}

static const struct tval *fn_index(struct texec *x, const struct tval *const *a, size_t n)
{
	const struct tval *v = a[0];
	size_t i;

	for (i = 1; v && i < n; i++)
		v = index_one(x, v, a[i]);
	return v;
}

static const struct tval *fn_call(struct texec *x, const struct tval *const *a, size_t n)
{
	(void)n;
	if (a[0]->kind == TV_NIL)
		return texec_fail(x, IG_EINVALID, "error calling call: call of nil");
	return texec_fail(x, IG_EINVALID, "error calling call: non-function of type %s",
	                  a[0]->type);
}

const struct tfunc_entry tbuiltins_table[] = {
    {"and", fn_unused, 1, -1},
    {"or", fn_unused, 1, -1},
    {"not", fn_not, 1, 1},
    {"len", fn_len, 1, 1},
    {"index", fn_index, 1, -1},
    {"print", fn_print, 0, -1},
    {"printf", fn_printf, 1, -1},
    {"println", fn_println, 0, -1},
    {"eq", fn_eq, 1, -1},
    {"ne", fn_ne, 2, 2},
    {"lt", fn_lt, 2, 2},
    {"le", fn_le, 2, 2},
    {"gt", fn_gt, 2, 2},
    {"ge", fn_ge, 2, 2},
    {"html", fn_html, 0, -1},
    {"js", fn_js, 0, -1},
    {"urlquery", fn_urlquery, 0, -1},
    {"call", fn_call, 1, -1},
    {NULL, NULL, 0, 0},
};

/* Sprig's hermetic functions imageguard does not provide: naming them is a clear error. */
static const char *const sprig_unimplemented[] = {
    "ago",
    "duration",
    "durationRound",
    "must_date_modify",
    "mustDateModify",
    "mustToDate",
    "toDate",
    "unixEpoch",
    "initials",
    "randSeededNumeric",
    "swapcase",
    "shuffle",
    "snakecase",
    "camelcase",
    "kebabcase",
    "wrap",
    "wrapWith",
    "toDecimal",
    "add1f",
    "addf",
    "subf",
    "divf",
    "mulf",
    "randInt",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
    "semver",
    "semverCompare",
    "urlParse",
    "urlJoin",
    "osBase",
    "osClean",
    "osDir",
    "osExt",
    "osIsAbs",
    "untitle",
    "abbrevboth",
    "seq",
    "fromJson",
    "mustFromJson",
    "toRawJson",
    "mustToRawJson",
    "typeIsLike",
    "b32enc",
    "b32dec",
    NULL,
};

static const struct tfunc_entry *find_in(const struct tfunc_entry *t, const char *name, size_t len)
{
	for (; t->name; t++)
		if (strlen(t->name) == len && !memcmp(t->name, name, len))
			return t;
	return NULL;
}

const struct tfunc_entry *tfuncs_lookup(const char *name, size_t len, bool *known_unimplemented)
{
	const struct tfunc_entry *const tables[] = {sprig_strings_table, sprig_lists_table,
	                                            sprig_misc_table,    sprig_regex_table,
	                                            sprig_json_table,    tbuiltins_table};
	const struct tfunc_entry *f;
	size_t i;

	*known_unimplemented = false;
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if ((f = find_in(tables[i], name, len)))
			return f;
	for (i = 0; sprig_unimplemented[i]; i++)
		if (strlen(sprig_unimplemented[i]) == len &&
		    !memcmp(sprig_unimplemented[i], name, len))
			*known_unimplemented = true;
	return NULL;
}
