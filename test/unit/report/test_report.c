/* Unit tests for pass reports: the text line of CONTRACT §3/§6 and the JSON object fields. */
#include <check.h>
#include <malloc.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/report/report.h"

static const struct {
	const char *file;
	const char *current, *candidate, *commit, *message;
	enum guard_decision_kind decision;
	enum guard_reason reason;
	unsigned warnings;
	const char *text;
} items[] = {
    {"apps/a.yaml", "v1", "v2", NULL, NULL, GUARD_UPDATE, GUARD_FORWARD, 0,
     "ns/p apps/a.yaml:7 v1 -> v2 update/forward\n"},
    {"apps/a.yaml", "v3", "v2", NULL, NULL, GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED,
     GUARD_WARN_CURRENT_MISSING,
     "ns/p apps/a.yaml:7 v3 -> v2 hold/downgrade-blocked [current-missing]\n"},
    {"a.yaml", "v1", NULL, NULL, "registry 'x': 500", GUARD_ERROR, GUARD_REGISTRY, 0,
     "ns/p a.yaml:7 v1 -> - error/registry: registry 'x': 500\n"},
    {"a.yaml", "v1", "v0", "0123456789abcdef0123456789abcdef01234567", "bad release",
     GUARD_ROLLBACK, GUARD_OVERRIDE, GUARD_WARN_CURRENT_MISSING | GUARD_WARN_OVERRIDE_LAPSED,
     "ns/p a.yaml:7 v1 -> v0 rollback/override [current-missing,override-lapsed] commit "
     "0123456789ab\n"},
    {"a.yaml", "latest", "latest", NULL, "new 'sha256:b' (created 2026-01-01T00:00:00Z) is older",
     GUARD_HOLD, GUARD_DOWNGRADE_BLOCKED, 0,
     "ns/p a.yaml:7 latest -> latest hold/downgrade-blocked: new 'sha256:b' (created "
     "2026-01-01T00:00:00Z) is older\n"},
    {"a.yaml", "v1", "v1", NULL, "bad release", GUARD_HOLD, GUARD_OVERRIDE, 0,
     "ns/p a.yaml:7 v1 -> v1 hold/override\n"},
    {NULL, NULL, NULL, NULL, NULL, GUARD_NONE, GUARD_NO_MARKERS, 0, "ns/p - none/no-markers\n"},
    /* outside text (file names and values from Git, tags, messages) cannot forge a line */
    {"a\nns/p b.yaml:1 v9 -> v1 update/forward\n.yaml", "v1\x1b[2J", "v2\r\nx", NULL,
     "registry 'x': 500\nforged", GUARD_ERROR, GUARD_REGISTRY, 0,
     "ns/p a\\nns/p b.yaml:1 v9 -> v1 update/forward\\n.yaml:7 v1\\e[2J -> v2\\r\\nx "
     "error/registry: registry 'x': 500\\nforged\n"},
};

static void fill(struct report *r, size_t i)
{
	struct report_item *it;

	ck_assert_int_eq(report_add(&it, r), 0);
	ck_assert_int_eq(report_set(&it->policy, "ns/p"), 0);
	ck_assert_int_eq(report_set(&it->file, items[i].file), 0);
	ck_assert_int_eq(report_set(&it->current, items[i].current), 0);
	ck_assert_int_eq(report_set(&it->candidate, items[i].candidate), 0);
	ck_assert_int_eq(report_set(&it->commit, items[i].commit), 0);
	ck_assert_int_eq(report_set(&it->message, items[i].message), 0);
	it->line = 7;
	it->decision = items[i].decision;
	it->reason = items[i].reason;
	it->warnings = items[i].warnings;
}

START_TEST(text)
{
	struct report r = REPORT_INIT;
	struct buf out = BUF_INIT;

	fill(&r, (size_t)_i);
	ck_assert_int_eq(report_text(&out, &r), 0);
	ck_assert_str_eq(out.data, items[_i].text);
	buf_release(&out);
	report_release(&r);
}
END_TEST

START_TEST(json)
{
	struct report r = REPORT_INIT;
	struct buf out = BUF_INIT;
	json_error_t je;
	json_t *a, *o;

	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		fill(&r, i);
	ck_assert_int_eq(report_json(&out, &r), 0);
	a = json_loads(out.data, 0, &je);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(json_array_size(a), sizeof(items) / sizeof(items[0]));
	o = json_array_get(a, 1);
	ck_assert_str_eq(json_string_value(json_object_get(o, "decision")), "hold");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "warnings"), 0)),
	                 "current-missing");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "line")), 7);
	ck_assert_ptr_null(json_object_get(o, "commit"));
	ck_assert_ptr_null(json_object_get(o, "current_created"));
	o = json_array_get(a, 6);
	ck_assert(json_is_null(json_object_get(o, "file")));
	ck_assert(json_is_null(json_object_get(o, "line")));
	ck_assert_str_eq(json_string_value(json_object_get(o, "reason")), "no-markers");
	ck_assert_int_eq(json_array_size(json_object_get(o, "warnings")), 0);
	o = json_array_get(a, 7); /* JSON keeps the bytes: its own escaping is enough */
	ck_assert_str_eq(json_string_value(json_object_get(o, "current")), "v1\x1b[2J");
	json_decref(a);
	buf_release(&out);
	report_release(&r);
}
END_TEST

/* report_json prints one item at a time: the bytes must be those jansson prints for the
 * whole array at once (JSON_INDENT(2)), with nested arrays and escapes, and "[]" when empty. */
START_TEST(json_layout)
{
	struct report r = REPORT_INIT;
	struct buf out = BUF_INIT;
	json_error_t je;
	json_t *a;
	char *whole;

	ck_assert_int_eq(report_json(&out, &r), 0);
	ck_assert_str_eq(out.data, "[]\n");
	buf_reset(&out);
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		fill(&r, i);
	ck_assert_int_eq(report_json(&out, &r), 0);
	ck_assert_ptr_nonnull(a = json_loads(out.data, 0, &je));
	ck_assert_ptr_nonnull(whole = json_dumps(a, JSON_INDENT(2)));
	ck_assert_uint_eq(out.len, strlen(whole) + 1);
	ck_assert_int_eq(memcmp(out.data, whole, strlen(whole)), 0);
	ck_assert_int_eq(out.data[out.len - 1], '\n');
	free(whole);
	json_decref(a);
	buf_release(&out);
	report_release(&r);
}
END_TEST

/* An invalid object's error names it ("object"), written directly (plain ASCII) or through
 * jansson (any other byte) alike, and byte for byte as jansson prints it; its text line
 * carries the message, which names the object too. */
START_TEST(invalid_object)
{
	static const char *const messages[] = {
	    "c.yaml:3: ImageUpdateAutomation 'ns/a': 'spec.git.commit.messageTemplate': bad",
	    "c.yaml:3: ImageUpdateAutomation 'ns/a': 'spec.git.commit.messageTemplate': \xc3\xa9"};

	for (size_t i = 0; i < 2; i++) {
		struct report r = REPORT_INIT;
		struct buf out = BUF_INIT;
		struct report_item *it;
		json_error_t je;
		json_t *a;
		char *whole;

		ck_assert_int_eq(report_add(&it, &r), 0);
		ck_assert_int_eq(report_set(&it->policy, "ns/p"), 0);
		ck_assert_int_eq(report_set(&it->message, messages[i]), 0);
		ck_assert_int_eq(report_set(&it->object, "ImageUpdateAutomation/ns/a"), 0);
		it->decision = GUARD_ERROR;
		it->reason = GUARD_CONFIG;
		ck_assert_int_eq(report_json(&out, &r), 0);
		ck_assert_ptr_nonnull(a = json_loads(out.data, 0, &je));
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "object")),
		                 "ImageUpdateAutomation/ns/a");
		ck_assert_ptr_nonnull(whole = json_dumps(a, JSON_INDENT(2)));
		ck_assert_int_eq(memcmp(out.data, whole, strlen(whole)), 0);
		free(whole);
		json_decref(a);
		buf_reset(&out);
		ck_assert_int_eq(report_text(&out, &r), 0);
		ck_assert_ptr_eq(strstr(out.data, "ns/p - error/config: c.yaml:3: "
		                                  "ImageUpdateAutomation 'ns/a'"),
		                 out.data);
		buf_release(&out);
		report_release(&r);
	}
}
END_TEST

/* report_reserve, report_truncate and report_join's move into an empty report. */
START_TEST(reserve_truncate_join)
{
	struct report r = REPORT_INIT, dst = REPORT_INIT;
	struct report_item *first;

	ck_assert_int_eq(report_reserve(&r, 5), 0);
	ck_assert_uint_ge(r.cap, 5);
	fill(&r, 0);
	first = &r.items[0];
	for (size_t i = 1; i < 5; i++)
		fill(&r, i);
	ck_assert_ptr_eq(&r.items[0], first); /* reserved: no add moved the array */
	report_truncate(&r, 2);
	ck_assert_uint_eq(r.len, 2);
	ck_assert_str_eq(r.items[1].current, items[1].current);
	ck_assert_int_eq(report_join(&dst, &r), 0);
	ck_assert_uint_eq(dst.len, 2);
	ck_assert_uint_eq(r.len, 0);
	ck_assert_ptr_null(r.items);
	ck_assert_str_eq(dst.items[0].file, items[0].file);
	fill(&r, 3);
	ck_assert_int_eq(report_join(&dst, &r), 0);
	ck_assert_uint_eq(dst.len, 3);
	ck_assert_str_eq(dst.items[2].current, items[3].current);
	/* dst had spare room (cap 5): the block still holds what cap counts, and adds fit */
	ck_assert_uint_ge(malloc_usable_size(dst.items), dst.cap * sizeof(dst.items[0]));
	fill(&dst, 4);
	fill(&dst, 0);
	ck_assert_uint_eq(dst.len, 5);
	report_release(&r);
	report_release(&dst);
}
END_TEST

/* Digest-tracked decisions carry the committed digest and both build times. */
START_TEST(created_fields)
{
	struct report r = REPORT_INIT;
	struct report_item *it;
	struct buf out = BUF_INIT;
	struct guard_created known = {GUARD_CREATED_KNOWN, {1767323045, 250000000}, NULL};
	struct guard_created missing = {GUARD_CREATED_MISSING, {0, 0}, "no 'created'"};
	json_t *a, *o;

	ck_assert_int_eq(report_add(&it, &r), 0);
	ck_assert_int_eq(report_set(&it->policy, "ns/p"), 0);
	ck_assert_int_eq(report_set(&it->current_digest, "sha256:a"), 0);
	ck_assert_int_eq(report_set_created(&it->current_created, &known), 0);
	ck_assert_int_eq(report_set_created(&it->candidate_created, &missing), 0);
	ck_assert_ptr_null(it->candidate_created);
	ck_assert_int_eq(report_json(&out, &r), 0);
	a = json_loads(out.data, 0, NULL);
	o = json_array_get(a, 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "current_digest")), "sha256:a");
	ck_assert_str_eq(json_string_value(json_object_get(o, "current_created")),
	                 "2026-01-02T03:04:05.25Z");
	ck_assert_ptr_null(json_object_get(o, "candidate_created"));
	json_decref(a);
	buf_release(&out);
	report_release(&r);
}
END_TEST

/* plan --shards: " shard I/N" after the warnings (before the commit), and JSON's shard and
 * shards; items without an owner (has_shard false) and reports without shards are unchanged. */
/* report_set_strings: one block replaces what the item held (set one by one, or an earlier
 * block), NULLs stay NULL, and every rendering reads the copies (valgrind: nothing leaks). */
START_TEST(strings_block)
{
	struct report r = REPORT_INIT;
	struct report_item *it;
	struct buf out = BUF_INIT;
	char policy[] = "ns/p";
	struct report_strings s = {.policy = policy,
	                           .image = "reg/app",
	                           .file = "apps/a.yaml",
	                           .current = "1.0.0",
	                           .candidate = "1.1.0",
	                           .automation = "ns/auto"};
	json_t *a, *o;

	ck_assert_int_eq(report_add(&it, &r), 0);
	ck_assert_int_eq(report_set(&it->policy, "ns/old"), 0);
	ck_assert_int_eq(report_set(&it->message, "old message"), 0);
	ck_assert_int_eq(report_set_strings(it, &s), 0);
	ck_assert_ptr_null(it->message);
	ck_assert_ptr_eq(it->policy, it->block);
	policy[0] = 'X'; /* copied, not borrowed */
	s.candidate = NULL;
	s.message = "again";
	ck_assert_int_eq(report_set_strings(it, &s), 0);
	ck_assert_ptr_null(it->candidate);
	ck_assert_str_eq(it->message, "again");
	ck_assert_int_eq(report_json(&out, &r), 0);
	a = json_loads(out.data, 0, NULL);
	o = json_array_get(a, 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "policy")), "Xs/p");
	ck_assert_str_eq(json_string_value(json_object_get(o, "file")), "apps/a.yaml");
	ck_assert_str_eq(json_string_value(json_object_get(o, "current")), "1.0.0");
	ck_assert(json_is_null(json_object_get(o, "candidate")));
	json_decref(a);
	buf_release(&out);
	report_release(&r);
}
END_TEST

START_TEST(shard_fields)
{
	struct report r = REPORT_INIT;
	struct buf out = BUF_INIT;
	json_t *a;

	fill(&r, 3); /* rollback with warnings and a commit */
	fill(&r, 6); /* a policy without markers: no automation, no shard */
	r.items[0].has_shard = true;
	r.items[0].shard = 2;
	ck_assert_int_eq(report_text(&out, &r), 0);
	ck_assert_str_eq(out.data, "ns/p a.yaml:7 v1 -> v0 rollback/override "
	                           "[current-missing,override-lapsed] commit 0123456789ab\n"
	                           "ns/p - none/no-markers\n");
	r.shards = 3;
	buf_reset(&out);
	ck_assert_int_eq(report_text(&out, &r), 0);
	ck_assert_str_eq(out.data,
	                 "ns/p a.yaml:7 v1 -> v0 rollback/override "
	                 "[current-missing,override-lapsed] shard 2/3 commit 0123456789ab\n"
	                 "ns/p - none/no-markers\n");
	buf_reset(&out);
	ck_assert_int_eq(report_json(&out, &r), 0);
	a = json_loads(out.data, 0, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, 0), "shard")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, 0), "shards")), 3);
	ck_assert_ptr_null(json_object_get(json_array_get(a, 1), "shard"));
	json_decref(a);
	buf_release(&out);
	report_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, text, 0, sizeof(items) / sizeof(items[0]));
	tcase_add_test(tc, json);
	tcase_add_test(tc, json_layout);
	tcase_add_test(tc, invalid_object);
	tcase_add_test(tc, reserve_truncate_join);
	tcase_add_test(tc, created_fields);
	tcase_add_test(tc, strings_block);
	tcase_add_test(tc, shard_fields);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
