/* Unit tests for reading tag lists: CR, blank lines, duplicates, and lines that must be skipped
 * (too long, NUL bytes, invalid UTF-8) without a crash. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imageguard/util/error.h"
#include "imageguard/policy/taglines.h"

static const struct {
	const char *in;
	size_t len;       /* 0: strlen(in) */
	const char *tags; /* the expected tags joined by '|' */
	size_t unreadable, first_bad;
} cases[] = {
    {"", 0, "", 0, 0},
    {"\n\n\r\n  \n\t\n", 0, "", 0, 0},
    {"v1\nv2\nv1\n", 0, "v1|v2", 0, 0},
    {"v1\r\nv2\r\nv2\n", 0, "v1|v2", 0, 0},
    {"v1\nv2", 0, "v1|v2", 0, 0},
    {"a\nb\0"
     "c\nd\n",
     8, "a|d", 1, 2},
    {"a\n\xff\xfe\nb\n\xc3\x28\n", 0, "a|b", 2, 2},
    {"ok\n\xed\xa0\x80\n\xc0\xaf\n\xf4\x90\x80\x80\ncaf\xc3\xa9\n", 0, "ok|caf\xc3\xa9", 3, 2},
    {"a\rb\n", 0, "a\rb", 0, 0}, /* only a final CR is a line ending */
    {" v1 \n", 0, " v1 ", 0, 0},
};

static void check_tags(const struct taglines *t, const char *want)
{
	char joined[256] = "";
	size_t used = 0;

	for (size_t k = 0; k < t->n; k++) {
		size_t n = strlen(t->tags[k]);

		ck_assert(used + n + 2 < sizeof(joined));
		if (k)
			joined[used++] = '|';
		memcpy(joined + used, t->tags[k], n);
		used += n;
		joined[used] = '\0';
	}
	ck_assert_str_eq(joined, want);
}

START_TEST(parse)
{
	size_t len = cases[_i].len ? cases[_i].len : strlen(cases[_i].in);
	char *data = malloc(len + 1);
	struct taglines t = TAGLINES_INIT;
	struct error err = ERROR_INIT;

	ck_assert_ptr_nonnull(data);
	memcpy(data, cases[_i].in, len);
	ck_assert_int_eq(taglines_parse(&t, data, len, &err), 0);
	check_tags(&t, cases[_i].tags);
	ck_assert_uint_eq(t.unreadable, cases[_i].unreadable);
	ck_assert_uint_eq(t.first_bad, cases[_i].first_bad);
	taglines_release(&t);
}
END_TEST

/* A 1 MB line among good ones is skipped and counted; many duplicates fold; via a real pipe. */
START_TEST(read_fd)
{
	size_t big = 1 << 20, total = big + 64;
	char *in = malloc(total);
	int fds[2];
	struct taglines t = TAGLINES_INIT;
	struct error err = ERROR_INIT;
	size_t off = 0;
	pid_t pid;

	ck_assert_ptr_nonnull(in);
	memcpy(in + off, "first\n", 6);
	off += 6;
	memset(in + off, 'x', big);
	off += big;
	memcpy(in + off, "\nlast\nfirst\n", 12);
	off += 12;
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		for (size_t w = 0; w < off;) {
			ssize_t r = write(fds[1], in + w, off - w);

			if (r <= 0)
				_exit(1);
			w += (size_t)r;
		}
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(taglines_read_fd(&t, fds[0], TAGLINES_INPUT_MAX, &err), 0);
	close(fds[0]);
	check_tags(&t, "first|last");
	ck_assert_uint_eq(t.unreadable, 1);
	ck_assert_uint_eq(t.first_bad, 2);
	ck_assert_str_eq(t.first_bad_why, "longer than 4096 bytes");
	taglines_release(&t);
	free(in);
}
END_TEST

START_TEST(too_big)
{
	int fds[2];
	struct taglines t = TAGLINES_INIT;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], "v1\nv2\nv3\n", 9), 9);
	close(fds[1]);
	ck_assert_int_eq(taglines_read_fd(&t, fds[0], 5, &err), IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "exceeds 5 bytes"), "%s", err.msg);
	close(fds[0]);
	taglines_release(&t);
}
END_TEST

/* Many tags: the hash set grows and folds exactly. */
START_TEST(many)
{
	size_t n = 300000, len = 0;
	char *data = malloc(n * 16 + 1);
	struct taglines t = TAGLINES_INIT;

	ck_assert_ptr_nonnull(data);
	for (size_t k = 0; k < n; k++) {
		int w = snprintf(data + len, 17, "t%zu\n", k % 100000);

		len += (size_t)w;
	}
	ck_assert_int_eq(taglines_parse(&t, data, len, NULL), 0);
	ck_assert_uint_eq(t.n, 100000);
	ck_assert_str_eq(t.tags[0], "t0");
	ck_assert_str_eq(t.tags[99999], "t99999");
	taglines_release(&t);
}
END_TEST

/* Collects streamed tags joined by '|', duplicates and all. */
struct collected {
	char joined[65536];
	size_t used, batches, fail_at;
};

static int collect(void *ctx, const char *const *tags, size_t n, struct error *err)
{
	struct collected *c = ctx;

	ck_assert_uint_gt(n, 0);
	ck_assert_uint_le(n, TAGLINES_BATCH);
	if (++c->batches == c->fail_at)
		return error_set(err, IG_EFAIL, "stop at batch %zu", c->batches);
	for (size_t k = 0; k < n; k++) {
		size_t len = strlen(tags[k]);

		ck_assert(c->used + len + 2 < sizeof(c->joined));
		if (c->used)
			c->joined[c->used++] = '|';
		memcpy(c->joined + c->used, tags[k], len);
		c->used += len;
		c->joined[c->used] = '\0';
	}
	return 0;
}

/* Streams len bytes of in through a pipe (written by a child) in blocks of `block` bytes. */
static int stream_bytes(struct collected *c, struct taglines_stats *st, const char *in, size_t len,
                        size_t block, size_t max, struct error *err)
{
	int fds[2], rc, status;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		for (size_t w = 0; w < len;) {
			ssize_t r = write(fds[1], in + w, len - w);

			if (r <= 0)
				_exit(0); /* the reader stopped early */
			w += (size_t)r;
		}
		_exit(0);
	}
	close(fds[1]);
	rc = taglines_stream_fd(st, fds[0], max, block, collect, c, err);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return rc;
}

/* The stream splits as taglines_parse does, but keeps duplicates: every case, with block sizes
 * that cut lines, CRs and UTF-8 sequences anywhere. */
START_TEST(stream_cases)
{
	static const char *unfolded[] = {"",    "",    "v1|v2|v1",       "v1|v2|v2", "v1|v2",
	                                 "a|d", "a|b", "ok|caf\xc3\xa9", "a\rb",     " v1 "};
	size_t len = cases[_i].len ? cases[_i].len : strlen(cases[_i].in);

	ck_assert_uint_eq(sizeof(unfolded) / sizeof(unfolded[0]), sizeof(cases) / sizeof(cases[0]));
	for (size_t block = 1; block <= 9; block++) {
		static struct collected c;
		struct taglines_stats st;
		struct error err = ERROR_INIT;

		memset(&c, 0, sizeof(c));
		ck_assert_int_eq(stream_bytes(&c, &st, cases[_i].in, len, block, 1 << 20, &err), 0);
		ck_assert_str_eq(c.joined, unfolded[_i]);
		ck_assert_uint_eq(st.unreadable, cases[_i].unreadable);
		ck_assert_uint_eq(st.first_bad, cases[_i].first_bad);
	}
}
END_TEST

/* Lines around the 4096-byte limit, whole or cut across blocks: a long one is dropped as it
 * arrives (memory stays at one block) and counted once at its own line number. */
START_TEST(stream_long_lines)
{
	size_t cap = 3 * 16384, len = 0;
	char *in = malloc(cap);

	ck_assert_ptr_nonnull(in);
	len += (size_t)snprintf(in + len, cap - len, "a\n");
	memset(in + len, 'x', 4096); /* exactly the limit, then a CR: kept */
	len += 4096;
	len += (size_t)snprintf(in + len, cap - len, "\r\nb\n");
	memset(in + len, 'y', 4097); /* one over: dropped */
	len += 4097;
	len += (size_t)snprintf(in + len, cap - len, "\nc\n");
	memset(in + len, 'z', 20000); /* far over, and the input's last line */
	len += 20000;
	for (size_t block = 1000; block <= 9000; block += 4000) {
		static struct collected c;
		struct taglines_stats st;
		struct error err = ERROR_INIT;

		memset(&c, 0, sizeof(c));
		ck_assert_int_eq(stream_bytes(&c, &st, in, len, block, 1 << 20, &err), 0);
		ck_assert_uint_eq(c.used, strlen("a|") + 4096 + strlen("|b|c"));
		ck_assert(strncmp(c.joined, "a|xxx", 5) == 0);
		ck_assert_str_eq(c.joined + c.used - 4, "|b|c");
		ck_assert_uint_eq(st.unreadable, 2);
		ck_assert_uint_eq(st.first_bad, 4);
		ck_assert_str_eq(st.first_bad_why, "longer than 4096 bytes");
		ck_assert_uint_eq(st.lines, 6);
	}
	free(in);
}
END_TEST

/* Many lines: batches of at most TAGLINES_BATCH, in order; the callback's error stops the
 * stream; the byte cap holds. */
START_TEST(stream_batches_and_errors)
{
	size_t n = 3 * TAGLINES_BATCH + 5, len = 0;
	char *in = malloc(n * 8 + 1);
	struct collected *c = calloc(1, sizeof(*c));
	struct taglines_stats st;
	struct error err = ERROR_INIT;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(c);
	for (size_t k = 0; k < n; k++)
		len += (size_t)snprintf(in + len, n * 8 + 1 - len, "%zu\n", k % 10);
	c->fail_at = 0;
	ck_assert_int_eq(stream_bytes(c, &st, in, len, 0, 1 << 20, &err), 0);
	ck_assert_uint_ge(c->batches, 4); /* a pipe may hand over less than a block */
	ck_assert_uint_eq(c->used, 2 * n - 1);
	ck_assert(strncmp(c->joined, "0|1|2|3", 7) == 0);
	memset(c, 0, sizeof(*c));
	c->fail_at = 2;
	ck_assert_int_eq(stream_bytes(c, &st, in, len, 0, 1 << 20, &err), IG_EFAIL);
	ck_assert_str_eq(err.msg, "stop at batch 2");
	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(stream_bytes(c, &st, in, len, 4096, 100, &err), IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "exceeds 100 bytes"), "%s", err.msg);
	free(c);
	free(in);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("taglines");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, parse, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, read_fd);
	tcase_add_test(tc, too_big);
	tcase_add_test(tc, many);
	tcase_add_loop_test(tc, stream_cases, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, stream_long_lines);
	tcase_add_test(tc, stream_batches_and_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
