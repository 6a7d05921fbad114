/* log: one line per event. Outside text in a message (a tag, a file name from Git, a reason)
 * cannot forge a second line or drive a terminal in the text format, and a JSON line is never
 * dropped for bytes that are not UTF-8. stderr is captured into a temp file. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/log.h"

/* Runs one log_info with the argument under the format, returns what stderr got. */
static void capture(struct buf *out, enum log_format fmt, const char *arg)
{
	char path[] = "/tmp/ig-log.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(saved, 0);
	fflush(stderr);
	dup2(fd, 2);
	log_configure(LOG_INFO, fmt);
	log_info("test.event", "tag '%s' in 'apps/a.yaml'", arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	ck_assert_int_eq(buf_read_file(out, path), 0);
	unlink(path);
}

static const struct {
	const char *arg, *want_tail; /* the text line after "test.event: " */
} texts[] = {
    {"v1", "tag 'v1' in 'apps/a.yaml'\n"},
    {"v1\n2026-01-01T00:00:00.000Z error reconcile.pass: forged",
     "tag 'v1\\n2026-01-01T00:00:00.000Z error reconcile.pass: forged' in 'apps/a.yaml'\n"},
    {"v1\x1b[2J\r", "tag 'v1\\e[2J\\r' in 'apps/a.yaml'\n"},
    {"a\\nb", "tag 'a\\\\nb' in 'apps/a.yaml'\n"},
    {"v1\xe2\x80\xa8x", "tag 'v1\\u{2028}x' in 'apps/a.yaml'\n"},
};

START_TEST(text_line)
{
	struct buf out = BUF_INIT;
	const char *tail;

	capture(&out, LOG_TEXT, texts[_i].arg);
	ck_assert_ptr_nonnull(out.data);
	ck_assert_ptr_eq(strchr(out.data, '\n'), out.data + out.len - 1); /* one line */
	ck_assert_ptr_null(strchr(out.data, 0x1b));
	tail = strstr(out.data, "test.event: ");
	ck_assert_ptr_nonnull(tail);
	ck_assert_str_eq(tail + strlen("test.event: "), texts[_i].want_tail);
	buf_release(&out);
}
END_TEST

START_TEST(json_line)
{
	struct buf out = BUF_INIT;
	json_t *o;

	capture(&out, LOG_JSON, "v1\n\x1b\xff\xfe");
	ck_assert_ptr_nonnull(out.data);
	ck_assert_ptr_eq(strchr(out.data, '\n'), out.data + out.len - 1);
	o = json_loads(out.data, 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "msg")),
	                 "tag 'v1\n\x1b\\xff\\xfe' in 'apps/a.yaml'");
	json_decref(o);
	buf_release(&out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, text_line, 0, sizeof(texts) / sizeof(texts[0]));
	tcase_add_test(tc, json_line);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
