/* Small helpers for writing JSON with jansson, shared by every JSON output (reports, audit
 * records, verify): the contract's "string or null" fields. */
#ifndef IMAGEGUARD_JSONOUT_H
#define IMAGEGUARD_JSONOUT_H

#include <jansson.h>
#include <stddef.h>

/* A new JSON string of s, or JSON null when s is NULL. A new reference (NULL when out of
 * memory, or when s is not valid UTF-8 — jansson refuses it; callers set it with
 * json_object_set_new, which then fails). */
json_t *jsonout_str(const char *s);

/* The `line` field of an item that has a file: the line, or null without a file. */
json_t *jsonout_line(const char *file, size_t line);

#endif
