/* Unit tests for the audit log: record fields, nulls, --audit-tags, appending, bad paths. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/report/audit.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

static char path[64];

static void setup(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/ig-audit-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void teardown(void)
{
	unlink(path);
}

static json_t *line_at(const char *text, int n)
{
	json_error_t je;

	for (int i = 0; i < n; i++)
		text = strchr(text, '\n') + 1;
	return json_loadb(text, (size_t)(strchr(text, '\n') - text), 0, &je);
}

START_TEST(records)
{
	struct strvec tags = STRVEC_INIT, warnings = STRVEC_INIT;
	struct audit_record r = {0};
	struct error err = ERROR_INIT;
	struct buf text = BUF_INIT;
	struct audit *a;
	json_t *o;

	strvec_push(&tags, "v1");
	strvec_push(&tags, "v2");
	strvec_push(&warnings, "current-missing");
	r.policy = "default/app";
	r.image = "127.0.0.1:5000/app";
	r.listed = true;
	r.tag_count = 2;
	r.tags_sha256 = "abc";
	r.tags = &tags;
	r.current = "v3";
	r.candidate = "v2";
	r.decision = "hold";
	r.reason = "downgrade-blocked";
	r.warnings = &warnings;
	r.file = "apps/a.yaml";
	r.line = 7;
	r.current_digest = "sha256:a";
	r.current_created = "2026-01-03T00:00:00Z";
	r.candidate_created = "2026-01-01T00:00:00Z";
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(audit_open(&a, path, pass == 1, &err), 0);
		ck_assert_int_eq(audit_write(a, &r, &err), 0);
		ck_assert_int_eq(audit_sync(a, &err), 0);
		audit_close(a);
	}
	r = (struct audit_record){
	    .policy = "default/none", .decision = "none", .reason = "no-markers"};
	ck_assert_int_eq(audit_open(&a, path, true, &err), 0);
	ck_assert_int_eq(audit_write(a, &r, &err), 0);
	audit_close(a);
	ck_assert_int_eq(buf_read_file(&text, path), 0);

	o = line_at(text.data, 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "decision")), "hold");
	ck_assert_str_eq(json_string_value(json_object_get(o, "reason")), "downgrade-blocked");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "tag_count")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "line")), 7);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "warnings"), 0)),
	                 "current-missing");
	ck_assert(json_is_null(json_object_get(o, "commit")));
	ck_assert_ptr_null(json_object_get(o, "tags"));
	ck_assert_str_eq(json_string_value(json_object_get(o, "current_digest")), "sha256:a");
	ck_assert_str_eq(json_string_value(json_object_get(o, "current_created")),
	                 "2026-01-03T00:00:00Z");
	ck_assert_str_eq(json_string_value(json_object_get(o, "candidate_created")),
	                 "2026-01-01T00:00:00Z");
	ck_assert_int_eq((int)strlen(json_string_value(json_object_get(o, "time"))), 24);
	json_decref(o);

	o = line_at(text.data, 1);
	ck_assert_int_eq(json_array_size(json_object_get(o, "tags")), 2);
	json_decref(o);

	o = line_at(text.data, 2);
	ck_assert(json_is_null(json_object_get(o, "file")));
	ck_assert(json_is_null(json_object_get(o, "line")));
	ck_assert(json_is_null(json_object_get(o, "tag_count")));
	ck_assert(json_is_null(json_object_get(o, "tags")));
	ck_assert_int_eq(json_array_size(json_object_get(o, "warnings")), 0);
	ck_assert_ptr_null(json_object_get(o, "current_created")); /* only when set */
	json_decref(o);
	ck_assert_ptr_null(
	    strchr(strchr(strchr(strchr(text.data, '\n') + 1, '\n') + 1, '\n') + 1, '\n'));
	buf_release(&text);
	strvec_release(&tags);
	strvec_release(&warnings);
}
END_TEST

START_TEST(drift)
{
	struct verify_record d = {0};
	struct error err = ERROR_INIT;
	struct buf text = BUF_INIT;
	struct audit *a;
	json_t *o;

	d.policy = "default/web";
	d.workload = "prod/Deployment/web";
	d.container = "web";
	d.pod = "web-1";
	d.file = "apps/web.yaml";
	d.line = 17;
	d.image = "reg/web:v1.1.0";
	d.expected_tag = "v1.1.0";
	d.expected_digest = "sha256:bbbb";
	d.running_image = "reg/web:v1.1.0";
	d.running_digest = "sha256:aaaa";
	d.status = "drift";
	d.reason = "runs sha256:aaaa, Git wants sha256:bbbb (v1.1.0)";
	ck_assert_int_eq(audit_open(&a, path, false, &err), 0);
	ck_assert_int_eq(audit_write_drift(a, &d, &err), 0);
	d = (struct verify_record){.policy = "default/api", .reason = "x"};
	ck_assert_int_eq(audit_write_drift(a, &d, &err), 0);
	audit_close(a);
	ck_assert_int_eq(buf_read_file(&text, path), 0);

	o = line_at(text.data, 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "event")), "drift");
	ck_assert_ptr_null(json_object_get(o, "decision"));
	ck_assert_str_eq(json_string_value(json_object_get(o, "policy")), "default/web");
	ck_assert_str_eq(json_string_value(json_object_get(o, "workload")), "prod/Deployment/web");
	ck_assert_str_eq(json_string_value(json_object_get(o, "container")), "web");
	ck_assert_str_eq(json_string_value(json_object_get(o, "pod")), "web-1");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "line")), 17);
	ck_assert_str_eq(json_string_value(json_object_get(o, "expected_digest")), "sha256:bbbb");
	ck_assert_str_eq(json_string_value(json_object_get(o, "running_digest")), "sha256:aaaa");
	ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "drift");
	ck_assert(json_is_null(json_object_get(o, "kind")));
	ck_assert_int_eq((int)strlen(json_string_value(json_object_get(o, "time"))), 24);
	json_decref(o);
	o = line_at(text.data, 1);
	ck_assert_ptr_nonnull(o);
	ck_assert(json_is_null(json_object_get(o, "line")));
	ck_assert(json_is_null(json_object_get(o, "running_digest")));
	json_decref(o);
	buf_release(&text);
}
END_TEST

START_TEST(bad_path)
{
	struct error err = ERROR_INIT;
	struct audit *a;

	ck_assert_int_eq(audit_open(&a, "/nonexistent-dir/x.log", false, &err), IG_EFAIL);
	ck_assert_str_eq(err.msg, "audit log '/nonexistent-dir/x.log': No such file or directory");
	ck_assert_ptr_null(a);
	audit_close(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("audit");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, records);
	tcase_add_test(tc, drift);
	tcase_add_test(tc, bad_path);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
