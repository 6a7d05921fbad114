/* kubename: object names, namespaces, label keys and values as the API server checks them. */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/kube/kubename.h"

static const struct {
	const char *s;
	size_t max;
	bool dots, ok;
} names[] = {
    {"podinfo", 253, true, true}, {"a.b-c", 253, true, true},
    {"a.b", 63, false, false}, /* a namespace has no dots */
    {"", 253, true, false},       {"-a", 253, true, false},
    {"a-", 253, true, false},     {".a", 253, true, false},
    {"..", 253, true, false},     {"A", 253, true, false},
    {"a_b", 253, true, false},    {"a/b", 253, true, false},
    {"a%2e", 253, true, false},
};

START_TEST(dns_names)
{
	char big[300];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(kubename_is_dns_name(names[i].s, names[i].max, names[i].dots) ==
		                  names[i].ok,
		              "'%s'", names[i].s);
	memset(big, 'a', 253);
	big[253] = '\0';
	ck_assert(kubename_is_dns_name(big, 253, true));
	big[253] = 'a';
	big[254] = '\0';
	ck_assert(!kubename_is_dns_name(big, 253, true));
	big[63] = '\0';
	ck_assert(kubename_is_dns_name(big, 63, false));
	big[63] = 'a';
	big[64] = '\0';
	ck_assert(!kubename_is_dns_name(big, 63, false));
}
END_TEST

START_TEST(labels)
{
	ck_assert(kubename_is_label_key("app"));
	ck_assert(kubename_is_label_key("app.kubernetes.io/name"));
	ck_assert(kubename_is_label_key("A_b.c-D"));
	ck_assert(!kubename_is_label_key(""));
	ck_assert(!kubename_is_label_key("/name"));
	ck_assert(!kubename_is_label_key("Example.com/name"));
	ck_assert(!kubename_is_label_key("a/b/c"));
	ck_assert(!kubename_is_label_key("_a"));
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

	tcase_add_test(tc, dns_names);
	tcase_add_test(tc, labels);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
