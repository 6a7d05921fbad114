/* Unit tests for SigV4 signing: AWS's published Signature Version 4 test suite, transcribed as
 * data (the .req and .authz files of aws-sig-v4-test-suite, as kept in bazelbuild/bazel
 * third_party/aws-sig-v4-test-suite at commit 6b2dc5363d95ba54e5578d64981694f1ae329bdf and
 * neighbours; the suite's credentials, region, service and date), plus canonical-request
 * (.creq) checks and malformed input. */
#include <check.h>
#include <string.h>

#include "imageguard/registry/sigv4.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define DATE "20150830T123600Z"
#define HOST "Host:example.amazonaws.com"
#define XDATE "X-Amz-Date:" DATE
#define STS_TOKEN                                                                                  \
	"AQoDYXdzEPT//////////"                                                                    \
	"wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxf"                     \
	"pSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KP" \
	"kyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbq" \
	"BAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
#define CRED "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "

static const struct sigv4_key suite_key = {
    "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1", "service"};

static const struct {
	const char *name; /* the suite's folder */
	const char *method, *path, *query;
	const char *headers[6];
	const char *body;
	const char *authz; /* the .authz file */
} vectors[] = {
    {"get-vanilla",
     "GET",
     "/",
     NULL,
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
    {"get-vanilla-query-order-key",
     "GET",
     "/",
     "Param1=value2&Param1=Value1",
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1"},
    {"get-vanilla-query-order-value",
     "GET",
     "/",
     "Param1=value2&Param1=value1",
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"},
    {"get-vanilla-empty-query-key",
     "GET",
     "/",
     "Param1=value1",
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"},
    {"get-vanilla-query-unreserved",
     "GET",
     "/",
     "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz="
     "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
    {"get-vanilla-utf8-query",
     "GET",
     "/",
     "\xe1\x88\xb4=bar",
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
    {"get-unreserved",
     "GET",
     "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
     NULL,
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
    {"get-utf8",
     "GET",
     "/\xe1\x88\xb4",
     NULL,
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
    {"normalize-path/get-space",
     "GET",
     "/example space/",
     NULL,
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"},
    {"get-header-key-duplicate",
     "GET",
     "/",
     NULL,
     {HOST, "My-Header1:value2", "My-Header1:value2", "My-Header1:value1", XDATE},
     NULL,
     CRED "SignedHeaders=host;my-header1;x-amz-date, "
          "Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
    {"get-header-value-trim",
     "GET",
     "/",
     NULL,
     {HOST, "My-Header1: value1", "My-Header2: \"a   b   c\"", XDATE},
     NULL,
     CRED "SignedHeaders=host;my-header1;my-header2;x-amz-date, "
          "Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
    {"post-vanilla",
     "POST",
     "/",
     NULL,
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
    {"post-vanilla-empty-query-value",
     "POST",
     "/",
     "Param1=value1",
     {HOST, XDATE},
     NULL,
     CRED "SignedHeaders=host;x-amz-date, "
          "Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
    {"post-header-key-sort",
     "POST",
     "/",
     NULL,
     {HOST, "My-Header1:value1", XDATE},
     NULL,
     CRED "SignedHeaders=host;my-header1;x-amz-date, "
          "Signature=c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"},
    {"post-header-value-case",
     "POST",
     "/",
     NULL,
     {HOST, "My-Header1:VALUE1", XDATE},
     NULL,
     CRED "SignedHeaders=host;my-header1;x-amz-date, "
          "Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
    {"post-x-www-form-urlencoded",
     "POST",
     "/",
     NULL,
     {"Content-Type:application/x-www-form-urlencoded", HOST, XDATE},
     "Param1=value1",
     CRED "SignedHeaders=content-type;host;x-amz-date, "
          "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
    {"post-x-www-form-urlencoded-parameters",
     "POST",
     "/",
     NULL,
     {"Content-Type:application/x-www-form-urlencoded; charset=utf8", HOST, XDATE},
     "Param1=value1",
     CRED "SignedHeaders=content-type;host;x-amz-date, "
          "Signature=1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"},
    {"post-sts-token/post-sts-header-before",
     "POST",
     "/",
     NULL,
     {HOST, XDATE, "X-Amz-Security-Token:" STS_TOKEN},
     NULL,
     CRED "SignedHeaders=host;x-amz-date;x-amz-security-token, "
          "Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"},
};

static void fill(struct sigv4_request *r, int i)
{
	r->method = vectors[i].method;
	r->path = vectors[i].path;
	r->query = vectors[i].query;
	r->headers = vectors[i].headers;
	r->payload = vectors[i].body;
	r->payload_len = vectors[i].body ? strlen(vectors[i].body) : 0;
}

START_TEST(suite_vector)
{
	struct sigv4_request r;
	struct buf out = BUF_INIT;
	struct error err = ERROR_INIT;

	fill(&r, _i);
	ck_assert_int_eq(sigv4_sign(&out, &r, &suite_key, DATE, &err), 0);
	ck_assert_msg(strcmp(out.data, vectors[_i].authz) == 0, "%s: got %s", vectors[_i].name,
	              out.data);
	buf_release(&out);
}
END_TEST

/* The .creq files of three vectors: sorting, joined duplicates and the form body's hash. */
static const struct {
	int vector;
	const char *creq;
} creqs[] = {
    {1, "GET\n/\nParam1=Value1&Param1=value2\nhost:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {15, "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n"
         "x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n"
         "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"},
    {9, "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value2,value2,value1\n"
        "x-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
};

START_TEST(canonical_request)
{
	struct sigv4_request r;
	struct buf out = BUF_INIT;
	struct error err = ERROR_INIT;

	fill(&r, creqs[_i].vector);
	ck_assert_int_eq(sigv4_canonical_request(&out, &r, &err), 0);
	ck_assert_str_eq(out.data, creqs[_i].creq);
	buf_release(&out);
}
END_TEST

/* A changed key, region, service or date changes the signature (the scope is signed). */
START_TEST(scope_is_signed)
{
	static const struct sigv4_key keys[] = {
	    {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEz", "us-east-1", "service"},
	    {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-2", "service"},
	    {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1", "ecr"},
	};
	struct sigv4_request r;
	struct buf out = BUF_INIT;
	struct error err = ERROR_INIT;

	fill(&r, 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		ck_assert_int_eq(sigv4_sign(&out, &r, &keys[i], DATE, &err), 0);
		ck_assert_ptr_null(strstr(out.data, "5fa00fa31553b73ebf1942676e86291e"));
		buf_reset(&out);
	}
	ck_assert_int_eq(sigv4_sign(&out, &r, &suite_key, "20150831T123600Z", &err), 0);
	ck_assert_ptr_null(strstr(out.data, "5fa00fa31553b73ebf1942676e86291e"));
	buf_release(&out);
}
END_TEST

START_TEST(malformed)
{
	static const char *const bad_header[] = {"NoColonHere", NULL};
	struct sigv4_request r = {"GET", "/", NULL, bad_header, NULL, 0};
	struct buf out = BUF_INIT;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(sigv4_sign(&out, &r, &suite_key, DATE, &err), IG_EINVALID);
	r.headers = vectors[0].headers;
	r.query = "a=%zz";
	ck_assert_int_eq(sigv4_sign(&out, &r, &suite_key, DATE, &err), IG_EINVALID);
	r.query = "a=%4";
	ck_assert_int_eq(sigv4_sign(&out, &r, &suite_key, DATE, &err), IG_EINVALID);
	r.query = NULL;
	ck_assert_int_eq(sigv4_sign(&out, &r, &suite_key, "2015", &err), IG_EINVALID);
	buf_release(&out);
}
END_TEST

START_TEST(format_date)
{
	char d[17];

	sigv4_format_date(d, 1440938160LL);
	ck_assert_str_eq(d, DATE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sigv4");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, suite_vector, 0, sizeof(vectors) / sizeof(vectors[0]));
	tcase_add_loop_test(tc, canonical_request, 0, sizeof(creqs) / sizeof(creqs[0]));
	tcase_add_test(tc, scope_is_signed);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, format_date);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
