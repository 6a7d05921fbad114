/* Tokens of a Go text/template source (tlex.c), for the parser (tparse.c). */
#ifndef IMAGEGUARD_TLEX_H
#define IMAGEGUARD_TLEX_H

#include <stdbool.h>
#include <stddef.h>

#include "imageguard/util/error.h"

enum ttok_kind {
	TK_EOF,
	TK_TEXT,
	TK_LEFT,
	TK_RIGHT,
	TK_IDENT,
	TK_FIELD,
	TK_VARIABLE,
	TK_DOT,
	TK_STRING,
	TK_RAWSTRING,
	TK_CHAR,
	TK_NUMBER,
	TK_BOOL,
	TK_NIL,
	TK_LPAREN,
	TK_RPAREN,
	TK_PIPE,
	TK_DECLARE,
	TK_ASSIGN,
	TK_COMMA,
	TK_BLOCK,
	TK_BREAK,
	TK_CONTINUE,
	TK_DEFINE,
	TK_ELSE,
	TK_END,
	TK_IF,
	TK_RANGE,
	TK_TEMPLATE,
	TK_WITH,
};

struct ttok {
	enum ttok_kind kind;
	const char *s; /* into the source */
	size_t len;
	size_t line;
	bool space_before; /* whitespace separates it from the previous token */
};

struct tlex {
	struct ttok *toks; /* owned */
	size_t len, cap;
};

/* Splits src into tokens, text already trimmed by `{{- ` and ` -}}`, comments dropped; ends
 * with TK_EOF. Errors name the template and line. */
int tlex_run(struct tlex *out, const char *src, size_t len, const char *name, struct error *err);
void tlex_release(struct tlex *t);

#endif
