/* Unit tests for image reference splitting, validation and Docker Hub normalisation. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"

static const struct {
	const char *in;
	const char *name, *tag, *digest;
} splits[] = {
    {"nginx", "nginx", "", ""},
    {"nginx:1.25", "nginx", "1.25", ""},
    {"localhost:5000/app", "localhost:5000/app", "", ""},
    {"localhost:5000/app:v1", "localhost:5000/app", "v1", ""},
    {"ghcr.io/o/app:v1@sha256:abc", "ghcr.io/o/app", "v1", "sha256:abc"},
    {"127.0.0.1:5000/o/app@sha256:abc", "127.0.0.1:5000/o/app", "", "sha256:abc"},
    {"app:", "app", "", ""},
};

START_TEST(split)
{
	struct imageref_parts p;
	const char *s = splits[_i].in;

	imageref_split(&p, s, strlen(s));
	ck_assert_int_eq((int)p.name_len, (int)strlen(splits[_i].name));
	ck_assert(strncmp(s, splits[_i].name, p.name_len) == 0);
	ck_assert_int_eq((int)p.tag_len, (int)strlen(splits[_i].tag));
	ck_assert(strncmp(s + p.tag_start, splits[_i].tag, p.tag_len) == 0);
	ck_assert_int_eq((int)p.digest_len, (int)strlen(splits[_i].digest));
	ck_assert(strncmp(s + p.digest_start, splits[_i].digest, p.digest_len) == 0);
}
END_TEST

#define D64 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
static const struct {
	const char *in;
	unsigned flags;
	int rc;
	const char *registry, *repository, *tag, *digest;
} parses[] = {
    {"nginx", 0, 0, "registry-1.docker.io", "library/nginx", NULL, NULL},
    {"docker.io/nginx", 0, 0, "registry-1.docker.io", "library/nginx", NULL, NULL},
    {"index.docker.io/library/nginx", 0, 0, "registry-1.docker.io", "library/nginx", NULL, NULL},
    {"bitnami/nginx", 0, 0, "registry-1.docker.io", "bitnami/nginx", NULL, NULL},
    {"ghcr.io/fluxcd/flux-cli", 0, 0, "ghcr.io", "fluxcd/flux-cli", NULL, NULL},
    {"127.0.0.1:5000/a/b", 0, 0, "127.0.0.1:5000", "a/b", NULL, NULL},
    {"localhost/app", 0, 0, "localhost", "app", NULL, NULL},
    {"ghcr.io/o/app:v1.2.3", IMAGEREF_ALLOW_TAG, 0, "ghcr.io", "o/app", "v1.2.3", NULL},
    {"ghcr.io/o/app:v1@" D64, IMAGEREF_ALLOW_TAG | IMAGEREF_ALLOW_DIGEST, 0, "ghcr.io", "o/app",
     "v1", D64},
    {"ghcr.io/o/app:v1", 0, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"ghcr.io/o/app@" D64, IMAGEREF_ALLOW_TAG, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"ghcr.io/O/App", 0, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"ghcr.io/o/app:-bad", IMAGEREF_ALLOW_TAG, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"ghcr.io/o/app@sha256:abc", IMAGEREF_ALLOW_DIGEST, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"", 0, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"a//b", 0, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"ghcr.io/", 0, IG_EINVALID, NULL, NULL, NULL, NULL},
    {"a__b/c-d/e.f", 0, 0, "registry-1.docker.io", "a__b/c-d/e.f", NULL, NULL},
    {"a___b", 0, IG_EINVALID, NULL, NULL, NULL, NULL},
};

START_TEST(parse)
{
	struct imageref r;
	struct error err = ERROR_INIT;
	int rc = imageref_parse(&r, parses[_i].in, parses[_i].flags, &err);

	ck_assert_msg(rc == parses[_i].rc, "%s: rc %d (%s)", parses[_i].in, rc, err.msg);
	if (rc == 0) {
		ck_assert_str_eq(r.registry, parses[_i].registry);
		ck_assert_str_eq(r.repository, parses[_i].repository);
		ck_assert_pstr_eq(r.tag, parses[_i].tag);
		ck_assert_pstr_eq(r.digest, parses[_i].digest);
	} else {
		ck_assert_msg(strstr(err.msg, "image '") == err.msg, "%s", err.msg);
	}
	imageref_release(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imageref");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, split, 0, sizeof(splits) / sizeof(splits[0]));
	tcase_add_loop_test(tc, parse, 0, sizeof(parses) / sizeof(parses[0]));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
