/* Tag-list pages read as a stream with yajl: the callbacks keep a little state (depth, the
 * current root key) and append each valid `tags` entry to the listing's vector at once. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define NAME_MAX_LEN 255 /* the distribution spec's bound on a repository name */

enum root_key { KEY_OTHER, KEY_TAGS, KEY_NAME };

struct taglist {
	struct strvec *tags;
	char *name;
	struct taglist_limits lim;
	yajl_handle h;
	struct tagarena *arena;          /* NULL: one malloc per tag */
	size_t arena_blocks, arena_used; /* the arena's position when the page began */
	size_t mark;                     /* tags->len when the page began */
	size_t entries; /* entries seen in the listing, pages before this one included */
	size_t page_entries;
	size_t bad; /* entries of this page skipped as invalid tags */
	unsigned depth;
	enum root_key key;
	bool in_tags; /* inside the root's `tags` array (depth 2) */
	bool seen_tags, seen_name;
	int code; /* the callbacks' verdict, with msg */
	struct error cb_err;
};

static int fail(struct taglist *t, int code, const char *what)
{
	t->code = code;
	error_set(&t->cb_err, code, "registry '%s': tag list %s", t->name, what);
	return 0; /* yajl: cancel the parse */
}

/* A repository name as registries spell it: printable, no space, bounded. */
static bool is_repository_name(const unsigned char *s, size_t n)
{
	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f)
			return false;
	return true;
}

/* Every value that is not a string, container or key lands here. */
static int on_scalar(struct taglist *t, bool is_null)
{
	if (t->depth == 0)
		return fail(t, IG_EINVALID, "is not a JSON object");
	if (t->in_tags && t->depth == 2)
		return fail(t, IG_EINVALID, "has a non-string entry");
	if (t->depth == 1 && t->key == KEY_TAGS) {
		if (!is_null)
			return fail(t, IG_EINVALID, "has no \"tags\" array");
		t->seen_tags = true; /* `"tags": null` is an empty page (GHCR, Harbor) */
	}
	if (t->depth == 1 && t->key == KEY_NAME)
		return fail(t, IG_EINVALID, "has a \"name\" that is not a string");
	return 1;
}

static int cb_null(void *ctx)
{
	return on_scalar(ctx, true);
}

static int cb_boolean(void *ctx, int v)
{
	(void)v;
	return on_scalar(ctx, false);
}

static int cb_number(void *ctx, const char *s, size_t n)
{
	(void)s;
	(void)n;
	return on_scalar(ctx, false);
}

void tagarena_release(struct tagarena *a)
{
	for (size_t i = a->lent ? a->len : 0; i < a->len; i++)
		free(a->blocks[i]);
	free(a->blocks);
	memset(a, 0, sizeof(*a));
}

/* The capacity of block number i: small for the first (most listings hold a few hundred
 * bytes of tags, and a 1 MiB block each made 5,000 listings cost 5,000 touched pages), doubling
 * up to TAGARENA_BLOCK, never less than need. Stored in the block's first bytes. */
static size_t block_cap(size_t i, size_t need)
{
	size_t cap = i < 10 ? TAGARENA_FIRST << i : TAGARENA_BLOCK;

	cap = cap < TAGARENA_BLOCK ? cap : TAGARENA_BLOCK;
	return cap > need ? cap : need;
}

static size_t cap_of(const char *block)
{
	size_t cap;

	memcpy(&cap, block, sizeof(cap));
	return cap;
}

/* A copy of s[0..n) with its NUL in the arena, or NULL when out of memory. */
static char *arena_copy(struct tagarena *a, const unsigned char *s, size_t n)
{
	char *p;

	if (!a->len || a->used + n + 1 > cap_of(a->blocks[a->len - 1])) {
		size_t cap = block_cap(a->len, n + 1);

		if (a->len == a->cap) {
			size_t bcap = a->cap ? a->cap * 2 : 16;
			char **b = realloc(a->blocks, bcap * sizeof(*b));

			if (!b)
				return NULL;
			a->blocks = b;
			a->cap = bcap;
		}
		if (!(a->blocks[a->len] = malloc(sizeof(size_t) + cap)))
			return NULL;
		memcpy(a->blocks[a->len], &cap, sizeof(cap));
		a->len++;
		a->used = 0;
	}
	p = a->blocks[a->len - 1] + sizeof(size_t) + a->used;
	a->packed = false;
	memcpy(p, s, n);
	p[n] = '\0';
	a->used += n + 1;
	return p;
}

int tagarena_compact(struct tagarena *a, struct strvec *tags, size_t max_bytes)
{
	size_t total = 0, at = 0;
	char *block, **blocks;

	for (size_t i = 0; i < tags->len; i++)
		total += strlen(tags->items[i]) + 1;
	if (a->len == 0 || total > max_bytes ||
	    (a->len == 1 && cap_of(a->blocks[0]) == total && a->used == total))
		return 0;
	if (!(block = malloc(sizeof(size_t) + (total ? total : 1))) ||
	    !(blocks = malloc(sizeof(*blocks)))) {
		free(block);
		return IG_EFAIL;
	}
	memcpy(block, &total, sizeof(total));
	for (size_t i = 0; i < tags->len; i++) {
		size_t n = strlen(tags->items[i]) + 1;

		memcpy(block + sizeof(size_t) + at, tags->items[i], n);
		tags->items[i] = block + sizeof(size_t) + at;
		at += n;
	}
	tagarena_release(a);
	blocks[0] = block;
	a->blocks = blocks;
	a->len = a->cap = 1;
	a->used = total;
	a->packed = true;
	return 0;
}

bool tagarena_is_packed(const struct tagarena *a, const struct strvec *tags)
{
	const char *first, *last;

	if (!a->packed || a->len != 1 || tags->len == 0)
		return false;
	/* both ends in place: compact set every pointer between them */
	first = a->blocks[0] + sizeof(size_t);
	last = tags->items[tags->len - 1];
	return tags->items[0] == first && last + strlen(last) + 1 == first + a->used;
}

const char *tagarena_first(const struct tagarena *a)
{
	return a->len == 1 ? a->blocks[0] + sizeof(size_t) : NULL;
}

char *tagarena_lend(struct tagarena *a)
{
	if (!a->packed || a->lent || a->len != 1)
		return NULL;
	a->lent = true;
	return a->blocks[0];
}

size_t tagarena_block_bytes(const char *block)
{
	return cap_of(block);
}

int tagarena_borrow(struct tagarena *a, struct strvec *tags, char *block, size_t n)
{
	char **blocks = malloc(sizeof(*blocks));
	char **items = malloc((n + 1) * sizeof(*items));

	if (!blocks || !items) {
		free(blocks);
		free(items);
		return IG_EFAIL;
	}
	blocks[0] = block;
	*a = (struct tagarena){blocks, 1, 1, cap_of(block), true, true};
	tagarena_unpack((const char **)items, block + sizeof(size_t), n);
	tags->items = items;
	tags->len = n;
	tags->cap = n + 1;
	return 0;
}

void tagarena_unpack(const char **out, const char *first, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		out[i] = first;
		first += strlen(first) + 1;
	}
	out[n] = NULL;
}

/* ---- sorting a listing ---- */

static int compare_tags(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reverses items[from..to). */
static void reverse(char **items, size_t from, size_t to)
{
	for (size_t i = from, j = to - 1; i < j; i++, j--) {
		char *t = items[i];

		items[i] = items[j];
		items[j] = t;
	}
}

/* Merges the sorted items[0..mid) and items[mid..n) through tmp (n pointers). */
static void merge(char **items, size_t mid, size_t n, char **tmp)
{
	size_t i = 0, j = mid, k = 0;

	while (i < mid && j < n)
		tmp[k++] = strcmp(items[i], items[j]) <= 0 ? items[i++] : items[j++];
	while (i < mid)
		tmp[k++] = items[i++];
	memcpy(items, tmp, k * sizeof(*items)); /* what is left of the second run is in place */
}

#define SORT_RUNS_MAX 8

/* Sorts v as a few runs: each maximal ascending or strictly descending stretch (reversed),
 * merged into the sorted prefix. Listings come sorted (distribution), reversed or in a few
 * runs; false when v has more than SORT_RUNS_MAX runs, or no memory. */
static bool sort_runs(struct strvec *v)
{
	size_t ends[SORT_RUNS_MAX], nruns = 0, i = 0;
	char **tmp;

	while (i < v->len) {
		size_t from = i++;
		bool desc = i < v->len && strcmp(v->items[from], v->items[i]) > 0;

		while (i < v->len && (strcmp(v->items[i - 1], v->items[i]) > 0) == desc)
			i++;
		if (nruns == SORT_RUNS_MAX)
			return false;
		if (desc)
			reverse(v->items, from, i);
		ends[nruns++] = i;
	}
	if (nruns <= 1)
		return true;
	if (!(tmp = malloc(v->len * sizeof(*tmp))))
		return false;
	for (size_t r = 1; r < nruns; r++)
		merge(v->items, ends[r - 1], ends[r], tmp);
	free(tmp);
	return true;
}

/* A tag with its first 8 bytes as a big-endian number, NUL-padded: comparing two keys
 * compares those bytes as strcmp does (unsigned, a shorter string first). */
struct keyed {
	uint64_t key;
	const char *s;
};

static uint64_t prefix_key(const char *s)
{
	uint64_t k = 0;
	int i = 0;

	for (; i < 8 && s[i]; i++)
		k = k << 8 | (unsigned char)s[i];
	return i ? k << (8 * (8 - i)) : 0; /* a shift by 64 is undefined */
}

/* strcmp's sign for two keyed tags. Equal keys with a NUL among their 8 bytes (the low byte
 * is 0) are the same string; otherwise the rest decides. */
static int keyed_cmp(const struct keyed *a, const struct keyed *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->key & 0xff) ? strcmp(a->s + 8, b->s + 8) : 0;
}

/* Sorts k[0..n) through tmp (n entries): top-down merge sort, insertion sort below 16. */
static void keyed_sort(struct keyed *k, size_t n, struct keyed *tmp)
{
	size_t mid = n / 2, i = 0, j = mid, o = 0;

	if (n < 16) {
		for (size_t a = 1; a < n; a++) {
			struct keyed x = k[a];
			size_t b = a;

			for (; b > 0 && keyed_cmp(&k[b - 1], &x) > 0; b--)
				k[b] = k[b - 1];
			k[b] = x;
		}
		return;
	}
	keyed_sort(k, mid, tmp);
	keyed_sort(k + mid, n - mid, tmp);
	if (keyed_cmp(&k[mid - 1], &k[mid]) <= 0)
		return; /* already in order */
	while (i < mid && j < n)
		tmp[o++] = keyed_cmp(&k[i], &k[j]) <= 0 ? k[i++] : k[j++];
	while (i < mid)
		tmp[o++] = k[i++];
	memcpy(k, tmp, o * sizeof(*k));
}

/* Listings of at most this many tags are sorted by prefix key (32 bytes a tag, 128 KiB at
 * most, on top of the listing); larger ones by qsort on the pointers (8 bytes a tag), so
 * the peak of a 100k-tag listing stays what registry_max_bytes assumes. */
#define SORT_KEYED_MAX 4096

/* Sorts v by prefix key: most comparisons are one of two integers, where qsort's strcmp
 * through a function pointer was 9% of a steady pass at 2,000 policies. */
static bool sort_keyed(struct strvec *v)
{
	struct keyed *k;

	if (v->len > SORT_KEYED_MAX || !(k = malloc(2 * v->len * sizeof(*k))))
		return false;
	for (size_t i = 0; i < v->len; i++)
		k[i] = (struct keyed){prefix_key(v->items[i]), v->items[i]};
	keyed_sort(k, v->len, k + v->len);
	for (size_t i = 0; i < v->len; i++)
		v->items[i] = (char *)k[i].s;
	free(k);
	return true;
}

void taglist_sort_unique(struct strvec *v)
{
	size_t out = 0;

	if (!sort_runs(v) && !sort_keyed(v))
		qsort(v->items, v->len, sizeof(*v->items), compare_tags);
	for (size_t i = 0; i < v->len; i++)
		if (!out || strcmp(v->items[out - 1], v->items[i]) != 0)
			v->items[out++] = v->items[i];
	v->len = out;
	if (v->items)
		v->items[out] = NULL;
}

/* Appends a pointer the vector does not own (the arena does). */
static int push_borrowed(struct strvec *v, char *s)
{
	if (v->len + 2 > v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		char **p = realloc(v->items, cap * sizeof(*p));

		if (!p)
			return IG_EFAIL;
		v->items = p;
		v->cap = cap;
	}
	v->items[v->len++] = s;
	v->items[v->len] = NULL;
	return 0;
}

static int store(struct taglist *t, const unsigned char *s, size_t n)
{
	char *p;

	if (!t->arena)
		return strvec_pushn(t->tags, (const char *)s, n);
	if (!(p = arena_copy(t->arena, s, n)))
		return IG_EFAIL;
	return push_borrowed(t->tags, p);
}

static int push_tag(struct taglist *t, const unsigned char *s, size_t n)
{
	t->page_entries++;
	if (++t->entries > t->lim.max_tags)
		return fail(t, IG_ETOOBIG, "has more entries than the cap");
	if (n > t->lim.max_tag_len || !imageref_is_valid_tag((const char *)s, n)) {
		t->bad++;
		return 1;
	}
	if (store(t, s, n) < 0)
		return fail(t, IG_EFAIL, "does not fit in memory");
	return 1;
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
	struct taglist *t = ctx;

	if (t->in_tags && t->depth == 2)
		return push_tag(t, s, n);
	if (t->depth == 0)
		return fail(t, IG_EINVALID, "is not a JSON object");
	if (t->depth == 1 && t->key == KEY_TAGS)
		return fail(t, IG_EINVALID, "has no \"tags\" array");
	if (t->depth == 1 && t->key == KEY_NAME && !is_repository_name(s, n))
		return fail(t, IG_EINVALID, "has a \"name\" that is not a repository name");
	return 1;
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t n)
{
	struct taglist *t = ctx;

	if (t->depth != 1)
		return 1;
	t->key = KEY_OTHER;
	if (n == 4 && memcmp(k, "tags", 4) == 0) {
		if (t->seen_tags)
			return fail(t, IG_EINVALID, "has \"tags\" twice");
		t->key = KEY_TAGS;
	} else if (n == 4 && memcmp(k, "name", 4) == 0) {
		if (t->seen_name)
			return fail(t, IG_EINVALID, "has \"name\" twice");
		t->seen_name = true;
		t->key = KEY_NAME;
	}
	return 1;
}

/* Opens a container; root says whether it may be the root object or the `tags` array. */
static int open_container(struct taglist *t, bool is_array)
{
	if (t->depth >= TAGLIST_MAX_DEPTH)
		return fail(t, IG_EINVALID, "is nested too deeply");
	if (t->depth == 0 && is_array)
		return fail(t, IG_EINVALID, "is not a JSON object");
	if (t->in_tags && t->depth == 2)
		return fail(t, IG_EINVALID, "has a non-string entry");
	if (t->depth == 1 && t->key == KEY_TAGS) {
		if (!is_array)
			return fail(t, IG_EINVALID, "has no \"tags\" array");
		t->in_tags = true;
		t->seen_tags = true;
	}
	if (t->depth == 1 && t->key == KEY_NAME)
		return fail(t, IG_EINVALID, "has a \"name\" that is not a string");
	t->depth++;
	return 1;
}

static int close_container(struct taglist *t)
{
	t->depth--;
	if (t->depth == 1)
		t->in_tags = false;
	return 1;
}

static int cb_start_map(void *ctx)
{
	return open_container(ctx, false);
}

static int cb_start_array(void *ctx)
{
	return open_container(ctx, true);
}

static int cb_end(void *ctx)
{
	return close_container(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_boolean,
    .yajl_number = cb_number, /* every number as text: none is ever out of range */
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_map_key,
    .yajl_end_map = cb_end,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end,
};

int taglist_new(struct taglist **out, struct strvec *tags, const char *name,
                const struct taglist_limits *limits, struct error *err)
{
	struct taglist *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t || !(t->name = strdup(name))) {
		free(t);
		return error_set(err, IG_EFAIL, "registry '%s': out of memory", name);
	}
	t->tags = tags;
	if (limits)
		t->lim = *limits;
	if (!t->lim.max_tag_len)
		t->lim.max_tag_len = TAGLIST_TAG_MAX;
	if (!t->lim.max_tags)
		t->lim.max_tags = TAGLIST_MAX_TAGS;
	t->mark = tags->len;
	*out = t;
	return 0;
}

void taglist_free(struct taglist *t)
{
	if (!t)
		return;
	if (t->h)
		yajl_free(t->h);
	free(t->name);
	free(t);
}

void taglist_set_arena(struct taglist *t, struct tagarena *a)
{
	t->arena = a;
	t->arena_blocks = a->len;
	t->arena_used = a->used;
}

/* Rewinds the arena to where the page began. */
static void arena_rewind(struct taglist *t)
{
	struct tagarena *a = t->arena;

	while (a->len > t->arena_blocks && a->len > 0)
		free(a->blocks[--a->len]);
	a->used = a->len ? t->arena_used : 0;
}

/* Drops the tags the current page had appended. */
static void forget_page(struct taglist *t)
{
	if (t->arena) {
		t->tags->len = t->mark;
		arena_rewind(t);
	}
	while (t->tags->len > t->mark)
		free(t->tags->items[--t->tags->len]);
	if (t->tags->items)
		t->tags->items[t->tags->len] = NULL;
	t->entries -= t->page_entries;
}

int taglist_page_begin(struct taglist *t, struct error *err)
{
	forget_page(t);
	if (t->h)
		yajl_free(t->h);
	t->page_entries = t->bad = 0;
	t->depth = 0;
	t->key = KEY_OTHER;
	t->in_tags = t->seen_tags = t->seen_name = false;
	t->code = 0;
	error_clear(&t->cb_err);
	/* yajl's defaults are strict JSON: no comments, UTF-8 checked, one value, no trailing
	 * garbage. */
	if (!(t->h = yajl_alloc(&callbacks, NULL, t)))
		return error_set(err, IG_EFAIL, "registry '%s': out of memory", t->name);
	return 0;
}

/* The parse status as our code and message. */
static int verdict(struct taglist *t, yajl_status st, const char *data, size_t len,
                   struct error *err)
{
	unsigned char *why;
	char line[160];
	size_t i = 0;

	if (st == yajl_status_ok)
		return 0;
	if (st == yajl_status_client_canceled && t->code) {
		error_set(err, t->code, "%s", t->cb_err.msg);
		return t->code;
	}
	if (t->code == 0)
		t->code = IG_EINVALID;
	why = yajl_get_error(t->h, 0, (const unsigned char *)data, len);
	for (; why && why[i] && i + 1 < sizeof(line); i++)
		line[i] = (char)why[i];
	line[i] = '\0';
	yajl_free_error(t->h, why);
	error_flatten(line);
	while (i > 0 && line[i - 1] == ' ')
		line[--i] = '\0';
	error_set(&t->cb_err, IG_EINVALID, "registry '%s': tag list is not valid JSON (%s)",
	          t->name, line[0] ? line : "parse error");
	return error_set(err, IG_EINVALID, "%s", t->cb_err.msg);
}

int taglist_push(struct taglist *t, const char *data, size_t len, struct error *err)
{
	if (t->code)
		return error_set(err, t->code, "%s", t->cb_err.msg);
	return verdict(t, yajl_parse(t->h, (const unsigned char *)data, len), data, len, err);
}

int taglist_page_end(struct taglist *t, struct error *err)
{
	int error;

	if (t->code)
		return error_set(err, t->code, "%s", t->cb_err.msg);
	if ((error = verdict(t, yajl_complete_parse(t->h), NULL, 0, err)) < 0)
		return error;
	if (!t->seen_tags) {
		t->code = IG_EINVALID;
		return error_set(err, IG_EINVALID, "registry '%s': tag list has no \"tags\" array",
		                 t->name);
	}
	if (t->bad)
		log_warn("registry.tags",
		         "registry '%s': ignored %zu entries that are not valid tags", t->name,
		         t->bad);
	t->mark = t->tags->len; /* the page is kept: a later page_begin must not drop it */
	if (t->arena) {
		t->arena_blocks = t->arena->len;
		t->arena_used = t->arena->used;
	}
	t->page_entries = 0;
	return 0;
}

int taglist_parse(struct strvec *tags, const char *name, const char *data, size_t len,
                  struct error *err)
{
	struct taglist *t = NULL;
	int error;

	if ((error = taglist_new(&t, tags, name, NULL, err)) < 0)
		return error;
	if ((error = taglist_page_begin(t, err)) == 0 &&
	    (error = taglist_push(t, data, len, err)) == 0)
		error = taglist_page_end(t, err);
	if (error < 0)
		forget_page(t);
	taglist_free(t);
	return error;
}
