/* Unit tests for GitRepository provider: github: the app's RS256 JWT (claims, a signature the
 * key's public half verifies), secret checks, GitHub's token answer; and against the cloud
 * fixture (GitHub's installation-token API and Git over HTTP that accepts only live
 * installation tokens): tokens by installation id and by owner, caching, refusals, a clone
 * and a push through gitstore, and one renewal after a revocation. */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "support/fixture.h"
#include "imageguard/git/githubapp.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static struct {
	pid_t pid;
	char dir[64], url[128], secret[128], state[128];
	json_t *st;
} cloud;

static const char *src_dir(void)
{
	const char *s = getenv("IMAGEGUARD_SRC");

	return s && *s ? s : ".";
}

static const char *field(const char *name)
{
	return json_string_value(json_object_get(cloud.st, name));
}

static void write_file(const char *dir, const char *name, const char *content)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(content, f);
	fclose(f);
}

static char *slurp(const char *path)
{
	struct buf b = BUF_INIT;

	ck_assert_int_eq(buf_read_file(&b, path), 0);
	return buf_detach(&b);
}

/* The secret folder: app id, installation (id or owner), key and the fixture as the API. */
static void make_secret(const char *id, const char *installation, const char *owner)
{
	char cmd[400];
	char *pem = slurp(field("github_key"));

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", cloud.secret, cloud.secret);
	ck_assert_int_eq(system(cmd), 0);
	write_file(cloud.secret, "githubAppID", id);
	if (installation)
		write_file(cloud.secret, "githubAppInstallationID", installation);
	if (owner)
		write_file(cloud.secret, "githubAppInstallationOwner", owner);
	write_file(cloud.secret, "githubAppPrivateKey", pem);
	write_file(cloud.secret, "githubAppBaseURL", cloud.url);
	free(pem);
}

static void cloud_start(void)
{
	char script[512], path[160];

	snprintf(cloud.dir, sizeof(cloud.dir), "/tmp/imageguard-ghapp.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(cloud.dir));
	snprintf(cloud.secret, sizeof(cloud.secret), "%s/secret", cloud.dir);
	snprintf(cloud.state, sizeof(cloud.state), "%s/state", cloud.dir);
	snprintf(script, sizeof(script), "%s/test/fixtures/cloud_fixture.py", src_dir());
	cloud.pid = fork();
	ck_assert_int_ge(cloud.pid, 0);
	if (cloud.pid == 0) {
		execl("/usr/bin/python3", "python3", script, "serve", "--dir", cloud.dir,
		      (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/cloud.json", cloud.dir);
	for (int i = 0; i < 600 && access(path, R_OK) != 0; i++)
		usleep(50000);
	ck_assert_ptr_nonnull(cloud.st = json_load_file(path, 0, NULL));
	snprintf(cloud.url, sizeof(cloud.url), "%s", field("url"));
}

static void cloud_stop(void)
{
	char cmd[128];

	if (cloud.pid > 0) {
		kill(cloud.pid, SIGTERM);
		waitpid(cloud.pid, NULL, 0);
	}
	json_decref(cloud.st);
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

/* ---- the JWT, without the network ---- */

static char *b64url_decode(const char *s, size_t n, size_t *len)
{
	char *b64 = malloc(n + 4);
	unsigned char *raw = malloc(n + 4);
	size_t m = n;
	int out;

	for (size_t i = 0; i < n; i++)
		b64[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
	while (m % 4)
		b64[m++] = '=';
	out = EVP_DecodeBlock(raw, (unsigned char *)b64, (int)m);
	ck_assert_int_ge(out, 0);
	out -= (int)(m - n);
	raw[out] = 0;
	free(b64);
	*len = (size_t)out;
	return (char *)raw;
}

START_TEST(jwt_claims_and_signature)
{
	char *pem = slurp(field("github_key")), *jwt = NULL, *claims, *sig;
	struct error err = ERROR_INIT;
	const char *d1, *d2;
	size_t clen, slen;
	json_t *j;
	BIO *bio;
	EVP_PKEY *k;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	ck_assert_int_eq(githubapp_jwt(&jwt, "424242", pem, strlen(pem), 1796115600LL, &err), 0);
	ck_assert_ptr_nonnull(d1 = strchr(jwt, '.'));
	ck_assert_ptr_nonnull(d2 = strchr(d1 + 1, '.'));
	claims = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &clen);
	j = json_loads(claims, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "iss")), "424242");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "iat")), 1796115600LL - 30);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "exp")), 1796115600LL + 90);
	json_decref(j);
	sig = b64url_decode(d2 + 1, strlen(d2 + 1), &slen);
	ck_assert_int_eq(slen, 256);
	bio = BIO_new_mem_buf(pem, -1);
	k = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	ck_assert_int_eq(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k), 1);
	ck_assert_int_eq(EVP_DigestVerify(ctx, (unsigned char *)sig, slen, (unsigned char *)jwt,
	                                  (size_t)(d2 - jwt)),
	                 1);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	BIO_free(bio);
	free(claims), free(sig), free(jwt);
	ck_assert_int_eq(githubapp_jwt(&jwt, "1", "not a key", 9, 0, &err), IG_EINVALID);
	ck_assert_ptr_null(strstr(err.msg, "not a key"));
	free(pem);
}
END_TEST

static const struct {
	const char *json;
	int rc;
	long long exp;
} answers[] = {
    {"{\"token\":\"ghs_abc\",\"expires_at\":\"2026-12-01T09:00:00Z\"}", 0, 1796115600LL},
    {"{\"token\":\"ghs_abc\"}", IG_EINVALID, 0},
    {"{\"token\":\"\",\"expires_at\":\"2026-12-01T09:00:00Z\"}", IG_EINVALID, 0},
    {"{\"message\":\"Bad credentials\"}", IG_EINVALID, 0},
    {"[", IG_EINVALID, 0},
};

START_TEST(parse_token)
{
	struct error err = ERROR_INIT;
	char *tok = NULL;
	long long exp = 0;

	ck_assert_int_eq(
	    githubapp_parse_token(&tok, &exp, answers[_i].json, strlen(answers[_i].json), &err),
	    answers[_i].rc);
	if (answers[_i].rc == 0) {
		ck_assert_str_eq(tok, "ghs_abc");
		ck_assert_int_eq(exp, answers[_i].exp);
	} else {
		ck_assert_ptr_null(tok);
	}
	free(tok);
}
END_TEST

static const struct {
	const char *id, *installation, *owner, *msg;
} bad_secrets[] = {
    {"42a", "1", NULL, "githubAppID must be a number"},
    {"42", "1", "acme", "exactly one of githubAppInstallationID and githubAppInstallationOwner"},
    {"42", NULL, NULL, "exactly one of"},
    {"42", "x1", NULL, "githubAppInstallationID must be a number"},
};

START_TEST(secret_checks)
{
	struct error err = ERROR_INIT;

	make_secret(bad_secrets[_i].id, bad_secrets[_i].installation, bad_secrets[_i].owner);
	ck_assert_int_eq(githubapp_check(cloud.secret, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, bad_secrets[_i].msg) && strstr(err.msg, "provider 'github'"),
	              "%s", err.msg);
	ck_assert_int_eq(githubapp_check(NULL, &err), IG_EINVALID);
	ck_assert_str_eq(err.msg, "provider 'github' needs spec.secretRef");
}
END_TEST

/* ---- against the fixture ---- */

START_TEST(token_by_id_cached)
{
	struct error err = ERROR_INIT;
	char *a = NULL, *b = NULL;
	long long n0 = stat_of("github-token");

	make_secret(field("github_app_id"), field("github_installation"), NULL);
	ck_assert_msg(githubapp_token(&a, cloud.secret, &err) == 0, "%s", err.msg);
	ck_assert(strncmp(a, "ghs_", 4) == 0);
	ck_assert_int_eq(githubapp_token(&b, cloud.secret, &err), 0);
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(stat_of("github-token"), n0 + 1);
	githubapp_forget(cloud.secret);
	free(b);
	ck_assert_int_eq(githubapp_token(&b, cloud.secret, &err), 0);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(stat_of("github-token"), n0 + 2);
	free(a), free(b);
}
END_TEST

START_TEST(token_by_owner)
{
	struct error err = ERROR_INIT;
	char *t = NULL;
	long long n0 = stat_of("github-installation");

	make_secret(field("github_app_id"), NULL, field("github_owner"));
	ck_assert_msg(githubapp_token(&t, cloud.secret, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(stat_of("github-installation"), n0 + 1);
	free(t);
	make_secret(field("github_app_id"), NULL, "nobody");
	ck_assert_int_eq(githubapp_token(&t, cloud.secret, &err), IG_EAUTH);
	ck_assert_ptr_nonnull(strstr(err.msg, "404"));
}
END_TEST

START_TEST(refused_app)
{
	struct error err = ERROR_INIT;
	char *t = NULL;

	/* Another app id: the JWT's issuer does not match the key GitHub holds. */
	make_secret("777", field("github_installation"), NULL);
	ck_assert_int_eq(githubapp_token(&t, cloud.secret, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "provider 'github': app 777") && strstr(err.msg, "401"), "%s",
	              err.msg);
	ck_assert_ptr_null(t);
}
END_TEST

static int edit(void *ctx, const char *workdir, struct buf *message, struct error *err)
{
	char path[512];
	FILE *f;

	(void)ctx, (void)err;
	snprintf(path, sizeof(path), "%s/app.yaml", workdir);
	if (!(f = fopen(path, "w")))
		return IG_EFAIL;
	fprintf(f, "image: ghcr.io/acme/app:v1.%ld.0 # {\"$imagepolicy\": \"apps:app\"}\n",
	        (long)time(NULL));
	fclose(f);
	return buf_puts(message, "bump app");
}

START_TEST(clone_and_push_with_renewal)
{
	struct gitstore_options o = {0};
	struct gitstore *g = NULL;
	struct error err = ERROR_INIT;
	char url[256], commit[41], path[512];
	long long n0;

	make_secret(field("github_app_id"), field("github_installation"), NULL);
	githubapp_forget(cloud.secret);
	snprintf(url, sizeof(url), "%s/git/acme/fleet.git", cloud.url);
	o.url = url;
	o.branch = "main";
	o.state_dir = cloud.state;
	o.secret_dir = cloud.secret;
	o.provider = "github";
	n0 = stat_of("github-token");
	ck_assert_msg(gitstore_open(&g, &o, &err) == 0, "%s", err.msg);
	snprintf(path, sizeof(path), "%s/app.yaml", gitstore_workdir(g));
	ck_assert_int_eq(access(path, R_OK), 0);
	ck_assert_int_eq(stat_of("github-token"), n0 + 1);
	/* Revoked between clone and push: the server refuses it, one new token pushes. */
	control("/_fixture/revoke", "{}");
	ck_assert_msg(gitstore_commit_push(commit, g, edit, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(strlen(commit), 40);
	ck_assert_int_eq(stat_of("github-token"), n0 + 2);
	gitstore_free(g);
	g = NULL;
	/* Refused whatever the token: one renewal, then the error, without the token in it. */
	control("/_fixture/config", "{\"refuse\": [\"git\"]}");
	snprintf(path, sizeof(path), "%s/state2", cloud.dir);
	o.state_dir = path;
	n0 = stat_of("github-token");
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EAUTH);
	ck_assert_msg(strstr(err.msg, "github app installation token refused by the server"), "%s",
	              err.msg);
	ck_assert_ptr_null(strstr(err.msg, "ghs_"));
	ck_assert_int_eq(stat_of("github-token"), n0 + 1);
	control("/_fixture/config", "{\"refuse\": []}");
	o.state_dir = cloud.state;
	/* Without a provider the same secret has no username/password: refused. */
	o.provider = NULL;
	ck_assert_int_ne(gitstore_open(&g, &o, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "authentication required"));
	/* provider github over ssh is a configuration error. */
	o.provider = "github";
	o.url = "ssh://git@127.0.0.1:1/acme/fleet.git";
	ck_assert_int_eq(gitstore_open(&g, &o, &err), IG_EINVALID);
	ck_assert_ptr_nonnull(strstr(err.msg, "needs an https URL"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("githubapp");
	TCase *tc = tcase_create("fixture");
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, cloud_start, cloud_stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, jwt_claims_and_signature);
	tcase_add_loop_test(tc, parse_token, 0, sizeof(answers) / sizeof(answers[0]));
	tcase_add_loop_test(tc, secret_checks, 0, sizeof(bad_secrets) / sizeof(bad_secrets[0]));
	tcase_add_test(tc, token_by_id_cached);
	tcase_add_test(tc, token_by_owner);
	tcase_add_test(tc, refused_app);
	tcase_add_test(tc, clone_and_push_with_renewal);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
