/* Strict reading of the protobuf JSON that Sigstore documents use: members that are absent or
 * null are the same, unknown members are refused (a field verification would not read must not
 * ride along unseen), int64 values come as numbers or decimal strings, bytes as base64. */
#ifndef IMAGEGUARD_SIGJSON_H
#define IMAGEGUARD_SIGJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;

/* Member name of obj, NULL when obj is not an object or the member is absent or null. */
json_t *sigjson_get(const json_t *obj, const char *name);
/* True when obj is an object whose members are all named in keys (NULL-terminated). */
bool sigjson_only(const json_t *obj, const char *const *keys);
/* A non-negative int64: a JSON integer or a string of at most 19 decimal digits. */
bool sigjson_int64(int64_t *out, const json_t *v);
/* The same, where absence means 0 (protobuf JSON leaves zeros out): v NULL gives 0. */
bool sigjson_int64_or_zero(int64_t *out, const json_t *v);
/* The base64 string v decoded into out, capped at max bytes. 0, IG_EINVALID or IG_ETOOBIG. */
int sigjson_b64(struct buf *out, const json_t *v, size_t max);

#endif
