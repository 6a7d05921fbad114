/* Unit tests for cloud registry credentials: the parsers of STS, container-credentials, ECR,
 * OAuth2 and JWT answers (tables), ECR host parsing (Flux's pattern), and, against the cloud
 * fixture in front of docker-registry, caching until shortly before expiry, one refresh
 * after a revocation, then the error, and the endpoint overrides, each to a port of its own. */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/fixture.h"
#include "imageguard/registry/cloudauth.h"
#include "imageguard/registry/creds.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

/* ---- ECR hosts: Flux's auth/aws ParseArtifactRepository cases ---- */

static const struct {
	const char *host, *region;
	bool pub;
} ecr_hosts[] = {
    {"012345678901.dkr.ecr.us-east-1.amazonaws.com", "us-east-1", false},
    {"012345678901.dkr.ecr.cn-north-1.amazonaws.com.cn", "cn-north-1", false},
    {"012345678901.dkr.ecr-fips.us-gov-west-1.amazonaws.com", "us-gov-west-1", false},
    {"012345678901.dkr.ecr.us-iso-east-1.c2s.ic.gov", "us-iso-east-1", false},
    {"012345678901.dkr.ecr.eu-west-2.amazonaws.com.localhost:5000", "eu-west-2", false},
    {"public.ecr.aws", "us-east-1", true},
    {"gcr.io", NULL, false},
    {"012345678901.dkr.ecr.us-east-1.example.com", NULL, false},
    {"012345678901.dkr.ecr..amazonaws.com", NULL, false},
};

START_TEST(ecr_region)
{
	bool pub = true;
	char *r = cloudauth_ecr_region(ecr_hosts[_i].host, &pub);

	if (ecr_hosts[_i].region)
		ck_assert_str_eq(r, ecr_hosts[_i].region);
	else
		ck_assert_ptr_null(r);
	ck_assert(pub == ecr_hosts[_i].pub);
	free(r);
}
END_TEST

/* ---- answers ---- */

#define STS_OK                                                                                     \
	"<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"        \
	"<SessionToken>tok&amp;en</SessionToken><SecretAccessKey>sec/ret</SecretAccessKey>"        \
	"<Expiration>2026-12-01T09:00:00Z</Expiration><AccessKeyId>ASIAEXAMPLE</AccessKeyId>"      \
	"</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"

static const struct {
	const char *xml;
	int rc;
} sts_cases[] = {
    {STS_OK, 0},
    {"<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>", IG_EAUTH},
    {"<AssumeRoleWithWebIdentityResponse/>", IG_EINVALID},
    {"<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
     "<SessionToken>T</SessionToken><Expiration>tomorrow</Expiration></Credentials>",
     IG_EINVALID},
    {"<Credentials><AccessKeyId></AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
     "<SessionToken>T</SessionToken><Expiration>2026-12-01T09:00:00Z</Expiration></Credentials>",
     IG_EINVALID},
    {"<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S", IG_EINVALID},
};

START_TEST(parse_sts)
{
	struct cloudauth_aws_keys k;
	struct error err = ERROR_INIT;
	const char *x = sts_cases[_i].xml;

	ck_assert_int_eq(cloudauth_parse_sts(&k, x, strlen(x), &err), sts_cases[_i].rc);
	if (sts_cases[_i].rc == 0) {
		ck_assert_str_eq(k.access_key_id, "ASIAEXAMPLE");
		ck_assert_str_eq(k.secret_access_key, "sec/ret");
		ck_assert_str_eq(k.session_token, "tok&en");
		ck_assert_int_eq(k.expires, 1796115600LL);
	} else {
		ck_assert_ptr_null(strstr(err.msg, "sec"));
	}
	cloudauth_aws_keys_release(&k);
}
END_TEST

static const struct {
	const char *json;
	int rc;
} container_cases[] = {
    {"{\"AccessKeyId\":\"ASIA1\",\"SecretAccessKey\":\"s\",\"Token\":\"t\","
     "\"Expiration\":\"2026-12-01T09:00:00Z\"}",
     0},
    {"{\"AccessKeyId\":\"ASIA1\",\"Token\":\"t\",\"Expiration\":\"2026-12-01T09:00:00Z\"}",
     IG_EINVALID},
    {"[]", IG_EINVALID},
    {"{\"AccessKeyId\":\"ASIA1\",\"SecretAccessKey\":\"s\",\"Expiration\":5}", IG_EINVALID},
};

START_TEST(parse_container)
{
	struct cloudauth_aws_keys k;
	struct error err = ERROR_INIT;
	const char *j = container_cases[_i].json;

	ck_assert_int_eq(cloudauth_parse_container(&k, j, strlen(j), &err), container_cases[_i].rc);
	if (container_cases[_i].rc == 0)
		ck_assert_str_eq(k.session_token, "t");
	cloudauth_aws_keys_release(&k);
}
END_TEST

/* base64("AWS:pa55word") */
#define ECR_B64 "QVdTOnBhNTV3b3Jk"

static const struct {
	const char *json;
	bool pub;
	int rc;
} ecr_cases[] = {
    {"{\"authorizationData\":[{\"authorizationToken\":\"" ECR_B64 "\",\"expiresAt\":1796115600,"
     "\"proxyEndpoint\":\"https://x\"}]}",
     false, 0},
    {"{\"authorizationData\":{\"authorizationToken\":\"" ECR_B64 "\",\"expiresAt\":1796115600.5}}",
     true, 0},
    {"{\"authorizationData\":{\"authorizationToken\":\"" ECR_B64 "\",\"expiresAt\":1}}", false,
     IG_EINVALID},
    {"{\"authorizationData\":[{\"authorizationToken\":\"QVdTcGE1NXdvcmQ=\",\"expiresAt\":1}]}",
     false, IG_EINVALID}, /* "AWSpa55word": no ':' */
    {"{\"authorizationData\":[{\"authorizationToken\":\"!!!!\",\"expiresAt\":1}]}", false,
     IG_EINVALID},
    {"{\"authorizationData\":[{\"authorizationToken\":\"" ECR_B64 "\"}]}", false, IG_EINVALID},
    {"{\"authorizationData\":[]}", false, IG_EINVALID},
    /* expiresAt out of any time's range (found by fuzz_cloudauth: a double-to-integer overflow) */
    {"{\"authorizationData\":{\"authorizationToken\":\"" ECR_B64 "\",\"expiresAt\":4.4e96}}", true,
     IG_EINVALID},
    {"{\"authorizationData\":{\"authorizationToken\":\"" ECR_B64 "\",\"expiresAt\":-1.5}}", true,
     IG_EINVALID},
    {"{\"authorizationData\":{\"authorizationToken\":\"" ECR_B64
     "\",\"expiresAt\":9223372036854775807}}",
     true, IG_EINVALID},
};

START_TEST(parse_ecr)
{
	struct error err = ERROR_INIT;
	char *user = NULL, *pass = NULL;
	long long exp = 0;
	const char *j = ecr_cases[_i].json;

	ck_assert_int_eq(
	    cloudauth_parse_ecr(&user, &pass, &exp, j, strlen(j), ecr_cases[_i].pub, &err),
	    ecr_cases[_i].rc);
	if (ecr_cases[_i].rc == 0) {
		ck_assert_str_eq(user, "AWS");
		ck_assert_str_eq(pass, "pa55word");
		ck_assert_int_eq(exp, 1796115600LL);
	} else {
		ck_assert_ptr_null(user);
		ck_assert_ptr_null(strstr(err.msg, "pa55"));
	}
	free(user), free(pass);
}
END_TEST

static const struct {
	const char *json, *field;
	int rc;
	long long expires_in;
} oauth_cases[] = {
    {"{\"access_token\":\"ya29.x\",\"expires_in\":3599,\"token_type\":\"Bearer\"}", "access_token",
     0, 3599},
    {"{\"access_token\":\"x\",\"expires_in\":\"3600\"}", "access_token", 0, 3600},
    {"{\"refresh_token\":\"r\"}", "refresh_token", 0, 0},
    {"{\"refresh_token\":\"r\"}", "access_token", IG_EINVALID, 0},
    {"{\"access_token\":\"\"}", "access_token", IG_EINVALID, 0},
    {"{\"access_token\":\"x\",\"expires_in\":-5}", "access_token", IG_EINVALID, 0},
    {"not json", "access_token", IG_EINVALID, 0},
};

START_TEST(parse_oauth)
{
	struct error err = ERROR_INIT;
	char *tok = NULL;
	long long in = -1;
	const char *j = oauth_cases[_i].json;

	ck_assert_int_eq(
	    cloudauth_parse_oauth(&tok, &in, j, strlen(j), oauth_cases[_i].field, &err),
	    oauth_cases[_i].rc);
	if (oauth_cases[_i].rc == 0)
		ck_assert_int_eq(in, oauth_cases[_i].expires_in);
	free(tok);
}
END_TEST

static const struct {
	const char *s;
	long long t;
} times[] = {
    {"2026-12-01T09:00:00Z", 1796115600LL},
    {"2026-12-01T09:00:00.123456Z", 1796115600LL},
    {"2026-12-01T09:00:00+00:00", 1796115600LL},
    {"2026-12-01T09:00:00+02:00", -1},
    {"2026-13-01T09:00:00Z", -1},
    {"2026-12-01 09:00:00Z", -1},
    {"2026-12-01T09:00", -1},
    {"", -1},
};

START_TEST(parse_time)
{
	ck_assert_int_eq(cloudauth_parse_time(times[_i].s), times[_i].t);
}
END_TEST

static const struct {
	const char *jwt;
	long long exp;
} jwts[] = {
    /* {"alg":"none"} . {"exp":1796115600,"sub":"x"} . sig */
    {"eyJhbGciOiJub25lIn0.eyJleHAiOjE3OTYxMTU2MDAsInN1YiI6IngifQ.c2ln", 1796115600LL},
    /* {"exp":1796115600} (unpadded base64url of 18 bytes) */
    {"e30.eyJleHAiOjE3OTYxMTU2MDB9.x", 1796115600LL},
    {"e30.e30.x", -1}, /* {} */
    {"no-dots", -1},
    {"a..b", -1},
    {"e30.eyJleHAiOiJzb29uIn0.x", -1}, /* {"exp":"soon"} */
    {"e30.eyJleHAiOjFlMzAwfQ.x", -1},  /* out of range, as a real */
    {"e30.eyJleHAiOjE3OTYxMTU2MDAuOX0.x", 1796115600LL},
};

START_TEST(jwt_exp)
{
	ck_assert_int_eq(cloudauth_jwt_exp(jwts[_i].jwt), jwts[_i].exp);
}
END_TEST

START_TEST(providers)
{
	ck_assert(cloudauth_is_provider("generic") && cloudauth_is_provider("aws") &&
	          cloudauth_is_provider("gcp") && cloudauth_is_provider("azure"));
	ck_assert(!cloudauth_is_provider("AWS") && !cloudauth_is_provider("") &&
	          !cloudauth_is_provider(NULL));
	ck_assert(!cloudauth_is_cloud("generic") && !cloudauth_is_cloud(NULL) &&
	          cloudauth_is_cloud("gcp"));
}
END_TEST

/* ---- against the cloud fixture ---- */

static struct {
	pid_t pid;
	char dir[64];
	char url[128];
	char ecr[256];
	json_t *state;
} cloud;

static const char *src_dir(void)
{
	const char *s = getenv("IMAGEGUARD_SRC");

	return s && *s ? s : ".";
}

static void cloud_start(void)
{
	char script[512], path[128];
	json_error_t jerr;

	snprintf(cloud.dir, sizeof(cloud.dir), "/tmp/imageguard-cloud.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(cloud.dir));
	snprintf(script, sizeof(script), "%s/test/fixtures/cloud_fixture.py", src_dir());
	cloud.pid = fork();
	ck_assert_int_ge(cloud.pid, 0);
	if (cloud.pid == 0) {
		execl("/usr/bin/python3", "python3", script, "serve", "--dir", cloud.dir, "--push",
		      "v1.0.0", "--push", "v2.0.0", (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/cloud.json", cloud.dir);
	for (int i = 0; i < 600 && access(path, R_OK) != 0; i++)
		usleep(50000);
	cloud.state = json_load_file(path, 0, &jerr);
	ck_assert_ptr_nonnull(cloud.state);
	snprintf(cloud.url, sizeof(cloud.url), "%s",
	         json_string_value(json_object_get(cloud.state, "url")));
	snprintf(cloud.ecr, sizeof(cloud.ecr), "%s",
	         json_string_value(json_object_get(json_object_get(cloud.state, "hosts"), "ecr")));
	setenv("AWS_ACCESS_KEY_ID", json_string_value(json_object_get(cloud.state, "static_key")),
	       1);
	setenv("AWS_SECRET_ACCESS_KEY",
	       json_string_value(json_object_get(cloud.state, "static_secret")), 1);
	setenv("AWS_ENDPOINT_URL_ECR", cloud.url, 1);
	cloudauth_reset();
}

static const char *field_path(const char *name)
{
	return json_string_value(json_object_get(cloud.state, name));
}

static void cloud_stop(void)
{
	char cmd[128];

	cloudauth_reset();
	if (cloud.pid > 0) {
		kill(cloud.pid, SIGTERM);
		waitpid(cloud.pid, NULL, 0);
	}
	json_decref(cloud.state);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cloud.dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void control(const char *path, const char *json)
{
	char script[512];
	const char *argv[] = {"/usr/bin/python3", script, "ctl",    "--url", cloud.url,
	                      "--path",           path,   "--json", json,    NULL};
	struct buf out = BUF_INIT;

	snprintf(script, sizeof(script), "%s/test/fixtures/cloud_fixture.py", src_dir());
	if (!json)
		argv[7] = NULL;
	ck_assert_int_eq(fixture_run(&out, argv), 0);
	buf_release(&out);
}

static long long stat_of(const char *name)
{
	char url[256];
	struct buf out = BUF_INIT;
	json_t *j;
	long long n;

	snprintf(url, sizeof(url), "%s/_fixture/stats", cloud.url);
	ck_assert_int_eq(fixture_http_get(&out, url), 200);
	j = json_loads(out.data, 0, NULL);
	n = json_integer_value(json_object_get(j, name));
	json_decref(j);
	buf_release(&out);
	return n;
}

START_TEST(cached_until_shortly_before_expiry)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct error err = ERROR_INIT;
	long long n0;

	/* A 5 s token is reused for its first four fifths (4 s), then renewed. */
	control("/_fixture/config", "{\"ecr_expires_in\": 5}");
	n0 = stat_of("ecr");
	ck_assert_int_eq(cloudauth_creds(&c, "aws", cloud.ecr, true, &err), 0);
	ck_assert_str_eq(c.username, "AWS");
	ck_assert_int_eq(stat_of("ecr"), n0 + 1);
	usleep(2500000);
	ck_assert_int_eq(cloudauth_creds(&c, "aws", cloud.ecr, true, &err), 0);
	ck_assert_int_eq(stat_of("ecr"), n0 + 1);
	usleep(2500000);
	ck_assert_int_eq(cloudauth_creds(&c, "aws", cloud.ecr, true, &err), 0);
	ck_assert_int_eq(stat_of("ecr"), n0 + 2);
	creds_release(&c);
	control("/_fixture/config", "{\"ecr_expires_in\": 43200}");
}
END_TEST

static int list_with(struct registry_listing *l, struct registry_creds *c, const char *provider,
                     const char *host, struct error *err)
{
	struct registry_client *rc = NULL;
	struct registry_options o;
	struct imageref ref = IMAGEREF_INIT;
	struct registry_target t = {0};
	char image[300];
	int error;

	snprintf(image, sizeof(image), "%s/team/app", host);
	registry_options_init(&o);
	ck_assert_int_eq(imageref_parse(&ref, image, 0, err), 0);
	ck_assert_int_eq(registry_client_new(&rc, &o, err), 0);
	t.ref = &ref;
	t.creds = c;
	t.insecure = true;
	error = cloudauth_list_tags(l, rc, &t, provider, c, err);
	registry_client_free(rc);
	imageref_release(&ref);
	return error;
}

static int list(struct registry_listing *l, struct registry_creds *c, struct error *err)
{
	return list_with(l, c, "aws", cloud.ecr, err);
}

static const char *host_of(const char *kind)
{
	return json_string_value(json_object_get(json_object_get(cloud.state, "hosts"), kind));
}

/* gcp and azure through the same cache: reused, and renewed once after a revocation, with
 * every step of the chain asked again (Entra ID and the ACR exchange for azure). */
START_TEST(gcp_and_azure_cached_and_renewed)
{
	static const struct {
		const char *provider, *kind, *step1, *step2;
	} cases[] = {{"gcp", "gcp", "gce-metadata", NULL},
	             {"azure", "acr", "entra", "acr-exchange"}};
	char port[16];

	snprintf(port, sizeof(port), "%lld",
	         (long long)json_integer_value(json_object_get(cloud.state, "port")));
	for (size_t i = 0; i < 2; i++) {
		struct registry_creds c = REGISTRY_CREDS_INIT;
		struct registry_listing l = REGISTRY_LISTING_INIT;
		struct error err = ERROR_INIT;
		const char *host = host_of(cases[i].kind);
		char buf[256];
		long long a0, b0;

		snprintf(buf, sizeof(buf), "127.0.0.1:%s", port);
		setenv("GCE_METADATA_HOST", buf, 1);
		snprintf(buf, sizeof(buf), "%s/", cloud.url);
		setenv("AZURE_AUTHORITY_HOST", buf, 1);
		setenv("AZURE_FEDERATED_TOKEN_FILE", field_path("sa_azure"), 1);
		setenv("AZURE_CLIENT_ID", "a0b1c2d3-0000-4000-8000-imageguard01", 1);
		setenv("AZURE_TENANT_ID", "72f988bf-86f1-41af-91ab-2d7cd011db47", 1);
		cloudauth_reset();
		a0 = stat_of(cases[i].step1);
		b0 = cases[i].step2 ? stat_of(cases[i].step2) : 0;
		ck_assert_msg(cloudauth_creds(&c, cases[i].provider, host, true, &err) == 0, "%s",
		              err.msg);
		ck_assert_int_eq(cloudauth_creds(&c, cases[i].provider, host, true, &err), 0);
		ck_assert_int_eq(stat_of(cases[i].step1), a0 + 1);
		ck_assert_int_eq(list_with(&l, &c, cases[i].provider, host, &err), 0);
		ck_assert_int_eq(l.tags.len, 2);
		registry_listing_release(&l);
		control("/_fixture/revoke", "{}");
		ck_assert_msg(list_with(&l, &c, cases[i].provider, host, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(stat_of(cases[i].step1), a0 + 2);
		if (cases[i].step2)
			ck_assert_int_eq(stat_of(cases[i].step2), b0 + 2);
		registry_listing_release(&l);
		creds_release(&c);
	}
	unsetenv("GCE_METADATA_HOST");
	unsetenv("AZURE_CLIENT_ID");
	cloudauth_reset();
}
END_TEST

/* Look-alike hosts, each standing on the fixture (which would answer them as the registry):
 * every provider refuses the host before any token is minted (the fixture counts each one),
 * so nothing could be sent there (issue 34: a prefix and a bare suffix match let an ECR token
 * go to <ecr host>.<anything> and a Google token to evilgcr.io). */
START_TEST(lookalike_hosts_get_no_token)
{
	static const struct {
		const char *provider, *fmt, *stat;
	} cases[] = {
	    {"aws", "%s.evil.localhost:%s", "ecr"},
	    {"aws", "x%s.localhost:%s", "ecr"},
	    {"gcp", "evilgcr.io.localhost:%s", "gce-metadata"},
	    {"gcp", "gcr.io.evil.localhost:%s", "gce-metadata"},
	    {"gcp", "europe-docker.pkg.dev.evil.localhost:%s", "gce-metadata"},
	    {"azure", "evilazurecr.io.localhost:%s", "entra"},
	    {"azure", "example.azurecr.io.evil.localhost:%s", "entra"},
	};
	char port[16], ecr[256], buf[256];
	const char *at;

	snprintf(port, sizeof(port), "%lld",
	         (long long)json_integer_value(json_object_get(cloud.state, "port")));
	at = strstr(cloud.ecr, ".localhost");
	ck_assert_ptr_nonnull(at);
	snprintf(ecr, sizeof(ecr), "%.*s", (int)(at - cloud.ecr), cloud.ecr);
	snprintf(buf, sizeof(buf), "127.0.0.1:%s", port);
	setenv("GCE_METADATA_HOST", buf, 1);
	snprintf(buf, sizeof(buf), "%s/", cloud.url);
	setenv("AZURE_AUTHORITY_HOST", buf, 1);
	setenv("AZURE_FEDERATED_TOKEN_FILE", field_path("sa_azure"), 1);
	setenv("AZURE_CLIENT_ID", "a0b1c2d3-0000-4000-8000-imageguard01", 1);
	setenv("AZURE_TENANT_ID", "72f988bf-86f1-41af-91ab-2d7cd011db47", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct registry_creds c = REGISTRY_CREDS_INIT;
		struct error err = ERROR_INIT;
		char host[300];
		long long n0 = stat_of(cases[i].stat);

		if (strcmp(cases[i].provider, "aws") == 0)
			snprintf(host, sizeof(host), cases[i].fmt, ecr, port);
		else
			snprintf(host, sizeof(host), cases[i].fmt, port);
		cloudauth_reset();
		ck_assert_msg(cloudauth_creds(&c, cases[i].provider, host, true, &err) ==
		                  IG_EINVALID,
		              "%s '%s': %s", cases[i].provider, host, err.msg);
		ck_assert_msg(strstr(err.msg, "is not"), "%s", err.msg);
		ck_assert_int_eq(stat_of(cases[i].stat), n0);
		creds_release(&c);
	}
	unsetenv("GCE_METADATA_HOST");
	unsetenv("AZURE_CLIENT_ID");
	cloudauth_reset();
}
END_TEST

START_TEST(revoked_refreshed_once_then_error)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	struct error err = ERROR_INIT;
	long long n0;
	char *old;

	cloudauth_reset();
	n0 = stat_of("ecr");
	ck_assert_int_eq(cloudauth_creds(&c, "aws", cloud.ecr, true, &err), 0);
	ck_assert_int_eq(list(&l, &c, &err), 0);
	ck_assert_int_eq(l.tags.len, 2);
	registry_listing_release(&l);
	old = strdup(c.password);
	/* Revoked: the registry refuses the cached password; one new token lists again. */
	control("/_fixture/revoke", "{}");
	ck_assert_int_eq(list(&l, &c, &err), 0);
	ck_assert_int_eq(l.tags.len, 2);
	ck_assert_str_ne(c.password, old);
	ck_assert_int_eq(stat_of("ecr"), n0 + 2);
	registry_listing_release(&l);
	/* Refused whatever the token: one refresh, then the error, with no secret in it. */
	control("/_fixture/config", "{\"refuse\": [\"registry\"]}");
	ck_assert_int_eq(list(&l, &c, &err), IG_EAUTH);
	ck_assert_int_eq(stat_of("ecr"), n0 + 3);
	ck_assert_ptr_null(strstr(err.msg, c.password));
	ck_assert_ptr_null(strstr(err.msg, old));
	control("/_fixture/config", "{\"refuse\": []}");
	free(old);
	registry_listing_release(&l);
	creds_release(&c);
}
END_TEST

/* ECR Public: ecr-public in us-east-1 whatever the chain's region (the fixture checks the
 * signature's scope), its own endpoint variable, a token answered as one object. */
START_TEST(public_ecr)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct error err = ERROR_INIT;
	long long n0 = stat_of("ecr-public");

	setenv("AWS_ENDPOINT_URL_ECR_PUBLIC", cloud.url, 1);
	ck_assert_msg(cloudauth_creds(&c, "aws", "public.ecr.aws", false, &err) == 0, "%s",
	              err.msg);
	ck_assert_str_eq(c.username, "AWS");
	ck_assert_int_eq(stat_of("ecr-public"), n0 + 1);
	unsetenv("AWS_ENDPOINT_URL_ECR_PUBLIC");
	creds_release(&c);
}
END_TEST

/* Concurrent askers for one (provider, registry) while its token is being fetched wait for
 * that fetch: one ECR request (the fixture answers after 0.5 s) for all of them. */
struct asker {
	struct registry_creds c;
	struct error err;
	int rc;
};

static void *ask(void *arg)
{
	struct asker *a = arg;

	a->rc = cloudauth_creds(&a->c, "aws", cloud.ecr, true, &a->err);
	return NULL;
}

START_TEST(concurrent_fetches_coalesce)
{
	struct asker a[4];
	pthread_t th[4];
	long long n0;

	memset(a, 0, sizeof(a));
	cloudauth_reset();
	control("/_fixture/config", "{\"ecr_delay\": 0.5}");
	n0 = stat_of("ecr");
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, ask, &a[i]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	control("/_fixture/config", "{\"ecr_delay\": 0}");
	ck_assert_int_eq(stat_of("ecr"), n0 + 1);
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(a[i].rc == 0, "%s", a[i].err.msg);
		ck_assert_str_eq(a[i].c.password, a[0].c.password);
	}
	for (int i = 0; i < 4; i++)
		creds_release(&a[i].c);
}
END_TEST

/* An image with a repository path prefix (".../team/app") in another region: the token is
 * asked of ECR in the host's region (the fixture checks the signature's scope), whatever the
 * path; the same signature scoped to the old region is refused. */
START_TEST(ecr_path_prefix_region)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	struct imageref ref = IMAGEREF_INIT;
	struct error err = ERROR_INIT;
	char host[256], image[300];
	const char *at = strstr(cloud.ecr, ".us-west-2.");
	bool pub = true;
	char *region;

	ck_assert_ptr_nonnull(at);
	snprintf(host, sizeof(host), "%.*s.eu-west-1.%s", (int)(at - cloud.ecr), cloud.ecr,
	         at + strlen(".us-west-2."));
	snprintf(image, sizeof(image), "%s/team/app", host);
	ck_assert_int_eq(imageref_parse(&ref, image, 0, &err), 0);
	ck_assert_str_eq(ref.registry, host);
	region = cloudauth_ecr_region(ref.registry, &pub);
	ck_assert_str_eq(region, "eu-west-1");
	ck_assert(!pub);
	free(region);
	cloudauth_reset();
	ck_assert_int_eq(cloudauth_creds(&c, "aws", host, true, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "InvalidSignatureException") != NULL, "%s", err.msg);
	error_clear(&err);
	control("/_fixture/config", "{\"ecr_region\": \"eu-west-1\"}");
	ck_assert_msg(list_with(&l, &c, "aws", host, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(l.tags.len, 2);
	control("/_fixture/config", "{\"ecr_region\": \"us-west-2\"}");
	registry_listing_release(&l);
	creds_release(&c);
	imageref_release(&ref);
	cloudauth_reset();
}
END_TEST

/* An object's own identity (cloudauth_creds_as): the token function is asked for the
 * provider's audience only when a credential must be fetched; STS sees the role and Flux's
 * session name; the credential is cached apart from the pod's (static keys here, which never
 * reach STS); forgetting it fetches anew through the account; gcp has no object identity. */
struct token_calls {
	int n;
	char audience[256];
};

static int file_token(char **out, void *ctx, const char *audience, struct error *err)
{
	struct token_calls *c = ctx;
	struct buf b = BUF_INIT;

	c->n++;
	snprintf(c->audience, sizeof(c->audience), "%s", audience);
	if (buf_read_file(&b, field_path(strncmp(audience, "identitynamespace:", 18) == 0
	                                     ? "sa_gcp"
	                                     : "sa_aws")) < 0)
		return error_set(err, IG_EFAIL, "token file");
	*out = buf_detach(&b);
	return 0;
}

START_TEST(object_identity)
{
	struct registry_creds pod = REGISTRY_CREDS_INIT, obj = REGISTRY_CREDS_INIT;
	struct error err = ERROR_INIT;
	struct token_calls calls = {0};
	struct cloudauth_identity id = {
	    "flux-system", "imageguard", "arn:aws:iam::123456789012:role/imageguard",
	    NULL,          NULL,         file_token,
	    &calls,        NULL};
	long long sts0, ecr0;

	setenv("AWS_ENDPOINT_URL_STS", cloud.url, 1);
	cloudauth_reset();
	sts0 = stat_of("sts");
	ecr0 = stat_of("ecr");
	ck_assert_msg(cloudauth_creds(&pod, "aws", cloud.ecr, true, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat_of("sts"), sts0); /* the pod's static keys */
	ck_assert_msg(cloudauth_creds_as(&obj, "aws", cloud.ecr, true, &id, &err) == 0, "%s",
	              err.msg);
	ck_assert_int_eq(calls.n, 1);
	ck_assert_str_eq(calls.audience, "sts.amazonaws.com");
	ck_assert_int_eq(stat_of("sts"), sts0 + 1);
	ck_assert_int_eq(stat_of("ecr"), ecr0 + 2);
	ck_assert_str_ne(obj.password, pod.password);
	ck_assert_int_eq(cloudauth_creds_as(&obj, "aws", cloud.ecr, true, &id, &err), 0);
	ck_assert_int_eq(calls.n, 1); /* cached */
	cloudauth_forget_as("aws", cloud.ecr, &id);
	ck_assert_int_eq(cloudauth_creds(&pod, "aws", cloud.ecr, true, &err), 0);
	ck_assert_int_eq(stat_of("ecr"), ecr0 + 2); /* the pod's is kept */
	ck_assert_int_eq(cloudauth_creds_as(&obj, "aws", cloud.ecr, true, &id, &err), 0);
	ck_assert_int_eq(calls.n, 2);
	ck_assert_int_eq(stat_of("sts"), sts0 + 2);
	/* a role that does not trust the account: STS says so, and nothing is cached */
	id.role_arn = "arn:aws:iam::123456789012:role/other";
	id.name = "other";
	ck_assert_int_eq(cloudauth_creds_as(&obj, "aws", cloud.ecr, true, &id, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "serviceaccount 'flux-system/other'") &&
	                  strstr(err.msg, "AccessDenied"),
	              "%s", err.msg);
	ck_assert_msg(!strstr(err.msg, "eyJ"), "no token in '%s'", err.msg);
	unsetenv("AWS_ENDPOINT_URL_STS");
	creds_release(&pod);
	creds_release(&obj);
	cloudauth_reset();
}
END_TEST

#define GSA "reader@imageguard-test.iam.gserviceaccount.com"
#define GKE_AUDIENCE                                                                               \
	"identitynamespace:imageguard-test.svc.id.goog:https://container.googleapis.com/v1/"       \
	"projects/imageguard-test/locations/europe-west1/clusters/fleet"

/* gcp object-level identity as fluxcd/pkg auth/gcp: the GKE cluster from the metadata server
 * (read once), the account's token for Flux's identitynamespace audience, Google STS, then
 * generateAccessToken of the annotated GSA, whose token (user oauth2accesstoken) lists the
 * registry; cached per account; a GSA that does not admit the account is refused naming it;
 * without the annotation the federated token itself (direct access). */
START_TEST(gcp_object_identity)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct registry_listing l = REGISTRY_LISTING_INIT;
	struct error err = ERROR_INIT;
	struct token_calls calls = {0};
	struct cloudauth_identity id = {"flux-system", "imageguard", NULL,   NULL,
	                                NULL,          file_token,   &calls, GSA};
	long long sts0 = stat_of("gcp-sts"), iam0 = stat_of("gcp-iam");
	long long md0 = stat_of("gce-metadata-cluster"), pod0 = stat_of("gce-metadata");
	char buf[64];

	snprintf(buf, sizeof(buf), "127.0.0.1:%lld",
	         (long long)json_integer_value(json_object_get(cloud.state, "port")));
	setenv("GCE_METADATA_HOST", buf, 1);
	setenv("GOOGLE_STS_ENDPOINT", cloud.url, 1);
	setenv("GOOGLE_IAM_CREDENTIALS_ENDPOINT", cloud.url, 1);
	control("/_fixture/config",
	        "{\"gsa\": {\"" GSA "\": "
	        "\"system:serviceaccount:flux-system:imageguard\"}, "
	        "\"gcp_direct\": [\"system:serviceaccount:flux-system:imageguard\"]}");
	cloudauth_reset();
	ck_assert_msg(cloudauth_creds_as(&c, "gcp", host_of("gcp"), true, &id, &err) == 0, "%s",
	              err.msg);
	ck_assert_str_eq(calls.audience, GKE_AUDIENCE);
	ck_assert_str_eq(c.username, "oauth2accesstoken");
	ck_assert_int_eq(stat_of("gcp-sts"), sts0 + 1);
	ck_assert_int_eq(stat_of("gcp-iam"), iam0 + 1);
	ck_assert_int_eq(stat_of("gce-metadata-cluster"), md0 + 3);
	ck_assert_msg(list_with(&l, &c, "gcp", host_of("gcp"), &err) == 0, "%s", err.msg);
	ck_assert_int_eq(l.tags.len, 2);
	registry_listing_release(&l);
	ck_assert_int_eq(cloudauth_creds_as(&c, "gcp", host_of("gcp"), true, &id, &err), 0);
	ck_assert_int_eq(calls.n, 1); /* cached */
	/* a GSA whose binding does not admit the account */
	id.gcp_service_account = "other@imageguard-test.iam.gserviceaccount.com";
	cloudauth_forget_as("gcp", host_of("gcp"), &id);
	ck_assert_int_eq(cloudauth_creds_as(&c, "gcp", host_of("gcp"), true, &id, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "serviceaccount 'flux-system/imageguard'") &&
	                  strstr(err.msg, "other@imageguard-test") &&
	                  strstr(err.msg, "403 forbidden: PERMISSION_DENIED") &&
	                  !strstr(err.msg, "ya29") && !strstr(err.msg, "eyJ"),
	              "%s", err.msg);
	ck_assert_int_eq(stat_of("gce-metadata-cluster"), md0 + 3); /* the cluster read once */
	/* direct access: no annotation, the federated token itself is the password */
	id.gcp_service_account = NULL;
	ck_assert_msg(cloudauth_creds_as(&c, "gcp", host_of("gcp"), true, &id, &err) == 0, "%s",
	              err.msg);
	ck_assert_int_eq(stat_of("gcp-iam"), iam0 + 2); /* the refused one, none since */
	ck_assert_int_eq(stat_of("gcp-sts"), sts0 + 3);
	ck_assert_msg(list_with(&l, &c, "gcp", host_of("gcp"), &err) == 0, "%s", err.msg);
	ck_assert_int_eq(l.tags.len, 2);
	registry_listing_release(&l);
	ck_assert_int_eq(stat_of("gce-metadata"), pod0); /* never the pod's own token */
	unsetenv("GOOGLE_STS_ENDPOINT");
	unsetenv("GCE_METADATA_HOST");
	unsetenv("GOOGLE_IAM_CREDENTIALS_ENDPOINT");
	creds_release(&c);
	cloudauth_reset();
}
END_TEST

/* The requests the fixture has seen (GET /_fixture/requests): a JSON array, new reference. */
static json_t *requests(void)
{
	char url[256];
	struct buf out = BUF_INIT;
	json_t *j;

	snprintf(url, sizeof(url), "%s/_fixture/requests", cloud.url);
	ck_assert_int_eq(fixture_http_get(&out, url), 200);
	j = json_loads(out.data, 0, NULL);
	ck_assert(json_is_array(j));
	buf_release(&out);
	return j;
}

/* Of the requests since index `since`, how many came to port for path (suffix match), with an
 * X-Amz-Target (ECR) or without one (AWS STS) when target is 1 or 0, either when -1. */
static int seen(size_t since, long long port, const char *path, int target)
{
	json_t *all = requests(), *r;
	size_t i, plen = strlen(path);
	int n = 0;

	json_array_foreach(all, i, r)
	{
		const char *p = json_string_value(json_object_get(r, "path"));
		bool has_target = json_is_string(json_object_get(r, "target"));

		if (i >= since && json_integer_value(json_object_get(r, "port")) == port && p &&
		    strlen(p) >= plen && !strcmp(p + strlen(p) - plen, path) &&
		    (target < 0 || has_target == (target == 1)))
			n++;
	}
	json_decref(all);
	return n;
}

static size_t requests_len(void)
{
	json_t *all = requests();
	size_t n = json_array_size(all);

	json_decref(all);
	return n;
}

/* The endpoint overrides move their own API and nothing else, each proved by the port the
 * fixture saw the request on: GOOGLE_STS_ENDPOINT and GOOGLE_IAM_CREDENTIALS_ENDPOINT each to
 * a port of its own (either way round: neither takes the other's), AWS_ENDPOINT_URL_STS over
 * AWS_ENDPOINT_URL, which remains the endpoint of ECR (no AWS_ENDPOINT_URL_ECR) and, alone,
 * of STS too. */
START_TEST(endpoint_overrides)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct error err = ERROR_INIT;
	struct token_calls calls = {0};
	struct cloudauth_identity gcp = {"flux-system", "imageguard", NULL,   NULL,
	                                 NULL,          file_token,   &calls, GSA};
	struct cloudauth_identity aws = {
	    "flux-system", "imageguard", "arn:aws:iam::123456789012:role/imageguard",
	    NULL,          NULL,         file_token,
	    &calls,        NULL};
	long long p1 = json_integer_value(json_object_get(cloud.state, "port"));
	long long p2 = json_integer_value(json_object_get(cloud.state, "port2"));
	const char *url2 = json_string_value(json_object_get(cloud.state, "url2"));
	const char *iam = ":generateAccessToken";
	char md[64], slash[160];
	size_t n0;

	ck_assert(p2 > 0 && p2 != p1 && url2);
	snprintf(md, sizeof(md), "127.0.0.1:%lld", p1);
	snprintf(slash, sizeof(slash), "%s/", cloud.url); /* a trailing '/' is dropped */
	setenv("GCE_METADATA_HOST", md, 1);
	control("/_fixture/config",
	        "{\"gsa\": {\"" GSA "\": \"system:serviceaccount:flux-system:imageguard\"}}");
	for (int swap = 0; swap < 2; swap++) {
		long long sts_port = swap ? p1 : p2, iam_port = swap ? p2 : p1;

		setenv("GOOGLE_STS_ENDPOINT", swap ? slash : url2, 1);
		setenv("GOOGLE_IAM_CREDENTIALS_ENDPOINT", swap ? url2 : slash, 1);
		cloudauth_reset();
		n0 = requests_len();
		ck_assert_msg(cloudauth_creds_as(&c, "gcp", host_of("gcp"), true, &gcp, &err) == 0,
		              "%s", err.msg);
		ck_assert_int_eq(seen(n0, sts_port, "/v1/token", -1), 1);
		ck_assert_int_eq(seen(n0, iam_port, "/v1/token", -1), 0);
		ck_assert_int_eq(seen(n0, iam_port, iam, -1), 1);
		ck_assert_int_eq(seen(n0, sts_port, iam, -1), 0);
	}
	unsetenv("GOOGLE_STS_ENDPOINT");
	unsetenv("GOOGLE_IAM_CREDENTIALS_ENDPOINT");
	unsetenv("GCE_METADATA_HOST");

	unsetenv("AWS_ENDPOINT_URL_ECR");
	setenv("AWS_ENDPOINT_URL", cloud.url, 1);
	setenv("AWS_ENDPOINT_URL_STS", url2, 1);
	cloudauth_reset();
	n0 = requests_len();
	ck_assert_msg(cloudauth_creds_as(&c, "aws", cloud.ecr, true, &aws, &err) == 0, "%s",
	              err.msg);
	ck_assert_int_eq(seen(n0, p2, "/", 0), 1); /* STS: its own variable */
	ck_assert_int_eq(seen(n0, p1, "/", 0), 0);
	ck_assert_int_eq(seen(n0, p1, "/", 1), 1); /* ECR: AWS_ENDPOINT_URL */
	ck_assert_int_eq(seen(n0, p2, "/", 1), 0);
	unsetenv("AWS_ENDPOINT_URL_STS");
	setenv("AWS_ENDPOINT_URL", url2, 1);
	cloudauth_reset();
	n0 = requests_len();
	ck_assert_msg(cloudauth_creds_as(&c, "aws", cloud.ecr, true, &aws, &err) == 0, "%s",
	              err.msg);
	ck_assert_int_eq(seen(n0, p2, "/", 0), 1); /* both through AWS_ENDPOINT_URL */
	ck_assert_int_eq(seen(n0, p2, "/", 1), 1);
	ck_assert_int_eq(seen(n0, p1, "/", -1), 0);
	unsetenv("AWS_ENDPOINT_URL");
	setenv("AWS_ENDPOINT_URL_ECR", cloud.url, 1);
	creds_release(&c);
	cloudauth_reset();
}
END_TEST

/* The container credentials endpoint refuses a wrong agent token; an unsafe URL is refused
 * before any request. */
START_TEST(pod_identity_errors)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct error err = ERROR_INIT;
	char url[256], tok[256];

	unsetenv("AWS_ACCESS_KEY_ID");
	cloudauth_reset();
	snprintf(url, sizeof(url), "%s/pod-identity/credentials", cloud.url);
	snprintf(tok, sizeof(tok), "%s/wrong-agent-token", cloud.dir);
	FILE *f = fopen(tok, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not-the-agent-token\n", f);
	fclose(f);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tok, 1);
	ck_assert_int_eq(cloudauth_creds(&c, "aws", cloud.ecr, true, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "provider 'aws': container credentials: 401"), "%s", err.msg);
	ck_assert_ptr_null(strstr(err.msg, "not-the-agent-token"));
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", field_path("agent"), 1);
	ck_assert_msg(cloudauth_creds(&c, "aws", cloud.ecr, true, &err) == 0, "%s", err.msg);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://198.51.100.7/creds", 1);
	cloudauth_reset();
	ck_assert_int_eq(cloudauth_creds(&c, "aws", cloud.ecr, true, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "must be https or a loopback"));
	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	setenv("AWS_ACCESS_KEY_ID", json_string_value(json_object_get(cloud.state, "static_key")),
	       1);
	cloudauth_reset();
	creds_release(&c);
}
END_TEST

START_TEST(missing_environment)
{
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct error err = ERROR_INIT;

	unsetenv("AWS_ACCESS_KEY_ID");
	cloudauth_reset();
	ck_assert_int_eq(cloudauth_creds(&c, "aws", cloud.ecr, true, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "provider 'aws': no credentials"));
	ck_assert_int_eq(cloudauth_creds(&c, "gcp", "gcr.io", false, &err) < 0, 1);
	ck_assert_int_eq(cloudauth_creds(&c, "azure", "x.azurecr.io", false, &err), IG_EINVALID);
	ck_assert_str_eq(err.msg, "provider 'azure': AZURE_CLIENT_ID is not set");
	ck_assert_int_eq(cloudauth_creds(&c, "generic", "gcr.io", false, &err), 0);
	ck_assert_ptr_null(c.username);
	setenv("AWS_ACCESS_KEY_ID", json_string_value(json_object_get(cloud.state, "static_key")),
	       1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cloudauth");
	TCase *tc = tcase_create("parse"), *tf = tcase_create("fixture");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, ecr_region, 0, sizeof(ecr_hosts) / sizeof(ecr_hosts[0]));
	tcase_add_loop_test(tc, parse_sts, 0, sizeof(sts_cases) / sizeof(sts_cases[0]));
	tcase_add_loop_test(tc, parse_container, 0,
	                    sizeof(container_cases) / sizeof(container_cases[0]));
	tcase_add_loop_test(tc, parse_ecr, 0, sizeof(ecr_cases) / sizeof(ecr_cases[0]));
	tcase_add_loop_test(tc, parse_oauth, 0, sizeof(oauth_cases) / sizeof(oauth_cases[0]));
	tcase_add_loop_test(tc, parse_time, 0, sizeof(times) / sizeof(times[0]));
	tcase_add_loop_test(tc, jwt_exp, 0, sizeof(jwts) / sizeof(jwts[0]));
	tcase_add_test(tc, providers);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(tf, cloud_start, cloud_stop);
	tcase_set_timeout(tf, 60);
	tcase_add_test(tf, cached_until_shortly_before_expiry);
	tcase_add_test(tf, revoked_refreshed_once_then_error);
	tcase_add_test(tf, public_ecr);
	tcase_add_test(tf, concurrent_fetches_coalesce);
	tcase_add_test(tf, ecr_path_prefix_region);
	tcase_add_test(tf, object_identity);
	tcase_add_test(tf, gcp_object_identity);
	tcase_add_test(tf, endpoint_overrides);
	tcase_add_test(tf, gcp_and_azure_cached_and_renewed);
	tcase_add_test(tf, lookalike_hosts_get_no_token);
	tcase_add_test(tf, pod_identity_errors);
	tcase_add_test(tf, missing_environment);
	suite_add_tcase(s, tf);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
