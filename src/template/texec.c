/* The executor of Go's text/template: walks the tree over dot, evaluates pipelines, fields,
 * variables and function calls as Go's exec.go does, and prints values with Go's fmt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template_private.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif
/* AddressSanitizer's builds (make SANITIZE=1, the fuzzers) run this code a few times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_SLOWDOWN 5
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_SLOWDOWN 5
#endif
#endif
#ifndef SANITIZER_SLOWDOWN
#define SANITIZER_SLOWDOWN 1
#endif

enum { WALK_OK = 0, WALK_ERROR = -1, WALK_BREAK = 1, WALK_CONTINUE = 2 };

const struct tval *texec_fail(struct texec *x, int code, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	if (x->rc)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_flatten(msg);
	x->rc = code;
	error_set(x->err, code, "template '%s': line %zu: %s", x->t->name, x->line, msg);
	return NULL;
}

const struct tval *texec_check(struct texec *x, const struct tval *v)
{
	if (!v && !x->rc)
		texec_fail(x, IG_ETOOBIG, "out of template memory (cap %zu bytes)", x->arena->max);
	return v;
}

const struct tval *texec_string(struct texec *x, struct buf *b, int rc)
{
	const struct tval *v = NULL;

	if (rc == 0)
		v = texec_check(x, tval_string(x->arena, b->data ? b->data : "", b->len));
	else
		texec_fail(x, IG_ETOOBIG, "a value longer than %zu bytes", b->max);
	buf_release(b);
	return v;
}

/* ---- the budget ---- */

/* Steps between two readings of the CPU clock (a reading costs a system call or a vDSO call). */
#define CLOCK_EVERY 256

static long long thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0; /* no thread clock: the step budget still holds */
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

bool texec_charge_timed(struct texec *x, size_t cost)
{
	x->next_clock = x->steps;
	return texec_charge(x, cost);
}

bool texec_charge(struct texec *x, size_t cost)
{
	if (x->rc)
		return false;
	x->steps += cost < TEMPLATE_STEPS_MAX ? cost : TEMPLATE_STEPS_MAX;
	if (x->steps > TEMPLATE_STEPS_MAX)
		return texec_fail(x, IG_ETOOBIG, "over budget: more than %d steps",
		                  TEMPLATE_STEPS_MAX),
		       false;
	if (x->steps >= x->next_clock) {
		x->next_clock = x->steps + CLOCK_EVERY;
		if (thread_cpu_ns() > x->cpu_deadline)
			return texec_fail(x, IG_ETOOBIG, "over budget: more than %d ms of CPU time",
			                  TEMPLATE_CPU_MS),
			       false;
	}
	return true;
}

size_t texec_weight(const struct tval *v, size_t cap)
{
	size_t w = 1, i;

	if (v->kind == TV_STRING)
		return 1 + v->len / 64;
	if (v->kind != TV_LIST && v->kind != TV_MAP && v->kind != TV_STRUCT)
		return 1;
	for (i = 0; i < v->len && w < cap; i++) {
		const struct tval *e = v->kind == TV_LIST  ? v->items[i]
		                       : v->kind == TV_MAP ? v->vals[i]
		                                           : v->fields[i].v;

		if (e)
			w += texec_weight(e, cap - w);
	}
	return w;
}

bool texec_charge_deep(struct texec *x, const struct tval *v)
{
	size_t left =
	    TEMPLATE_STEPS_MAX - (x->steps < TEMPLATE_STEPS_MAX ? x->steps : TEMPLATE_STEPS_MAX);

	return texec_charge(x, texec_weight(v, left + 1));
}

/* What a function's result and string arguments cost beyond the call: scanning or building
 * them (a list or map built costs its length). */
static size_t call_cost(const struct tval *const *args, size_t n, const struct tval *r)
{
	size_t cost = 1, i;

	for (i = 0; i < n; i++)
		if (args[i] && args[i]->kind == TV_STRING)
			cost += args[i]->len / 64;
	if (r && r->kind == TV_STRING)
		cost += r->len / 64;
	else if (r && (r->kind == TV_LIST || r->kind == TV_MAP))
		cost += r->len;
	return cost;
}

size_t texec_cap(const struct texec *x)
{
	return x->out_limit;
}

/* ---- variables ---- */

static int push_var(struct texec *x, const char *name, const struct tval *v)
{
	if (x->nvars == x->capvars) {
		size_t cap = x->capvars ? x->capvars * 2 : 16;
		struct tvar *p = cap <= 1 << 20 ? realloc(x->vars, cap * sizeof(*p)) : NULL;

		if (!p)
			return texec_fail(x, IG_ETOOBIG, "too many variables"), -1;
		x->vars = p;
		x->capvars = cap;
	}
	x->vars[x->nvars].name = name;
	x->vars[x->nvars++].v = v;
	return 0;
}

static struct tvar *find_var(struct texec *x, const char *name)
{
	size_t i;

	for (i = x->nvars; i-- > 0;)
		if (strcmp(x->vars[i].name, name) == 0)
			return &x->vars[i];
	return NULL;
}

/* ---- fields ---- */

static bool has_args(const struct tnode *cmd, const struct tval *final)
{
	return (cmd && cmd->nkids > 1) || final;
}

static const struct tval *field_of(struct texec *x, const char *name, const struct tval *recv,
                                   bool args)
{
	const struct tval *v;
	size_t i;

	if (recv->kind == TV_NIL)
		return tval_nil(); /* Go: a field of no value is no value */
	if (recv->kind == TV_STRUCT) {
		for (i = 0; i < recv->len; i++)
			if (recv->fields[i].method && strcmp(recv->fields[i].name, name) == 0) {
				if (args)
					return texec_fail(
					    x, IG_EINVALID,
					    "wrong number of args for %s: want 0 got 1", name);
				return recv->fields[i].v;
			}
		if ((v = tval_field(recv, name))) {
			if (args)
				return texec_fail(
				    x, IG_EINVALID,
				    "%s has arguments but cannot be invoked as function", name);
			return v;
		}
	} else if (recv->kind == TV_MAP && strncmp(recv->type, "map[string]", 11) == 0) {
		if (args)
			return texec_fail(x, IG_EINVALID, "%s is not a method but has arguments",
			                  name);
		v = tval_map_gets(recv, name);
		return v ? v : tval_nil();
	}
	return texec_fail(x, IG_EINVALID, "can't evaluate field %s in type %s", name, recv->type);
}

/* idents[from..] applied to recv; the last one gets the command's arguments. */
static const struct tval *field_chain(struct texec *x, const struct tval *recv, char *const *idents,
                                      size_t n, size_t from, const struct tnode *cmd,
                                      const struct tval *final)
{
	size_t i;

	for (i = from; i < n && recv; i++)
		recv = !texec_charge(x, 1)
		           ? NULL
		           : field_of(x, idents[i], recv, i + 1 == n && has_args(cmd, final));
	return recv;
}

/* ---- evaluation ---- */

static const struct tval *eval_pipeline(struct texec *x, const struct tnode *pipe,
                                        const struct tval *dot);
static const struct tval *eval_function(struct texec *x, const struct tnode *id,
                                        const struct tnode *cmd, const struct tval *dot,
                                        const struct tval *final);

static const struct tval *eval_variable(struct texec *x, const struct tnode *n,
                                        const struct tnode *cmd, const struct tval *final)
{
	struct tvar *v = find_var(x, n->idents[0]);

	if (!v)
		return texec_fail(x, IG_EINVALID, "undefined variable: %s", n->idents[0]);
	if (n->nidents == 1 && has_args(cmd, final))
		return texec_fail(x, IG_EINVALID, "can't give argument to non-function %s",
		                  n->idents[0]);
	return field_chain(x, v->v, n->idents, n->nidents, 1, cmd, final);
}

static const struct tval *eval_arg(struct texec *x, const struct tnode *n, const struct tval *dot)
{
	const struct tval *v;

	x->line = n->line;
	switch (n->kind) {
	case TN_DOT:
		return dot;
	case TN_NIL:
		return tval_nil();
	case TN_BOOL:
		return tval_bool(n->b);
	case TN_NUMBER:
	case TN_STRING:
		return n->value;
	case TN_FIELD:
		return field_chain(x, dot, n->idents, n->nidents, 0, NULL, NULL);
	case TN_VARIABLE:
		return eval_variable(x, n, NULL, NULL);
	case TN_IDENT:
		return eval_function(x, n, NULL, dot, NULL);
	case TN_CHAIN:
		if (!(v = eval_pipeline(x, n->node, dot)))
			return NULL;
		return field_chain(x, v, n->idents, n->nidents, 0, NULL, NULL);
	default:
		return texec_fail(x, IG_EINVALID, "can't handle argument");
	}
}

/* Go's and/or: arguments evaluated left to right until one decides. */
static const struct tval *eval_logic(struct texec *x, bool is_and, const struct tnode *cmd,
                                     const struct tval *dot, const struct tval *final)
{
	size_t n = (cmd ? cmd->nkids - 1 : 0) + (final ? 1 : 0), i;
	const struct tval *v = NULL;

	if (n < 1)
		return texec_fail(x, IG_EINVALID,
		                  "wrong number of args for %s: want at least 1 got 0",
		                  is_and ? "and" : "or");
	for (i = 0; i < n; i++) {
		v = cmd && i + 1 < cmd->nkids ? eval_arg(x, cmd->kids[i + 1], dot) : final;
		if (!v || tval_truth(v) != is_and)
			return v;
	}
	return v;
}

static const struct tval *eval_function(struct texec *x, const struct tnode *id,
                                        const struct tnode *cmd, const struct tval *dot,
                                        const struct tval *final)
{
	const struct tval *argv[64];
	const struct tfunc_entry *f;
	const struct tval *v;
	size_t n = 0, i;
	size_t line = id->line;
	bool unimpl;

	if (!strcmp(id->text, "and") || !strcmp(id->text, "or"))
		return eval_logic(x, id->text[0] == 'a', cmd, dot, final);
	if (!(f = tfuncs_lookup(id->text, id->len, &unimpl)))
		return texec_fail(x, IG_EINVALID, "function %s not defined", id->text);
	for (i = 1; cmd && i < cmd->nkids; i++) {
		if (n == 63)
			return texec_fail(x, IG_EINVALID, "too many arguments for %s", id->text);
		if (!(argv[n++] = eval_arg(x, cmd->kids[i], dot)))
			return NULL;
	}
	if (final)
		argv[n++] = final;
	x->line = line;
	if ((int)n < f->min_args || (f->max_args >= 0 && (int)n > f->max_args)) {
		if (f->min_args == f->max_args)
			return texec_fail(x, IG_EINVALID,
			                  "wrong number of args for %s: want %d got %zu", f->name,
			                  f->min_args, n);
		return texec_fail(x, IG_EINVALID,
		                  "wrong number of args for %s: want at least %d got %zu", f->name,
		                  f->min_args, n);
	}
	if (!texec_charge(x, 1))
		return NULL;
	v = f->fn(x, argv, n);
	if (v && !texec_charge(x, call_cost(argv, n, v)))
		return NULL;
	return v;
}

static const struct tval *not_a_function(struct texec *x, const struct tnode *cmd,
                                         const struct tval *final, const struct tval *v)
{
	if (v && has_args(cmd, final))
		return texec_fail(x, IG_EINVALID, "can't give argument to non-function");
	return v;
}

static const struct tval *eval_command(struct texec *x, const struct tnode *cmd,
                                       const struct tval *dot, const struct tval *final)
{
	const struct tnode *first = cmd->kids[0];
	const struct tval *v;

	x->line = first->line;
	switch (first->kind) {
	case TN_FIELD:
		return field_chain(x, dot, first->idents, first->nidents, 0, cmd, final);
	case TN_VARIABLE:
		return eval_variable(x, first, cmd, final);
	case TN_IDENT:
		return eval_function(x, first, cmd, dot, final);
	case TN_CHAIN:
		if (!(v = eval_pipeline(x, first->node, dot)))
			return NULL;
		if (!first->nidents)
			return not_a_function(x, cmd, final, v);
		return field_chain(x, v, first->idents, first->nidents, 0, cmd, final);
	case TN_NIL:
		return texec_fail(x, IG_EINVALID, "nil is not a command");
	default:
		return not_a_function(x, cmd, final, eval_arg(x, first, dot));
	}
}

static const struct tval *eval_pipeline(struct texec *x, const struct tnode *pipe,
                                        const struct tval *dot)
{
	const struct tval *v = NULL;
	size_t i;

	for (i = 0; i < pipe->nkids; i++)
		if (!(v = eval_command(x, pipe->kids[i], dot, v)))
			return NULL;
	for (i = 0; i < pipe->ndecl; i++) {
		struct tvar *var = pipe->is_assign ? find_var(x, pipe->decl[i]) : NULL;

		if (pipe->is_assign && !var)
			return texec_fail(x, IG_EINVALID, "undefined variable: %s", pipe->decl[i]);
		if (var)
			var->v = v;
		else if (push_var(x, pipe->decl[i], v) < 0)
			return NULL;
	}
	return v;
}

/* ---- walking ---- */

static int walk(struct texec *x, const struct tnode *n, const struct tval *dot);

static int print_value(struct texec *x, const struct tval *v)
{
	int rc = v->kind == TV_NIL ? buf_puts(x->out, "<no value>") : tfmt_value(x->out, v);

	if (rc < 0)
		texec_fail(x, rc == IG_ETOOBIG ? IG_ETOOBIG : IG_EFAIL,
		           "over budget: output longer than %zu bytes", x->out_limit);
	return rc < 0 ? WALK_ERROR : WALK_OK;
}

static int walk_if_with(struct texec *x, const struct tnode *n, const struct tval *dot)
{
	size_t mark = x->nvars;
	const struct tval *v = eval_pipeline(x, n->pipe, dot);
	int rc;

	if (!v)
		return WALK_ERROR;
	if (tval_truth(v))
		rc = walk(x, n->list, n->kind == TN_WITH ? v : dot);
	else
		rc = n->else_list ? walk(x, n->else_list, dot) : WALK_OK;
	x->nvars = mark;
	return rc;
}

/* One range iteration: the variables as Go sets them, then the body. */
static int range_once(struct texec *x, const struct tnode *n, const struct tval *index,
                      const struct tval *elem)
{
	const struct tnode *pipe = n->pipe;
	size_t mark = x->nvars;
	int rc;

	if (++x->iterations > TEMPLATE_ITERATIONS_MAX)
		return texec_fail(x, IG_ETOOBIG, "more than %d range iterations",
		                  TEMPLATE_ITERATIONS_MAX),
		       WALK_ERROR;
	if (pipe->ndecl && pipe->is_assign) {
		find_var(x, pipe->decl[0])->v = pipe->ndecl > 1 ? index : elem;
		if (pipe->ndecl > 1)
			find_var(x, pipe->decl[1])->v = elem;
	} else if (pipe->ndecl) {
		x->vars[x->nvars - 1].v = elem;
		if (pipe->ndecl > 1)
			x->vars[x->nvars - 2].v = index;
	}
	rc = walk(x, n->list, elem);
	x->nvars = mark;
	return rc;
}

static int range_items(struct texec *x, const struct tnode *n, const struct tval *v)
{
	size_t i;
	int rc = WALK_OK;

	for (i = 0; i < v->len && rc != WALK_ERROR && rc != WALK_BREAK; i++) {
		const struct tval *index =
		    v->kind == TV_MAP ? v->items[i] : tval_int(x->arena, (long long)i, "int");

		if (!texec_check(x, index))
			return WALK_ERROR;
		rc = range_once(x, n, index, v->kind == TV_MAP ? v->vals[i] : v->items[i]);
	}
	return rc == WALK_ERROR ? rc : WALK_OK;
}

static int range_int(struct texec *x, const struct tnode *n, const struct tval *v)
{
	long long i;
	int rc = WALK_OK;

	if (n->pipe->ndecl > 1)
		return texec_fail(x, IG_EINVALID,
		                  "can't use %lld to iterate over more than one variable", v->i),
		       WALK_ERROR;
	for (i = 0; i < v->i && rc != WALK_ERROR && rc != WALK_BREAK; i++) {
		const struct tval *e = texec_check(x, tval_int(x->arena, i, v->type));

		rc = e ? range_once(x, n, e, e) : WALK_ERROR;
	}
	return rc == WALK_ERROR ? rc : WALK_OK;
}

static int walk_range(struct texec *x, const struct tnode *n, const struct tval *dot)
{
	size_t mark = x->nvars;
	const struct tval *v = eval_pipeline(x, n->pipe, dot);
	int rc = WALK_OK;
	bool empty;

	if (!v)
		return WALK_ERROR;
	x->line = n->line;
	switch (v->kind) {
	case TV_LIST:
	case TV_MAP:
		empty = v->len == 0;
		if (!empty)
			rc = range_items(x, n, v);
		break;
	case TV_INT:
		empty = v->i <= 0;
		if (!empty)
			rc = range_int(x, n, v);
		break;
	case TV_NIL:
		empty = true;
		break;
	default:
		texec_fail(x, IG_EINVALID, "range can't iterate over %s", v->type);
		return WALK_ERROR;
	}
	if (rc == WALK_OK && empty && n->else_list)
		rc = walk(x, n->else_list, dot);
	x->nvars = mark;
	return rc;
}

static const struct tdefine *find_define(const struct template *t, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < t->ndefs; i++)
		if (strlen(t->defs[i].name) == len && !memcmp(t->defs[i].name, name, len))
			return &t->defs[i];
	return NULL;
}

static int walk_template(struct texec *x, const struct tnode *n, const struct tval *dot)
{
	const struct tdefine *d = find_define(x->t, n->text, n->len);
	const struct tval *v = tval_nil();
	size_t mark = x->nvars;
	int rc;

	x->line = n->line;
	if (!d)
		return texec_fail(x, IG_EINVALID, "no such template \"%.*s\"", (int)n->len,
		                  n->text),
		       WALK_ERROR;
	if (n->pipe && !(v = eval_pipeline(x, n->pipe, dot)))
		return WALK_ERROR;
	if (++x->depth > TEMPLATE_DEPTH_MAX)
		return texec_fail(x, IG_ETOOBIG, "exceeded maximum template depth (%d)",
		                  TEMPLATE_DEPTH_MAX),
		       WALK_ERROR;
	/* a template sees only $, set to its dot (the parser refuses the caller's variables) */
	if (push_var(x, "$", v) < 0)
		return WALK_ERROR;
	rc = walk(x, d->list, v);
	x->depth--;
	x->nvars = mark;
	return rc == WALK_ERROR ? rc : WALK_OK;
}

static int walk(struct texec *x, const struct tnode *n, const struct tval *dot)
{
	const struct tval *v;
	size_t i;
	int rc = WALK_OK;

	if (!texec_charge(x, 1 + (n->kind == TN_TEXT ? n->len / 64 : 0)))
		return WALK_ERROR;
	switch (n->kind) {
	case TN_LIST:
		for (i = 0; i < n->nkids && rc == WALK_OK; i++)
			rc = walk(x, n->kids[i], dot);
		return rc;
	case TN_TEXT:
		if (buf_append(x->out, n->text, n->len) < 0)
			return texec_fail(x, IG_ETOOBIG,
			                  "over budget: output longer than %zu bytes",
			                  x->out_limit),
			       WALK_ERROR;
		return WALK_OK;
	case TN_ACTION:
		x->line = n->line;
		if (!(v = eval_pipeline(x, n->pipe, dot)))
			return WALK_ERROR;
		return n->pipe->ndecl ? WALK_OK : print_value(x, v);
	case TN_IF:
	case TN_WITH:
		return walk_if_with(x, n, dot);
	case TN_RANGE:
		return walk_range(x, n, dot);
	case TN_TEMPLATE:
		return walk_template(x, n, dot);
	case TN_BREAK:
		return WALK_BREAK;
	case TN_CONTINUE:
		return WALK_CONTINUE;
	default:
		return texec_fail(x, IG_EINVALID, "unknown node"), WALK_ERROR;
	}
}

/* Runs root over data within the budget; out grows by at most TEMPLATE_OUTPUT_MAX. */
static int execute(struct buf *out, const struct template *t, const struct tnode *root,
                   const struct tval *data, struct tarena *arena, struct error *err)
{
	struct texec x = {.t = t, .arena = arena, .out = out, .err = err, .line = 1};
	size_t max = out->max;
	int rc;

	if (!max || max - out->len > TEMPLATE_OUTPUT_MAX)
		out->max = out->len + TEMPLATE_OUTPUT_MAX;
	x.out_limit = out->max - out->len;
	/* valgrind runs code ~50 times slower, ASan a few times: the same work gets the same
	 * budget */
	x.cpu_deadline = thread_cpu_ns() + (long long)TEMPLATE_CPU_MS * 1000000LL *
	                                       (RUNNING_ON_VALGRIND ? 50 : SANITIZER_SLOWDOWN);
	x.next_clock = CLOCK_EVERY;
	if (push_var(&x, "$", data ? data : tval_nil()) < 0)
		rc = x.rc;
	else
		rc = walk(&x, root, data ? data : tval_nil()) == WALK_ERROR ? x.rc : 0;
	free(x.vars);
	out->max = max;
	if (rc == 0 && x.rc)
		rc = x.rc;
	return rc < 0 ? rc : 0;
}

int template_execute(struct buf *out, const struct template *t, const struct tval *data,
                     struct tarena *arena, struct error *err)
{
	return execute(out, t, t->root, data, arena, err);
}

int template_execute_define(struct buf *out, const struct template *t, const char *name,
                            const struct tval *data, struct tarena *arena, struct error *err)
{
	const struct tdefine *d = find_define(t, name, strlen(name));

	if (!d)
		return error_set(err, IG_ENOTFOUND, "template '%s': no such template \"%s\"",
		                 t->name, name);
	return execute(out, t, d->list, data, arena, err);
}

size_t template_define_count(const struct template *t)
{
	return t->ndefs;
}

const char *template_define_name(const struct template *t, size_t i)
{
	return i < t->ndefs ? t->defs[i].name : NULL;
}
