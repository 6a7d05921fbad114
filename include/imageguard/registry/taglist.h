/* The streaming reader of tag-list pages (GET /v2/<name>/tags/list): bytes are pushed as the
 * transport delivers them and the `tags` strings go straight into a caller's string vector,
 * so no JSON tree and no whole body is ever held (a 25 MB listing costs its tags, not three
 * copies of them). Built on yajl's push parser. Not thread-safe: one reader per page stream. */
#ifndef IMAGEGUARD_TAGLIST_H
#define IMAGEGUARD_TAGLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "imageguard/util/strvec.h"

struct error;

/* The longest tag the OCI distribution spec allows; a longer entry is not a tag. */
#define TAGLIST_TAG_MAX 128
/* Default cap on the entries of one listing (all pages): a listing past it is an error. */
#define TAGLIST_MAX_TAGS 4000000
/* Nesting deeper than this anywhere in a page is refused (yajl's stack would grow with it). */
#define TAGLIST_MAX_DEPTH 64

struct taglist_limits {
	size_t max_tag_len; /* longer entries are skipped as invalid; 0: TAGLIST_TAG_MAX */
	size_t max_tags;    /* entries of the whole listing, valid or not; 0: TAGLIST_MAX_TAGS */
};

/* Packed storage for the tags of one listing: the strings one after another in blocks of
 * TAGARENA_FIRST bytes, doubling up to TAGARENA_BLOCK, so a tag costs its bytes and one
 * pointer (a malloc per tag costs 16 to 32 bytes more, more than the tag itself for most) and
 * a small listing a small block. Caller-owned; TAGARENA_INIT. */
struct tagarena {
	char **blocks;
	size_t len, cap; /* blocks */
	size_t used;     /* bytes used in the last block */
	bool packed;     /* tagarena_compact copied the strings, in order, into one block */
	bool lent;       /* packed, and that block belongs to another (listmemo): not freed here */
};

#define TAGARENA_INIT                                                                              \
	{                                                                                          \
		NULL, 0, 0, 0, false, false                                                        \
	}
#define TAGARENA_FIRST ((size_t)1 << 10)
#define TAGARENA_BLOCK ((size_t)1 << 20)

/* Frees every block; a may be reused. */
void tagarena_release(struct tagarena *a);

/* Moves the strings of tags (all in a) into one block of their exact size when they total at
 * most max_bytes, re-pointing tags' items: a small listing then costs its bytes, not a
 * partly used block (a pass keeps 5,000 of them). Larger listings are left as they are (the
 * copy would double their peak). Returns 0 or IG_EFAIL (out of memory: a is unchanged). */
int tagarena_compact(struct tagarena *a, struct strvec *tags, size_t max_bytes);

/* Whether the strings of tags lie one after another, in order, in a's only block: tags is
 * the vector tagarena_compact packed (not reordered since). Its pointers can then be dropped
 * while the listing waits and rebuilt from a alone (tagarena_unpack). */
bool tagarena_is_packed(const struct tagarena *a, const struct strvec *tags);

/* The first string of a's only block, or NULL when a has not exactly one. Borrowed. */
const char *tagarena_first(const struct tagarena *a);

/* Points out[0..n) at the n strings that follow one another from first (each after the
 * previous one's NUL: a packed arena's tags), and sets out[n] to NULL. out holds n + 1. */
void tagarena_unpack(const char **out, const char *first, size_t n);

/* Hands a packed arena's block to the caller, who frees it (free()) once no arena uses it; a
 * keeps reading it (lent) and no longer frees it. NULL when a is not packed or already lent. */
char *tagarena_lend(struct tagarena *a);

/* The bytes of tags in a block tagarena_lend gave. */
size_t tagarena_block_bytes(const char *block);

/* Makes a (empty) and tags (empty) what tagarena_compact leaves, over block (from
 * tagarena_lend, holding n strings) without copying it: a is lent it and never frees it, so
 * the block must outlive a. 0 or IG_EFAIL (nothing allocated). */
int tagarena_borrow(struct tagarena *a, struct strvec *tags, char *block, size_t n);

/* Sorts tags byte-wise (strcmp's order) and folds duplicates, freeing nothing: the strings
 * belong to an arena. Sorted, reversed and few-run listings cost one pass; others are sorted
 * by their first 8 bytes as one integer (up to 4,096 tags) or by qsort. Never fails: short of
 * memory it falls back to qsort, which needs none of ours. */
void taglist_sort_unique(struct strvec *tags);

struct taglist;

/* A reader that appends to tags (borrowed, must outlive the reader). name is the subject of
 * messages ("host/repository", copied). limits may be NULL (the defaults). Returns 0 or
 * IG_EFAIL (out of memory). */
int taglist_new(struct taglist **out, struct strvec *tags, const char *name,
                const struct taglist_limits *limits, struct error *err);
void taglist_free(struct taglist *t);

/* Stores the tags in a (borrowed, must outlive the strings) instead of one malloc each: the
 * vector's items then point into a. Such a vector is not strvec_release'd nor
 * strvec_sort_unique'd (those free each string): free(tags->items) and tagarena_release(a).
 * Call before the first page. */
void taglist_set_arena(struct taglist *t, struct tagarena *a);

/* Starts a new page: forgets a page in progress, removing the tags it had appended (a retried
 * or redirected request delivers the page again). Returns 0 or IG_EFAIL. */
int taglist_page_begin(struct taglist *t, struct error *err);

/* Feeds the next len bytes of the current page. Returns 0, IG_EINVALID (not JSON, the root is
 * not an object, `tags` not an array or null or given twice, a non-string entry, `name` not a
 * string or not a repository name, nesting too deep; err names the repository), IG_ETOOBIG
 * (more entries than max_tags) or IG_EFAIL (out of memory). After an error the page is dead
 * until taglist_page_begin. */
int taglist_push(struct taglist *t, const char *data, size_t len, struct error *err);

/* Ends the current page: the JSON must be complete and have had a `tags` array (or null).
 * Returns 0 or the codes of taglist_push. Logs one warning for skipped entries. */
int taglist_page_end(struct taglist *t, struct error *err);

/* One whole page in one call (begin, push, end), for the fuzz target and unit tests.
 * Returns what taglist_page_end would. */
int taglist_parse(struct strvec *tags, const char *name, const char *data, size_t len,
                  struct error *err);

#endif
