/* Escaping of text from outside (Git content, registries, annotations) before it reaches a
 * line-oriented sink: commit messages and their trailers, text logs, plan's text output. */
#ifndef IMAGEGUARD_ESCAPE_H
#define IMAGEGUARD_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

struct buf;

/* Appends s to out so that it can neither end the line nor drive a terminal: the C0
 * controls, DEL and the Unicode line breaks U+0085, U+2028 and U+2029 become `\n`, `\r`,
 * `\t`, `\e` or `\xHH` / `\u{HHHH}`, and a backslash becomes `\\` so that the escaping is
 * unambiguous. Other bytes (UTF-8 included) are copied. Returns 0 or IG_EFAIL (the buffer's
 * cap or memory). */
int escape_append(struct buf *out, const char *s);

/* True when s holds nothing escape_append would change. */
bool escape_is_plain(const char *s);

#endif
