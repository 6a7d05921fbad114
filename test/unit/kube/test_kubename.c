/* kubename: object names, namespaces, label keys and values as the API server checks them.
 * The DNS tables are k8s.io/apimachinery's own vectors (pkg/util/validation/validation_test.go
 * TestIsDNS1123Label and TestIsDNS1123Subdomain at eed236ceee2c19c2753a3d93ac0631dc20750454),
 * plus the names a hostile object would use to leave its place in a URL or a path. */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/kube/kubename.h"

/* IsDNS1123Label's good and bad values (apimachinery), then ours. */
static const char *const label_good[] = {
    "a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2",
};
static const char *const label_bad[] = {
    "",
    "A",
    "ABC",
    "aBc",
    "A1",
    "A-1",
    "1-A",
    "-",
    "a-",
    "-a",
    "1-",
    "-1",
    "_",
    "a_",
    "_a",
    "a_b",
    "1_",
    "_1",
    "1_2",
    ".",
    "a.",
    ".a",
    "a.b",
    "1.",
    ".1",
    "1.2",
    " ",
    "a ",
    " a",
    "a b",
    "1 ",
    " 1",
    "1 2",
    /* ours: what would leave a URL segment or a folder */
    "..",
    "a/b",
    "a%2e",
    "a?b",
    "a#b",
    "a\nb",
    "team-a/..",
};

/* IsDNS1123Subdomain's good and bad values (apimachinery), then ours. */
static const char *const subdomain_good[] = {
    "a",
    "ab",
    "abc",
    "a1",
    "a-1",
    "a--1--2--b",
    "0",
    "01",
    "012",
    "1a",
    "1-a",
    "1--a--b--2",
    "a.a",
    "a.1",
    "0.a",
    "1.2.3.4.5",
    "aa.bb.cc.dd.ee",
    /* ours */
    "podinfo",
    "a.b-c",
    "kube-system.regcred",
};
static const char *const subdomain_bad[] = {
    "",
    "A",
    "ABC",
    "aBc",
    "A1",
    "A-1",
    "1-A",
    "-",
    "a-",
    "-a",
    "1-",
    "-1",
    "_",
    "a_",
    "_a",
    "a_b",
    "1_",
    "_1",
    "1_2",
    ".",
    "a.",
    ".a",
    "1.",
    ".1",
    "a..b",
    "1..2",
    " ",
    "a ",
    " a",
    "a b",
    "1 ",
    " 1",
    "1 2",
    "A.a",
    "aB.a",
    "ab.A",
    "A1.a",
    "a1.A",
    "A.1",
    "aB.1",
    "A1.1",
    "1A.1",
    "0.A",
    "01.A",
    "012.A",
    "1A.a",
    "1a.A",
    "A.B.C.D.E",
    "AA.BB.CC.DD.EE",
    "a.B.c.d.e",
    "aa.bB.cc.dd.ee",
    "a@b",
    "a,b",
    "a_b",
    "a;b",
    "a:b",
    "a%b",
    "a?b",
    "a$b",
    /* ours: a '-' beside a dot, dot segments, separators and escapes */
    "a.-b",
    "a-.b",
    "a.b-",
    "-a.b",
    "..",
    "...",
    "./a",
    "a/..",
    "a/b",
    "%2e%2e",
    "a\\b",
    "a\tb",
    "a\r\nb",
    "\xc3\xa9",
};

START_TEST(dns_labels)
{
	char big[300];

	for (size_t i = 0; i < sizeof(label_good) / sizeof(label_good[0]); i++)
		ck_assert_msg(kubename_is_dns_name(label_good[i], 63, false) &&
		                  kubename_is_namespace(label_good[i]),
		              "label '%s' refused", label_good[i]);
	for (size_t i = 0; i < sizeof(label_bad) / sizeof(label_bad[0]); i++)
		ck_assert_msg(!kubename_is_dns_name(label_bad[i], 63, false) &&
		                  !kubename_is_namespace(label_bad[i]),
		              "label '%s' accepted", label_bad[i]);
	memset(big, 'a', 63);
	big[63] = '\0';
	ck_assert(kubename_is_namespace(big));
	big[63] = 'a';
	big[64] = '\0';
	ck_assert(!kubename_is_namespace(big));
	ck_assert(!kubename_is_namespace(NULL));
}
END_TEST

START_TEST(dns_subdomains)
{
	char big[300];

	for (size_t i = 0; i < sizeof(subdomain_good) / sizeof(subdomain_good[0]); i++)
		ck_assert_msg(kubename_is_dns_name(subdomain_good[i], 253, true) &&
		                  kubename_is_name(subdomain_good[i]),
		              "subdomain '%s' refused", subdomain_good[i]);
	for (size_t i = 0; i < sizeof(subdomain_bad) / sizeof(subdomain_bad[0]); i++)
		ck_assert_msg(!kubename_is_dns_name(subdomain_bad[i], 253, true) &&
		                  !kubename_is_name(subdomain_bad[i]),
		              "subdomain '%s' accepted", subdomain_bad[i]);
	memset(big, 'a', 253);
	big[253] = '\0';
	ck_assert(kubename_is_name(big));
	big[253] = 'a';
	big[254] = '\0';
	ck_assert(!kubename_is_name(big));
	/* a subdomain's labels have no cap of their own: only the whole name's */
	memset(big, 'a', 100);
	big[100] = '.';
	memset(big + 101, 'b', 100);
	big[201] = '\0';
	ck_assert(kubename_is_name(big));
	ck_assert(!kubename_is_name(NULL));
}
END_TEST

START_TEST(labels)
{
	ck_assert(kubename_is_label_key("app"));
	ck_assert(kubename_is_label_key("app.kubernetes.io/name"));
	ck_assert(kubename_is_label_key("kubernetes.io/metadata.name"));
	ck_assert(kubename_is_label_key("A_b.c-D"));
	ck_assert(!kubename_is_label_key(""));
	ck_assert(!kubename_is_label_key("/name"));
	ck_assert(!kubename_is_label_key("Example.com/name"));
	ck_assert(!kubename_is_label_key("a..b/name")); /* the prefix is a subdomain */
	ck_assert(!kubename_is_label_key("a/b/c"));
	ck_assert(!kubename_is_label_key("_a"));
	ck_assert(!kubename_is_label_key("-bad"));
	ck_assert(kubename_is_label_value(""));
	ck_assert(kubename_is_label_value("v1.2_x"));
	ck_assert(!kubename_is_label_value("a b"));
	ck_assert(!kubename_is_label_value("-a"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kubename");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, dns_labels);
	tcase_add_test(tc, dns_subdomains);
	tcase_add_test(tc, labels);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
