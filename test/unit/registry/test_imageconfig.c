/* Unit tests for imageconfig: RFC3339 times with fractions and zones, the platform pick in an
 * index, config descriptors of image manifests, and `created` (present, missing, placeholder,
 * malformed). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageconfig.h"

static const struct time_row {
	const char *in;
	int ok;
	long long sec;
	long nsec;
} times[] = {
    {"1970-01-01T00:00:00Z", 1, 0, 0},
    {"2026-01-02T03:04:05Z", 1, 1767323045, 0},
    {"2026-01-02T03:04:05.5Z", 1, 1767323045, 500000000},
    {"2026-01-02T03:04:05.123456789Z", 1, 1767323045, 123456789},
    {"2026-01-02T03:04:05.1234567891234Z", 1, 1767323045, 123456789},
    {"2026-01-02T05:04:05+02:00", 1, 1767323045, 0},
    {"2026-01-01T22:04:05.000000001-05:00", 1, 1767323045, 1},
    {"2026-01-02t03:04:05z", 1, 1767323045, 0},
    {"2024-02-29T00:00:00Z", 1, 1709164800, 0},
    {"0001-01-01T00:00:00Z", 1, -62135596800LL, 0},
    {"9999-12-31T23:59:59Z", 1, 253402300799LL, 0},
    {"1969-12-31T23:59:59.9Z", 1, -1, 900000000},
    {"2025-02-29T00:00:00Z", 0, 0, 0},
    {"2026-01-02T03:04:60Z", 0, 0, 0},
    {"2026-01-02T24:00:00Z", 0, 0, 0},
    {"2026-13-02T03:04:05Z", 0, 0, 0},
    {"2026-01-02T03:04:05", 0, 0, 0},
    {"2026-01-02 03:04:05Z", 0, 0, 0},
    {"2026-01-02T03:04:05.Z", 0, 0, 0},
    {"2026-01-02T03:04:05+0200", 0, 0, 0},
    {"2026-01-02T03:04:05+24:00", 0, 0, 0},
    {"2026-01-02T03:04:05Zjunk", 0, 0, 0},
    {"0000-01-01T00:00:00Z", 0, 0, 0},
    {"", 0, 0, 0},
    {"yesterday", 0, 0, 0},
};

START_TEST(parse_time)
{
	const struct time_row *r = &times[_i];
	struct error err = ERROR_INIT;
	struct timespec t = {0, 0};
	int rc = imageconfig_parse_time(&t, r->in, strlen(r->in), &err);

	if (!r->ok) {
		ck_assert_msg(rc == IG_EINVALID, "%s accepted", r->in);
		ck_assert_msg(strstr(err.msg, "not an RFC3339") != NULL, "%s", err.msg);
		return;
	}
	ck_assert_msg(rc == 0, "%s: %s", r->in, err.msg);
	ck_assert_msg((long long)t.tv_sec == r->sec && t.tv_nsec == r->nsec, "%s: %lld.%09ld",
	              r->in, (long long)t.tv_sec, t.tv_nsec);
}
END_TEST

START_TEST(time_order)
{
	struct timespec a = {10, 5}, b = {10, 6}, c = {11, 0};

	ck_assert_int_lt(imageconfig_time_cmp(&a, &b), 0);
	ck_assert_int_gt(imageconfig_time_cmp(&c, &b), 0);
	ck_assert_int_eq(imageconfig_time_cmp(&a, &a), 0);
}
END_TEST

static const struct platform_row {
	const char *in;
	bool ok;
} platforms[] = {
    {"linux/amd64", true},   {"linux/arm64/v8", true},  {"windows/amd64", true},
    {"linux/arm/v7", true},  {"linux", false},          {"linux/", false},
    {"/amd64", false},       {"linux/arm/v7/x", false}, {"Linux/amd64", false},
    {"linux/amd 64", false}, {"linux/arm64/", false},   {"", false},
};

START_TEST(valid_platform)
{
	const struct platform_row *r = &platforms[_i];

	ck_assert_msg(imageconfig_is_valid_platform(r->in) == r->ok, "%s", r->in);
}
END_TEST

#define DA "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DB "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DC "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define DD "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

#define ENTRY(d, os, arch, extra)                                                                  \
	"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"size\":500,"              \
	"\"digest\":\"" d "\",\"platform\":{\"os\":\"" os "\",\"architecture\":\"" arch "\"" extra \
	"}}"

static const char index_body[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
    "\"manifests\":[" ENTRY(DD, "unknown", "unknown", "") "," ENTRY(
        DA, "linux", "arm64",
        ",\"variant\":\"v8\"") "," ENTRY(DB, "linux", "amd64",
                                         ",\"variant\":\"v3\"") "," ENTRY(DC, "linux", "amd64",
                                                                          "") "]}";

static const char armv7_body[] = "{\"schemaVersion\":2,\"manifests\":[" ENTRY(
    DA, "linux", "arm", ",\"variant\":\"v6\"") "," ENTRY(DB, "linux", "arm",
                                                         ",\"variant\":\"v7\"") "]}";

static const char image_body[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"size\":1234,"
    "\"digest\":\"" DA "\"},\"layers\":[]}";

static const struct manifest_row {
	const char *name, *body, *platform;
	int rc;
	bool is_index;
	const char *digest;
	long long size;
	const char *msg;
} manifests[] = {
    {"index default platform", index_body, NULL, 0, true, DC, 500, NULL},
    {"index arm64 without variant", index_body, "linux/arm64", 0, true, DA, 500, NULL},
    {"index arm64/v8", index_body, "linux/arm64/v8", 0, true, DA, 500, NULL},
    {"index amd64/v3", index_body, "linux/amd64/v3", 0, true, DB, 500, NULL},
    {"index missing platform", index_body, "linux/s390x", IG_ENOTFOUND, false, "", -1,
     "no linux/s390x entry"},
    {"index missing variant", index_body, "linux/amd64/v4", IG_ENOTFOUND, false, "", -1, NULL},
    {"armv7 exact", armv7_body, "linux/arm/v7", 0, true, DB, 500, NULL},
    {"arm without variant takes the first", armv7_body, "linux/arm", 0, true, DA, 500, NULL},
    {"bad platform", index_body, "linux", IG_EINVALID, false, "", -1, "not os/arch"},
    {"image manifest", image_body, NULL, 0, false, DA, 1234, NULL},
    {"image manifest ignores platform", image_body, "linux/arm64", 0, false, DA, 1234, NULL},
    {"schema 1", "{\"schemaVersion\":1,\"name\":\"x\",\"fsLayers\":[]}", NULL, IG_EINVALID, false,
     "", -1, "schema 1"},
    {"not json", "<html>", NULL, IG_EINVALID, false, "", -1, "not a JSON object"},
    {"empty", "", NULL, IG_EINVALID, false, "", -1, NULL},
    {"array", "[]", NULL, IG_EINVALID, false, "", -1, NULL},
    {"neither", "{\"schemaVersion\":2}", NULL, IG_EINVALID, false, "", -1, "neither"},
    {"config without digest", "{\"config\":{\"size\":3}}", NULL, IG_EINVALID, false, "", -1,
     "no valid digest"},
    {"config bad digest", "{\"config\":{\"digest\":\"sha256:xyz\"}}", NULL, IG_EINVALID, false, "",
     -1, NULL},
    {"config negative size", "{\"config\":{\"digest\":\"" DA "\",\"size\":-1}}", NULL, IG_EINVALID,
     false, "", -1, "negative"},
    {"config without size", "{\"config\":{\"digest\":\"" DA "\"}}", NULL, 0, false, DA, -1, NULL},
    {"index entry without digest",
     "{\"manifests\":[{\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}", NULL,
     IG_EINVALID, false, "", -1, NULL},
};

START_TEST(manifest)
{
	const struct manifest_row *r = &manifests[_i];
	struct buf body = BUF_INIT;
	struct error err = ERROR_INIT;
	struct imageconfig_ref ref;
	int rc;

	ck_assert_int_eq(buf_puts(&body, r->body), 0);
	rc = imageconfig_manifest(&ref, &body, r->platform, &err);
	ck_assert_msg(rc == r->rc, "%s: rc %d (%s)", r->name, rc, err.msg);
	if (r->msg)
		ck_assert_msg(strstr(err.msg, r->msg) != NULL, "%s: %s", r->name, err.msg);
	if (rc == 0) {
		ck_assert_msg(ref.is_index == r->is_index, "%s", r->name);
		ck_assert_str_eq(ref.digest, r->digest);
		ck_assert_int_eq((long long)ref.size, r->size);
	}
	buf_release(&body);
}
END_TEST

static const struct created_row {
	const char *name, *body;
	int rc;
	bool known;
	long long sec;
	long nsec;
	const char *text; /* in why (unknown) or err (error) */
} createds[] = {
    {"present", "{\"created\":\"2026-01-02T03:04:05.25Z\",\"os\":\"linux\"}", 0, true, 1767323045,
     250000000, NULL},
    {"missing", "{\"os\":\"linux\"}", 0, false, 0, 0, "no 'created'"},
    {"null", "{\"created\":null}", 0, false, 0, 0, "no 'created'"},
    {"epoch placeholder", "{\"created\":\"1970-01-01T00:00:00Z\"}", 0, false, 0, 0, "placeholder"},
    {"go zero time", "{\"created\":\"0001-01-01T00:00:00Z\"}", 0, false, 0, 0, "placeholder"},
    {"one second after the epoch", "{\"created\":\"1970-01-01T00:00:01Z\"}", 0, true, 1, 0, NULL},
    {"number", "{\"created\":1767323045}", IG_EINVALID, false, 0, 0, "not a string"},
    {"garbage", "{\"created\":\"last tuesday\"}", IG_EINVALID, false, 0, 0,
     "'created': time 'last tuesday'"},
    {"not json", "nope", IG_EINVALID, false, 0, 0, "not a JSON object"},
    {"array", "[1]", IG_EINVALID, false, 0, 0, NULL},
};

START_TEST(created)
{
	const struct created_row *r = &createds[_i];
	struct buf body = BUF_INIT;
	struct error err = ERROR_INIT;
	struct imageconfig_created c;
	int rc;

	ck_assert_int_eq(buf_puts(&body, r->body), 0);
	rc = imageconfig_created(&c, &body, &err);
	ck_assert_msg(rc == r->rc, "%s: rc %d (%s)", r->name, rc, err.msg);
	if (rc == 0) {
		ck_assert_msg(c.known == r->known, "%s", r->name);
		if (c.known)
			ck_assert_msg((long long)c.time.tv_sec == r->sec &&
			                  c.time.tv_nsec == r->nsec,
			              "%s", r->name);
		if (r->text)
			ck_assert_msg(strstr(c.why, r->text) != NULL, "%s: %s", r->name, c.why);
	} else if (r->text) {
		ck_assert_msg(strstr(err.msg, r->text) != NULL, "%s: %s", r->name, err.msg);
	}
	buf_release(&body);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

int main(void)
{
	Suite *s = suite_create("imageconfig");
	TCase *tc = tcase_create("tables");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, parse_time, 0, N(times));
	tcase_add_test(tc, time_order);
	tcase_add_loop_test(tc, valid_platform, 0, N(platforms));
	tcase_add_loop_test(tc, manifest, 0, N(manifests));
	tcase_add_loop_test(tc, created, 0, N(createds));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
