/* Commit message rendering: the default list and the supported messageTemplate subset, with
 * Flux's own documented templates, and clear errors for everything outside it. */
#include <check.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/git/commitmsg.h"
#include "imageguard/util/error.h"

static const struct commitmsg_change two[] = {
	{"apps/web", "ghcr.io/o/web:1.0.0", "ghcr.io/o/web:1.1.0", "apps/web.yaml", NULL},
	{"apps/api", "2.0.0", "2.0.1", "apps/api.yaml", "override: rollback approved"},
};

static const struct {
	const char *tmpl;
	size_t n;
	int rc;
	const char *out; /* the message, or a fragment of the error */
} cases[] = {
	{NULL, 2, 0,
	 "imageguard: update 2 images\n\n"
	 "apps/web: ghcr.io/o/web:1.0.0 -> ghcr.io/o/web:1.1.0 (apps/web.yaml)\n"
	 "apps/api: 2.0.0 -> 2.0.1 (apps/api.yaml) [override: rollback approved]\n"},
	{"", 1, 0,
	 "imageguard: update 1 image\n\n"
	 "apps/web: ghcr.io/o/web:1.0.0 -> ghcr.io/o/web:1.1.0 (apps/web.yaml)\n"},
	/* Flux's documented v1beta2 example */
	{"Automated image update\n\nAutomation name: {{ .AutomationObject }}\n\n"
	 "{{range .Changed.Changes}}{{print .OldValue}} -> {{println .NewValue}}{{end}}",
	 2, 0,
	 "Automated image update\n\nAutomation name: flux-system/apps\n\n"
	 "ghcr.io/o/web:1.0.0 -> ghcr.io/o/web:1.1.0\n2.0.0 -> 2.0.1\n"},
	{"[ci skip] {{ .AutomationObject }}\n\n{{ .Changes }}", 1, 0,
	 "[ci skip] flux-system/apps\n\napps/web: ghcr.io/o/web:1.0.0 -> ghcr.io/o/web:1.1.0 (apps/web.yaml)\n"},
	{"{{- range .Changed.Changes }}\n- {{ .Setter }} in {{ .File }}: {{ .NewValue }} ({{ $.AutomationObject }})\n{{- end }}",
	 2, 0,
	 "\n- apps:web in apps/web.yaml: ghcr.io/o/web:1.1.0 (flux-system/apps)"
	 "\n- apps:api in apps/api.yaml: 2.0.1 (flux-system/apps)"},
	{"Images:\n{{ range .Updated.Images -}}\n- {{.}}\n{{ end -}}\n", 2, 0,
	 "Images:\n- ghcr.io/o/web:1.1.0\n- 2.0.1\n"},
	{"{{println \"a\" .Policy}}", 1, IG_EINVALID, "line 1: field only inside"},
	{"{{range .Changed.Changes}}{{println \"x\" .Policy .Reason}}{{end}}{{/* note */}}", 1, 0,
	 "x apps/web \n"},
	{"{{ print `raw` \"q\\\"\" }}", 0, 0, "rawq\""},
	{"line1\n{{ .Bogus }}", 1, IG_EINVALID, "template 'flux-system/apps': line 2: unknown field '.Bogus'"},
	{"{{ if .AutomationObject }}x{{ end }}", 1, IG_EINVALID, "unsupported action 'if .AutomationObject'"},
	{"{{ range $f, $_ := .Updated.Files }}{{ $f }}{{ end }}", 1, IG_EINVALID, "unsupported range"},
	{"{{ range .Changed.Changes }}x", 1, IG_EINVALID, "range without {{end}}"},
	{"{{ end }}", 1, IG_EINVALID, "{{end}} without a range"},
	{"{{ .AutomationObject ", 1, IG_EINVALID, "unclosed action"},
	{"{{ .AutomationObject | upper }}", 1, IG_EINVALID, "pipelines"},
	{"{{ range .Changed.Changes }}{{ .AutomationObject }}{{ end }}", 1, IG_EINVALID, "use $."},
	{"{{ . }}", 1, IG_EINVALID, "'.' is only a value"},
	{"{{ }}", 1, IG_EINVALID, "empty action"},
	{"{{ print \"open }}", 1, IG_EINVALID, "unterminated string"},
	{"{{ range .Changed.Changes }}{{ range .Changed.Changes }}{{ end }}{{ end }}", 1, IG_EINVALID,
	 "nested range"},
};

START_TEST(render)
{
	struct buf out = BUF_INIT;
	struct error err = ERROR_INIT;
	int rc = commitmsg_render(&out, cases[_i].tmpl, "flux-system/apps", "flux-system/apps", two,
				  cases[_i].n, &err);

	ck_assert_msg(rc == cases[_i].rc, "case %d: rc %d: %s", _i, rc, err.msg);
	if (rc == 0) {
		ck_assert_str_eq(out.data ? out.data : "", cases[_i].out);
		ck_assert_int_eq(commitmsg_check(cases[_i].tmpl, "t", &err), 0);
	} else {
		ck_assert_msg(strstr(err.msg, cases[_i].out), "case %d: %s", _i, err.msg);
		ck_assert_int_eq(commitmsg_check(cases[_i].tmpl, "t", &err), cases[_i].rc);
	}
	buf_release(&out);
}
END_TEST

START_TEST(capped_output)
{
	struct buf out = BUF_INIT_MAX(40);
	struct error err = ERROR_INIT;

	ck_assert_int_eq(commitmsg_render(&out, NULL, "t", "a/b", two, 2, &err), IG_ETOOBIG);
	ck_assert_int_eq(commitmsg_render(&out, "{{ .Changes }}", "t", "a/b", two, 2, &err), IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "too long"), "%s", err.msg);
	buf_release(&out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("commitmsg");
	TCase *tc = tcase_create("render");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, render, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, capped_output);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
