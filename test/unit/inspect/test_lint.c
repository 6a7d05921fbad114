/* Unit tests for lint: the rule table (tag × digest × pull policy → findings), Kubernetes'
 * pull-policy defaulting, where images are found in YAML, and bad input that must not crash. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/inspect/lint.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/strvec.h"

/* "line:rule" for each finding, space-separated, in report order (after sorting). */
static char *summary(struct lint_report *r)
{
	struct buf b = BUF_INIT;

	lint_report_sort(r);
	buf_puts(&b, "");
	for (size_t i = 0; i < r->len; i++)
		buf_printf(&b, "%s%zu:%s", i ? " " : "", r->findings[i].line,
		           lint_rule_name(r->findings[i].rule));
	return buf_detach(&b);
}

#define U LINT_PULL_UNSET
#define A LINT_PULL_ALWAYS
#define I LINT_PULL_IF_NOT_PRESENT
#define N LINT_PULL_NEVER

static const struct {
	const char *tag; /* NULL: none */
	bool digest;
	enum lint_pull pull;
	bool pull_known;
	const char *mutable_tags; /* NULL: default list; else comma-separated */
	const char *want;
} rules[] = {
    /* no tag: mutable; defaults to Always */
    {NULL, false, U, true, NULL, "1:mutable-tag 1:no-digest"},
    {NULL, false, A, true, NULL, "1:mutable-tag 1:no-digest"},
    {NULL, false, I, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {NULL, false, N, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    /* latest defaults to Always */
    {"latest", false, U, true, NULL, "1:mutable-tag 1:no-digest"},
    {"latest", false, A, true, NULL, "1:mutable-tag 1:no-digest"},
    {"latest", false, I, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"latest", false, N, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    /* other mutable tags default to IfNotPresent */
    {"stable", false, U, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"main", false, U, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"master", false, U, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"dev", false, U, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"develop", false, U, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"edge", false, U, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"nightly", false, A, true, NULL, "1:mutable-tag 1:no-digest"},
    {"nightly", false, N, true, NULL, "1:mutable-tag 1:pull-policy 1:no-digest"},
    /* immutable-looking tags: only the digest warning, whatever the policy */
    {"1.2.3", false, U, true, NULL, "1:no-digest"},
    {"1.2.3", false, N, true, NULL, "1:no-digest"},
    {"Latest", false, U, true, NULL, "1:no-digest"}, /* tags are case-sensitive */
    {"latest-1", false, U, true, NULL, "1:no-digest"},
    /* a digest pins the image: nothing to report, whatever the tag or policy */
    {NULL, true, U, true, NULL, ""},
    {"latest", true, I, true, NULL, ""},
    {"stable", true, N, true, NULL, ""},
    {"1.2.3", true, U, true, NULL, ""},
    /* pull policy unknown (Kustomize images): no pull-policy finding */
    {"stable", false, U, false, NULL, "1:mutable-tag 1:no-digest"},
    {NULL, false, U, false, NULL, "1:mutable-tag 1:no-digest"},
    /* --mutable-tags replaces the list; a missing tag stays mutable */
    {"latest", false, I, true, "canary,beta", "1:no-digest"},
    {"canary", false, U, true, "canary,beta", "1:mutable-tag 1:pull-policy 1:no-digest"},
    {"beta", false, A, true, "canary,beta", "1:mutable-tag 1:no-digest"},
    {NULL, false, I, true, "canary", "1:mutable-tag 1:pull-policy 1:no-digest"},
    {NULL, false, U, true, "", "1:mutable-tag 1:no-digest"},
    {"stable", false, U, true, "", "1:no-digest"},
};

START_TEST(rule_table)
{
	struct lint_report r = LINT_REPORT_INIT;
	struct strvec tags = STRVEC_INIT;
	struct lint_options opts = {NULL};
	struct lint_image img = {"img", rules[_i].tag, rules[_i].digest, rules[_i].pull,
	                         rules[_i].pull_known};
	struct error err = ERROR_INIT;
	char *got;

	if (rules[_i].mutable_tags) {
		char *list = strdup(rules[_i].mutable_tags), *p = list, *c;
		while (*p) {
			if ((c = strchr(p, ',')))
				*c = '\0';
			strvec_push(&tags, p);
			p = c ? c + 1 : p + strlen(p);
		}
		free(list);
		opts.mutable_tags = &tags;
	}
	ck_assert_int_eq(lint_check_image(&r, &opts, "f.yaml", 1, &img, &err), 0);
	got = summary(&r);
	ck_assert_msg(strcmp(got, rules[_i].want) == 0, "case %d (%s): got '%s', want '%s'", _i,
	              rules[_i].tag ? rules[_i].tag : "(no tag)", got, rules[_i].want);
	for (size_t i = 0; i < r.len; i++) {
		ck_assert_int_eq(r.findings[i].severity,
		                 r.findings[i].rule == LINT_NO_DIGEST ? LINT_WARNING : LINT_ERROR);
		ck_assert_str_eq(r.findings[i].file, "f.yaml");
		ck_assert_str_eq(r.findings[i].image, "img");
		ck_assert(r.findings[i].message[0] != '\0');
	}
	free(got);
	strvec_release(&tags);
	lint_report_release(&r);
}
END_TEST

static const struct {
	const char *tag;
	bool digest;
	enum lint_pull want;
} defaults[] = {
    {NULL, false, A},     {"latest", false, A}, {"latest", true, A}, {NULL, true, I},
    {"stable", false, I}, {"1.0", false, I},    {"1.0", true, I},
};

START_TEST(pull_default)
{
	ck_assert_int_eq(lint_pull_default(defaults[_i].tag, defaults[_i].digest),
	                 defaults[_i].want);
}
END_TEST

#define D64 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Where images are found: YAML in, "line:rule" findings and the number of problems out. */
static const struct {
	const char *name;
	const char *file;
	const char *yaml;
	const char *want;
	size_t problems;
} scans[] = {
    {"pod", "p.yaml", "kind: Pod\nspec:\n  containers:\n  - image: nginx:1.25\n", "4:no-digest", 0},
    {"deployment init+ephemeral", "d.yaml",
     "kind: Deployment\nspec:\n  template:\n    spec:\n      initContainers:\n"
     "      - image: busybox@" D64 "\n      ephemeralContainers:\n      - image: debug:edge\n"
     "        imagePullPolicy: Always\n",
     "8:mutable-tag 8:no-digest", 0},
    {"cronjob", "c.yaml",
     "kind: CronJob\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
     "          containers: [{image: 'app:main'}]\n",
     "7:mutable-tag 7:pull-policy 7:no-digest", 0},
    {"cronjob pod spec at the wrong place", "c.yaml",
     "kind: CronJob\nspec:\n  template:\n    spec:\n      containers: [{image: app}]\n", "", 0},
    {"unknown kind ignored", "x.yaml",
     "kind: Service\nspec:\n  template:\n    spec:\n      containers: [{image: app}]\n", "", 0},
    {"multi-doc, empty docs", "m.yaml",
     "---\n---\nkind: Pod\nspec: {containers: [{image: a}]}\n---\n# only a comment\n---\n"
     "kind: Job\nspec: {template: {spec: {containers: [{image: b:1}]}}}\n...\n",
     "4:mutable-tag 4:no-digest 9:no-digest", 0},
    {"List", "l.yaml", "kind: List\nitems:\n- kind: Pod\n  spec: {containers: [{image: a:dev}]}\n",
     "4:mutable-tag 4:pull-policy 4:no-digest", 0},
    {"templated values skipped", "t.yaml",
     "kind: Pod\nspec:\n  containers:\n  - image: ghcr.io/o/a:${TAG}\n  - image: '{{ .img }}'\n"
     "    imagePullPolicy: ${POLICY}\n",
     "", 0},
    {"null and absent image", "n.yaml",
     "kind: Pod\nspec:\n  containers:\n  - image: ~\n  - name: x\n  - image:\n", "", 0},
    {"invalid reference is a problem", "i.yaml",
     "kind: Pod\nspec:\n  containers:\n  - image: Ghcr.io/O/App:v1\n  - image: a:-x\n", "", 2},
    {"image not a string", "i.yaml", "kind: Pod\nspec:\n  containers:\n  - image: [a]\n", "", 1},
    {"bad pull policy is a problem, treated as unset", "i.yaml",
     "kind: Pod\nspec:\n  containers:\n  - image: a:latest\n    imagePullPolicy: Sometimes\n",
     "4:mutable-tag 4:no-digest", 1},
    {"kustomization file", "base/kustomization.yaml",
     "resources: [d.yaml]\nimages:\n- name: nginx\n  newTag: latest\n- name: app\n  newName: "
     "ghcr.io/o/app\n  newTag: 1.2.3\n- name: rename\n  newName: other\n- name: pin\n"
     "  digest: " D64 "\n",
     "4:mutable-tag 4:no-digest 7:no-digest", 0},
    {"kustomize kind in another file name", "k.yaml",
     "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nimages:\n"
     "- {name: a, newTag: main}\n",
     "4:mutable-tag 4:no-digest", 0},
    {"images: elsewhere is not kustomize", "other.yaml", "images:\n- {name: a, newTag: main}\n", "",
     0},
    {"flux Kustomization spec.images", "ks.yaml",
     "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nspec:\n  images:\n"
     "  - name: a\n    newTag: stable\n",
     "6:mutable-tag 6:no-digest", 0},
    {"helmrelease values", "hr.yaml",
     "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nspec:\n  values:\n"
     "    image:\n      repository: ghcr.io/o/app\n      tag: latest\n"
     "      pullPolicy: IfNotPresent\n"
     "    sidecar:\n      image: 'busybox:stable'\n"
     "    worker:\n      image: {registry: docker.io, repository: o/w, tag: '1.0'}\n"
     "    chartDefault:\n      image: {repository: o/x}\n"
     "    notAnImage:\n      image: true\n"
     "    list:\n    - initImage: {repository: o/y, tag: nightly, digest: " D64 "}\n",
     "7:mutable-tag 7:pull-policy 7:no-digest 10:mutable-tag 10:pull-policy 10:no-digest "
     "12:no-digest",
     0},
    {"helmrelease of another api is ignored", "hr.yaml",
     "apiVersion: example.com/v1\nkind: HelmRelease\nspec:\n  values:\n"
     "    image: {repository: a, tag: latest}\n",
     "", 0},
    {"alias shared twice reports once", "al.yaml",
     "apiVersion: helm.toolkit.fluxcd.io/v2beta1\nkind: HelmRelease\nspec:\n  values:\n"
     "    a: &img\n      image: {repository: a, tag: '1'}\n    b: *img\n    c: *img\n",
     "6:no-digest", 0},
    {"recursive alias terminates", "rec.yaml",
     "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nspec:\n  values: &v\n"
     "    self: *v\n    image: {repository: a, tag: '1'}\n",
     "6:no-digest", 0},
    {"invalid yaml", "bad.yaml", "kind: Pod\nspec: [\n", "", 1},
    {"error after a good document keeps its findings", "bad.yaml",
     "kind: Pod\nspec: {containers: [{image: a:1}]}\n---\nkind: : :\n  - x\n", "2:no-digest", 1},
    {"tabs", "tab.yaml", "kind: Pod\nspec:\n\tcontainers: []\n", "", 1},
    {"not a mapping", "s.yaml", "- a\n- b\n---\nplain\n", "", 0},
    {"crlf", "crlf.yaml", "kind: Pod\r\nspec:\r\n  containers:\r\n  - image: a:edge\r\n",
     "4:mutable-tag 4:pull-policy 4:no-digest", 0},
    {"quoted NUL escape in image", "z.yaml", "kind: Pod\nspec: {containers: [{image: \"a\\0\"}]}\n",
     "", 1},
    {"flow containers on one line", "f.yaml",
     "kind: Pod\nspec: {containers: [{image: b:latest}, {image: a:1}]}\n",
     "2:mutable-tag 2:no-digest 2:no-digest", 0},
};

START_TEST(scan)
{
	struct lint_report r = LINT_REPORT_INIT;
	struct error err = ERROR_INIT;
	char *got;

	ck_assert_int_eq(lint_scan_buffer(&r, NULL, scans[_i].file, scans[_i].yaml,
	                                  strlen(scans[_i].yaml), &err),
	                 0);
	got = summary(&r);
	ck_assert_msg(strcmp(got, scans[_i].want) == 0, "%s: got '%s', want '%s'", scans[_i].name,
	              got, scans[_i].want);
	ck_assert_msg(r.problems_len == scans[_i].problems, "%s: %zu problems (first: %s)",
	              scans[_i].name, r.problems_len, r.problems_len ? r.problems[0].message : "-");
	for (size_t i = 0; i < r.problems_len; i++) {
		ck_assert_str_eq(r.problems[i].file, scans[_i].file);
		ck_assert(!strchr(r.problems[i].message, '\n'));
	}
	free(got);
	lint_report_release(&r);
}
END_TEST

/* Bytes a text editor would not write: NUL, invalid UTF-8, control characters, deep nesting,
 * an alias bomb. Each is at most a problem. */
START_TEST(bad_bytes)
{
	static const char nul[] = "kind: Pod\nspec:\n  containers:\n  - image: a\0b\n";
	static const char utf8[] = "kind: Pod\nspec: {containers: [{image: \"\xff\xfe\"}]}\n";
	static const char ctrl[] = "kind: Pod\x01\n";
	struct lint_report r = LINT_REPORT_INIT;
	struct error err = ERROR_INIT;
	struct buf deep = BUF_INIT, bomb = BUF_INIT;

	ck_assert_int_eq(lint_scan_buffer(&r, NULL, "nul.yaml", nul, sizeof(nul) - 1, &err), 0);
	ck_assert_int_eq(lint_scan_buffer(&r, NULL, "u.yaml", utf8, sizeof(utf8) - 1, &err), 0);
	ck_assert_int_eq(lint_scan_buffer(&r, NULL, "c.yaml", ctrl, sizeof(ctrl) - 1, &err), 0);
	ck_assert_int_eq((int)r.problems_len, 3);
	ck_assert_int_eq((int)r.len, 0);

	/* 10,000 nested flow sequences, inside HelmRelease values */
	buf_puts(&deep,
	         "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nspec:\n  values: ");
	for (int i = 0; i < 10000; i++)
		buf_puts(&deep, "[");
	for (int i = 0; i < 10000; i++)
		buf_puts(&deep, "]");
	buf_puts(&deep, "\n");
	ck_assert_int_eq(lint_scan_buffer(&r, NULL, "deep.yaml", deep.data, deep.len, &err), 0);

	/* billion laughs: each level refers to the previous ten times */
	buf_puts(&bomb,
	         "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nspec:\n  values:\n"
	         "    l0: &l0 {image: {repository: a, tag: latest}}\n");
	for (int i = 1; i < 12; i++)
		buf_printf(&bomb,
		           "    l%d: &l%d [*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d]\n", i,
		           i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
	lint_report_release(&r);
	ck_assert_int_eq(lint_scan_buffer(&r, NULL, "bomb.yaml", bomb.data, bomb.len, &err), 0);
	ck_assert_int_eq((int)r.len, 2); /* the one image, once: mutable-tag, no-digest */
	buf_release(&deep);
	buf_release(&bomb);
	lint_report_release(&r);
}
END_TEST

START_TEST(markers_unknown)
{
	struct marker items[] = {
	    {"a.yaml", 3, "flux-system/web", MARKER_IMAGE, MARKER_PLAIN, 0, 0, "web:1", NULL, NULL,
	     NULL, NULL, NULL, false},
	    {"a.yaml", 9, "flux-system/gone", MARKER_TAG, MARKER_PLAIN, 0, 0, "2", NULL, NULL, NULL,
	     NULL, NULL, false},
	    {"b.yaml", 1, "other/web", MARKER_IMAGE, MARKER_PLAIN, 0, 0, "x:1", NULL, NULL, NULL,
	     NULL, NULL, false},
	};
	struct marker_set set = MARKER_SET_INIT;
	struct strvec known = STRVEC_INIT;
	struct lint_report r = LINT_REPORT_INIT;
	struct error err = ERROR_INIT;

	set.items = items;
	set.len = 3;
	strvec_push(&known, "flux-system/web");
	ck_assert_int_eq(lint_check_markers(&r, &set, &known, &err), 0);
	ck_assert_int_eq((int)r.len, 2);
	ck_assert_str_eq(r.findings[0].file, "a.yaml");
	ck_assert_int_eq((int)r.findings[0].line, 9);
	ck_assert_int_eq(r.findings[0].rule, LINT_UNKNOWN_POLICY);
	ck_assert_int_eq(r.findings[0].severity, LINT_ERROR);
	ck_assert_str_eq(r.findings[0].image, "2");
	ck_assert(strstr(r.findings[0].message, "'flux-system/gone'"));
	ck_assert(strstr(r.findings[1].message, "'other/web'"));
	strvec_release(&known);
	lint_report_release(&r);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(lint_rule_name(LINT_MUTABLE_TAG), "mutable-tag");
	ck_assert_str_eq(lint_rule_name(LINT_PULL_POLICY), "pull-policy");
	ck_assert_str_eq(lint_rule_name(LINT_NO_DIGEST), "no-digest");
	ck_assert_str_eq(lint_rule_name(LINT_UNKNOWN_POLICY), "unknown-policy");
	ck_assert_str_eq(lint_severity_name(LINT_ERROR), "error");
	ck_assert_str_eq(lint_severity_name(LINT_WARNING), "warning");
	ck_assert_str_eq(lint_pull_name(LINT_PULL_IF_NOT_PRESENT), "IfNotPresent");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lint");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, rule_table, 0, sizeof(rules) / sizeof(rules[0]));
	tcase_add_loop_test(tc, pull_default, 0, sizeof(defaults) / sizeof(defaults[0]));
	tcase_add_loop_test(tc, scan, 0, sizeof(scans) / sizeof(scans[0]));
	tcase_add_test(tc, bad_bytes);
	tcase_add_test(tc, markers_unknown);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
