/* Tag listings kept from one `run` pass to the next: a single-page listing whose first page
 * comes back byte for byte as before is not parsed, sorted or packed again (those were half of
 * an up-to-date pass of 5,000 policies). The key is the SHA-256 of the page's URL and body,
 * so a registry cannot make two different bodies share an entry. Thread-safe: the listing
 * threads share one memo. */
#ifndef IMAGEGUARD_LISTMEMO_H
#define IMAGEGUARD_LISTMEMO_H

#include <stdbool.h>
#include <stddef.h>

#include "imageguard/registry/taglist.h"
#include "imageguard/util/strvec.h"

#define LISTMEMO_KEY_LEN 32
/* Pages up to this size are held whole before they are parsed, so that they can be looked up;
 * larger ones stream as before and are never kept. */
#define LISTMEMO_BODY_MAX ((size_t)64 * 1024)
/* What all entries together may hold, in packed tag bytes: past it nothing new is kept. */
#define LISTMEMO_BYTES_MAX ((size_t)16 << 20)

struct listmemo;

int listmemo_new(struct listmemo **out);
void listmemo_free(struct listmemo *m);

/* The key of a page: SHA-256 of url, a NUL, and the body. False (key all zero, never looked
 * up) when OpenSSL fails. */
bool listmemo_key(unsigned char key[LISTMEMO_KEY_LEN], const char *url, const char *body,
                  size_t len);

/* On a hit, *tags and *arena (both empty) become a packed copy of the entry's tags (as
 * tagarena_compact leaves them) and 1 is returned; 0 on a miss, IG_EFAIL out of memory. */
int listmemo_get(struct listmemo *m, const unsigned char key[LISTMEMO_KEY_LEN], struct strvec *tags,
                 struct tagarena *arena);

/* Keeps a copy of a packed listing (tagarena_is_packed) under key; anything else, or one past
 * LISTMEMO_BYTES_MAX, is not kept. Best effort: out of memory keeps nothing. */
void listmemo_put(struct listmemo *m, const unsigned char key[LISTMEMO_KEY_LEN],
                  const struct tagarena *arena, const struct strvec *tags);

/* Starts a pass: what was neither read nor written in the pass before is dropped, so the memo
 * holds at most two passes' listings and a listing that changed leaves no old copy behind. */
void listmemo_next_pass(struct listmemo *m);

/* Entries and packed bytes held (tests). */
size_t listmemo_len(const struct listmemo *m, size_t *bytes);

#endif
