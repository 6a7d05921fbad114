/* Inside the template engine: the parse tree, the executor's state and the function table
 * shared by the lexer/parser (tparse.c), the executor (texec.c), Go's fmt (tfmt.c), the Go
 * builtins (tbuiltins.c) and the Sprig functions (sprig_*.c). */
#ifndef IMAGEGUARD_TEMPLATE_PRIVATE_H
#define IMAGEGUARD_TEMPLATE_PRIVATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "imageguard/template/template.h"
#include "imageguard/template/tval.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

enum tnode_kind {
	TN_LIST,     /* kids */
	TN_TEXT,     /* text, len */
	TN_ACTION,   /* pipe */
	TN_IF,       /* pipe, list, else_list */
	TN_RANGE,    /* pipe, list, else_list */
	TN_WITH,     /* pipe, list, else_list */
	TN_TEMPLATE, /* name, pipe (may be NULL) */
	TN_BREAK,
	TN_CONTINUE,
	TN_PIPE,     /* decl (vars), is_assign, cmds */
	TN_COMMAND,  /* args */
	TN_FIELD,    /* idents: .A.B */
	TN_VARIABLE, /* idents: $x.A.B (idents[0] is "$x") */
	TN_CHAIN,    /* node (a pipe), idents: (..).A.B */
	TN_IDENT,    /* a function name (text) */
	TN_DOT,
	TN_NIL,
	TN_BOOL,   /* b */
	TN_NUMBER, /* value */
	TN_STRING, /* value (unquoted) */
};

struct tnode {
	enum tnode_kind kind;
	size_t line;
	const char *text; /* TN_TEXT, TN_IDENT, TN_TEMPLATE name */
	size_t len;
	struct tnode **kids; /* TN_LIST items, TN_PIPE commands, TN_COMMAND args */
	size_t nkids;
	struct tnode *pipe, *list, *else_list, *node;
	char **idents; /* field/variable chain */
	size_t nidents;
	char **decl; /* TN_PIPE variables ("$x") */
	size_t ndecl;
	bool is_assign;
	bool b;
	const struct tval *value; /* TN_NUMBER, TN_STRING */
};

struct tdefine {
	const char *name;
	struct tnode *list;
};

struct template
{
	struct tarena arena; /* the tree and its strings */
	char *name;
	struct tnode *root;
	struct tdefine *defs;
	size_t ndefs, capdefs;
};

struct tvar {
	const char *name;
	const struct tval *v;
};

struct texec {
	const struct template *t;
	struct tarena *arena;
	struct buf *out;
	struct error *err;
	int rc;      /* the first error's code, 0 while running */
	size_t line; /* of the action being run, for errors */
	struct tvar *vars;
	size_t nvars, capvars;
	size_t depth;             /* template calls */
	size_t iterations;        /* range iterations, all loops together */
	unsigned long steps;      /* the step budget spent (texec_charge) */
	unsigned long next_clock; /* steps at which the CPU clock is read next */
	long long cpu_deadline;   /* thread CPU time (ns) at which the budget ends */
	size_t out_limit;         /* bytes this execution may append to out */
};

/* A function: args already evaluated (and/or are handled by the executor). Returns the result,
 * or NULL after texec_fail. */
typedef const struct tval *(*tfunc)(struct texec *x, const struct tval *const *args, size_t n);

struct tfunc_entry {
	const char *name;
	tfunc fn;
	int min_args, max_args; /* max -1: variadic */
};

/* The function for name: Sprig's (which Go lets override a builtin) then Go's; NULL when
 * unknown. *known_unimplemented is true for a Sprig function imageguard does not provide. */
const struct tfunc_entry *tfuncs_lookup(const char *name, size_t len, bool *known_unimplemented);
extern const struct tfunc_entry tbuiltins_table[];
extern const struct tfunc_entry sprig_strings_table[];
extern const struct tfunc_entry sprig_lists_table[];
extern const struct tfunc_entry sprig_misc_table[];
extern const struct tfunc_entry sprig_regex_table[];
extern const struct tfunc_entry sprig_json_table[];

/* Records the first error ("template 'name': line N: ...") and returns NULL. */
const struct tval *texec_fail(struct texec *x, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Spends cost steps of the budget (template.h); false after texec_fail when it is spent or the
 * CPU time is over. Functions whose work is not proportional to their arguments' and result's
 * sizes charge it themselves. */
bool texec_charge(struct texec *x, size_t cost);
/* texec_charge reading the CPU clock now: after work whose time its cost may not show (one
 * regex match backtracks up to TEMPLATE_MATCH_LIMIT times). */
bool texec_charge_timed(struct texec *x, size_t cost);
/* The size of v counted through nested lists and maps (a value may share parts: the count is
 * what walking it costs), stopping at cap. */
size_t texec_weight(const struct tval *v, size_t cap);
/* texec_charge of v's weight. */
bool texec_charge_deep(struct texec *x, const struct tval *v);

/* NULL (and an error) when the arena is exhausted, else v. */
const struct tval *texec_check(struct texec *x, const struct tval *v);

/* The string in b as a value (b released); rc is the last buf_* result: a failure is the
 * output cap. texec_cap is the cap for such scratch buffers. */
const struct tval *texec_string(struct texec *x, struct buf *b, int rc);
size_t texec_cap(const struct texec *x);

/* Argument helpers for functions: the value as Go would convert it to the parameter type, or
 * false after texec_fail naming the function and argument. */
bool targ_string(struct texec *x, const char *fn, const struct tval *v, const char **s,
                 size_t *len);
bool targ_int(struct texec *x, const char *fn, const struct tval *v, long long *i);
bool targ_bool(struct texec *x, const char *fn, const struct tval *v, bool *b);

/* Go's fmt over values, appended to out: Sprint, Sprintln, Sprintf, and one value as %v. */
int tfmt_sprint(struct buf *out, const struct tval *const *args, size_t n);
int tfmt_sprintln(struct buf *out, const struct tval *const *args, size_t n);
int tfmt_sprintf(struct buf *out, const char *format, size_t flen, const struct tval *const *args,
                 size_t n);
int tfmt_value(struct buf *out, const struct tval *v);
/* strconv.FormatFloat(f, mode, -1, 64) for mode 'f' or 'e'. */
int tfmt_float_shortest(struct buf *out, double f, char mode);
/* strconv.IsPrint (unicode.IsPrint) for the code points templates meet. */
bool tfmt_is_print(unsigned cp);
/* Go's strconv.Quote. */
int tfmt_quote(struct buf *out, const char *s, size_t len);
/* The string a value gives through Sprig's strval / fmt.Sprint: strings as they are, others %v.
 * Returns a value in x's arena or NULL (error set). */
const struct tval *tfmt_strval(struct texec *x, const struct tval *v);

/* A Go-style conversion to int64 (spf13/cast's ToInt64, as Sprig uses it). */
long long tconv_int64(const struct tval *v);
double tconv_float64(const struct tval *v);

/* Parser: fills t from src; errors name the template and line. */
int tparse_run(struct template *t, const char *src, size_t len, struct error *err);

/* Decodes one UTF-8 code point at s (n bytes available); returns its length (1 for an invalid
 * byte, with *cp = 0xFFFD). */
size_t tutf8_decode(const char *s, size_t n, unsigned *cp);
size_t tutf8_encode(char out[4], unsigned cp);

#endif
