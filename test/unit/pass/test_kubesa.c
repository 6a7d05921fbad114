/* Unit tests for spec.serviceAccountName's credentials (kubesa_load_creds): spec.secretRef
 * first, then the ServiceAccount's pull secrets in its order, anonymous only for an account
 * without any, a recorded fetch failure reported as it was written; names checked before any
 * request (kubesa_fetch). Table-driven over secret folders written here. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/pass/kubesa.h"
#include "imageguard/config/config.h"
#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"

#define HOST "registry.example.com"
/* base64("sa:from-account"), base64("ref:from-secret-ref") */
#define SA_AUTH "c2E6ZnJvbS1hY2NvdW50"
#define REF_AUTH "cmVmOmZyb20tc2VjcmV0LXJlZg=="

static char root[64];

static void put(const char *rel, const char *content)
{
	char path[256], dir[256];
	char *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		mkdir(dir, 0700);
	}
	if (!content)
		return; /* the folder alone */
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/imageguard-kubesa.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

#define AUTHS(host, auth) "{\"auths\": {\"" host "\": {\"auth\": \"" auth "\"}}}"
#define SA_DIR "apps.puller@serviceaccount/"

static const struct {
	const char *name;
	const char *files[4][2]; /* path under the secrets folder, content (NULL: a folder) */
	const char *secret_ref;
	int rc;
	const char *user; /* NULL: anonymous (rc 0) */
	const char *msg;  /* in err for a failure */
} cases[] = {
    {"the account's pull secret", {{SA_DIR "0.json", AUTHS(HOST, SA_AUTH)}}, NULL, 0, "sa", NULL},
    {"the first with the host, in the account's order",
     {{SA_DIR "0.json", AUTHS("other.example", REF_AUTH)}, {SA_DIR "1.json", AUTHS(HOST, SA_AUTH)}},
     NULL,
     0,
     "sa",
     NULL},
    {"secretRef first",
     {{"apps.ref/.dockerconfigjson", AUTHS(HOST, REF_AUTH)},
      {SA_DIR "0.json", AUTHS(HOST, SA_AUTH)}},
     "apps.ref",
     0,
     "ref",
     NULL},
    {"secretRef without the host: the account's",
     {{"apps.ref/.dockerconfigjson", AUTHS("other.example", REF_AUTH)},
      {SA_DIR "0.json", AUTHS(HOST, SA_AUTH)}},
     "apps.ref",
     0,
     "sa",
     NULL},
    {"secretRef's username/password files",
     {{"apps.ref/username", "ref"},
      {"apps.ref/password", "pw"},
      {SA_DIR "0.json", AUTHS(HOST, SA_AUTH)}},
     "apps.ref",
     0,
     "ref",
     NULL},
    {"an account without pull secrets: anonymous, as Flux", {{SA_DIR, NULL}}, NULL, 0, NULL, NULL},
    {"pull secrets without the host: an error, never anonymous",
     {{SA_DIR "0.json", AUTHS("other.example", SA_AUTH)}},
     NULL,
     IG_EINVALID,
     NULL,
     "no credentials for registry '" HOST "' in the 1 imagePullSecrets of serviceaccount "
     "'apps/puller'"},
    {"neither has the host",
     {{"apps.ref/.dockerconfigjson", AUTHS("other.example", REF_AUTH)}, {SA_DIR, NULL}},
     "apps.ref",
     IG_EINVALID,
     NULL,
     "in secret 'apps.ref' or the 0 imagePullSecrets"},
    {"a recorded fetch failure",
     {{SA_DIR "error", "serviceaccount 'apps/puller': kubernetes api 'GET x': 404 not found"}},
     NULL,
     IG_EINVALID,
     NULL,
     "serviceaccount 'apps/puller': kubernetes api 'GET x': 404"},
    {"never read",
     {{NULL, NULL}},
     NULL,
     IG_EINVALID,
     NULL,
     "serviceaccount 'apps/puller': its imagePullSecrets were not read"},
    {"a malformed pull secret names its file",
     {{SA_DIR "0.json", "{not json"}},
     NULL,
     IG_EINVALID,
     NULL,
     "0.json':1:4: invalid JSON"},
};

START_TEST(load_creds)
{
	struct config_repository r = {0};
	struct registry_creds c = REGISTRY_CREDS_INIT;
	struct error err = ERROR_INIT;
	int rc;

	for (int i = 0; i < 4 && cases[_i].files[i][0]; i++)
		put(cases[_i].files[i][0], cases[_i].files[i][1]);
	r.ns = "apps";
	r.service_account = "puller";
	r.secret_ref = (char *)cases[_i].secret_ref;
	r.ref.registry = HOST;
	rc = kubesa_load_creds(&c, &r, root, &err);
	ck_assert_msg(rc == cases[_i].rc, "%s: rc %d (%s)", cases[_i].name, rc, err.msg);
	if (cases[_i].user)
		ck_assert_str_eq(c.username, cases[_i].user);
	else
		ck_assert_ptr_null(c.username);
	if (cases[_i].msg)
		ck_assert_msg(strstr(err.msg, cases[_i].msg) != NULL, "%s: '%s'", cases[_i].name,
		              err.msg);
	ck_assert_msg(!strstr(err.msg, "from-account") && !strstr(err.msg, "from-secret-ref"),
	              "no secret in '%s'", err.msg);
	creds_release(&c);
}
END_TEST

/* Names are checked before any request or folder: the client is never used. */
START_TEST(fetch_refuses_bad_names)
{
	static const char *const bad[][2] = {{"apps", "../x"}, {"Apps", "puller"}, {"apps", ""},
	                                     {"apps", "a/b"},  {"apps", ".."},     {"apps", "a..b"},
	                                     {"a.b", "x"},     {"apps", "a.-b"},   {"..", "x"},
	                                     {"apps", "x%2f"}, {"apps", "x?"}};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct error err = ERROR_INIT;

		ck_assert_int_eq(kubesa_fetch(NULL, root, bad[i][0], bad[i][1], &err), IG_EINVALID);
		ck_assert_msg(strstr(err.msg, "not a valid name") != NULL, "%s", err.msg);
	}
}
END_TEST

/* The account's imagePullSecrets are the account's own list (the API server does not check
 * those names): one that is not a Kubernetes name is refused before any request names it. */
struct recorder {
	const char *account; /* the ServiceAccount's JSON */
	char paths[8][256];
	size_t n;
};

static int record_get(json_t **out, void *ctx, const char *path, struct error *err)
{
	struct recorder *r = ctx;

	if (r->n < 8)
		snprintf(r->paths[r->n++], sizeof(r->paths[0]), "%s", path);
	if (strstr(path, "/serviceaccounts/") && (*out = json_loads(r->account, 0, NULL)))
		return 0;
	return error_set(err, IG_ENOTFOUND, "GET %s: 404", path);
}

START_TEST(pull_secret_names_are_checked_before_a_request)
{
	static const char *const names[] = {"..", "a..b",   "../kube-system/secrets/x", ".", "x/y",
	                                    "A",  "x%2e%2e"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct recorder r = {0};
		struct error err = ERROR_INIT;
		unsigned char sum[KUBESA_SUM_LEN];
		char account[256];
		bool summed;

		snprintf(account, sizeof(account), "{\"imagePullSecrets\": [{\"name\": \"%s\"}]}",
		         names[i]);
		r.account = account;
		ck_assert_int_eq(
		    kubesa_read(sum, &summed, record_get, &r, NULL, "apps", "puller", &err),
		    IG_EINVALID);
		ck_assert_msg(strstr(err.msg, "imagePullSecrets[0]: not a Secret name"), "%s",
		              err.msg);
		ck_assert_uint_eq(r.n, 1);
		ck_assert_str_eq(r.paths[0], "/api/v1/namespaces/apps/serviceaccounts/puller");
	}
}
END_TEST

/* A cloud provider reads the account's own identity, for each of aws, azure and gcp alike:
 * without run --kube's API client that is one line naming the provider and the account. */
START_TEST(object_identity_needs_the_api)
{
	static const char *const providers[] = {"aws", "azure", "gcp"};

	for (size_t i = 0; i < 3; i++) {
		struct config_repository r = {0};
		struct registry_creds c = REGISTRY_CREDS_INIT;
		struct error err = ERROR_INIT;
		char want[128];

		r.ns = "apps";
		r.service_account = "puller";
		r.provider = (char *)providers[i];
		r.ref.registry = HOST;
		ck_assert_int_eq(kubesa_load_creds(&c, &r, root, &err), IG_EINVALID);
		snprintf(want, sizeof(want),
		         "provider '%s': serviceaccount 'apps/puller': needs run --kube",
		         providers[i]);
		ck_assert_msg(strstr(err.msg, want) == err.msg, "%s", err.msg);
		ck_assert_ptr_null(c.username);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kubesa");
	TCase *tc = tcase_create("kubesa");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, load_creds, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, fetch_refuses_bad_names);
	tcase_add_test(tc, pull_secret_names_are_checked_before_a_request);
	tcase_add_test(tc, object_identity_needs_the_api);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
