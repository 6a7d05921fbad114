/* Which cloud provider's token may go to a registry host (test/data/flux/cloudhosts.txt:
 * fluxcd/pkg's host tests transcribed, and look-alike hosts of our own): every case through
 * cloudhost_match, kind, region and FIPS flag as the table says. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/cloudhost.h"

#define CASES_MAX 160
#define FIELD 256

struct hcase {
	int line;
	char host[FIELD], expect[32], region[FIELD];
	bool fips;
};

static struct hcase cases[CASES_MAX];
static size_t ncases;

static void bad_table(int line, const char *why)
{
	fprintf(stderr, "test/data/flux/cloudhosts.txt:%d: %s\n", line, why);
	exit(2);
}

/* "HOST EXPECT [REGION [fips]]" into c. */
static void parse_case(struct hcase *c, char *text, int line)
{
	char *f[4] = {0};
	size_t n = 0;

	for (char *p = text; *p && n < 4;) {
		f[n++] = p;
		p += strcspn(p, " ");
		if (*p)
			*p++ = '\0';
	}
	if (n < 2 || strlen(f[0]) >= FIELD || strlen(f[1]) >= sizeof(c->expect))
		bad_table(line, "a case is HOST EXPECT [REGION [fips]]");
	c->line = line;
	snprintf(c->host, sizeof(c->host), "%s", f[0]);
	snprintf(c->expect, sizeof(c->expect), "%s", f[1]);
	snprintf(c->region, sizeof(c->region), "%s", n > 2 ? f[2] : "");
	c->fips = n > 3 && strcmp(f[3], "fips") == 0;
	if (n > 3 && !c->fips)
		bad_table(line, "the fourth field can only be 'fips'");
}

static void load_cases(void)
{
	const char *src = getenv("IMAGEGUARD_SRC");
	char path[1024], text[1024];
	FILE *f;
	int line = 0;

	snprintf(path, sizeof(path), "%s/test/data/flux/cloudhosts.txt", src ? src : ".");
	if (!(f = fopen(path, "r")))
		bad_table(0, "cannot read the table");
	while (fgets(text, sizeof(text), f)) {
		text[strcspn(text, "\n")] = '\0';
		line++;
		if (!text[0] || text[0] == '#' || strncmp(text, "source ", 7) == 0)
			continue;
		if (ncases == CASES_MAX)
			bad_table(line, "too many cases for CASES_MAX");
		parse_case(&cases[ncases++], text, line);
	}
	fclose(f);
	if (ncases < 50)
		bad_table(line, "fewer cases than the table holds");
}

static enum cloudhost_kind kind_of(const char *expect, int line)
{
	static const struct {
		const char *name;
		enum cloudhost_kind kind;
	} names[] = {{"aws", CLOUDHOST_ECR},
	             {"aws-public", CLOUDHOST_ECR_PUBLIC},
	             {"gcp", CLOUDHOST_GCP},
	             {"azure", CLOUDHOST_ACR},
	             {"none", CLOUDHOST_NONE}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(expect, names[i].name) == 0)
			return names[i].kind;
	bad_table(line, "EXPECT is aws, aws-public, gcp, azure or none");
	return CLOUDHOST_NONE;
}

START_TEST(flux_case)
{
	const struct hcase *c = &cases[_i];
	struct cloudhost h;
	enum cloudhost_kind want = kind_of(c->expect, c->line);

	ck_assert_msg(cloudhost_match(&h, c->host) == want && h.kind == want,
	              "cloudhosts.txt:%d: '%s': kind %d, want %s", c->line, c->host, (int)h.kind,
	              c->expect);
	ck_assert_msg(strcmp(h.region, c->region) == 0, "cloudhosts.txt:%d: '%s': region '%s'",
	              c->line, c->host, h.region);
	ck_assert_msg(h.fips == c->fips, "cloudhosts.txt:%d: '%s': fips", c->line, c->host);
	if (want == CLOUDHOST_ECR)
		ck_assert_msg(*h.partition && strstr(c->host, h.partition),
		              "cloudhosts.txt:%d: partition '%s'", c->line, h.partition);
	else
		ck_assert_str_eq(h.partition, "");
}
END_TEST

/* Hosts the table cannot spell: NULL, empty, too long for a DNS name, a region too long for
 * the field; and each kind's provider name. */
START_TEST(edges_and_providers)
{
	struct cloudhost h;
	char longhost[400], region[100];

	ck_assert_int_eq(cloudhost_match(&h, NULL), CLOUDHOST_NONE);
	ck_assert_int_eq(cloudhost_match(&h, ""), CLOUDHOST_NONE);
	memset(longhost, 'a', sizeof(longhost));
	snprintf(longhost + 300, 100, ".gcr.io");
	ck_assert_int_eq(cloudhost_match(&h, longhost), CLOUDHOST_NONE);
	memset(region, 'r', 70);
	region[70] = '\0';
	snprintf(longhost, sizeof(longhost), "1.dkr.ecr.%s.amazonaws.com", region);
	ck_assert_int_eq(cloudhost_match(&h, longhost), CLOUDHOST_NONE);
	ck_assert_str_eq(cloudhost_provider(CLOUDHOST_ECR), "aws");
	ck_assert_str_eq(cloudhost_provider(CLOUDHOST_ECR_PUBLIC), "aws");
	ck_assert_str_eq(cloudhost_provider(CLOUDHOST_GCP), "gcp");
	ck_assert_str_eq(cloudhost_provider(CLOUDHOST_ACR), "azure");
	ck_assert_str_eq(cloudhost_provider(CLOUDHOST_NONE), "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cloudhost");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	load_cases();
	tcase_add_loop_test(tc, flux_case, 0, (int)ncases);
	tcase_add_test(tc, edges_and_providers);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
