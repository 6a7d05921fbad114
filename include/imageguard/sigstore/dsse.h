/* DSSE (Dead Simple Signing Envelope): the pre-authentication encoding a DSSE signature covers,
 * and the in-toto statement check that binds an envelope to an image digest. */
#ifndef IMAGEGUARD_DSSE_H
#define IMAGEGUARD_DSSE_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct error;

#define DSSE_MAX_PAYLOAD (1024 * 1024) /* an envelope payload larger than this is refused */
#define DSSE_INTOTO_TYPE "application/vnd.in-toto+json"
#define DSSE_MAX_SUBJECTS 1024

/* Appends PAE(type, body) = "DSSEv1" SP len(type) SP type SP len(body) SP body (lengths in
 * decimal bytes) to out. Returns 0 or a buf_* code (IG_ETOOBIG past out->max). */
int dsse_pae(struct buf *out, const char *type, const unsigned char *body, size_t len);

/* Checks that payload[0..len) is an in-toto statement (`_type` https://in-toto.io/Statement/v0.1
 * or v1) with a subject whose digest map names digest ("sha256:<hex>", compared in lower case).
 * *found is the answer; returns 0 (also when not found), IG_EINVALID when the payload is not a
 * statement (the reason in err), IG_ETOOBIG past DSSE_MAX_PAYLOAD or DSSE_MAX_SUBJECTS. */
int dsse_statement_has_subject(bool *found, const char *payload, size_t len, const char *digest,
                               struct error *err);

#endif
