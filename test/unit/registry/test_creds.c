/* Unit tests for credential loading: Docker config key forms, `auth` base64, username/password
 * files, and malformed files whose errors name the file but never its content. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"

#define SECRET "s3cr3t-Pa55"
/* base64("alice:s3cr3t-Pa55") */
#define AUTH_B64 "YWxpY2U6czNjcjN0LVBhNTU="

static char dir[64];

static void write_file(const char *name, const char *content)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static void remove_file(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/imageguard-creds.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	remove_file(".dockerconfigjson");
	remove_file("config.json");
	remove_file("username");
	remove_file("password");
	remove_file("bearerToken");
	rmdir(dir);
}

static const struct {
	const char *json;
	const char *host;
	int rc;
	const char *user, *pass, *token;
} configs[] = {
    {"{\"auths\":{\"ghcr.io\":{\"auth\":\"" AUTH_B64 "\"}}}", "ghcr.io", 0, "alice", SECRET, NULL},
    {"{\"auths\":{\"https://ghcr.io/v2/\":{\"username\":\"bob\",\"password\":\"" SECRET "\"}}}",
     "ghcr.io", 0, "bob", SECRET, NULL},
    {"{\"auths\":{\"http://127.0.0.1:5000\":{\"auth\":\"" AUTH_B64 "\"}}}", "127.0.0.1:5000", 0,
     "alice", SECRET, NULL},
    /* Docker Hub's historical key and its aliases */
    {"{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"" AUTH_B64 "\"}}}",
     "registry-1.docker.io", 0, "alice", SECRET, NULL},
    {"{\"auths\":{\"docker.io\":{\"auth\":\"" AUTH_B64 "\"}}}", "registry-1.docker.io", 0, "alice",
     SECRET, NULL},
    /* an exact key wins over a normalised one */
    {"{\"auths\":{\"https://ghcr.io\":{\"username\":\"x\",\"password\":\"y\"},"
     "\"ghcr.io\":{\"auth\":\"" AUTH_B64 "\"}}}",
     "ghcr.io", 0, "alice", SECRET, NULL},
    /* a registry token */
    {"{\"auths\":{\"q.example\":{\"registrytoken\":\"tok\"}}}", "q.example", 0, NULL, NULL, "tok"},
    /* no entry for the host, no auths at all: anonymous */
    {"{\"auths\":{\"other.example\":{\"auth\":\"" AUTH_B64 "\"}}}", "ghcr.io", 0, NULL, NULL, NULL},
    /* an entry's credentials go only to that exact host: look-alike keys give nothing */
    {"{\"auths\":{\"ghcr.io.evil.example\":{\"auth\":\"" AUTH_B64 "\"},"
     "\"evilghcr.io\":{\"auth\":\"" AUTH_B64 "\"},\"evil.ghcr.io\":{\"auth\":\"" AUTH_B64
     "\"},\"https://evil.example/ghcr.io\":{\"auth\":\"" AUTH_B64 "\"},"
     "\"ghcr.io:443\":{\"auth\":\"" AUTH_B64 "\"}}}",
     "ghcr.io", 0, NULL, NULL, NULL},
    {"{\"auths\":{\"ghcr.io\":{\"auth\":\"" AUTH_B64 "\"}}}", "ghcr.io.evil.example", 0, NULL, NULL,
     NULL},
    {"{\"auths\":{\"ghcr.io\":{\"auth\":\"" AUTH_B64 "\"}}}", "evilghcr.io", 0, NULL, NULL, NULL},
    {"{\"credsStore\":\"desktop\"}", "ghcr.io", 0, NULL, NULL, NULL},
    /* a port is part of the host */
    {"{\"auths\":{\"127.0.0.1:5001\":{\"auth\":\"" AUTH_B64 "\"}}}", "127.0.0.1:5000", 0, NULL,
     NULL, NULL},
    /* malformed */
    {"{\"auths\":{\"ghcr.io\":{\"auth\":\"not base64!\"}}}", "ghcr.io", IG_EINVALID, NULL, NULL,
     NULL},
    {"{\"auths\":{\"ghcr.io\":{\"auth\":\"YWxpY2U=\"}}}", "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
    {"{\"auths\":{\"ghcr.io\":{\"username\":42}}}", "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
    {"{\"auths\":{\"ghcr.io\":\"" SECRET "\"}}", "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
    {"{\"auths\":[\"" SECRET "\"]}", "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
    {"[\"" SECRET "\"]", "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
    {"{\"auths\":{\"ghcr.io\":{\"auth\":\"" SECRET, "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
    {SECRET, "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
    {"", "ghcr.io", IG_EINVALID, NULL, NULL, NULL},
};

START_TEST(docker_config)
{
	struct registry_creds c;
	struct error err = ERROR_INIT;
	char path[256];
	int rc;

	write_file("config.json", configs[_i].json);
	snprintf(path, sizeof(path), "%s/config.json", dir);
	rc = creds_load_docker_config(&c, path, configs[_i].host, &err);
	ck_assert_msg(rc == configs[_i].rc, "case %d: rc %d (%s)", _i, rc, err.msg);
	ck_assert_pstr_eq(c.username, configs[_i].user);
	ck_assert_pstr_eq(c.password, configs[_i].pass);
	ck_assert_pstr_eq(c.token, configs[_i].token);
	if (rc < 0) {
		ck_assert_msg(strstr(err.msg, path) != NULL, "error does not name the file: %s",
		              err.msg);
		ck_assert_msg(strstr(err.msg, SECRET) == NULL && strstr(err.msg, "s3cr") == NULL,
		              "error leaks the secret: %s", err.msg);
	}
	creds_release(&c);
}
END_TEST

START_TEST(missing_file)
{
	struct registry_creds c;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(creds_load_docker_config(&c, "/nonexistent/config.json", "ghcr.io", &err),
	                 IG_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/config.json"));
}
END_TEST

START_TEST(secret_files)
{
	struct registry_creds c;
	struct error err = ERROR_INIT;
	char missing[512], want[1024];

	/* a missing folder and an empty one are errors naming the path, never anonymous */
	snprintf(missing, sizeof(missing), "%s/nope", dir);
	ck_assert_int_eq(creds_load_secret(&c, missing, "ghcr.io", &err), IG_ENOTFOUND);
	snprintf(want, sizeof(want), "secret folder '%s' does not exist", missing);
	ck_assert_str_eq(err.msg, want);
	ck_assert_ptr_null(c.username);
	error_clear(&err);
	ck_assert_int_eq(creds_load_secret(&c, dir, "ghcr.io", &err), IG_EINVALID);
	snprintf(want, sizeof(want), "'%s': no .dockerconfigjson, username/password or bearerToken",
	         dir);
	ck_assert_str_eq(err.msg, want);
	ck_assert_ptr_null(c.username);
	error_clear(&err);
	/* username/password files, trailing newlines dropped */
	write_file("username", "carol\n");
	write_file("password", SECRET "\r\n");
	ck_assert_int_eq(creds_load_secret(&c, dir, "ghcr.io", &err), 0);
	ck_assert_str_eq(c.username, "carol");
	ck_assert_str_eq(c.password, SECRET);
	creds_release(&c);
	/* a username without a password is an error naming the folder */
	remove_file("password");
	ck_assert_int_eq(creds_load_secret(&c, dir, "ghcr.io", &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, dir));
	remove_file("username");
	/* a bearer token */
	write_file("bearerToken", "tok-123\n");
	ck_assert_int_eq(creds_load_secret(&c, dir, "ghcr.io", &err), 0);
	ck_assert_str_eq(c.token, "tok-123");
	creds_release(&c);
	/* .dockerconfigjson takes precedence */
	write_file(".dockerconfigjson", "{\"auths\":{\"ghcr.io\":{\"auth\":\"" AUTH_B64 "\"}}}");
	ck_assert_int_eq(creds_load_secret(&c, dir, "ghcr.io", &err), 0);
	ck_assert_str_eq(c.username, "alice");
	creds_release(&c);
	/* one without an entry for the registry is an error, not anonymous access */
	write_file(".dockerconfigjson", "{\"auths\":{\"docker.io\":{\"auth\":\"" AUTH_B64 "\"}}}");
	ck_assert_int_eq(creds_load_secret(&c, dir, "ghcr.io", &err), IG_EINVALID);
	snprintf(want, sizeof(want),
	         "'%s/.dockerconfigjson': no credentials for registry 'ghcr.io'", dir);
	ck_assert_str_eq(err.msg, want);
	error_clear(&err);
	/* and a broken one is an error, not a fallback */
	write_file(".dockerconfigjson", "{\"auths\":");
	ck_assert_int_eq(creds_load_secret(&c, dir, "ghcr.io", &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, ".dockerconfigjson"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("creds");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, docker_config, 0, sizeof(configs) / sizeof(configs[0]));
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, secret_files);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
