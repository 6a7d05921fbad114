/* Unit tests for the streaming tag-list reader: a table of page bodies (each fed whole and in
 * every piece size, as curl may deliver it), the caps, and a page delivered twice (a retry)
 * that must not leave its first copy behind. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/taglist.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define NAME "r.example/a/b"

static const struct {
	const char *body;
	int rc;
	const char *tags;   /* the tags kept, joined by ",", in page order */
	const char *needle; /* in the message, with rc < 0 */
} pages[] = {
    {"{\"name\":\"a/b\",\"tags\":[\"1.0.0\",\"latest\"]}", 0, "1.0.0,latest", NULL},
    {"{\"name\":\"a/b\",\"tags\":null}", 0, "", NULL},
    {"{\"name\":\"a/b\",\"tags\":[]}", 0, "", NULL},
    {" \n{\"tags\":[\"v1\\u002e0\"],\"name\":\"a/b\"}\n", 0, "v1.0", NULL},
    /* invalid tags are skipped: leading dash, space, empty, NUL, non-ASCII, 129 chars */
    {"{\"name\":\"a/b\",\"tags\":[\"ok\",\"-bad\",\"sp ace\",\"\",\"n\\u0000l\",\"caf\\u00e9\","
     "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"]}",
     0, "ok", NULL},
    /* other members may hold anything, nested; numbers of any size */
    {"{\"name\":\"a/b\",\"x\":{\"tags\":[1,{\"tags\":2}]},\"n\":1e400,\"m\":123456789012345678901"
     "234567890,\"tags\":[\"a\"],\"y\":[true,false,null]}",
     0, "a", NULL},
    {"{\"name\":\"a/b\",\"tags\":[\"ok\",1]}", IG_EINVALID, NULL, "non-string entry"},
    {"{\"name\":\"a/b\",\"tags\":[\"ok\",[\"x\"]]}", IG_EINVALID, NULL, "non-string entry"},
    {"{\"name\":\"a/b\",\"tags\":[null]}", IG_EINVALID, NULL, "non-string entry"},
    {"{\"name\":\"a/b\"}", IG_EINVALID, NULL, "no \"tags\" array"},
    {"{\"name\":\"a/b\",\"tags\":\"1.0\"}", IG_EINVALID, NULL, "no \"tags\" array"},
    {"{\"name\":\"a/b\",\"tags\":{\"a\":\"b\"}}", IG_EINVALID, NULL, "no \"tags\" array"},
    {"{\"tags\":[\"1\"],\"tags\":[\"2\"]}", IG_EINVALID, NULL, "\"tags\" twice"},
    {"{\"name\":7,\"tags\":[]}", IG_EINVALID, NULL, "\"name\" that is not a string"},
    {"{\"name\":[\"a\"],\"tags\":[]}", IG_EINVALID, NULL, "\"name\" that is not a string"},
    {"{\"name\":\"has space\",\"tags\":[]}", IG_EINVALID, NULL, "not a repository name"},
    {"{\"name\":\"\",\"tags\":[]}", IG_EINVALID, NULL, "not a repository name"},
    {"[\"1.0\"]", IG_EINVALID, NULL, "not a JSON object"},
    {"\"tags\"", IG_EINVALID, NULL, "not a JSON object"},
    {"{\"tags\":[\"1\"", IG_EINVALID, NULL, "not valid JSON"},
    {"", IG_EINVALID, NULL, "not valid JSON"},
    {"<html>502</html>", IG_EINVALID, NULL, "not valid JSON"},
    {"{\"tags\":[\"1\"]} {\"tags\":[]}", IG_EINVALID, NULL, "not valid JSON"},
    {"{\"tags\":[\"1\"],}", IG_EINVALID, NULL, "not valid JSON"},
    {"{\"tags\":[\"1\"]} // c", IG_EINVALID, NULL, "not valid JSON"},
    {"{\"tags\":[\"\xff\"]}", IG_EINVALID, NULL, "not valid JSON"},
    {"{'tags':[]}", IG_EINVALID, NULL, "not valid JSON"},
};

static void joined(char *out, size_t n, const struct strvec *v)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < v->len; i++)
		used += (size_t)snprintf(out + used, n - used, "%s%s", i ? "," : "", v->items[i]);
}

static void check_result(int rc, const struct strvec *tags, const struct error *err, int i,
                         size_t piece)
{
	char got[512];

	ck_assert_msg(rc == pages[i].rc, "case %d piece %zu: rc %d (%s)", i, piece, rc, err->msg);
	if (rc == 0) {
		joined(got, sizeof(got), tags);
		ck_assert_msg(strcmp(got, pages[i].tags) == 0, "case %d piece %zu: '%s'", i, piece,
		              got);
		return;
	}
	ck_assert_uint_eq(tags->len, 0);
	ck_assert_msg(strstr(err->msg, "'" NAME "'") && strstr(err->msg, pages[i].needle),
	              "case %d piece %zu: %s", i, piece, err->msg);
	ck_assert_msg(!strchr(err->msg, '\n'), "case %d: two lines", i);
}

START_TEST(whole_pages)
{
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	int rc = taglist_parse(&tags, NAME, pages[_i].body, strlen(pages[_i].body), &err);

	check_result(rc, &tags, &err, _i, 0);
	strvec_release(&tags);
}
END_TEST

/* The same bodies in pieces of every size: the reader must not care where curl cuts. */
START_TEST(pages_in_pieces)
{
	const char *body = pages[_i].body;
	size_t len = strlen(body);

	for (size_t piece = 1; piece <= len + 1; piece++) {
		struct strvec tags = STRVEC_INIT;
		struct error err = ERROR_INIT;
		struct taglist *t = NULL;
		int rc;

		ck_assert_int_eq(taglist_new(&t, &tags, NAME, NULL, &err), 0);
		rc = taglist_page_begin(t, &err);
		for (size_t off = 0; rc == 0 && off < len; off += piece)
			rc = taglist_push(t, body + off, piece < len - off ? piece : len - off,
			                  &err);
		if (rc == 0)
			rc = taglist_page_end(t, &err);
		if (rc < 0) /* the dead page's tags go with the next begin */
			ck_assert_int_eq(taglist_page_begin(t, &err), 0);
		check_result(rc, &tags, &err, _i, piece);
		taglist_free(t);
		strvec_release(&tags);
	}
}
END_TEST

/* A page delivered again (retry after a cut connection) replaces its first, partial copy;
 * pages already ended stay. */
START_TEST(page_again_after_retry)
{
	static const char p1[] = "{\"tags\":[\"a\",\"b\"]}";
	static const char p2[] = "{\"tags\":[\"c\",\"d\"]}";
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	struct taglist *t = NULL;
	char got[64];

	ck_assert_int_eq(taglist_new(&t, &tags, NAME, NULL, &err), 0);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, p1, strlen(p1), &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, p2, 12, &err), 0); /* cut after "c" */
	ck_assert_uint_eq(tags.len, 3);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_uint_eq(tags.len, 2);
	ck_assert_int_eq(taglist_push(t, p2, strlen(p2), &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	joined(got, sizeof(got), &tags);
	ck_assert_str_eq(got, "a,b,c,d");
	taglist_free(t);
	strvec_release(&tags);
}
END_TEST

/* With an arena the strings are packed; a page delivered again rewinds the arena too, also
 * across a block boundary (the second page is larger than a block). */
START_TEST(arena_pages)
{
	static const char p1[] = "{\"tags\":[\"a\",\"b\"]}";
	struct tagarena arena = TAGARENA_INIT;
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	struct taglist *t = NULL;
	struct buf big = BUF_INIT;
	size_t n = 80000; /* 80000 tags of 16 bytes: more than one block */
	char want[32];

	ck_assert_int_eq(buf_puts(&big, "{\"tags\":["), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(buf_printf(&big, "%s\"tag-%010zu\"", i ? "," : "", i), 0);
	ck_assert_int_eq(buf_puts(&big, "]}"), 0);
	ck_assert_int_eq(taglist_new(&t, &tags, NAME, NULL, &err), 0);
	taglist_set_arena(t, &arena);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, p1, strlen(p1), &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	ck_assert_uint_eq(arena.len, 1);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, big.data, big.len - 10, &err), 0); /* cut short */
	ck_assert_uint_gt(arena.len, 1);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0); /* the retry */
	ck_assert_uint_eq(tags.len, 2);
	ck_assert_uint_eq(arena.len, 1);
	ck_assert_uint_eq(arena.used, 4);
	ck_assert_int_eq(taglist_push(t, big.data, big.len, &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	ck_assert_uint_eq(tags.len, n + 2);
	ck_assert_str_eq(tags.items[0], "a");
	ck_assert_str_eq(tags.items[1], "b");
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "tag-%010zu", i);
		ck_assert_str_eq(tags.items[i + 2], want);
	}
	taglist_free(t);
	free(tags.items);
	tagarena_release(&arena);
	buf_release(&big);
}
END_TEST

/* Block sizes double from TAGARENA_FIRST; compaction packs a small listing into one block of
 * its exact size (same strings, same order), and leaves a listing over the cap alone. */
START_TEST(arena_compact)
{
	static const struct {
		size_t tags, max;
		bool packed;
	} cases[] = {{3, 1024, true}, {400, 65536, true}, {400, 100, false}, {0, 1024, false}};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct tagarena arena = TAGARENA_INIT;
		struct strvec tags = STRVEC_INIT;
		struct error err = ERROR_INIT;
		struct taglist *t = NULL;
		struct buf page = BUF_INIT;
		size_t total = 0, blocks;
		char want[32];

		ck_assert_int_eq(buf_puts(&page, "{\"tags\":["), 0);
		for (size_t i = 0; i < cases[c].tags; i++)
			ck_assert_int_eq(buf_printf(&page, "%s\"v%05zu\"", i ? "," : "", i), 0);
		ck_assert_int_eq(buf_puts(&page, "]}"), 0);
		ck_assert_int_eq(taglist_new(&t, &tags, NAME, NULL, &err), 0);
		taglist_set_arena(t, &arena);
		ck_assert_int_eq(taglist_page_begin(t, &err), 0);
		ck_assert_int_eq(taglist_push(t, page.data, page.len, &err), 0);
		ck_assert_int_eq(taglist_page_end(t, &err), 0);
		blocks = arena.len;
		if (cases[c].tags == 400)
			ck_assert_uint_gt(blocks, 1); /* 2800 bytes: past the first, small block */
		for (size_t i = 0; i < tags.len; i++)
			total += strlen(tags.items[i]) + 1;
		ck_assert_int_eq(tagarena_compact(&arena, &tags, cases[c].max), 0);
		ck_assert_uint_eq(arena.len, cases[c].packed ? 1 : blocks);
		if (cases[c].packed)
			ck_assert_uint_eq(arena.used, total);
		ck_assert_uint_eq(tags.len, cases[c].tags);
		for (size_t i = 0; i < cases[c].tags; i++) {
			snprintf(want, sizeof(want), "v%05zu", i);
			ck_assert_str_eq(tags.items[i], want);
			if (i && cases[c].packed) /* one after another in the one block */
				ck_assert_ptr_eq(tags.items[i], tags.items[i - 1] + 7);
		}
		/* packed: the pointers can be rebuilt from the block alone */
		ck_assert(tagarena_is_packed(&arena, &tags) == cases[c].packed);
		if (cases[c].packed) {
			const char **again = calloc(tags.len + 1, sizeof(*again));

			ck_assert_ptr_nonnull(again);
			tagarena_unpack(again, tagarena_first(&arena), tags.len);
			for (size_t i = 0; i < tags.len; i++)
				ck_assert_ptr_eq(again[i], tags.items[i]);
			ck_assert_ptr_null(again[tags.len]);
			free(again);
		}
		taglist_free(t);
		free(tags.items);
		tagarena_release(&arena);
		buf_release(&page);
	}
}
END_TEST

/* Only a compacted arena is packed, and not once the vector is reordered: its pointers could
 * not be rebuilt from the block. */
START_TEST(arena_order)
{
	static const char p[] = "{\"tags\":[\"b\",\"a\"]}";
	struct tagarena arena = TAGARENA_INIT;
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	struct taglist *t = NULL;
	char *swap;

	ck_assert_int_eq(taglist_new(&t, &tags, NAME, NULL, &err), 0);
	taglist_set_arena(t, &arena);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, p, strlen(p), &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	ck_assert_uint_eq(arena.len, 1);
	ck_assert(!tagarena_is_packed(&arena, &tags)); /* one block, but not compacted */
	ck_assert_int_eq(tagarena_compact(&arena, &tags, 1024), 0);
	ck_assert(tagarena_is_packed(&arena, &tags));
	swap = tags.items[0];
	tags.items[0] = tags.items[1];
	tags.items[1] = swap;
	ck_assert(!tagarena_is_packed(&arena, &tags));
	ck_assert_str_eq(tagarena_first(&arena), "b");
	taglist_free(t);
	free(tags.items);
	tagarena_release(&arena);
	ck_assert_ptr_null(tagarena_first(&arena));
}
END_TEST

/* The entry cap counts every entry of the listing, across pages, valid or not; the length cap
 * skips what is longer. */
/* strcmp's order, as qsort gives it, folded. */
static int by_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t reference_sort(char **items, size_t n)
{
	size_t out = 0;

	qsort(items, n, sizeof(*items), by_strcmp);
	for (size_t i = 0; i < n; i++)
		if (!out || strcmp(items[out - 1], items[i]) != 0)
			items[out++] = items[i];
	return out;
}

/* A tag-like string from a small alphabet (many duplicates), 0-20 bytes after one of a few
 * prefixes of 0, 7, 8 and 9 bytes (so that first 8 bytes often tie), bytes >= 0x80 now and
 * then (strcmp compares unsigned). At most 29 bytes. */
static void random_tag(char *out, unsigned *seed)
{
	static const char alpha[] = "01.9a-_Zz\x80\xff";
	static const char *const prefixes[] = {"", "1.20.30", "1.20.300", "v1.0.0-rc"};
	const char *prefix = prefixes[rand_r(seed) % 4];
	size_t p = strlen(prefix), len = (size_t)(rand_r(seed) % 21);

	memcpy(out, prefix, p);

	for (size_t i = 0; i < len; i++)
		out[p + i] = alpha[rand_r(seed) % (sizeof(alpha) - 1)];
	out[p + len] = '\0';
}

/* Every way a listing is sorted (runs, prefix keys, qsort past SORT_KEYED_MAX) gives qsort's
 * order and folds the same duplicates: random lists of every size class, sorted, reversed,
 * two runs, and a 9-run list that leaves the run merge. */
START_TEST(sort_unique_matches_qsort)
{
	static const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 100, 1000, 4096, 4097, 9000};
	unsigned seed = 7;

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
		for (int shape = 0; shape < 4; shape++) {
			size_t n = sizes[z], want;
			char *buf = malloc(n * 32 + 1), **a = malloc((n + 1) * sizeof(*a)),
			     **b = malloc((n + 1) * sizeof(*b));
			struct strvec v = {a, n, n + 1};

			ck_assert_ptr_nonnull(buf);
			for (size_t i = 0; i < n; i++) {
				a[i] = buf + i * 32;
				random_tag(a[i], &seed);
			}
			if (shape == 1)
				qsort(a, n, sizeof(*a), by_strcmp); /* sorted */
			if (shape == 2) {                           /* reversed, then two runs */
				qsort(a, n, sizeof(*a), by_strcmp);
				for (size_t i = 0; i < n / 2; i++) {
					char *t = a[i];

					a[i] = a[n - 1 - i];
					a[n - 1 - i] = t;
				}
				qsort(a, n / 2, sizeof(*a), by_strcmp);
			}
			a[n] = NULL;
			memcpy(b, a, (n + 1) * sizeof(*a));
			want = reference_sort(b, n);
			taglist_sort_unique(&v);
			ck_assert_uint_eq(v.len, want);
			for (size_t i = 0; i < want; i++)
				ck_assert_msg(strcmp(v.items[i], b[i]) == 0,
				              "size %zu shape %d item %zu: '%s', want '%s'", n,
				              shape, i, v.items[i], b[i]);
			if (n)
				ck_assert_ptr_null(v.items[v.len]);
			free(a);
			free(b);
			free(buf);
		}
}
END_TEST

START_TEST(caps)
{
	static const char p[] = "{\"tags\":[\"a\",\"-bad\",\"abcdef\"]}";
	struct taglist_limits lim = {4, 5};
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	struct taglist *t = NULL;

	ck_assert_int_eq(taglist_new(&t, &tags, NAME, &lim, &err), 0);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, p, strlen(p), &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	ck_assert_uint_eq(tags.len, 1); /* "abcdef" is past max_tag_len 4 */
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_int_eq(taglist_push(t, p, strlen(p), &err), IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "'" NAME "'") && strstr(err.msg, "entries"), "%s", err.msg);
	/* dead until the next begin, which drops the page and its entries from the count */
	ck_assert_int_eq(taglist_page_end(t, &err), IG_ETOOBIG);
	ck_assert_int_eq(taglist_page_begin(t, &err), 0);
	ck_assert_uint_eq(tags.len, 1);
	ck_assert_int_eq(taglist_push(t, "{\"tags\":[\"x\",\"y\"]}", 18, &err), 0);
	ck_assert_int_eq(taglist_page_end(t, &err), 0);
	ck_assert_uint_eq(tags.len, 3);
	taglist_free(t);
	strvec_release(&tags);
}
END_TEST

/* Nesting is bounded (yajl's own stack would grow with it): TAGLIST_MAX_DEPTH containers,
 * the root object counted, are read; one more is refused. */
START_TEST(depth_cap)
{
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	char body[512];
	size_t n = 0;
	int inner = TAGLIST_MAX_DEPTH - 1 + _i; /* arrays inside the root object */

	n += (size_t)snprintf(body + n, sizeof(body) - n, "{\"x\":");
	for (int i = 0; i < inner; i++)
		body[n++] = '[';
	for (int i = 0; i < inner; i++)
		body[n++] = ']';
	n += (size_t)snprintf(body + n, sizeof(body) - n, ",\"tags\":[\"a\"]}");
	if (_i == 0) {
		ck_assert_msg(taglist_parse(&tags, NAME, body, n, &err) == 0, "%s", err.msg);
		ck_assert_uint_eq(tags.len, 1);
	} else {
		ck_assert_int_eq(taglist_parse(&tags, NAME, body, n, &err), IG_EINVALID);
		ck_assert_msg(strstr(err.msg, "nested too deeply"), "%s", err.msg);
	}
	strvec_release(&tags);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("taglist");
	TCase *tc = tcase_create("taglist");
	size_t n = sizeof(pages) / sizeof(pages[0]);
	SRunner *sr;
	int failed;

	log_configure(LOG_ERROR, LOG_TEXT);
	tcase_add_loop_test(tc, whole_pages, 0, (int)n);
	tcase_add_loop_test(tc, pages_in_pieces, 0, (int)n);
	tcase_add_test(tc, page_again_after_retry);
	tcase_add_test(tc, arena_pages);
	tcase_add_test(tc, arena_compact);
	tcase_add_test(tc, arena_order);
	tcase_add_test(tc, sort_unique_matches_qsort);
	tcase_add_test(tc, caps);
	tcase_add_loop_test(tc, depth_cap, 0, 2); /* at the limit, one past it */
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
