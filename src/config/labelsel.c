/* Label selectors in the string syntax of k8s.io/apimachinery's labels.Parse: a lexer over the
 * whole text first, then a recursive descent over its tokens, with keys and values checked as
 * the API server checks them; matched as Selector.Matches does. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/config/labelsel.h"
#include "imageguard/kube/kubename.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

enum tok {
	T_END,
	T_CPAR,
	T_COMMA,
	T_NOT,
	T_DEQ,
	T_EQ,
	T_GT,
	T_ID,
	T_IN,
	T_LT,
	T_NEQ,
	T_NOTIN,
	T_OPAR
};

enum op { OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST, OP_GT, OP_LT };

struct token {
	enum tok t;
	const char *s;
	size_t n;
};

struct requirement {
	char *key;
	enum op op;
	struct strvec values; /* In, NotIn (=, == and != fold into them); Gt, Lt: one */
};

struct labelsel {
	struct requirement *items;
	size_t len;
};

/* One parse: the tokens and where the descent is. */
struct parser {
	const char *text;
	struct token *toks;
	size_t len, pos;
	struct labelsel *sel;
	struct error *err;
};

/* ---- lexer ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c && strchr("=!(),><", c) != NULL;
}

/* The longest operator at s ("!=" and "==" before their first character). */
static struct token lex_special(const char *s)
{
	static const struct {
		const char *text;
		enum tok t;
	} ops[] = {{"!=", T_NEQ}, {"==", T_DEQ},  {"!", T_NOT}, {"=", T_EQ}, {"(", T_OPAR},
	           {")", T_CPAR}, {",", T_COMMA}, {">", T_GT},  {"<", T_LT}};
	size_t i = 0;

	while (strncmp(s, ops[i].text, strlen(ops[i].text)) != 0)
		i++; /* is_special(*s): one of them matches */
	return (struct token){ops[i].t, s, strlen(ops[i].text)};
}

static struct token lex_word(const char *s)
{
	size_t n = 0;

	while (s[n] && !is_special(s[n]) && !is_space(s[n]))
		n++;
	if (n == 2 && !memcmp(s, "in", 2))
		return (struct token){T_IN, s, n};
	if (n == 5 && !memcmp(s, "notin", 5))
		return (struct token){T_NOTIN, s, n};
	return (struct token){T_ID, s, n};
}

/* Every token of text, the last one T_END; the array (free it) or NULL when out of memory.
 * Each token holds at least one byte, so there are at most strlen(text) + 1. */
static struct token *lex(const char *text, size_t *len)
{
	struct token *toks = calloc(strlen(text) + 1, sizeof(*toks));
	const char *s = text;
	size_t n = 0;

	if (!toks)
		return NULL;
	for (;;) {
		while (is_space(*s))
			s++;
		if (!*s)
			break;
		toks[n] = is_special(*s) ? lex_special(s) : lex_word(s);
		s += toks[n++].n;
	}
	toks[n++] = (struct token){T_END, s, 0};
	*len = n;
	return toks;
}

/* ---- parser ---- */

/* The token at the position; in a values context 'in' and 'notin' are identifiers. */
static struct token peek(const struct parser *p, bool values)
{
	struct token k = p->toks[p->pos < p->len ? p->pos : p->len - 1];

	if (values && (k.t == T_IN || k.t == T_NOTIN))
		k.t = T_ID;
	return k;
}

static struct token take(struct parser *p, bool values)
{
	struct token k = peek(p, values);

	if (p->pos < p->len - 1)
		p->pos++;
	return k;
}

static int fail(struct parser *p, struct token found, const char *expected)
{
	if (found.t == T_END)
		return error_set(p->err, IG_EINVALID,
		                 "label selector '%.200s': found end of string, expected: %s",
		                 p->text, expected);
	return error_set(p->err, IG_EINVALID, "label selector '%.200s': found '%.*s', expected: %s",
	                 p->text, (int)(found.n > 64 ? 64 : found.n), found.s, expected);
}

static int oom(struct parser *p)
{
	return error_oom(p->err);
}

static struct requirement *add_requirement(struct parser *p, struct token key, enum op op)
{
	struct labelsel *s = p->sel;
	struct requirement *r;

	if (s->len >= LABELSEL_MAX_REQUIREMENTS) {
		error_set(p->err, IG_EINVALID, "label selector '%.200s': more than %d requirements",
		          p->text, LABELSEL_MAX_REQUIREMENTS);
		return NULL;
	}
	if (!(r = realloc(s->items, (s->len + 1) * sizeof(*r)))) {
		oom(p);
		return NULL;
	}
	s->items = r;
	r = &s->items[s->len];
	*r = (struct requirement){NULL, op, STRVEC_INIT};
	if (!(r->key = strndup(key.s, key.n))) {
		oom(p);
		return NULL;
	}
	s->len++;
	return r;
}

static int add_value(struct parser *p, struct requirement *r, const char *v, size_t n)
{
	char buf[64];

	if (n >= sizeof(buf) ||
	    (snprintf(buf, sizeof(buf), "%.*s", (int)n, v), !kubename_is_label_value(buf)))
		return error_set(p->err, IG_EINVALID,
		                 "label selector '%.200s': '%.*s' is not a valid label value",
		                 p->text, (int)(n > 64 ? 64 : n), v);
	if (strvec_has(&r->values, buf))
		return 0;
	return strvec_push(&r->values, buf) < 0 ? oom(p) : 0;
}

/* Go's strconv.ParseInt(s, 10, 64) succeeds. */
static bool is_int64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!*s || is_space(*s))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* ( [v] {, [v]} ): values may be empty, "()" is the one value "". */
static int parse_values(struct parser *p, struct requirement *r)
{
	struct token k = take(p, true);
	int error;

	if (k.t != T_OPAR)
		return fail(p, k, "'('");
	if (peek(p, true).t == T_CPAR) {
		take(p, true);
		return add_value(p, r, "", 0);
	}
	for (;;) {
		k = peek(p, true);
		if (k.t == T_ID) {
			take(p, true);
			if ((error = add_value(p, r, k.s, k.n)) < 0)
				return error;
			k = take(p, true);
			if (k.t == T_CPAR)
				return 0;
			if (k.t != T_COMMA)
				return fail(p, k, "',' or ')'");
		} else if (k.t == T_COMMA) {
			take(p, true); /* an empty value before ',' */
			if ((error = add_value(p, r, "", 0)) < 0)
				return error;
		} else if (k.t == T_CPAR) {
			take(p, true); /* an empty value after ',' */
			return add_value(p, r, "", 0);
		} else {
			return fail(p, k, "',', ')' or identifier");
		}
	}
}

static int parse_exact(struct parser *p, struct requirement *r)
{
	struct token k = peek(p, true);

	if (k.t == T_END || k.t == T_COMMA)
		return add_value(p, r, "", 0);
	take(p, true);
	if (k.t != T_ID)
		return fail(p, k, "identifier");
	return add_value(p, r, k.s, k.n);
}

static int check_key(struct parser *p, struct token key)
{
	char buf[320];

	if (key.n < sizeof(buf) &&
	    (snprintf(buf, sizeof(buf), "%.*s", (int)key.n, key.s), kubename_is_label_key(buf)))
		return 0;
	return error_set(p->err, IG_EINVALID,
	                 "label selector '%.200s': '%.*s' is not a valid label key", p->text,
	                 (int)(key.n > 64 ? 64 : key.n), key.s);
}

static int parse_requirement(struct parser *p)
{
	struct token key = take(p, true), op;
	struct requirement *r;
	bool not = key.t == T_NOT;
	int64_t ignored;
	int error;

	if (not )
		key = take(p, true);
	if (key.t != T_ID)
		return fail(p, key, "identifier");
	if ((error = check_key(p, key)) < 0)
		return error;
	if (not || peek(p, true).t == T_END || peek(p, true).t == T_COMMA)
		return add_requirement(p, key, not ? OP_DOES_NOT_EXIST : OP_EXISTS) ? 0
		                                                                    : p->err->code;
	op = take(p, false);
	if (op.t != T_IN && op.t != T_NOTIN && op.t != T_EQ && op.t != T_DEQ && op.t != T_NEQ &&
	    op.t != T_GT && op.t != T_LT)
		return fail(p, op, "in, notin, =, ==, !=, >, <");
	if (!(r = add_requirement(p, key,
	                          op.t == T_IN || op.t == T_EQ || op.t == T_DEQ ? OP_IN
	                          : op.t == T_GT                                ? OP_GT
	                          : op.t == T_LT                                ? OP_LT
	                                                                        : OP_NOT_IN)))
		return p->err->code;
	if ((error = op.t == T_IN || op.t == T_NOTIN ? parse_values(p, r) : parse_exact(p, r)) < 0)
		return error;
	if ((r->op == OP_GT || r->op == OP_LT) && !is_int64(r->values.items[0], &ignored))
		return error_set(
		    p->err, IG_EINVALID,
		    "label selector '%.200s': '%s' is not an integer (for '>' and '<')", p->text,
		    r->values.items[0]);
	return 0;
}

static int parse_all(struct parser *p)
{
	int error;

	for (;;) {
		struct token k = peek(p, true);

		if (k.t == T_END)
			return 0;
		if (k.t != T_ID && k.t != T_NOT)
			return fail(p, k, "!, identifier, or end of string");
		if ((error = parse_requirement(p)) < 0)
			return error;
		k = take(p, true);
		if (k.t == T_END)
			return 0;
		if (k.t != T_COMMA)
			return fail(p, k, "',' or end of string");
		k = peek(p, true);
		if (k.t != T_ID && k.t != T_NOT)
			return fail(p, k, "identifier after ','");
	}
}

int labelsel_parse(struct labelsel **out, const char *text, struct error *err)
{
	struct parser p = {text, NULL, 0, 0, NULL, err};
	int error;

	*out = NULL;
	if (strlen(text) > LABELSEL_MAX_BYTES)
		return error_set(err, IG_EINVALID,
		                 "label selector '%.64s...': longer than %d bytes", text,
		                 LABELSEL_MAX_BYTES);
	if (!(p.sel = calloc(1, sizeof(*p.sel))) || !(p.toks = lex(text, &p.len))) {
		free(p.sel);
		return error_oom(err);
	}
	if ((error = parse_all(&p)) < 0) {
		labelsel_free(p.sel);
		p.sel = NULL;
	}
	free(p.toks);
	*out = p.sel;
	return error;
}

int labelsel_check(const char *text, struct error *err)
{
	struct labelsel *s = NULL;
	int error = labelsel_parse(&s, text, err);

	labelsel_free(s);
	return error;
}

void labelsel_free(struct labelsel *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->len; i++) {
		free(s->items[i].key);
		strvec_release(&s->items[i].values);
	}
	free(s->items);
	free(s);
}

size_t labelsel_len(const struct labelsel *s)
{
	return s ? s->len : 0;
}

/* ---- matching ---- */

static const char *label_value(const struct strvec *labels, const char *key)
{
	for (size_t i = 0; i + 1 < labels->len; i += 2)
		if (!strcmp(labels->items[i], key))
			return labels->items[i + 1];
	return NULL;
}

static bool requirement_matches(const struct requirement *r, const char *v)
{
	int64_t have, want;

	switch (r->op) {
	case OP_IN:
		return v && strvec_has(&r->values, v);
	case OP_NOT_IN:
		return !v || !strvec_has(&r->values, v);
	case OP_EXISTS:
		return v != NULL;
	case OP_DOES_NOT_EXIST:
		return v == NULL;
	case OP_GT:
	case OP_LT:
		if (!v || !is_int64(v, &have) || !is_int64(r->values.items[0], &want))
			return false;
		return r->op == OP_GT ? have > want : have < want;
	}
	return false;
}

bool labelsel_matches(const struct labelsel *s, const struct strvec *labels)
{
	for (size_t i = 0; s && i < s->len; i++)
		if (!requirement_matches(&s->items[i], label_value(labels, s->items[i].key)))
			return false;
	return true;
}
