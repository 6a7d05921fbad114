/* The execution budget of a template (template.h): steps, CPU time, output, regex
 * backtracking, repeat and recursion. Each hostile case runs for seconds or hours, or succeeds,
 * without its limit; with it, it fails with IG_ETOOBIG and the budget it spent. The benign
 * cases show the budget leaves ordinary templates alone. */
#include <check.h>
#include <string.h>

#include "imageguard/template/template.h"
#include "imageguard/template/tval.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static const struct {
	const char *name;
	const char *tmpl;
	int rc;
	const char *out; /* the output, or a fragment of the error */
} cases[] = {
    /* steps: len is O(1), but each call is charged the string it is given (64 KiB+ each) */
    {"steps", "{{$s := repeat 200000 \"x\"}}{{range until 1000}}{{len $s}}{{end}}", IG_ETOOBIG,
     "over budget: more than 2000000 steps"},
    /* steps: uniq compares every pair (1.25e9 comparisons) */
    {"uniq", "{{len (uniq (until 50000))}}", IG_ETOOBIG, "more than 2000000 steps"},
    /* steps: a naive substring search over 128 KiB x 128 KiB */
    {"contains",
     "{{$a := repeat 131072 \"a\"}}{{contains (printf \"%sb\" (repeat 65536 \"a\")) "
     "(printf \"%s%s\" $a $a)}}",
     IG_ETOOBIG, "more than 2000000 steps"},
    /* CPU: each match backtracks ~10^5 times (under the match limit) for few steps */
    {"cpu", "{{range until 5000}}{{regexMatch \"^(a|aa)*$\" \"aaaaaaaaaaaaaaaaaaaaaaaab\"}}{{end}}",
     IG_ETOOBIG, "over budget: more than 200 ms of CPU time"},
    /* output: 1 MB of text from 100,000 iterations */
    {"output", "{{range 100000}}xxxxxxxxxx{{end}}", IG_ETOOBIG,
     "over budget: output longer than 262144 bytes"},
    /* regex: catastrophic backtracking (2^40 paths) */
    {"regex", "{{regexMatch \"^(a+)+$\" (printf \"%sb\" (repeat 40 \"a\"))}}", IG_ETOOBIG,
     "over budget: a regex match backtracked more than 1000000 times"},
    /* a match that PCRE2's own default limit (10,000,000) lets finish: ours ends it */
    {"regex-limit", "{{regexMatch \"^(a+)+$\" (printf \"%sb\" (repeat 20 \"a\"))}}", IG_ETOOBIG,
     "over budget: a regex match backtracked more than 1000000 times"},
    /* work in proportion to the bytes: a list holding a 100 kB string searched 2,000 times */
    {"weight", "{{$l := list (repeat 100000 \"x\")}}{{range until 2000}}{{has 1 $l}}{{end}}",
     IG_ETOOBIG, "more than 2000000 steps"},
    {"regexReplaceAll",
     "{{regexReplaceAll \"^(x+x+)+$\" (printf \"%sz\" (repeat 40 \"x\")) \"z\"}}", IG_ETOOBIG,
     "backtracked"},
    /* repeat: a value over the output budget, and a huge count of nothing */
    {"repeat", "{{len (repeat 300000 \"x\")}}", IG_ETOOBIG, "longer than 262144 bytes"},
    {"repeat-nothing", "[{{repeat 9223372036854775807 \"\"}}]", 0, "[]"},
    /* recursion: two calls per level, 2^40 calls within the depth cap */
    {"recursion",
     "{{define \"a\"}}{{if lt (len .) 40}}{{template \"a\" (printf \"%sx\" .)}}"
     "{{template \"a\" (printf \"%sx\" .)}}{{end}}{{end}}{{template \"a\" \"\"}}",
     IG_ETOOBIG, "over budget"},
    /* benign: within every budget */
    {"benign", "{{range until 1000}}{{regexMatch \"^v[0-9]+$\" \"v12\"}}{{end}}", 0, NULL},
    {"benign-output", "{{range 20000}}xxxxxxxxxx{{end}}", 0, NULL},
};

START_TEST(budget)
{
	struct tarena arena = TARENA_INIT((size_t)256 << 20);
	struct buf out = BUF_INIT; /* no cap of its own: the budget's applies */
	struct error err = ERROR_INIT;
	struct template *t = NULL;
	int rc;

	ck_assert_int_eq(template_parse(&t, cases[_i].tmpl, "t", &err), 0);
	rc = template_execute(&out, t, tval_nil(), &arena, &err);
	ck_assert_msg(rc == cases[_i].rc, "%s: rc %d (%s)", cases[_i].name, rc, err.msg);
	if (rc < 0)
		ck_assert_msg(strstr(err.msg, cases[_i].out), "%s: %s", cases[_i].name, err.msg);
	else if (cases[_i].out)
		ck_assert_str_eq(out.data ? out.data : "", cases[_i].out);
	ck_assert_uint_le(out.len, TEMPLATE_OUTPUT_MAX);
	template_free(t);
	buf_release(&out);
	tarena_release(&arena);
}
END_TEST

/* The output budget is per execution: a message buffer already holding text may still take
 * the budget's worth, and a caller's smaller cap still applies. */
START_TEST(output_budget_per_execution)
{
	struct tarena arena = TARENA_INIT((size_t)16 << 20);
	struct buf out = BUF_INIT;
	struct buf small = BUF_INIT_MAX(100);
	struct error err = ERROR_INIT;
	struct template *t = NULL;

	ck_assert_int_eq(template_parse(&t, "{{range 26000}}xxxxxxxxxx{{end}}", "t", &err), 0);
	ck_assert_int_eq(buf_puts(&out, "prefix"), 0);
	ck_assert_int_eq(template_execute(&out, t, tval_nil(), &arena, &err), 0);
	ck_assert_uint_eq(out.len, 6 + 260000);
	ck_assert_uint_eq(out.max, 0);
	ck_assert_int_eq(template_execute(&small, t, tval_nil(), &arena, &err), IG_ETOOBIG);
	ck_assert_uint_le(small.len, 100);
	template_free(t);
	buf_release(&out);
	buf_release(&small);
	tarena_release(&arena);
}
END_TEST

/* A {{define}}d template runs alone under the same budget (the load-time check runs each). */
START_TEST(defines)
{
	struct tarena arena = TARENA_INIT((size_t)16 << 20);
	struct buf out = BUF_INIT;
	struct error err = ERROR_INIT;
	struct template *t = NULL;

	ck_assert_int_eq(template_parse(&t,
	                                "{{define \"ok\"}}[{{.}}]{{end}}"
	                                "{{define \"a\"}}{{template \"a\" .}}{{end}}main",
	                                "t", &err),
	                 0);
	ck_assert_uint_eq(template_define_count(t), 2);
	ck_assert_str_eq(template_define_name(t, 0), "ok");
	ck_assert_ptr_null(template_define_name(t, 2));
	ck_assert_int_eq(
	    template_execute_define(&out, t, "ok", tval_cstring(&arena, "x"), &arena, &err), 0);
	ck_assert_str_eq(out.data, "[x]");
	ck_assert_int_eq(template_execute_define(&out, t, "a", tval_nil(), &arena, &err),
	                 IG_ETOOBIG);
	ck_assert_int_eq(template_execute_define(&out, t, "none", tval_nil(), &arena, &err),
	                 IG_ENOTFOUND);
	template_free(t);
	buf_release(&out);
	tarena_release(&arena);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("template_budget");
	TCase *tc = tcase_create("budget");
	SRunner *sr;
	int failed;

	/* a hostile case without its limit runs far longer than this */
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, budget, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, output_budget_per_execution);
	tcase_add_test(tc, defines);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
