/* The parser of Go's text/template: tokens to a tree of lists, actions, if/range/with,
 * define/template/block and pipelines, with Go's parse-time checks (undefined variables and
 * functions, break outside range, a literal as a later pipeline stage). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template_private.h"
#include "tlex.h"

#define VARS_MAX 1024
#define NEST_MAX 100

struct parser {
	struct template *t;
	const struct ttok *toks;
	size_t pos;
	struct error *err;
	const char *vars[VARS_MAX];
	size_t nvars;
	size_t range_depth, nest;
	bool failed;
};

static struct tnode *pfail(struct parser *p, const struct ttok *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static struct tnode *pfail(struct parser *p, const struct ttok *at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (p->failed)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->failed = true;
	error_set(p->err, p->t->arena.exhausted ? IG_ETOOBIG : IG_EINVALID,
	          "template '%s': line %zu: %s", p->t->name, at->line, msg);
	return NULL;
}

/* A token for messages: its text in quotes, or what it stands for. */
static const char *tok_text(const struct ttok *t, size_t *len)
{
	static const char *const names[] = {
	    [TK_EOF] = "EOF", [TK_LEFT] = "\"{{\"", [TK_RIGHT] = "\"}}\"", [TK_TEXT] = "text"};

	if (t->kind == TK_EOF || t->kind == TK_LEFT || t->kind == TK_RIGHT || t->kind == TK_TEXT) {
		*len = strlen(names[t->kind]);
		return names[t->kind];
	}
	*len = t->len > 40 ? 40 : t->len;
	return t->s;
}

static int tok_len(const struct ttok *t)
{
	size_t n;

	tok_text(t, &n);
	return (int)n;
}

static const char *tok_str(const struct ttok *t)
{
	size_t n;

	return tok_text(t, &n);
}

#define TOK_ARGS(t) tok_len(t), tok_str(t)

static const struct ttok *peek(struct parser *p)
{
	return &p->toks[p->pos];
}

static const struct ttok *next(struct parser *p)
{
	const struct ttok *t = &p->toks[p->pos];

	if (t->kind != TK_EOF)
		p->pos++;
	return t;
}

static struct tnode *new_node(struct parser *p, enum tnode_kind kind, size_t line)
{
	struct tnode *n = tarena_alloc(&p->t->arena, sizeof(*n));

	if (!n)
		return pfail(p, peek(p), "template too large");
	n->kind = kind;
	n->line = line;
	return n;
}

static int add_kid(struct parser *p, struct tnode *parent, struct tnode *kid)
{
	struct tnode **kids;

	if (!kid)
		return -1;
	if ((parent->nkids & (parent->nkids - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
		size_t cap = parent->nkids ? parent->nkids * 2 : 1;

		if (!(kids = tarena_alloc(&p->t->arena, cap * sizeof(*kids)))) {
			pfail(p, peek(p), "template too large");
			return -1;
		}
		if (parent->nkids)
			memcpy(kids, parent->kids, parent->nkids * sizeof(*kids));
		parent->kids = kids;
	}
	parent->kids[parent->nkids++] = kid;
	return 0;
}

static char *tok_dup(struct parser *p, const char *s, size_t n)
{
	char *d = tarena_strndup(&p->t->arena, s, n);

	if (!d)
		pfail(p, peek(p), "template too large");
	return d;
}

static const struct ttok *expect(struct parser *p, enum ttok_kind kind, const char *context)
{
	const struct ttok *t = next(p);

	if (t->kind != kind) {
		pfail(p, t, "unexpected %.*s in %s", TOK_ARGS(t), context);
		return NULL;
	}
	return t;
}

/* ---- literals ---- */

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* One escape after a backslash at *s (Go's strconv.Unquote); appends to b. */
static int unescape(struct buf *b, const char **s, const char *end, char quote)
{
	static const char from[] = "abfnrtv\\", to[] = "\a\b\f\n\r\t\v\\";
	const char *c = *s, *hit;
	unsigned cp = 0;
	int digits = 0, base = 16, i;
	char u[4];

	if (c >= end)
		return -1;
	if (*c == quote) {
		*s = c + 1;
		return buf_append(b, c, 1);
	}
	if ((hit = strchr(from, *c)) && *c) {
		*s = c + 1;
		return buf_append(b, &to[hit - from], 1);
	}
	if (*c == 'x')
		digits = 2;
	else if (*c == 'u')
		digits = 4;
	else if (*c == 'U')
		digits = 8;
	else if (*c >= '0' && *c <= '7')
		digits = 3, base = 8, c--;
	else
		return -1;
	for (i = 0, c++; i < digits; i++, c++) {
		int d = c < end ? hexval(*c) : -1;

		if (d < 0 || d >= base)
			return -1;
		cp = cp * (unsigned)base + (unsigned)d;
	}
	*s = c;
	if (digits == 2 || base == 8) {
		char byte = (char)cp;

		return cp > 255 ? -1 : buf_append(b, &byte, 1);
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
		return -1;
	return buf_append(b, u, tutf8_encode(u, cp));
}

static struct tval *unquote(struct parser *p, const struct ttok *t)
{
	struct buf b = BUF_INIT_MAX(TEMPLATE_SRC_MAX);
	const char *s = t->s + 1, *end = t->s + t->len - 1;
	struct tval *v = NULL;

	if (t->kind == TK_RAWSTRING) {
		for (; s < end; s++)
			if (*s != '\r' && buf_append(&b, s, 1) < 0)
				goto done;
	} else {
		while (s < end) {
			if (*s != '\\') {
				if (buf_append(&b, s++, 1) < 0)
					goto done;
			} else if (s++, unescape(&b, &s, end, t->s[0]) < 0) {
				pfail(p, t, "invalid syntax in string %.*s", (int)t->len, t->s);
				goto done;
			}
		}
	}
	if (!(v = tval_string(&p->t->arena, b.data ? b.data : "", b.len)))
		pfail(p, t, "template too large");
done:
	buf_release(&b);
	return v;
}

static struct tval *char_constant(struct parser *p, const struct ttok *t)
{
	struct tval *s = unquote(p, t);
	unsigned cp = 0;

	if (!s)
		return NULL;
	if (s->len == 0 || tutf8_decode(s->s, s->len, &cp) != s->len) {
		pfail(p, t, "malformed character constant: %.*s", (int)t->len, t->s);
		return NULL;
	}
	return tval_int(&p->t->arena, (long long)cp, "int");
}

static bool is_float_text(const char *s, size_t n)
{
	bool hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '.' || (!hex && (s[i] == 'e' || s[i] == 'E')) ||
		    (hex && (s[i] == 'p' || s[i] == 'P')))
			return true;
	return false;
}

static struct tval *number(struct parser *p, const struct ttok *t)
{
	char text[128], *end;
	size_t i, n = 0;
	bool neg = false;

	for (i = 0; i < t->len && n + 1 < sizeof(text); i++)
		if (t->s[i] != '_')
			text[n++] = t->s[i];
	text[n] = 0;
	errno = 0;
	if (!is_float_text(text, n)) {
		const char *digits = text;
		int base = 10;

		if (*digits == '+' || *digits == '-')
			neg = *digits++ == '-';
		if (digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B'))
			base = 2, digits += 2;
		else if (digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'O'))
			base = 8, digits += 2;
		else if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
			base = 16, digits += 2;
		else if (digits[0] == '0' && digits[1])
			base = 8, digits += 1;
		long long v = 0;

		end = (char *)digits;
		if (*digits && *digits != '-' && *digits != '+')
			v = strtoll(digits, &end, base);
		if (*digits && !*end && errno == 0 && i == t->len)
			return tval_int(&p->t->arena, neg ? -v : v, "int");
	} else {
		double f = strtod(text, &end);

		if (!*end && errno == 0 && i == t->len && isfinite(f))
			return tval_float(&p->t->arena, f);
	}
	pfail(p, t, "bad number syntax: %.*s", (int)t->len, t->s);
	return NULL;
}

/* ---- pipelines ---- */

static struct tnode *pipeline(struct parser *p, const char *context, enum ttok_kind end);

static bool var_defined(const struct parser *p, const char *s, size_t n)
{
	size_t i;

	for (i = p->nvars; i-- > 0;)
		if (strlen(p->vars[i]) == n && !memcmp(p->vars[i], s, n))
			return true;
	return false;
}

static int push_var(struct parser *p, const char *name)
{
	if (p->nvars == VARS_MAX) {
		pfail(p, peek(p), "too many variables");
		return -1;
	}
	p->vars[p->nvars++] = name;
	return 0;
}

/* The `.Field` tokens right after a term (no space in between), appended to n's chain after
 * first (a variable's name or the term's own field), when given. */
static int field_chain(struct parser *p, struct tnode *n, const char *first, size_t flen)
{
	size_t count = n->nidents + (first ? 1 : 0), k = p->pos;
	char **idents;

	while (p->toks[k].kind == TK_FIELD && !p->toks[k].space_before)
		k++, count++;
	if (count == n->nidents)
		return 0;
	if (!(idents = tarena_alloc(&p->t->arena, count * sizeof(*idents))))
		return pfail(p, peek(p), "template too large"), -1;
	if (n->nidents)
		memcpy(idents, n->idents, n->nidents * sizeof(*idents));
	n->idents = idents;
	if (first && !(n->idents[n->nidents++] = tok_dup(p, first, flen)))
		return -1;
	while (n->nidents < count) {
		const struct ttok *f = next(p);

		if (!(n->idents[n->nidents++] = tok_dup(p, f->s + 1, f->len - 1)))
			return -1;
	}
	return 0;
}

static struct tnode *ident(struct parser *p, const struct ttok *t)
{
	bool unimplemented = false;
	struct tnode *n;

	if (!tfuncs_lookup(t->s, t->len, &unimplemented)) {
		if (unimplemented)
			return pfail(p, t,
			             "function \"%.*s\" (a Sprig function) is not implemented by "
			             "imageguard",
			             (int)t->len, t->s);
		return pfail(p, t, "function \"%.*s\" not defined", (int)t->len, t->s);
	}
	if (!(n = new_node(p, TN_IDENT, t->line)) || !(n->text = tok_dup(p, t->s, t->len)))
		return NULL;
	n->len = t->len;
	return n;
}

static struct tnode *literal(struct parser *p, const struct ttok *t, enum tnode_kind kind)
{
	struct tnode *n = new_node(p, kind, t->line);

	if (!n)
		return NULL;
	if (t->kind == TK_BOOL)
		n->b = t->len == 4;
	else if (t->kind == TK_NUMBER)
		n->value = number(p, t);
	else if (t->kind == TK_CHAR)
		n->value = char_constant(p, t);
	else if (kind == TN_STRING)
		n->value = unquote(p, t);
	return (kind == TN_NUMBER || kind == TN_STRING) && !n->value ? NULL : n;
}

static struct tnode *term(struct parser *p)
{
	const struct ttok *t = next(p);
	struct tnode *n;

	switch (t->kind) {
	case TK_IDENT:
		return ident(p, t);
	case TK_DOT:
		return new_node(p, TN_DOT, t->line);
	case TK_NIL:
		return new_node(p, TN_NIL, t->line);
	case TK_BOOL:
		return literal(p, t, TN_BOOL);
	case TK_NUMBER:
	case TK_CHAR:
		return literal(p, t, TN_NUMBER);
	case TK_STRING:
	case TK_RAWSTRING:
		return literal(p, t, TN_STRING);
	case TK_VARIABLE:
		if (!var_defined(p, t->s, t->len))
			return pfail(p, t, "undefined variable \"%.*s\"", (int)t->len, t->s);
		if (!(n = new_node(p, TN_VARIABLE, t->line)) || field_chain(p, n, t->s, t->len) < 0)
			return NULL;
		return n;
	case TK_FIELD:
		if (!(n = new_node(p, TN_FIELD, t->line)) ||
		    field_chain(p, n, t->s + 1, t->len - 1) < 0)
			return NULL;
		return n;
	case TK_LPAREN:
		if (!(n = new_node(p, TN_CHAIN, t->line)) ||
		    !(n->node = pipeline(p, "parenthesized pipeline", TK_RPAREN)))
			return NULL;
		return n;
	default:
		p->pos--;
		return NULL;
	}
}

static struct tnode *operand(struct parser *p)
{
	struct tnode *n = term(p);

	if (!n || peek(p)->kind != TK_FIELD || peek(p)->space_before)
		return n;
	if (n->kind == TN_CHAIN)
		return field_chain(p, n, NULL, 0) < 0 ? NULL : n;
	return pfail(p, peek(p), "unexpected . after term");
}

static struct tnode *command(struct parser *p)
{
	struct tnode *cmd = new_node(p, TN_COMMAND, peek(p)->line), *arg;

	while (cmd && !p->failed) {
		const struct ttok *t = peek(p);

		if (t->kind == TK_RIGHT || t->kind == TK_RPAREN || t->kind == TK_PIPE)
			break;
		if (cmd->nkids && !t->space_before)
			return pfail(p, t, "unexpected %.*s in operand", TOK_ARGS(t));
		if (!(arg = operand(p)))
			return p->failed ? NULL
			                 : pfail(p, t, "unexpected %.*s in command", TOK_ARGS(t));
		if (add_kid(p, cmd, arg) < 0)
			return NULL;
	}
	if (cmd && !cmd->nkids && !p->failed)
		return pfail(p, peek(p), "missing value for command");
	return p->failed ? NULL : cmd;
}

/* `$x :=`, `$x =`, and in range `$i, $e :=`. */
static int declarations(struct parser *p, struct tnode *pipe, bool in_range)
{
	size_t start = p->pos;
	const struct ttok *v1 = peek(p), *v2 = NULL, *op;

	if (v1->kind != TK_VARIABLE)
		return 0;
	p->pos++;
	if (in_range && peek(p)->kind == TK_COMMA) {
		p->pos++;
		if ((v2 = next(p))->kind != TK_VARIABLE)
			return pfail(p, v2, "range can only initialize variables"), -1;
	}
	op = peek(p);
	if (op->kind != TK_DECLARE && op->kind != TK_ASSIGN) {
		if (v2)
			return pfail(p, op, "range can only initialize variables"), -1;
		p->pos = start;
		return 0;
	}
	p->pos++;
	pipe->is_assign = op->kind == TK_ASSIGN;
	if (!(pipe->decl = tarena_alloc(&p->t->arena, 2 * sizeof(char *))))
		return pfail(p, op, "template too large"), -1;
	for (const struct ttok *v = v1; v; v = v == v1 ? v2 : NULL) {
		char *name = tok_dup(p, v->s, v->len);

		if (!name)
			return -1;
		pipe->decl[pipe->ndecl++] = name;
		if (pipe->is_assign && !var_defined(p, v->s, v->len))
			return pfail(p, v, "undefined variable \"%.*s\"", (int)v->len, v->s), -1;
	}
	return 0;
}

static bool is_literal(const struct tnode *n)
{
	return n->kind == TN_BOOL || n->kind == TN_DOT || n->kind == TN_NIL ||
	       n->kind == TN_NUMBER || n->kind == TN_STRING;
}

static struct tnode *pipeline_in(struct parser *p, const char *context, enum ttok_kind end,
                                 bool in_range)
{
	struct tnode *pipe = new_node(p, TN_PIPE, peek(p)->line), *cmd;
	size_t i;

	if (!pipe || declarations(p, pipe, in_range) < 0)
		return NULL;
	for (;;) {
		if (!(cmd = command(p)) || add_kid(p, pipe, cmd) < 0)
			return NULL;
		if (peek(p)->kind != TK_PIPE)
			break;
		p->pos++;
	}
	if (!expect(p, end, context))
		return NULL;
	for (i = 1; i < pipe->nkids; i++)
		if (is_literal(pipe->kids[i]->kids[0]))
			return pfail(p, peek(p), "non executable command in pipeline stage %zu",
			             i + 1);
	for (i = 0; !pipe->is_assign && i < pipe->ndecl; i++)
		if (push_var(p, pipe->decl[i]) < 0)
			return NULL;
	return pipe;
}

static struct tnode *pipeline(struct parser *p, const char *context, enum ttok_kind end)
{
	return pipeline_in(p, context, end, false);
}

/* ---- actions ---- */

static struct tnode *item_list(struct parser *p, enum ttok_kind *ended, bool top);

static struct tnode *control(struct parser *p, enum tnode_kind kind, const struct ttok *kw)
{
	struct tnode *n = new_node(p, kind, kw->line);
	size_t vars = p->nvars;
	enum ttok_kind ended;

	if (!n || !(n->pipe = pipeline_in(p,
	                                  kind == TN_IF      ? "if"
	                                  : kind == TN_RANGE ? "range"
	                                                     : "with",
	                                  TK_RIGHT, kind == TN_RANGE)))
		return NULL;
	p->range_depth += kind == TN_RANGE;
	n->list = item_list(p, &ended, false);
	p->range_depth -= kind == TN_RANGE;
	if (!n->list)
		return NULL;
	if (ended == TK_ELSE) {
		const struct ttok *t = peek(p);

		if ((kind == TN_IF && t->kind == TK_IF) ||
		    (kind == TN_WITH && t->kind == TK_WITH)) {
			struct tnode *nested;

			p->pos++;
			if (!(n->else_list = new_node(p, TN_LIST, t->line)) ||
			    !(nested = control(p, kind, t)) || add_kid(p, n->else_list, nested) < 0)
				return NULL;
			p->nvars = vars;
			return n;
		}
		if (!expect(p, TK_RIGHT, "else") || !(n->else_list = item_list(p, &ended, false)))
			return NULL;
		if (ended != TK_END)
			return pfail(p, peek(p), "expected end; found else");
	}
	p->nvars = vars;
	return n;
}

static struct tnode *template_call(struct parser *p, const struct ttok *kw)
{
	const struct ttok *name = next(p);
	struct tnode *n = new_node(p, TN_TEMPLATE, kw->line), *s;

	if (!n)
		return NULL;
	if (name->kind != TK_STRING && name->kind != TK_RAWSTRING)
		return pfail(p, name, "template name must be a string constant");
	if (!(s = literal(p, name, TN_STRING)))
		return NULL;
	n->text = s->value->s;
	n->len = s->value->len;
	if (peek(p)->kind != TK_RIGHT && !(n->pipe = pipeline(p, "template clause", TK_RIGHT)))
		return NULL;
	if (!n->pipe && !expect(p, TK_RIGHT, "template clause"))
		return NULL;
	return n;
}

/* Go's IsEmptyTree: nothing but whitespace text. */
static bool is_empty_list(const struct tnode *list)
{
	size_t i, j;

	for (i = 0; i < list->nkids; i++) {
		const struct tnode *n = list->kids[i];

		if (n->kind != TN_TEXT)
			return false;
		for (j = 0; j < n->len; j++)
			if (!strchr(" \t\r\n", n->text[j]))
				return false;
	}
	return true;
}

static int add_define(struct parser *p, const char *name, struct tnode *list)
{
	struct template *t = p->t;
	size_t i;

	for (i = 0; i < t->ndefs; i++)
		if (strcmp(t->defs[i].name, name) == 0) {
			/* Go: an empty definition may be replaced (or ignored), two bodies clash */
			if (!is_empty_list(t->defs[i].list) && !is_empty_list(list))
				return pfail(p, peek(p), "multiple definition of template \"%s\"",
				             name),
				       -1;
			if (!is_empty_list(list))
				t->defs[i].list = list;
			return 0;
		}
	if (t->ndefs == t->capdefs) {
		size_t cap = t->capdefs ? t->capdefs * 2 : 4;
		struct tdefine *d = tarena_alloc(&t->arena, cap * sizeof(*d));

		if (!d)
			return pfail(p, peek(p), "template too large"), -1;
		if (t->ndefs)
			memcpy(d, t->defs, t->ndefs * sizeof(*d));
		t->defs = d;
		t->capdefs = cap;
	}
	t->defs[t->ndefs].name = name;
	t->defs[t->ndefs++].list = list;
	return 0;
}

/* {{define "name"}} and {{block "name" pipeline}}: the body until {{end}}. */
static struct tnode *definition(struct parser *p, const struct ttok *kw, bool top)
{
	struct tnode *call = NULL, *list;
	size_t vars = p->nvars, range_depth = p->range_depth;
	const char *saved[VARS_MAX];
	enum ttok_kind ended;
	const char *name;

	if (kw->kind == TK_DEFINE && !top)
		return pfail(p, kw, "unexpected <define> in command");
	if (kw->kind == TK_BLOCK) {
		if (!(call = template_call(p, kw)))
			return NULL;
		name = call->text;
	} else {
		const struct ttok *nt = next(p);
		struct tnode *s;

		if (nt->kind != TK_STRING && nt->kind != TK_RAWSTRING)
			return pfail(p, nt, "define name must be a string constant");
		if (!(s = literal(p, nt, TN_STRING)) || !expect(p, TK_RIGHT, "define clause"))
			return NULL;
		name = s->value->s;
	}
	memcpy(saved, p->vars, vars * sizeof(*saved));
	p->nvars = 1; /* a defined template sees only $ */
	p->range_depth = 0;
	list = item_list(p, &ended, false);
	memcpy(p->vars, saved, vars * sizeof(*saved));
	p->nvars = vars;
	p->range_depth = range_depth;
	if (!list)
		return NULL;
	if (ended != TK_END)
		return pfail(p, kw, "unexpected else in define");
	if (add_define(p, name, list) < 0)
		return NULL;
	return call ? call : new_node(p, TN_LIST, kw->line);
}

static struct tnode *loop_control(struct parser *p, const struct ttok *kw)
{
	if (!p->range_depth)
		return pfail(p, kw, "{{%.*s}} outside {{range}}", (int)kw->len, kw->s);
	if (!expect(p, TK_RIGHT, kw->s[0] == 'b' ? "break" : "continue"))
		return NULL;
	return new_node(p, kw->kind == TK_BREAK ? TN_BREAK : TN_CONTINUE, kw->line);
}

/* After `{{`: one action; *ended is set for {{end}} and {{else}}. */
static struct tnode *action(struct parser *p, enum ttok_kind *ended, bool top)
{
	const struct ttok *t = next(p);
	struct tnode *n;

	switch (t->kind) {
	case TK_IF:
		return control(p, TN_IF, t);
	case TK_RANGE:
		return control(p, TN_RANGE, t);
	case TK_WITH:
		return control(p, TN_WITH, t);
	case TK_TEMPLATE:
		return template_call(p, t);
	case TK_DEFINE:
	case TK_BLOCK:
		return definition(p, t, top);
	case TK_BREAK:
	case TK_CONTINUE:
		return loop_control(p, t);
	case TK_END:
		if (top)
			return pfail(p, t, "unexpected {{end}}");
		*ended = TK_END;
		return expect(p, TK_RIGHT, "end") ? new_node(p, TN_LIST, t->line) : NULL;
	case TK_ELSE:
		if (top)
			return pfail(p, t, "unexpected {{else}}");
		*ended = TK_ELSE;
		return new_node(p, TN_LIST, t->line);
	default:
		p->pos--;
		if (!(n = new_node(p, TN_ACTION, t->line)) ||
		    !(n->pipe = pipeline(p, "command", TK_RIGHT)))
			return NULL;
		if (n->pipe->ndecl == 0 && n->pipe->nkids == 0)
			return pfail(p, t, "missing value for command");
		return n;
	}
}

/* Text and actions until {{end}}/{{else}} (*ended) or, at the top, the end of input. */
static struct tnode *item_list(struct parser *p, enum ttok_kind *ended, bool top)
{
	struct tnode *list = new_node(p, TN_LIST, peek(p)->line), *n;

	if (!list)
		return NULL;
	if (++p->nest > NEST_MAX)
		return pfail(p, peek(p), "nested too deeply");
	*ended = TK_EOF;
	for (;;) {
		const struct ttok *t = next(p);

		if (t->kind == TK_EOF) {
			if (!top)
				return pfail(p, t, "unexpected EOF");
			break;
		}
		if (t->kind == TK_TEXT) {
			if (!(n = new_node(p, TN_TEXT, t->line)))
				return NULL;
			n->text = t->s;
			n->len = t->len;
		} else if (!(n = action(p, ended, top))) {
			return NULL;
		}
		if (*ended != TK_EOF)
			break;
		if (add_kid(p, list, n) < 0)
			return NULL;
	}
	p->nest--;
	return list;
}

int tparse_run(struct template *t, const char *src, size_t len, struct error *err)
{
	struct tlex lex;
	struct parser p = {.t = t, .err = err};
	enum ttok_kind ended;
	int rc;

	if ((rc = tlex_run(&lex, src, len, t->name, err)) < 0) {
		tlex_release(&lex);
		return rc;
	}
	p.toks = lex.toks;
	p.vars[p.nvars++] = "$";
	t->root = item_list(&p, &ended, true);
	tlex_release(&lex);
	if (!t->root)
		return err->code ? err->code : IG_EINVALID;
	return 0;
}
