/* Go's text/template language with Sprig's hermetic functions (the set Flux registers for
 * messageTemplate), parsed once and executed over tval data (docs/git.md#messagetemplate). */
#ifndef IMAGEGUARD_TEMPLATE_H
#define IMAGEGUARD_TEMPLATE_H

#include <stddef.h>

struct buf;
struct error;
struct tarena;
struct tval;
struct template;

/* Caps on one template: its source, the range iterations and nested {{template}} calls of one
 * execution (beyond them the execution fails, it never hangs). */
#define TEMPLATE_SRC_MAX (64 * 1024)
#define TEMPLATE_ITERATIONS_MAX 100000
#define TEMPLATE_DEPTH_MAX 64

/* The budget of one execution, so that one tenant's template cannot stall other work
 * (docs/configuration.md#template-budget). Steps count every node walked, field read and
 * function call, with work-proportional costs for functions that scan or build (regex, repeat,
 * sha, join, uniq, ...). CPU time is the thread's (CLOCK_THREAD_CPUTIME_ID; 50 times as much
 * under valgrind and 5 times under AddressSanitizer, which run code that much slower). The
 * output cap
 * applies to what one execution appends. A regex match backtracks at most MATCH_LIMIT times.
 * Over budget, the execution fails with IG_ETOOBIG and a message containing "budget". */
#define TEMPLATE_STEPS_MAX 2000000
#define TEMPLATE_CPU_MS 200
#define TEMPLATE_OUTPUT_MAX (256 * 1024)
#define TEMPLATE_MATCH_LIMIT 1000000
#define TEMPLATE_MATCH_DEPTH_LIMIT 10000

/* Parses src (NUL-terminated) into *out (template_free it). name names the template in errors:
 * "template 'NAME': line N: PROBLEM". A function Go or Sprig does not define, and a Sprig
 * function imageguard does not implement, are parse errors naming the function. Returns 0,
 * IG_EINVALID or IG_ETOOBIG. */
int template_parse(struct template **out, const char *src, const char *name, struct error *err);

/* Runs t over data (dot and $), appending to out (its cap and TEMPLATE_OUTPUT_MAX apply).
 * Values the template makes live in arena, which the caller releases after using the output.
 * Returns 0, IG_EINVALID for an execution error (Go's "can't evaluate field", a failing
 * function, ...) or IG_ETOOBIG (the budget above, the arena, iteration or depth cap). */
int template_execute(struct buf *out, const struct template *t, const struct tval *data,
                     struct tarena *arena, struct error *err);

/* As template_execute, but runs the {{define}}d template named name (IG_ENOTFOUND: none). */
int template_execute_define(struct buf *out, const struct template *t, const char *name,
                            const struct tval *data, struct tarena *arena, struct error *err);

/* The number of {{define}}d templates of t, and the name of the i-th (borrowed from t). */
size_t template_define_count(const struct template *t);
const char *template_define_name(const struct template *t, size_t i);

void template_free(struct template *t);

#endif
