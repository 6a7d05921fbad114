/* Unit tests for Link header parsing: each style registries use, resolution against the
 * request URL, and malformed values that must be errors (never "no next page") or at least
 * never crash. */
#include <check.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/registry/linkheader.h"

#define BASE "https://r.example:5000/v2/o/app/tags/list?n=100"

static const struct {
	const char *in;
	int rc;
	const char *next; /* NULL: no next link */
} cases[] = {
    /* distribution: relative path */
    {"</v2/o/app/tags/list?last=v9&n=100>; rel=\"next\"", 0,
     "https://r.example:5000/v2/o/app/tags/list?last=v9&n=100"},
    /* absolute, same host */
    {"<https://r.example:5000/v2/o/app/tags/list?n=100&last=b>; rel=\"next\"", 0,
     "https://r.example:5000/v2/o/app/tags/list?n=100&last=b"},
    /* absolute, other host: resolved as given (the registry layer refuses it) */
    {"<https://cdn.example/v2/x>; rel=\"next\"", 0, "https://cdn.example/v2/x"},
    /* query only, resolved against the request URL */
    {"<?n=100&last=c>; rel=\"next\"", 0, "https://r.example:5000/v2/o/app/tags/list?n=100&last=c"},
    /* path-relative */
    {"<list?last=d>; rel=\"next\"", 0, "https://r.example:5000/v2/o/app/tags/list?last=d"},
    /* unquoted rel, any case, extra whitespace */
    {"</p2>;rel=next", 0, "https://r.example:5000/p2"},
    {"</p2> ;  REL = NEXT", 0, "https://r.example:5000/p2"},
    /* several links, next not first; relation lists; quoted commas and semicolons */
    {"</first>; rel=\"first\", </p3>; title=\"a, b; c\"; rel=\"prefetch next\"", 0,
     "https://r.example:5000/p3"},
    {"</a>; rel=\"prev\", </b>; rel=\"last\"", 0, NULL},
    {"</a>; rel=\"nextish\"", 0, NULL},
    {"</a>; foo; rel=next", 0, "https://r.example:5000/a"},
    {"", 0, NULL},
    {" , ", 0, NULL},
    /* malformed: errors, so a broken header never reads as "the last page" */
    {"/v2/o/app/tags/list?last=x; rel=\"next\"", IG_EINVALID, NULL},
    {"</unterminated; rel=\"next\"", IG_EINVALID, NULL},
    {"</a>; rel=\"next", IG_EINVALID, NULL},
    {"</a> rel=next", IG_EINVALID, NULL},
    {"</a>; =next", IG_EINVALID, NULL},
    {"<>; rel=next", IG_EINVALID, NULL},
};

START_TEST(next_link)
{
	struct error err = ERROR_INIT;
	char *next = (char *)1;
	int rc = linkheader_next(&next, cases[_i].in, BASE, &err);

	ck_assert_msg(rc == cases[_i].rc, "'%s': rc %d (%s)", cases[_i].in, rc, err.msg);
	ck_assert_pstr_eq(next, cases[_i].next);
	if (rc < 0)
		ck_assert_msg(strncmp(err.msg, "Link header: ", 13) == 0, "%s", err.msg);
	free(next);
}
END_TEST

static void parse_quietly(const char *s)
{
	struct error err = ERROR_INIT;
	char *next = NULL;
	int rc = linkheader_next(&next, s, BASE, &err);

	ck_assert(rc == 0 || rc == IG_EINVALID);
	ck_assert(rc == 0 || next == NULL);
	free(next);
}

static const char *const garbage[] = {
    "<",
    ">",
    "<>",
    "<<>>; rel=next",
    "<\x01>; rel=next",
    "<a b>; rel=next",
    "<http://[::1>; rel=next",
    "<http://%zz/>; rel=next",
    "<javascript:x>; rel=next",
    "<a>;;;;",
    "<a>; rel=\"\\",
    "<a>; rel=\"next\\\"",
    ";;;,,,",
    "\xff<\xfe>",
};

START_TEST(fuzz_table)
{
	parse_quietly(garbage[_i]);
}
END_TEST

START_TEST(fuzz_mutations)
{
	static const char subst[] = "<>;,=\" \\\x01";
	const char *in = cases[_i].in;
	size_t len = strlen(in);
	char *copy = malloc(len + 1);

	for (size_t cut = 0; cut <= len; cut++) {
		memcpy(copy, in, cut);
		copy[cut] = '\0';
		parse_quietly(copy);
	}
	for (size_t pos = 0; pos < len; pos++)
		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			memcpy(copy, in, len + 1);
			copy[pos] = subst[k];
			parse_quietly(copy);
		}
	free(copy);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("linkheader");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_loop_test(tc, next_link, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_loop_test(tc, fuzz_table, 0, sizeof(garbage) / sizeof(garbage[0]));
	tcase_add_loop_test(tc, fuzz_mutations, 0, sizeof(cases) / sizeof(cases[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? 1 : 0;
}
