/* Unit tests for reading tag lists: CR, blank lines, duplicates, and lines that must be skipped
 * (too long, NUL bytes, invalid UTF-8) without a crash. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
