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

/* Parses src (NUL-terminated) into *out (template_free it). name names the template in errors:
 * "template 'NAME': line N: PROBLEM". A function Go or Sprig does not define, and a Sprig
 * function imageguard does not implement, are parse errors naming the function. Returns 0,
 * IG_EINVALID or IG_ETOOBIG. */
int template_parse(struct template **out, const char *src, const char *name, struct error *err);

/* Runs t over data (dot and $), appending to out (its cap applies: IG_ETOOBIG). Values the
 * template makes live in arena, which the caller releases after using the output. Returns 0,
 * IG_EINVALID for an execution error (Go's "can't evaluate field", a failing function, ...)
 * or IG_ETOOBIG (output, arena, iteration or depth cap). */
int template_execute(struct buf *out, const struct template *t, const struct tval *data,
                     struct tarena *arena, struct error *err);

void template_free(struct template *t);

#endif
