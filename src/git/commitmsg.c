/* Commit messages: the default list of changes, or a Flux messageTemplate parsed into a small
 * node list (text, values, print/println, one level of range) and executed over the changes.
 * Anything beyond that subset is rejected with the template's name and line, never guessed. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/git/commitmsg.h"
#include "imageguard/util/error.h"

#define TMPL_MAX (64 * 1024)
#define NODES_MAX 2048
#define ARGS_MAX 16

enum field { F_AUTOMATION, F_CHANGES, F_OLD, F_NEW, F_SETTER, F_FILE, F_POLICY, F_REASON, F_DOT };
enum scope { S_ROOT, S_CHANGE, S_IMAGE };
enum kind { N_TEXT, N_VALUE, N_RANGE_CHANGES, N_RANGE_IMAGES, N_END };
enum fn { FN_NONE, FN_PRINT, FN_PRINTLN };

struct targ {
	bool is_string;
	enum field field;
	char *str; /* owned, unescaped */
};

struct tnode {
	enum kind kind;
	const char *text; /* N_TEXT: borrowed from the template */
	size_t len;
	enum fn fn;
	struct targ args[ARGS_MAX];
	size_t nargs;
	size_t end; /* N_RANGE_*: index of its N_END */
};

struct tmpl {
	struct tnode *nodes;
	size_t len, cap;
	const char *src, *name;
};

static const struct {
	const char *name;
	enum field field;
	enum scope scope; /* where `.name` is valid; `$.name` is valid for S_ROOT names anywhere */
} fields[] = {
	{"AutomationObject", F_AUTOMATION, S_ROOT}, {"Changes", F_CHANGES, S_ROOT},
	{"OldValue", F_OLD, S_CHANGE},               {"NewValue", F_NEW, S_CHANGE},
	{"Setter", F_SETTER, S_CHANGE},              {"File", F_FILE, S_CHANGE},
	{"Policy", F_POLICY, S_CHANGE},              {"Reason", F_REASON, S_CHANGE},
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static size_t line_of(const struct tmpl *t, const char *p)
{
	size_t line = 1;
	const char *s;

	for (s = t->src; s < p; s++)
		line += *s == '\n';
	return line;
}

static int fail(const struct tmpl *t, const char *at, struct error *err, const char *what,
		const char *a, size_t alen)
{
	if (alen > 80)
		alen = 80;
	return error_set(err, IG_EINVALID, "template '%s': line %zu: %s '%.*s'", t->name,
			 line_of(t, at), what, (int)alen, a);
}

static void tmpl_release(struct tmpl *t)
{
	size_t i, j;

	for (i = 0; i < t->len; i++)
		for (j = 0; j < t->nodes[i].nargs; j++)
			free(t->nodes[i].args[j].str);
	free(t->nodes);
	t->nodes = NULL;
	t->len = t->cap = 0;
}

static struct tnode *add_node(struct tmpl *t, enum kind kind)
{
	struct tnode *n;

	if (t->len == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct tnode *p;

		if (cap > NODES_MAX || !(p = realloc(t->nodes, cap * sizeof(*p))))
			return NULL;
		t->nodes = p;
		t->cap = cap;
	}
	n = &t->nodes[t->len++];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	return n;
}

/* A Go string literal: "..." with \\ \" \n \t escapes, or a `raw` one. */
static int parse_string(struct targ *a, const char **p, const char *end)
{
	char q = **p;
	struct buf b = BUF_INIT_MAX(TMPL_MAX);

	for ((*p)++; *p < end && **p != q; (*p)++) {
		char c = **p;

		if (q == '"' && c == '\\' && *p + 1 < end) {
			(*p)++;
			c = **p == 'n' ? '\n' : **p == 't' ? '\t' : **p;
		}
		if (buf_append(&b, &c, 1) < 0)
			break;
	}
	if (*p >= end) {
		buf_release(&b);
		return -1;
	}
	(*p)++;
	a->is_string = true;
	a->str = buf_detach(&b);
	return a->str ? 0 : -1;
}

static int parse_field(struct tmpl *t, struct targ *a, const char *tok, size_t len,
		       enum scope scope, struct error *err)
{
	bool root = len >= 2 && tok[0] == '$' && tok[1] == '.';
	const char *name = tok + (root ? 2 : 1);
	size_t n = len - (size_t)(name - tok), i;

	if (len == 1 && tok[0] == '.') {
		if (scope != S_IMAGE)
			return fail(t, tok, err, "'.' is only a value inside {{range .Updated.Images}}:", tok,
				    len);
		a->field = F_DOT;
		return 0;
	}
	if (tok[0] != '.' && !root)
		return fail(t, tok, err, "unsupported action (only fields, strings, print, println, "
					 "range and end are supported):",
			    tok, len);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (strlen(fields[i].name) != n || strncmp(fields[i].name, name, n) != 0)
			continue;
		if ((!root && fields[i].scope == scope) || (root && fields[i].scope == S_ROOT)) {
			a->field = fields[i].field;
			return 0;
		}
		return fail(t, tok, err,
			    fields[i].scope == S_ROOT ? "field only outside a range (use $. inside):"
						       : "field only inside {{range .Changed.Changes}}:",
			    tok, len);
	}
	return error_set(err, IG_EINVALID,
			 "template '%s': line %zu: unknown field '%.*s' (supported: .AutomationObject, "
			 ".Changes, and in {{range .Changed.Changes}}: .OldValue .NewValue .Setter "
			 ".File .Policy .Reason)",
			 t->name, line_of(t, tok), (int)(len > 80 ? 80 : len), tok);
}

/* Arguments of a value action: fields or string literals separated by spaces. */
static int parse_args(struct tmpl *t, struct tnode *node, const char *p, const char *end,
		      enum scope scope, struct error *err)
{
	while (p < end) {
		const char *tok = p;
		struct targ *a;
		int rc;

		if (is_space(*p)) {
			p++;
			continue;
		}
		if (node->nargs == ARGS_MAX)
			return fail(t, tok, err, "too many arguments at", tok, (size_t)(end - tok));
		a = &node->args[node->nargs++];
		if (*p == '"' || *p == '`') {
			if (parse_string(a, &p, end) < 0)
				return fail(t, tok, err, "unterminated string", tok, (size_t)(end - tok));
			continue;
		}
		while (p < end && !is_space(*p))
			p++;
		if (memchr(tok, '|', (size_t)(p - tok)) || memchr(tok, '(', (size_t)(p - tok)))
			return fail(t, tok, err, "pipelines and parentheses are not supported:", tok,
				    (size_t)(end - tok));
		if ((rc = parse_field(t, a, tok, (size_t)(p - tok), scope, err)) < 0)
			return rc;
	}
	return 0;
}

static bool word_is(const char *p, const char *end, const char *w)
{
	size_t n = strlen(w);

	return (size_t)(end - p) >= n && strncmp(p, w, n) == 0 && (p + n == end || is_space(p[n]));
}

static int parse_action(struct tmpl *t, const char *p, const char *end, size_t *open,
			struct error *err)
{
	static const char *keywords[] = {"if",	 "else",     "with",  "define", "template",
					 "block", "break", "continue", "len",	"index"};
	enum scope scope = *open == (size_t)-1 ? S_ROOT
			   : t->nodes[*open].kind == N_RANGE_CHANGES ? S_CHANGE
								      : S_IMAGE;
	struct tnode *node;
	size_t i;

	while (p < end && is_space(*p))
		p++;
	while (end > p && is_space(end[-1]))
		end--;
	if (p == end)
		return fail(t, p, err, "empty action", "{{}}", 4);
	if (end - p >= 4 && !strncmp(p, "/*", 2) && !strncmp(end - 2, "*/", 2))
		return 0;
	for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (word_is(p, end, keywords[i]))
			return fail(t, p, err, "unsupported action", p, (size_t)(end - p));
	if (word_is(p, end, "end")) {
		if (end - p != 3)
			return fail(t, p, err, "unsupported action", p, (size_t)(end - p));
		if (*open == (size_t)-1)
			return fail(t, p, err, "{{end}} without a range:", p, 3);
		if (!(node = add_node(t, N_END)))
			return error_set(err, IG_ETOOBIG, "template '%s': too long", t->name);
		t->nodes[*open].end = t->len - 1;
		*open = (size_t)-1;
		return 0;
	}
	if (word_is(p, end, "range")) {
		const char *what = p + 5;
		enum kind kind;

		while (what < end && is_space(*what))
			what++;
		if ((size_t)(end - what) == 16 && !strncmp(what, ".Changed.Changes", 16))
			kind = N_RANGE_CHANGES;
		else if ((size_t)(end - what) == 15 && !strncmp(what, ".Updated.Images", 15))
			kind = N_RANGE_IMAGES;
		else
			return fail(t, p, err,
				    "unsupported range (only .Changed.Changes and .Updated.Images):", p,
				    (size_t)(end - p));
		if (*open != (size_t)-1)
			return fail(t, p, err, "nested range is not supported:", p, (size_t)(end - p));
		if (!(node = add_node(t, kind)))
			return error_set(err, IG_ETOOBIG, "template '%s': too long", t->name);
		*open = t->len - 1;
		return 0;
	}
	if (!(node = add_node(t, N_VALUE)))
		return error_set(err, IG_ETOOBIG, "template '%s': too long", t->name);
	if (word_is(p, end, "println"))
		node->fn = FN_PRINTLN, p += 7;
	else if (word_is(p, end, "print"))
		node->fn = FN_PRINT, p += 5;
	if (parse_args(t, node, p, end, scope, err) < 0)
		return IG_EINVALID;
	if (node->fn == FN_NONE && node->nargs != 1)
		return fail(t, p, err, "unsupported action", p, (size_t)(end - p));
	return 0;
}

static int add_text(struct tmpl *t, const char *s, size_t n, struct error *err)
{
	struct tnode *node;

	if (!n)
		return 0;
	if (!(node = add_node(t, N_TEXT)))
		return error_set(err, IG_ETOOBIG, "template '%s': too long", t->name);
	node->text = s;
	node->len = n;
	return 0;
}

/* Splits the template into text and actions, applying Go's `{{- ` and ` -}}` trimming. */
static int tmpl_parse(struct tmpl *t, const char *src, const char *name, struct error *err)
{
	const char *p = src, *end = src + strlen(src);
	bool trim_next = false;
	size_t open = (size_t)-1;
	int rc;

	memset(t, 0, sizeof(*t));
	t->src = src;
	t->name = name ? name : "messageTemplate";
	if (end - src > TMPL_MAX)
		return error_set(err, IG_ETOOBIG, "template '%s': longer than %d bytes", t->name, TMPL_MAX);
	while (p < end) {
		const char *o = strstr(p, "{{"), *text_end = o ? o : end, *a, *c, *a_end;

		if (trim_next)
			while (p < text_end && is_space(*p))
				p++;
		a = o ? o + 2 : end;
		if (o && a + 1 < end && a[0] == '-' && is_space(a[1])) {
			while (text_end > p && is_space(text_end[-1]))
				text_end--;
			a++;
		}
		if ((rc = add_text(t, p, (size_t)(text_end - p), err)) < 0)
			return rc;
		if (!o)
			break;
		if (!(c = strstr(a, "}}")))
			return fail(t, o, err, "unclosed action", o, strlen(o));
		a_end = c;
		trim_next = c - a >= 2 && c[-1] == '-' && is_space(c[-2]);
		if (trim_next)
			a_end = c - 1;
		if ((rc = parse_action(t, a, a_end, &open, err)) < 0)
			return rc;
		p = c + 2;
	}
	if (open != (size_t)-1)
		return error_set(err, IG_EINVALID, "template '%s': range without {{end}}", t->name);
	return 0;
}

static int put_lines(struct buf *out, const struct commitmsg_change *c, size_t n)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		rc = buf_printf(out, "%s: %s -> %s (%s)", c[i].policy, c[i].old_value, c[i].new_value,
				c[i].file);
		if (rc == 0 && c[i].reason && *c[i].reason)
			rc = buf_printf(out, " [%s]", c[i].reason);
		if (rc == 0)
			rc = buf_puts(out, "\n");
	}
	return rc;
}

struct exec {
	const char *automation;
	const struct commitmsg_change *changes;
	size_t n;
	const struct commitmsg_change *cur; /* inside a range */
};

static int put_setter(struct buf *out, const char *policy)
{
	const char *slash = strchr(policy, '/');

	/* Flux's Setter is the marker's "ns:name" */
	if (!slash)
		return buf_puts(out, policy);
	if (buf_append(out, policy, (size_t)(slash - policy)) < 0 || buf_puts(out, ":") < 0)
		return IG_ETOOBIG;
	return buf_puts(out, slash + 1);
}

static int put_arg(struct buf *out, const struct targ *a, const struct exec *x)
{
	const struct commitmsg_change *c = x->cur;

	if (a->is_string)
		return buf_puts(out, a->str);
	switch (a->field) {
	case F_AUTOMATION: return buf_puts(out, x->automation ? x->automation : "");
	case F_CHANGES: return put_lines(out, x->changes, x->n);
	case F_OLD: return buf_puts(out, c->old_value);
	case F_NEW:
	case F_DOT: return buf_puts(out, c->new_value);
	case F_SETTER: return put_setter(out, c->policy);
	case F_FILE: return buf_puts(out, c->file);
	case F_POLICY: return buf_puts(out, c->policy);
	case F_REASON: return buf_puts(out, c->reason ? c->reason : "");
	}
	return 0;
}

static int exec_nodes(struct buf *out, const struct tmpl *t, size_t from, size_t to,
		      struct exec *x)
{
	size_t i, j, k;
	int rc = 0;

	for (i = from; i < to && rc == 0; i++) {
		const struct tnode *node = &t->nodes[i];

		switch (node->kind) {
		case N_TEXT: rc = buf_append(out, node->text, node->len); break;
		case N_VALUE:
			for (j = 0; j < node->nargs && rc == 0; j++) {
				if (j > 0 && node->fn == FN_PRINTLN)
					rc = buf_puts(out, " ");
				if (rc == 0)
					rc = put_arg(out, &node->args[j], x);
			}
			if (rc == 0 && node->fn == FN_PRINTLN)
				rc = buf_puts(out, "\n");
			break;
		case N_RANGE_CHANGES:
		case N_RANGE_IMAGES:
			for (k = 0; k < x->n && rc == 0; k++) {
				x->cur = &x->changes[k];
				rc = exec_nodes(out, t, i + 1, node->end, x);
			}
			x->cur = NULL;
			i = node->end;
			break;
		case N_END: break;
		}
	}
	return rc;
}

int commitmsg_check(const char *tmpl, const char *tmpl_name, struct error *err)
{
	struct tmpl t;
	int rc = tmpl_parse(&t, tmpl ? tmpl : "", tmpl_name, err);

	tmpl_release(&t);
	return rc;
}

int commitmsg_render(struct buf *out, const char *tmpl, const char *tmpl_name,
		     const char *automation, const struct commitmsg_change *changes, size_t n,
		     struct error *err)
{
	struct exec x = {automation, changes, n, NULL};
	struct tmpl t;
	int rc;

	if (!tmpl || !*tmpl) {
		rc = buf_printf(out, "imageguard: update %zu image%s\n\n", n, n == 1 ? "" : "s");
		if (rc == 0)
			rc = put_lines(out, changes, n);
		if (rc < 0)
			return error_set(err, rc, "commit message: too long");
		return 0;
	}
	if ((rc = tmpl_parse(&t, tmpl, tmpl_name, err)) == 0 &&
	    (rc = exec_nodes(out, &t, 0, t.len, &x)) < 0)
		error_set(err, rc, "template '%s': commit message too long", t.name);
	tmpl_release(&t);
	return rc;
}
