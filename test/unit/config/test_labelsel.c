/* labelsel: the parse and match cases of k8s.io/apimachinery pkg/labels/selector_test.go
 * (kubernetes/kubernetes staging, commit 01d7e53f7ea4c0c0fd64590998d4c0014ac40600:
 * TestSelectorParse, TestSelectorMatches, TestSetSelectorParser, TestRequirementConstructor,
 * TestRequirementSelectorMatching) transcribed as data, plus Flux's sharding selectors and the
 * caps. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/config/labelsel.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

/* Selectors that parse, with their number of requirements. */
static const struct {
	const char *sel;
	int len;
} good[] = {
    /* TestSelectorParse */
    {"x=a,y=b,z=c", 3},
    {"", 0},
    {"x!=a,y=b", 2},
    {"x=", 1},
    {"x= ", 1},
    {"x=,z= ", 2},
    {"x= ,z= ", 2},
    {"!x", 1},
    {"x>1", 1},
    {"x>1,z<5", 2},
    /* TestSetSelectorParser, the valid ones */
    {"\rx", 1},
    {"this-is-a-dns.domain.com/key-with-dash", 1},
    {"this-is-another-dns.domain.com/key-with-dash in (so,what)", 1},
    {"0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)", 1},
    {"foo  in\t (abc)", 1},
    {"x notin\n (abc)", 1},
    {"x  notin\t\t\t(abc,def)", 1},
    {"x in (abc,def)", 1},
    {"x in (abc,)", 1},
    {"x in ()", 1},
    {"x notin (abc,def),bar,z in (),w", 4},
    {"x,y in (a)", 2},
    {"x=a", 1},
    {"x<7", 1},
    {"x=a,y!=b", 2},
    {"x=a,y!=b,z in (h,i,j)", 3},
    {"x notin ( )", 1},
    {"x notin (, a)", 1},
    {"a ", 1},
    {"a in (x,y,notin, z,in)", 1},
    /* TestRequirementConstructor, the valid ones, in string form */
    {"1foo in (bar)", 1},
    {"1234 in (bar)", 1},
    {"y>1", 1},
    {"z<6", 1},
    /* TestSelectorMatches: keywords as exact values */
    {"notin=in", 1},
    /* Flux's sharding */
    {"!sharding.fluxcd.io/key", 1},
    {"sharding.fluxcd.io/key=shard1", 1},
    {"sharding.fluxcd.io/key in (shard1, shard2)", 1},
    {"x,y", 2},
    {"x==a", 1},
    {"in", 1}, /* 'in' as a key: the parser reads it in a values context */
};

static const char *const bad[] = {
    /* TestSelectorParse */
    "x=a||y=b",
    "x==a==b",
    "!x=a",
    "x<a",
    /* TestSetSelectorParser, the invalid ones */
    "x,,y",
    ",x,y",
    "x nott in (y)",
    "a in (xyz),",
    "a in (xyz)b notin ()",
    "a in (xyz abc)",
    "a notin(",
    "a (",
    "(",
    /* TestRequirementConstructor, the invalid ones, in string form */
    "foo>bar",
    "barz<blah",
    /* more: keys and values as the API server checks them */
    "-x",
    "x=-a",
    "x=a b",
    "Sharding.FluxCD.io/key",
    "x/y/z",
    "/x",
    "x/",
    "x in",
    "x in (a",
    "x=(",
    "!",
    "!!x",
    "x!",
    ",",
    "x,",
    "x>-1", /* '-1' and '+1' are not label values, though ParseInt reads them */
    "x>+1",
    "x=1,",
    "x>",
    "x>99999999999999999999",
};

START_TEST(parses)
{
	struct labelsel *s = NULL;
	struct error err = ERROR_INIT;
	int rc = labelsel_parse(&s, good[_i].sel, &err);

	ck_assert_msg(rc == 0, "'%s': %s", good[_i].sel, err.msg);
	ck_assert_uint_eq(labelsel_len(s), (size_t)good[_i].len);
	labelsel_free(s);
}
END_TEST

START_TEST(refuses)
{
	struct labelsel *s = (struct labelsel *)1;
	struct error err = ERROR_INIT;

	ck_assert_msg(labelsel_parse(&s, bad[_i], &err) == IG_EINVALID, "'%s' parsed", bad[_i]);
	ck_assert_ptr_null(s);
	ck_assert_msg(strncmp(err.msg, "label selector '", 16) == 0 && !strchr(err.msg, '\n'), "%s",
	              err.msg);
}
END_TEST

/* labels as "k=v,k=v" (no spaces) into key, value pairs */
static void labels_of(struct strvec *out, const char *text)
{
	char buf[256], *save = buf;

	snprintf(buf, sizeof(buf), "%s", text);
	while (*save) {
		char *comma = strchr(save, ','), *eq;

		if (comma)
			*comma = '\0';
		eq = strchr(save, '=');
		*eq = '\0';
		ck_assert_int_eq(strvec_push(out, save), 0);
		ck_assert_int_eq(strvec_push(out, eq + 1), 0);
		save = comma ? comma + 1 : save + strlen(save);
	}
}

static const struct {
	const char *sel, *labels;
	bool match;
} matches[] = {
    /* TestSelectorMatches */
    {"", "x=y", true},
    {"x=y", "x=y", true},
    {"x=y,z=w", "x=y,z=w", true},
    {"x!=y,z!=w", "x=z,z=a", true},
    {"notin=in", "notin=in", true},
    {"x", "x=z", true},
    {"!x", "y=z", true},
    {"x>1", "x=2", true},
    {"x<1", "x=0", true},
    {"x=z", "", false},
    {"x=y", "x=z", false},
    {"x=y,z=w", "x=w,z=w", false},
    {"x!=y,z!=w", "x=z,z=w", false},
    {"x", "y=z", false},
    {"!x", "x=z", false},
    {"x>1", "x=0", false},
    {"x<1", "x=2", false},
    {"foo=bar", "foo=bar,baz=blah", true},
    {"baz=blah", "foo=bar,baz=blah", true},
    {"foo=bar,baz=blah", "foo=bar,baz=blah", true},
    {"foo=blah", "foo=bar,baz=blah", false},
    {"baz=bar", "foo=bar,baz=blah", false},
    {"foo=bar,foobar=bar,baz=blah", "foo=bar,baz=blah", false},
    /* TestRequirementSelectorMatching, in string form */
    {"x in (foo),y notin (alpha)", "x=foo,y=baz", true},
    {"x in (foo),y in (alpha)", "x=foo,y=baz", false},
    {"x notin (),y", "y=", true},
    {"!x,y", "y=", true},
    {"x notin (),!y", "y=", false},
    {"x in ()", "y=baz", false},
    {"z>1", "z=2", true},
    {"z>1", "z=v2", false},
    /* Flux's sharding: the main instance and a shard */
    {"!sharding.fluxcd.io/key", "app=web", true},
    {"!sharding.fluxcd.io/key", "sharding.fluxcd.io/key=shard1", false},
    {"sharding.fluxcd.io/key=shard1", "sharding.fluxcd.io/key=shard1", true},
    {"sharding.fluxcd.io/key=shard1", "sharding.fluxcd.io/key=shard2", false},
    {"sharding.fluxcd.io/key=shard1", "", false},
    {"sharding.fluxcd.io/key in (shard1,shard2)", "sharding.fluxcd.io/key=shard2", true},
    {"sharding.fluxcd.io/key notin (shard1)", "", true},
    {"x=", "x=", true},
    {"x=", "x=a", false},
    {"x==a", "x=a", true},
    {"x in (a,,b)", "x=", true},
    {"x<0", "x=-3", true},
    {"x>1", "x=+2", true},
    {"x>1", "x=2x", false},
};

START_TEST(matches_labels)
{
	struct labelsel *s = NULL;
	struct strvec labels = STRVEC_INIT;
	struct error err = ERROR_INIT;

	ck_assert_msg(labelsel_parse(&s, matches[_i].sel, &err) == 0, "'%s': %s", matches[_i].sel,
	              err.msg);
	labels_of(&labels, matches[_i].labels);
	ck_assert_msg(labelsel_matches(s, &labels) == matches[_i].match, "'%s' on '%s'",
	              matches[_i].sel, matches[_i].labels);
	strvec_release(&labels);
	labelsel_free(s);
}
END_TEST

START_TEST(caps)
{
	char *text = malloc(LABELSEL_MAX_BYTES + 2);
	struct labelsel *s = NULL;
	struct error err = ERROR_INIT;
	size_t n = 0;

	memset(text, 'a', LABELSEL_MAX_BYTES + 1);
	text[LABELSEL_MAX_BYTES + 1] = '\0';
	ck_assert_int_eq(labelsel_parse(&s, text, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "longer than 8192 bytes"));
	for (int i = 0; i <= LABELSEL_MAX_REQUIREMENTS; i++)
		n += (size_t)snprintf(text + n, LABELSEL_MAX_BYTES - n, "%sk%d", i ? "," : "", i);
	ck_assert_int_eq(labelsel_parse(&s, text, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "more than 256 requirements"));
	ck_assert_int_eq(labelsel_check("x=a", &err), 0);
	ck_assert(labelsel_matches(NULL, &(struct strvec)STRVEC_INIT));
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("labelsel");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, parses, 0, sizeof(good) / sizeof(good[0]));
	tcase_add_loop_test(tc, refuses, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_loop_test(tc, matches_labels, 0, sizeof(matches) / sizeof(matches[0]));
	tcase_add_test(tc, caps);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
