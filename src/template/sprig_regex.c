/* Sprig's regex functions on PCRE2, held to Go's RE2 syntax: constructs RE2 lacks (look-around,
 * back-references, atomic groups, possessive quantifiers, recursion) are compile errors as
 * in Go, and matching, FindAll, ReplaceAll ($1, ${name}) and Split follow Go's regexp. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "template_private.h"

struct re {
	struct texec *x; /* whose budget the matches spend */
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx; /* the budget's backtracking limits */
};

/* A construct RE2 does not have, or NULL. */
static const char *re2_unsupported(const char *p, size_t n)
{
	static const char *const groups[] = {"(?=", "(?!", "(?<=", "(?<!", "(?>", "(?R",
	                                     "(?(", "(?|", "(?#",  "(?C",  "(*"};
	size_t i, g;
	bool in_class = false;

	for (i = 0; i < n; i++) {
		if (p[i] == '\\' && i + 1 < n) {
			char c = p[++i];

			if ((c >= '1' && c <= '9') || strchr("gkKGZRXhHvVN", c))
				return "backslash escape";
			continue;
		}
		if (in_class) {
			in_class = p[i] != ']';
			continue;
		}
		if (p[i] == '[') {
			in_class = true;
			if (i + 1 < n && p[i + 1] == ']')
				i++;
			continue;
		}
		for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
			if (n - i >= strlen(groups[g]) &&
			    !memcmp(p + i, groups[g], strlen(groups[g])))
				return groups[g];
		if (p[i] == '(' && i + 2 < n && p[i + 1] == '?' && p[i + 2] >= '0' &&
		    p[i + 2] <= '9')
			return "(?N";
		if (p[i] == '+' && i > 0 && strchr("*+?}", p[i - 1]))
			return "possessive quantifier";
	}
	return NULL;
}

static int re_compile(struct texec *x, struct re *re, const struct tval *pattern, char *why,
                      size_t whylen)
{
	const char *bad = re2_unsupported(pattern->s, pattern->len);
	PCRE2_SIZE off;
	int code;

	memset(re, 0, sizeof(*re));
	re->x = x;
	if (bad) {
		snprintf(why, whylen, "invalid or unsupported Perl syntax: `%s`", bad);
		return -1;
	}
	re->code = pcre2_compile((PCRE2_SPTR)pattern->s, pattern->len,
	                         PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY, &code,
	                         &off, NULL);
	if (!re->code) {
		PCRE2_UCHAR msg[160];

		pcre2_get_error_message(code, msg, sizeof(msg));
		snprintf(why, whylen, "%s at offset %zu", (const char *)msg, (size_t)off);
		return -1;
	}
	if (!(re->md = pcre2_match_data_create_from_pattern(re->code, NULL)) ||
	    !(re->mctx = pcre2_match_context_create(NULL))) {
		pcre2_match_data_free(re->md);
		pcre2_code_free(re->code);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	/* Go's RE2 is linear; PCRE2 backtracks, so a hostile pattern is held to the budget */
	pcre2_set_match_limit(re->mctx, TEMPLATE_MATCH_LIMIT);
	pcre2_set_depth_limit(re->mctx, TEMPLATE_MATCH_DEPTH_LIMIT);
	return 0;
}

static void re_free(struct re *re)
{
	pcre2_match_context_free(re->mctx);
	pcre2_match_data_free(re->md);
	pcre2_code_free(re->code);
}

static bool compile_or_fail(struct texec *x, struct re *re, const char *fn, const struct tval *p)
{
	char why[256];

	if (p->kind != TV_STRING) {
		texec_fail(x, IG_EINVALID, "wrong type for value; expected string; got %s",
		           p->type);
		return false;
	}
	if (re_compile(x, re, p, why, sizeof(why)) < 0) {
		texec_fail(x, IG_EINVALID, "error calling %s: regexp: Compile(%.*s): %s", fn,
		           (int)(p->len > 80 ? 80 : p->len), p->s, why);
		return false;
	}
	return true;
}

/* One match at or after pos: ov[0..] offsets, or false (also after texec_fail: the budget is
 * spent, or the match backtracked past its limits). A match costs the bytes it scanned. */
static bool re_exec(struct re *re, const char *s, size_t len, size_t pos, PCRE2_SIZE **ov)
{
	int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, pos, 0, re->md, re->mctx);

	if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
		texec_fail(re->x, IG_ETOOBIG,
		           "over budget: a regex match backtracked more than %d times",
		           TEMPLATE_MATCH_LIMIT);
		return false;
	}
	*ov = pcre2_get_ovector_pointer(re->md);
	if (!texec_charge_timed(re->x, 1 + ((rc < 0 ? len : (*ov)[1]) - pos) / 64))
		return false;
	return rc >= 0;
}

static size_t rune_width(const char *s, size_t len, size_t pos)
{
	unsigned cp;

	return pos < len ? tutf8_decode(s + pos, len - pos, &cp) : 1;
}

/* Go's allMatches: start/end pairs of up to max matches (max < 0: all). */
static size_t all_matches(struct re *re, const char *s, size_t len, long long max, size_t *pairs,
                          size_t cap)
{
	size_t pos = 0, count = 0;
	long long prev_end = -1;
	PCRE2_SIZE *ov;

	while ((max < 0 || (long long)count < max) && pos <= len && count < cap &&
	       re_exec(re, s, len, pos, &ov)) {
		bool accept = true;

		if (ov[1] == pos) {
			accept = (long long)ov[0] != prev_end;
			pos += rune_width(s, len, pos);
		} else {
			pos = ov[1];
		}
		prev_end = (long long)ov[1];
		if (accept) {
			pairs[2 * count] = ov[0];
			pairs[2 * count + 1] = ov[1];
			count++;
		}
	}
	return count;
}

static const struct tval *fn_regex_match(struct texec *x, const struct tval *const *a, size_t n,
                                         bool must)
{
	const char *s;
	size_t len;
	struct re re;
	PCRE2_SIZE *ov;
	char why[256];
	bool m;

	(void)n;
	if (!targ_string(x, "regexMatch", a[0], &s, &len) ||
	    !targ_string(x, "regexMatch", a[1], &s, &len))
		return NULL;
	if (re_compile(x, &re, a[0], why, sizeof(why)) < 0) {
		if (must)
			return texec_fail(x, IG_EINVALID, "error calling mustRegexMatch: %s", why);
		return tval_bool(false); /* Sprig's regexMatch ignores the compile error */
	}
	m = re_exec(&re, s, len, 0, &ov);
	re_free(&re);
	return x->rc ? NULL : tval_bool(m);
}

static const struct tval *fn_regex_match_lax(struct texec *x, const struct tval *const *a, size_t n)
{
	return fn_regex_match(x, a, n, false);
}

static const struct tval *fn_regex_match_must(struct texec *x, const struct tval *const *a,
                                              size_t n)
{
	return fn_regex_match(x, a, n, true);
}

static const struct tval *fn_regex_find(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s;
	size_t len;
	struct re re;
	PCRE2_SIZE *ov;
	const struct tval *r;

	(void)n;
	if (!targ_string(x, "regexFind", a[1], &s, &len) ||
	    !compile_or_fail(x, &re, "regexFind", a[0]))
		return NULL;
	r = re_exec(&re, s, len, 0, &ov) ? tval_string(x->arena, s + ov[0], ov[1] - ov[0])
	                                 : tval_cstring(x->arena, "");
	re_free(&re);
	return x->rc ? NULL : texec_check(x, r);
}

static const struct tval *fn_regex_find_all(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s;
	size_t len, count, i, *pairs;
	long long max;
	struct re re;
	struct tval *r;

	(void)n;
	if (!targ_string(x, "regexFindAll", a[1], &s, &len) ||
	    !targ_int(x, "regexFindAll", a[2], &max) ||
	    !compile_or_fail(x, &re, "regexFindAll", a[0]))
		return NULL;
	if (!(pairs = tarena_alloc(x->arena, 2 * (len + 2) * sizeof(*pairs)))) {
		re_free(&re);
		return texec_check(x, NULL);
	}
	count = all_matches(&re, s, len, max < 0 ? -1 : max, pairs, len + 2);
	re_free(&re);
	if (x->rc)
		return NULL;
	if (!(r = tval_list(x->arena, count, "[]string", TV_STRING)))
		return texec_check(x, NULL);
	for (i = 0; i < count; i++)
		if (tval_list_push(x->arena, r,
		                   tval_string(x->arena, s + pairs[2 * i],
		                               pairs[2 * i + 1] - pairs[2 * i])) < 0)
			return texec_check(x, NULL);
	return r;
}

/* Go's Regexp.Expand of one `$name` / `${name}` at t (after the `$`); returns bytes used, 0 when
 * malformed. */
static size_t expand_ref(struct buf *b, struct re *re, const char *t, size_t tlen, const char *s,
                         const PCRE2_SIZE *ov, int *rc)
{
	size_t i = 0, start, nlen;
	bool brace = tlen && t[0] == '{';
	char name[128];
	long num = 0;
	int idx;

	start = i = brace;
	while (i < tlen &&
	       (t[i] == '_' || (t[i] >= '0' && t[i] <= '9') ||
	        ((t[i] | 0x20) >= 'a' && (t[i] | 0x20) <= 'z') || (unsigned char)t[i] >= 0x80))
		i++;
	nlen = i - start;
	if (nlen == 0 || nlen >= sizeof(name) || (brace && (i >= tlen || t[i] != '}')))
		return 0;
	memcpy(name, t + start, nlen);
	name[nlen] = 0;
	for (size_t k = 0; k < nlen && num >= 0; k++)
		num = name[k] >= '0' && name[k] <= '9' && num < 100000000
		          ? num * 10 + (name[k] - '0')
		          : -1;
	if (name[0] == '0' && nlen > 1)
		num = -1;
	idx = num >= 0 ? (int)num : pcre2_substring_number_from_name(re->code, (PCRE2_SPTR)name);
	if (idx >= 0 && (uint32_t)idx < pcre2_get_ovector_count(re->md) &&
	    ov[2 * idx] != PCRE2_UNSET)
		*rc = buf_append(b, s + ov[2 * idx], ov[2 * idx + 1] - ov[2 * idx]);
	return i + brace;
}

static int expand(struct buf *b, struct re *re, const char *t, size_t tlen, const char *s,
                  const PCRE2_SIZE *ov)
{
	size_t i = 0, used;
	int rc = 0;

	while (rc == 0 && i < tlen) {
		if (t[i] != '$') {
			rc = buf_append(b, t + i++, 1);
		} else if (i + 1 < tlen && t[i + 1] == '$') {
			rc = buf_puts(b, "$");
			i += 2;
		} else if ((used = expand_ref(b, re, t + i + 1, tlen - i - 1, s, ov, &rc))) {
			i += 1 + used;
		} else {
			rc = buf_puts(b, "$");
			i++;
		}
	}
	return rc;
}

static const struct tval *replace_all(struct texec *x, const struct tval *const *a, const char *fn,
                                      bool literal)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const char *s, *repl;
	size_t len, rlen, search = 0, last_end = 0;
	struct re re;
	PCRE2_SIZE *ov;
	int rc = 0;

	if (!targ_string(x, fn, a[1], &s, &len) || !targ_string(x, fn, a[2], &repl, &rlen) ||
	    !compile_or_fail(x, &re, fn, a[0]))
		return NULL;
	while (rc == 0 && search <= len && re_exec(&re, s, len, search, &ov)) {
		size_t w = search < len ? rune_width(s, len, search) : 0, start = ov[0],
		       end = ov[1];

		rc = buf_append(&b, s + last_end, start - last_end);
		if (rc == 0 && (end > last_end || start == 0))
			rc = literal ? buf_append(&b, repl, rlen)
			             : expand(&b, &re, repl, rlen, s, ov);
		last_end = end;
		if (search + w > end)
			search += w;
		else if (search + 1 > end)
			search++;
		else
			search = end;
	}
	re_free(&re);
	if (x->rc) {
		buf_release(&b);
		return NULL;
	}
	if (rc == 0)
		rc = buf_append(&b, s + last_end, len - last_end);
	return texec_string(x, &b, rc);
}

static const struct tval *fn_regex_replace_all(struct texec *x, const struct tval *const *a,
                                               size_t n)
{
	(void)n;
	return replace_all(x, a, "regexReplaceAll", false);
}

static const struct tval *fn_regex_replace_literal(struct texec *x, const struct tval *const *a,
                                                   size_t n)
{
	(void)n;
	return replace_all(x, a, "regexReplaceAllLiteral", true);
}

static const struct tval *fn_regex_split(struct texec *x, const struct tval *const *a, size_t n)
{
	const char *s;
	size_t len, count, i, beg = 0, end = 0, *pairs;
	long long max;
	struct re re;
	struct tval *r;

	(void)n;
	if (!targ_string(x, "regexSplit", a[1], &s, &len) ||
	    !targ_int(x, "regexSplit", a[2], &max) || !compile_or_fail(x, &re, "regexSplit", a[0]))
		return NULL;
	if (max == 0) {
		re_free(&re);
		return tval_nil();
	}
	pairs = tarena_alloc(x->arena, 2 * (len + 2) * sizeof(*pairs));
	r = tval_list(x->arena, 0, "[]string", TV_STRING);
	if (!pairs || !r) {
		re_free(&re);
		return texec_check(x, NULL);
	}
	if (a[0]->len > 0 && len == 0) {
		re_free(&re);
		return tval_list_push(x->arena, r, tval_cstring(x->arena, "")) < 0
		           ? texec_check(x, NULL)
		           : r;
	}
	count = all_matches(&re, s, len, max, pairs, len + 2);
	re_free(&re);
	if (x->rc)
		return NULL;
	for (i = 0; i < count; i++) {
		if (max > 0 && (long long)r->len == max - 1)
			break;
		end = pairs[2 * i];
		if (pairs[2 * i + 1] != 0 &&
		    tval_list_push(x->arena, r, tval_string(x->arena, s + beg, end - beg)) < 0)
			return texec_check(x, NULL);
		beg = pairs[2 * i + 1];
	}
	if (end != len &&
	    tval_list_push(x->arena, r, tval_string(x->arena, s + beg, len - beg)) < 0)
		return texec_check(x, NULL);
	return r;
}

static const struct tval *fn_regex_quote_meta(struct texec *x, const struct tval *const *a,
                                              size_t n)
{
	struct buf b = BUF_INIT_MAX(texec_cap(x));
	const char *s;
	size_t len, i;
	int rc = 0;

	(void)n;
	if (!targ_string(x, "regexQuoteMeta", a[0], &s, &len))
		return NULL;
	for (i = 0; rc == 0 && i < len; i++) {
		if (s[i] && strchr("\\.+*?()|[]{}^$", s[i]))
			rc = buf_puts(&b, "\\");
		if (rc == 0)
			rc = buf_append(&b, s + i, 1);
	}
	return texec_string(x, &b, rc);
}

const struct tfunc_entry sprig_regex_table[] = {
    {"regexMatch", fn_regex_match_lax, 2, 2},
    {"mustRegexMatch", fn_regex_match_must, 2, 2},
    {"regexFind", fn_regex_find, 2, 2},
    {"mustRegexFind", fn_regex_find, 2, 2},
    {"regexFindAll", fn_regex_find_all, 3, 3},
    {"mustRegexFindAll", fn_regex_find_all, 3, 3},
    {"regexReplaceAll", fn_regex_replace_all, 3, 3},
    {"mustRegexReplaceAll", fn_regex_replace_all, 3, 3},
    {"regexReplaceAllLiteral", fn_regex_replace_literal, 3, 3},
    {"mustRegexReplaceAllLiteral", fn_regex_replace_literal, 3, 3},
    {"regexSplit", fn_regex_split, 3, 3},
    {"mustRegexSplit", fn_regex_split, 3, 3},
    {"regexQuoteMeta", fn_regex_quote_meta, 1, 1},
    {NULL, NULL, 0, 0},
};
