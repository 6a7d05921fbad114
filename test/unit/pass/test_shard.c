/* shard: URL normalisation as a table (schemes, users, ports, case, ".git", scp-like), the push
 * branch rules, the hash pinned to golden values (a change would re-shard every install),
 * ownership stable across equal pairs, one owner per automation, a fair spread over many
 * URLs, policy reporting and the shard key. */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/pass/shard.h"
#include "imageguard/config/config.h"
#include "imageguard/git/gitauth.h"
#include "imageguard/util/error.h"

static const struct {
	const char *url, *want;
} norm_cases[] = {
    {"https://github.com/org/app", "github.com/org/app"},
    {"https://github.com/org/app.git", "github.com/org/app"},
    {"https://github.com/org/app/", "github.com/org/app"},
    {"https://github.com/org/app.git/", "github.com/org/app"},
    {"HTTPS://GitHub.COM/org/App", "github.com/org/App"},
    {"https://github.com:443/org/app", "github.com/org/app"},
    {"https://github.com:8443/org/app", "github.com:8443/org/app"},
    {"http://git.local:80/x/y.git", "git.local/x/y"},
    {"http://git.local:443/x/y", "git.local:443/x/y"},
    {"https://user:token@github.com/org/app", "github.com/org/app"},
    {"ssh://git@github.com/org/app.git", "github.com/org/app"},
    {"ssh://git@github.com:22/org/app", "github.com/org/app"},
    {"ssh://git@github.com:2222/org/app", "github.com:2222/org/app"},
    {"ssh://GIT@GITHUB.COM/org/app", "github.com/org/app"},
    {"git@github.com:org/app.git", "github.com/org/app"},
    {"git@github.com:/org/app", "github.com/org/app"},
    {"github.com:org/app", "github.com/org/app"},
    {"ssh://git@[::1]:22/srv/repo.git", "[::1]/srv/repo"},
    {"ssh://git@[::1]:2222/srv/repo", "[::1]:2222/srv/repo"},
    {"ssh://git@[::1]/srv/repo", "[::1]/srv/repo"},
    {"https://github.com//org///app", "github.com/org/app"},
    {"https://github.com", "github.com"},
    {"git://host/x.git", "host/x"},
    {"git://host:9418/x", "host/x"},
    {"ftp://Host:21/x.git", "ftp://host:21/x"},
    {"file:///srv/git/app.git", "file:///srv/git/app"},
    {"FILE:///srv/git/app/", "file:///srv/git/app"},
    {"file:///srv//git/app", "file:///srv/git/app"},
    {"/srv/git/app.git", "file:///srv/git/app"},
    {"https://github.com/org/app.gitx", "github.com/org/app.gitx"},
    {"https://github.com/org/app.git.git", "github.com/org/app.git"},
    /* where shard's own parser once disagreed with gitauth's (now the one parser) */
    {".a:b", "file:///.a:b"},    /* a relative path to gitauth, once host ".a" */
    {"https://h:0443/x", "h/x"}, /* port 443, once ":0443" */
    {"git@[h]:repo", "h/repo"},  /* once "[h]/repo", not the unit of git@h:repo */
    {"ssh://[H]:2222/repo", "h:2222/repo"},
    {"FILE://a://b", "file:///a:/b"},
    {"GIT://h:9419/x", "h:9419/x"},
};

START_TEST(normalize_table)
{
	struct error err = ERROR_INIT;
	char *out = NULL;

	ck_assert_int_eq(shard_normalize_url(&out, norm_cases[_i].url, &err), 0);
	ck_assert_msg(strcmp(out, norm_cases[_i].want) == 0, "'%s': got '%s', want '%s'",
	              norm_cases[_i].url, out, norm_cases[_i].want);
	free(out);
}
END_TEST

START_TEST(normalize_invalid)
{
	static const char *const bad[] = {"", "ssh://git@/x", "https://:443/x", "https:///x",
	                                  /* gitauth refuses these, shard once normalised them */
	                                  "git@[::1]:repo", "ssh://h:abc/x", "https://h:+443/x",
	                                  "https://h:65536/x", "https://h:0/x", "/srv/a://b",
	                                  "git@host:path://x", "://x", "ssh://[::1]x/r",
	                                  "1ftp://h/x", "https://[]/x"};
	struct error err = ERROR_INIT;
	char *out = (char *)"x", *big = malloc(SHARD_MAX_URL + 16);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		error_clear(&err);
		ck_assert_int_eq(shard_normalize_url(&out, bad[i], &err), IG_EINVALID);
		ck_assert_ptr_null(out);
		ck_assert_msg(strstr(err.msg, "git url '") == err.msg, "%s", err.msg);
	}
	memset(big, 'a', SHARD_MAX_URL + 15);
	memcpy(big, "https://h/", 10);
	big[SHARD_MAX_URL + 15] = '\0';
	ck_assert_int_eq(shard_normalize_url(&out, big, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "longer than 4096 bytes"));
	free(big);
}
END_TEST

/* One parser decides what a host is: for every URL gitauth_load takes, or refuses, shard
 * agrees, and the unit starts with the host and port the transport connects to. */
START_TEST(agrees_with_gitauth)
{
	static const char *const urls[] = {"ssh://git@GitHub.com:2222/o/r",
	                                   "git@h.example:o/r",
	                                   "https://u:p@[::1]:8443/r",
	                                   "http://h/r",
	                                   ".a:b",
	                                   "a.b:c/d",
	                                   "git@[h]:r",
	                                   "ssh://[::1]/r",
	                                   "ssh://[::1]x/r",
	                                   "git@[::1]:r",
	                                   "https://h:+443/r",
	                                   "https://h:0/r",
	                                   "ssh://h:99999/r",
	                                   "ssh://h:abc/r",
	                                   "/srv/a://b",
	                                   "https://[]/r",
	                                   "file:///srv/r"};

	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		struct gitauth a;
		struct error err = ERROR_INIT;
		char *out = NULL, want[300];
		int rc = gitauth_load(&a, urls[i], NULL, &err);

		ck_assert_msg((shard_normalize_url(&out, urls[i], &err) == 0) == (rc == 0), "'%s'",
		              urls[i]);
		if (rc == 0 && a.host) {
			for (char *c = a.host; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			snprintf(want, sizeof(want), strchr(a.host, ':') ? "[%s]" : "%s", a.host);
			ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "'%s': %s", urls[i],
			              out);
			ck_assert_msg(strchr(":/", out[strlen(want)]) != NULL, "'%s': %s", urls[i],
			              out);
			if (out[strlen(want)] == ':')
				ck_assert_uint_eq(strtoul(out + strlen(want) + 1, NULL, 10),
				                  a.port);
		}
		free(out);
		gitauth_release(&a);
	}
}
END_TEST

static struct config_git_source src_of(const char *url)
{
	struct config_git_source s;

	memset(&s, 0, sizeof(s));
	s.url = (char *)url;
	return s;
}

static struct config_automation auto_of(const struct config_git_source *src, const char *ns,
                                        const char *checkout, const char *push, bool given,
                                        const char *refspec)
{
	struct config_automation a;

	memset(&a, 0, sizeof(a));
	a.ns = (char *)ns;
	a.source = src;
	a.checkout_branch = (char *)checkout;
	a.push_branch = (char *)push;
	a.push_branch_given = given;
	a.push_refspec = (char *)refspec;
	return a;
}

START_TEST(push_branch_rules)
{
	struct config_git_source s = src_of("https://h/x");
	struct config_automation a = auto_of(&s, "ns", "main", "main", false, NULL);

	ck_assert_str_eq(shard_push_branch(&a), "main");
	a = auto_of(&s, "ns", "main", "auto", true, NULL);
	ck_assert_str_eq(shard_push_branch(&a), "auto");
	a = auto_of(&s, "ns", "main", "main", false, "refs/heads/main:refs/heads/review");
	ck_assert_str_eq(shard_push_branch(&a), "review");
	a = auto_of(&s, "ns", "main", "main", false, "HEAD:refs/for/main");
	ck_assert_str_eq(shard_push_branch(&a), "refs/for/main");
	/* with both, the push branch is the unit (the refspec is pushed beside it) */
	a = auto_of(&s, "ns", "main", "auto", true, "HEAD:refs/for/main");
	ck_assert_str_eq(shard_push_branch(&a), "auto");
}
END_TEST

START_TEST(hash_golden)
{
	/* FNV-1a 64 then fmix64, computed independently (Python) over "<url>\n<branch>" */
	ck_assert(shard_hash("github.com/org/app", "main") == 10205796356794706460ull);
	ck_assert(shard_hash("file://srv/git/x", "master") != 10454125130619231246ull);
	ck_assert(shard_hash("file:///srv/git/x", "master") == 10454125130619231246ull);
	ck_assert(shard_hash("", "") == 8812561691861247334ull);
	ck_assert(shard_hash("a", "b") != shard_hash("a\nb", ""));
}
END_TEST

/* Spellings of one repository: with one branch, always one shard. */
START_TEST(same_pair_same_shard)
{
	static const char *const same[] = {
	    "https://github.com/org/app",   "https://GITHUB.com:443/org/app.git/",
	    "ssh://git@github.com/org/app", "ssh://git@github.com:22/org/app.git",
	    "git@github.com:org/app.git",   "http://github.com:80//org/app"};
	struct error err = ERROR_INIT;

	for (unsigned n = 1; n <= 16; n++) {
		unsigned first = 0, got;

		for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
			struct config_git_source s = src_of(same[i]);
			struct config_automation a = auto_of(&s, "ns", "main", "main", false, NULL);
			struct config_automation b =
			    auto_of(&s, "other", "dev", "main", true, NULL); /* same push branch */

			ck_assert_int_eq(shard_of(&got, &a, n, &err), 0);
			if (i == 0)
				first = got;
			ck_assert_uint_eq(got, first);
			ck_assert_int_eq(shard_of(&got, &b, n, &err), 0);
			ck_assert_uint_eq(got, first);
			ck_assert_uint_lt(got, n);
		}
	}
}
END_TEST

/* Every automation has exactly one owner among the N instances, and the spread of many
 * repositories over N shards is within 15% of even, powers of two included (measured: at most
 * 0.6% off for N=2, 1.5% for 4, 2.7% for 3, 12.5% for 16). */
START_TEST(one_owner_fair_spread)
{
	enum { URLS = 3000 };
	static const unsigned ns[] = {2, 3, 4, 5, 7, 8, 16};

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		unsigned count[16] = {0};

		for (unsigned u = 0; u < URLS; u++) {
			char url[96];
			struct config_git_source s;
			struct config_automation a;
			unsigned owners = 0;

			snprintf(url, sizeof(url), "https://git.example.com/team-%u/service-%u.git",
			         u % 37, u);
			s = src_of(url);
			a = auto_of(&s, "ns", "main", "main", false, NULL);
			for (unsigned i = 0; i < ns[k]; i++) {
				struct shard_spec sp = {NULL, ns[k], i};

				if (shard_owns(&sp, &a)) {
					owners++;
					count[i]++;
				}
			}
			ck_assert_uint_eq(owners, 1);
		}
		for (unsigned i = 0; i < ns[k]; i++) {
			double mean = (double)URLS / ns[k];

			ck_assert_msg(count[i] > mean * 0.85 && count[i] < mean * 1.15,
			              "N=%u shard %u has %u of %d", ns[k], i, count[i], URLS);
		}
	}
}
END_TEST

START_TEST(no_sharding_owns_all)
{
	struct config_git_source s = src_of("ssh://git@/broken");
	struct config_automation a = auto_of(&s, "ns", "main", "main", false, NULL);
	struct shard_spec none = SHARD_SPEC_INIT, zero = {NULL, 3, 0}, one = {NULL, 3, 1};

	ck_assert(shard_owns(NULL, &a));
	ck_assert(shard_owns(&none, &a));
	/* a URL that cannot be normalised belongs to shard 0 only */
	ck_assert(shard_owns(&zero, &a));
	ck_assert(!shard_owns(&one, &a));
}
END_TEST

START_TEST(reports_policy)
{
	struct config_git_source s1 = src_of("https://h/a"), s2 = src_of("https://h/b");
	struct config_automation autos[2];
	struct config_policy pols[3];
	struct config c;
	unsigned o1, o2;
	struct error err = ERROR_INIT;

	memset(&c, 0, sizeof(c));
	memset(pols, 0, sizeof(pols));
	autos[0] = auto_of(&s1, "a", "main", "main", false, NULL);
	autos[1] = auto_of(&s2, "b", "main", "main", false, NULL);
	pols[0].ns = (char *)"a";
	pols[1].ns = (char *)"b";
	pols[2].ns = (char *)"lonely";
	c.automations = autos;
	c.automations_len = 2;
	c.policies = pols;
	c.policies_len = 3;
	ck_assert_int_eq(shard_of(&o1, &autos[0], 4, &err), 0);
	ck_assert_int_eq(shard_of(&o2, &autos[1], 4, &err), 0);
	for (unsigned i = 0; i < 4; i++) {
		struct shard_spec sp = {NULL, 4, i};

		bool owns[2] = {o1 == i, o2 == i};

		ck_assert(shard_reports_policy(&sp, &c, NULL, &pols[0]) == (i == o1));
		ck_assert(shard_reports_policy(&sp, &c, NULL, &pols[1]) == (i == o2));
		ck_assert(shard_reports_policy(&sp, &c, NULL, &pols[2]) == (i == 0));
		ck_assert(shard_reports_policy(&sp, &c, owns, &pols[0]) == (i == o1));
		ck_assert(shard_reports_policy(&sp, &c, owns, &pols[1]) == (i == o2));
	}
	/* a policy both select: only a shard owning both reports it */
	pols[1].ns = (char *)"a";
	autos[1].ns = (char *)"a";
	for (unsigned i = 0; i < 4; i++) {
		struct shard_spec sp = {NULL, 4, i};

		ck_assert(shard_reports_policy(&sp, &c, NULL, &pols[0]) == (i == o1 && i == o2));
	}
	ck_assert(shard_reports_policy(NULL, &c, NULL, &pols[2]));
}
END_TEST

START_TEST(key_names_the_shard)
{
	static const struct {
		struct shard_spec s;
		const char *want;
	} cases[] = {
	    {{NULL, 0, 0}, ""},
	    {{NULL, 3, 1}, "shards=3/index=1"},
	    {{"!sharding.fluxcd.io/key", 0, 0}, "!sharding.fluxcd.io/key"},
	    {{"sharding.fluxcd.io/key=shard1", 4, 0},
	     "sharding.fluxcd.io/key=shard1;shards=4/index=0"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *k = shard_key(&cases[i].s);

		ck_assert_str_eq(k, cases[i].want);
		free(k);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shard");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, normalize_table, 0, sizeof(norm_cases) / sizeof(norm_cases[0]));
	tcase_add_test(tc, normalize_invalid);
	tcase_add_test(tc, agrees_with_gitauth);
	tcase_add_test(tc, push_branch_rules);
	tcase_add_test(tc, hash_golden);
	tcase_add_test(tc, same_pair_same_shard);
	tcase_add_test(tc, one_owner_fair_spread);
	tcase_add_test(tc, no_sharding_owns_all);
	tcase_add_test(tc, reports_policy);
	tcase_add_test(tc, key_names_the_shard);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
