/* The lexer of Go's text/template: text, `{{`/`}}` with `{{- `/` -}}` trimming, comments,
 * and the tokens inside actions (fields, variables, literals, keywords, punctuation). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tlex.h"

#define TOKENS_MAX (64 * 1024)

static const struct {
	const char *word;
	enum ttok_kind kind;
} keywords[] = {
    {"block", TK_BLOCK},
    {"break", TK_BREAK},
    {"continue", TK_CONTINUE},
    {"define", TK_DEFINE},
    {"else", TK_ELSE},
    {"end", TK_END},
    {"if", TK_IF},
    {"range", TK_RANGE},
    {"nil", TK_NIL},
    {"template", TK_TEMPLATE},
    {"with", TK_WITH},
    {"true", TK_BOOL},
    {"false", TK_BOOL},
};

struct lexer {
	struct tlex *out;
	const char *src, *p, *end;
	size_t line;
	bool space;
	struct error *err;
	const char *name;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_alnum(char c)
{
	return c == '_' || isalnum((unsigned char)c) || (unsigned char)c >= 0x80;
}

static int lex_fail(struct lexer *l, const char *what)
{
	return error_set(l->err, IG_EINVALID, "template '%s': line %zu: %s", l->name, l->line,
	                 what);
}

static int emit(struct lexer *l, enum ttok_kind kind, const char *start, size_t len)
{
	struct ttok *t;

	if (l->out->len == l->out->cap) {
		size_t cap = l->out->cap ? l->out->cap * 2 : 64;
		struct ttok *p;

		if (cap > TOKENS_MAX)
			return error_set(l->err, IG_ETOOBIG, "template '%s': too many tokens",
			                 l->name);
		if (!(p = realloc(l->out->toks, cap * sizeof(*p))))
			return error_oom(l->err);
		l->out->toks = p;
		l->out->cap = cap;
	}
	t = &l->out->toks[l->out->len++];
	t->kind = kind;
	t->s = start;
	t->len = len;
	t->line = l->line;
	t->space_before = l->space;
	l->space = false;
	return 0;
}

static void count_lines(struct lexer *l, const char *from, const char *to)
{
	for (; from < to; from++)
		l->line += *from == '\n';
}

/* A quoted string, raw string or character constant; the parser unquotes it. */
static int lex_quote(struct lexer *l, enum ttok_kind kind)
{
	char q = *l->p;
	const char *start = l->p++;

	while (l->p < l->end && *l->p != q) {
		if (q != '`' && *l->p == '\n')
			return lex_fail(l, "unterminated quoted string");
		if (q != '`' && *l->p == '\\' && l->p + 1 < l->end)
			l->p++;
		l->p++;
	}
	if (l->p >= l->end)
		return lex_fail(l, q == '`' ? "unterminated raw quoted string"
		                            : "unterminated quoted string");
	l->p++;
	count_lines(l, start, l->p);
	return emit(l, kind, start, (size_t)(l->p - start));
}

static int lex_word(struct lexer *l)
{
	const char *start = l->p;
	size_t n, i;

	while (l->p < l->end && is_alnum(*l->p))
		l->p++;
	n = (size_t)(l->p - start);
	for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strlen(keywords[i].word) == n && !memcmp(keywords[i].word, start, n))
			return emit(l, keywords[i].kind, start, n);
	return emit(l, TK_IDENT, start, n);
}

static int lex_number(struct lexer *l)
{
	const char *start = l->p;

	if (*l->p == '+' || *l->p == '-')
		l->p++;
	while (l->p < l->end && (is_alnum(*l->p) || *l->p == '.' ||
	                         ((*l->p == '+' || *l->p == '-') && strchr("eEpP", l->p[-1]))))
		l->p++;
	return emit(l, TK_NUMBER, start, (size_t)(l->p - start));
}

static bool at_right(const struct lexer *l, bool *trim)
{
	size_t left = (size_t)(l->end - l->p);

	*trim = left >= 4 && is_space(l->p[0]) && !memcmp(l->p + 1, "-}}", 3);
	return *trim || (left >= 2 && !memcmp(l->p, "}}", 2));
}

static int lex_punct(struct lexer *l)
{
	const char *s = l->p;

	if (*s == ':' && s + 1 < l->end && s[1] == '=') {
		l->p += 2;
		return emit(l, TK_DECLARE, s, 2);
	}
	l->p++;
	switch (*s) {
	case '=':
		return emit(l, TK_ASSIGN, s, 1);
	case ',':
		return emit(l, TK_COMMA, s, 1);
	case '|':
		return emit(l, TK_PIPE, s, 1);
	case '(':
		return emit(l, TK_LPAREN, s, 1);
	case ')':
		return emit(l, TK_RPAREN, s, 1);
	default:
		l->p--;
		return lex_fail(l, "unrecognized character in action");
	}
}

/* `.Field`, `.` or a number starting with '.'; `$name` or `$`. */
static int lex_dot_or_var(struct lexer *l)
{
	const char *start = l->p;

	if (*l->p == '.' && l->p + 1 < l->end && isdigit((unsigned char)l->p[1]))
		return lex_number(l);
	l->p++;
	while (l->p < l->end && is_alnum(*l->p))
		l->p++;
	if (*start == '$')
		return emit(l, TK_VARIABLE, start, (size_t)(l->p - start));
	return emit(l, l->p - start == 1 ? TK_DOT : TK_FIELD, start, (size_t)(l->p - start));
}

static int lex_token(struct lexer *l)
{
	char c = *l->p;

	if (c == '"')
		return lex_quote(l, TK_STRING);
	if (c == '`')
		return lex_quote(l, TK_RAWSTRING);
	if (c == '\'')
		return lex_quote(l, TK_CHAR);
	if (c == '.' || c == '$')
		return lex_dot_or_var(l);
	if (isdigit((unsigned char)c) || ((c == '+' || c == '-') && l->p + 1 < l->end &&
	                                  (isdigit((unsigned char)l->p[1]) || l->p[1] == '.')))
		return lex_number(l);
	if (is_alnum(c))
		return lex_word(l);
	return lex_punct(l);
}

/* The inside of one action, after `{{` (and its trim marker); sets *trim_after. */
static int lex_action(struct lexer *l, bool *trim_after)
{
	int rc;

	if (l->end - l->p >= 2 && !memcmp(l->p, "/*", 2)) {
		const char *close = NULL, *q;

		for (q = l->p + 2; q + 1 < l->end; q++)
			if (q[0] == '*' && q[1] == '/') {
				close = q;
				break;
			}
		if (!close)
			return lex_fail(l, "unclosed comment");
		count_lines(l, l->p, close);
		l->p = close + 2;
		if (!at_right(l, trim_after))
			return lex_fail(l, "comment ends before closing delimiter");
		l->p += *trim_after ? 4 : 2;
		return 0;
	}
	if ((rc = emit(l, TK_LEFT, l->p, 0)) < 0)
		return rc;
	for (;;) {
		if (l->p >= l->end)
			return lex_fail(l, "unclosed action");
		if (at_right(l, trim_after)) {
			l->p += *trim_after ? 4 : 2;
			return emit(l, TK_RIGHT, l->p, 0);
		}
		if (is_space(*l->p)) {
			l->line += *l->p == '\n';
			l->p++;
			l->space = true;
			continue;
		}
		if ((rc = lex_token(l)) < 0)
			return rc;
	}
}

static const char *find_left(const char *p, const char *end)
{
	for (; p + 1 < end; p++)
		if (p[0] == '{' && p[1] == '{')
			return p;
	return NULL;
}

int tlex_run(struct tlex *out, const char *src, size_t len, const char *name, struct error *err)
{
	struct lexer l = {out, src, src, src + len, 1, false, err, name};
	bool trim_next = false;
	int rc;

	memset(out, 0, sizeof(*out));
	while (l.p < l.end) {
		const char *o = find_left(l.p, l.end), *text_end = o ? o : l.end, *a;
		const char *text = l.p;
		bool trim_left;

		if (trim_next)
			while (text < text_end && is_space(*text))
				text++;
		a = o ? o + 2 : l.end;
		trim_left = o && l.end - a >= 2 && a[0] == '-' && is_space(a[1]);
		if (trim_left)
			while (text_end > text && is_space(text_end[-1]))
				text_end--;
		count_lines(&l, l.p, text);
		if (text_end > text &&
		    (rc = emit(&l, TK_TEXT, text, (size_t)(text_end - text))) < 0)
			return rc;
		count_lines(&l, text, o ? o : l.end);
		if (!o)
			break;
		l.p = a + (trim_left ? 2 : 0);
		l.line += trim_left && a[1] == '\n';
		l.space = trim_left;
		if ((rc = lex_action(&l, &trim_next)) < 0)
			return rc;
	}
	return emit(&l, TK_EOF, l.end, 0);
}

void tlex_release(struct tlex *t)
{
	free(t->toks);
	memset(t, 0, sizeof(*t));
}
