/* yamltree: the one reading of YAML nulls, merge keys and scalars that lint, verify (through
 * workload) and kubeconfig share; and the one workload kind table over it. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "imageguard/markers/workload.h"
#include "imageguard/util/error.h"
#include "imageguard/util/yamltree.h"

static yaml_document_t doc;
static yaml_parser_t parser;

static yaml_node_t *load(const char *text)
{
	ck_assert(yaml_parser_initialize(&parser));
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	ck_assert(yaml_parser_load(&parser, &doc));
	return yaml_document_get_root_node(&doc);
}

static void unload(void)
{
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
}

/* The YAML null test: `v` of each document, null or not as Kubernetes reads it. */
static const struct {
	const char *yaml;
	bool null;
} nulls[] = {
    {"v:", true},        {"v: ~", true},     {"v: null", true},  {"v: Null", true},
    {"v: NULL", true},   {"other: 1", true}, {"v: ''", false},   {"v: 'null'", false},
    {"v: \"~\"", false}, {"v: nULL", false}, {"v: 0", false},    {"v: [ ]", false},
    {"v: {}", false},    {"v: none", false}, {"v: \"\"", false}, {"v: nil", false},
};

START_TEST(null_table)
{
	yaml_node_t *root = load(nulls[_i].yaml);

	ck_assert_msg(yamltree_is_null(yamltree_get(&doc, root, "v")) == nulls[_i].null, "%s",
	              nulls[_i].yaml);
	unload();
}
END_TEST

/* Merge keys: explicit keys win, then merged maps in order, nested merges followed. */
static const struct {
	const char *yaml, *key, *want; /* want NULL: absent */
} merges[] = {
    {"base: &b {image: a}\nm:\n  <<: *b\n", "image", "a"},
    {"base: &b {image: a}\nm:\n  <<: *b\n  image: c\n", "image", "c"},
    {"x: &x {k: 1}\ny: &y {k: 2, j: 3}\nm:\n  <<: [*x, *y]\n", "k", "1"},
    {"x: &x {k: 1}\ny: &y {k: 2, j: 3}\nm:\n  <<: [*x, *y]\n", "j", "3"},
    {"a: &a {deep: yes}\nb: &b {<<: *a}\nm: {<<: *b}\n", "deep", "yes"},
    {"m: {'<<': {k: quoted}}\n", "k", NULL}, /* a quoted << is an ordinary key */
    {"m: {<<: scalar}\n", "k", NULL},
    {"m: {k: \"a\\0b\"}\n", "k", NULL}, /* a NUL in a scalar: no string */
};

START_TEST(merge_table)
{
	yaml_node_t *root = load(merges[_i].yaml);
	yaml_node_t *m = yamltree_get(&doc, root, "m");

	ck_assert_ptr_nonnull(m);
	ck_assert_pstr_eq(yamltree_str(yamltree_get(&doc, m, merges[_i].key)), merges[_i].want);
	unload();
}
END_TEST

/* Every kind of the table is found, merge keys included, and its API path is known. */
static const struct {
	const char *yaml, *kind, *path;
} kinds[] = {
    {"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i:1}]}", "Pod",
     "/api/v1/namespaces/default/pods/p"},
    {"kind: Deployment\nmetadata: {name: d, namespace: n}\nspec:\n  template:\n    spec:\n"
     "      containers: [{name: c, image: i:1}]",
     "Deployment", "/apis/apps/v1/namespaces/n/deployments/d"},
    {"kind: CronJob\nmetadata: {name: j}\nspec: {jobTemplate: {spec: {template: {spec: "
     "{containers: [{name: c, image: i:1}]}}}}}",
     "CronJob", "/apis/batch/v1/namespaces/default/cronjobs/j"},
    {"kind: ReplicationController\nmetadata: {name: r}\nspec: {template: {spec: {containers: "
     "[{name: c, image: i:1}]}}}",
     "ReplicationController", "/api/v1/namespaces/default/replicationcontrollers/r"},
    {"kind: PodTemplate\nmetadata: {name: t}\ntemplate: {spec: {containers: [{name: c, image: "
     "i:1}]}}",
     "PodTemplate", "/api/v1/namespaces/default/podtemplates/t"},
    {"pod: &pod {containers: [{name: c, image: i:1}]}\nkind: StatefulSet\nmetadata: {name: s}\n"
     "spec: {template: {spec: {<<: *pod}}}",
     "StatefulSet", "/apis/apps/v1/namespaces/default/statefulsets/s"},
};

START_TEST(kind_table)
{
	struct workload_set set = WORKLOAD_SET_INIT;
	struct error err = ERROR_INIT;
	char *path;

	ck_assert_int_eq(
	    workload_scan_buffer(&set, "f.yaml", kinds[_i].yaml, strlen(kinds[_i].yaml), &err), 0);
	ck_assert_uint_eq(set.len, 1);
	ck_assert_str_eq(set.items[0].kind, kinds[_i].kind);
	ck_assert_str_eq(set.items[0].image, "i:1");
	ck_assert_ptr_nonnull(
	    path = workload_api_path(set.items[0].kind, set.items[0].ns, set.items[0].name));
	ck_assert_str_eq(path, kinds[_i].path);
	free(path);
	workload_set_release(&set);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("yamltree");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, null_table, 0, sizeof(nulls) / sizeof(nulls[0]));
	tcase_add_loop_test(tc, merge_table, 0, sizeof(merges) / sizeof(merges[0]));
	tcase_add_loop_test(tc, kind_table, 0, sizeof(kinds) / sizeof(kinds[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
