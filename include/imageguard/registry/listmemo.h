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
/* What all entries together may hold by default, in packed tag bytes: past it nothing new is
 * kept (registry_client_set_budget makes it an eighth of the memory budget). */
#define LISTMEMO_BYTES_MAX ((size_t)12 << 20)

struct listmemo;

int listmemo_new(struct listmemo **out);
/* The cap on the packed bytes of all entries (LISTMEMO_BYTES_MAX until set); entries already
 * held stay until they go unused. */
void listmemo_set_cap(struct listmemo *m, size_t max_bytes);
void listmemo_free(struct listmemo *m);

/* The key of a page: SHA-256 of url, a NUL, and the body. False (key all zero, never looked
 * up) when OpenSSL fails. */
bool listmemo_key(unsigned char key[LISTMEMO_KEY_LEN], const char *url, const char *body,
                  size_t len);

/* On a hit, *tags and *arena (both empty) become the entry's packed tags, as tagarena_compact
 * leaves them but lent (tagarena_borrow: the memo's block, not a copy), and 1 is returned; 0
 * on a miss, IG_EFAIL out of memory. The block stays at least until the next pass but one:
 * release such listings before that listmemo_next_pass. */
int listmemo_get(struct listmemo *m, const unsigned char key[LISTMEMO_KEY_LEN], struct strvec *tags,
                 struct tagarena *arena);

/* Keeps a packed listing (tagarena_is_packed, not lent) under key: the memo takes its block
 * (tagarena_lend) and the listing goes on reading it, so a pass holds each listing once.
 * Anything else, or one past the cap, is not kept. Best effort: out of memory keeps nothing. */
void listmemo_put(struct listmemo *m, const unsigned char key[LISTMEMO_KEY_LEN],
                  struct tagarena *arena, const struct strvec *tags);

/* Starts a pass: what was neither read nor written in the pass before is dropped, so the memo
 * holds at most two passes' listings and a listing that changed leaves no old copy behind.
 * Call it between passes, with no listing of a pass alive. */
void listmemo_next_pass(struct listmemo *m);

/* Entries and packed bytes held (tests). */
size_t listmemo_len(const struct listmemo *m, size_t *bytes);

#endif
