/* kubesource (run --kube): first what needs no API server (kubesource_private.h): the
 * preferred version read from discovery, the kinds a group version serves, one object's
 * document, a Secret written into its folder (0700, files 0600, keys as Kubernetes allows
 * them) and the sum a pass compares; then against the etcd-backed API fixture
 * (kubeapi_etcd.py): the watches at the preferred version, a configuration loaded from the
 * objects with their Secrets, a Secret's change, rotation, deletion and return seen by
 * kubesource_refs_changed, the secrets folder removed at the end; and an API server without
 * Flux's CRDs (kubeapi.py). */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../../src/controller/kubesource_private.h"
#include "imageguard/config/config.h"
#include "imageguard/controller/kubesource.h"
#include "imageguard/kube/kubewatch.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/pass/shard.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "support/fixture.h"

#define IMG "image.toolkit.fluxcd.io"
#define SRC "source.toolkit.fluxcd.io"

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	ck_assert_msg(j != NULL, "test JSON: %s: %s", jerr.text, text);
	return j;
}

/* ---- discovery: the preferred version of a group ---- */

static const struct {
	const char *apigroup; /* GET /apis/G's answer */
	int rc;
	const char *want; /* the path, or the error */
} preferred_cases[] = {
    /* the preferred one, not the first served */
    {"{\"name\": \"" IMG "\", \"versions\": [{\"groupVersion\": \"" IMG "/v1\", \"version\": "
     "\"v1\"}, {\"groupVersion\": \"" IMG "/v1beta2\", \"version\": \"v1beta2\"}], "
     "\"preferredVersion\": {\"groupVersion\": \"" IMG "/v1beta2\", \"version\": \"v1beta2\"}}",
     0, "/apis/" IMG "/v1beta2"},
    {"{\"preferredVersion\": {\"version\": \"v1\"}}", 0, "/apis/" IMG "/v1"},
    {"{\"versions\": [{\"version\": \"v1\"}]}", IG_EINVALID,
     "kubernetes api 'GET /apis/" IMG "': no preferredVersion"},
    {"{\"preferredVersion\": {\"version\": \"\"}}", IG_EINVALID,
     "kubernetes api 'GET /apis/" IMG "': no preferredVersion"},
    {"{\"preferredVersion\": {\"version\": \"v1/../../api\"}}", IG_EINVALID,
     "kubernetes api 'GET /apis/" IMG "': no preferredVersion"},
    {"{\"preferredVersion\": {\"version\": 1}}", IG_EINVALID,
     "kubernetes api 'GET /apis/" IMG "': no preferredVersion"},
    {"{\"preferredVersion\": \"v1\"}", IG_EINVALID,
     "kubernetes api 'GET /apis/" IMG "': no preferredVersion"},
};

START_TEST(preferred_version)
{
	json_t *g = parse(preferred_cases[_i].apigroup);
	struct error err = ERROR_INIT;
	char out[128] = "untouched";
	int rc = kubesource_preferred_api(out, sizeof(out), IMG, g, "/apis/" IMG, &err);

	ck_assert_msg(rc == preferred_cases[_i].rc, "case %d: %d %s", _i, rc, err.msg);
	if (rc == 0)
		ck_assert_str_eq(out, preferred_cases[_i].want);
	else
		ck_assert_str_eq(err.msg, preferred_cases[_i].want);
	json_decref(g);
}
END_TEST

/* ---- discovery: the kinds a group version serves ---- */

#define RES(n) "{\"name\": \"" n "\", \"namespaced\": true}"

static const struct {
	const char *group, *list; /* GET /apis/G/V's APIResourceList */
	int rc;
	const char *want; /* the error */
} served_cases[] = {
    {IMG,
     "{\"resources\": [" RES("imagepolicies") ", " RES("imagepolicies/status") ", " RES(
         "imagerepositories") ", " RES("imageupdateautomations") "]}",
     0, ""},
    {SRC, "{\"resources\": [" RES("buckets") ", " RES("gitrepositories") "]}", 0, ""},
    {IMG, "{\"resources\": [" RES("imagepolicies") ", " RES("imageupdateautomations") "]}",
     IG_ENOTFOUND,
     "kubernetes api '/apis/G/V': ImageRepository (imagerepositories) is not served: is its "
     "CRD installed?"},
    /* a subresource is not the kind */
    {IMG,
     "{\"resources\": [" RES("imagerepositories") ", " RES("imagepolicies/status") ", " RES(
         "imageupdateautomations") "]}",
     IG_ENOTFOUND,
     "kubernetes api '/apis/G/V': ImagePolicy (imagepolicies) is not served: is its CRD "
     "installed?"},
    {IMG, "{\"resources\": [" RES("imagerepositories") ", " RES("imagepolicies") "]}", IG_ENOTFOUND,
     "kubernetes api '/apis/G/V': ImageUpdateAutomation (imageupdateautomations) is not "
     "served: is its CRD installed?"},
    /* the image kinds at the source group's version do not count */
    {SRC, "{\"resources\": [" RES("imagerepositories") "]}", IG_ENOTFOUND,
     "kubernetes api '/apis/G/V': GitRepository (gitrepositories) is not served: is its CRD "
     "installed?"},
    {SRC, "{}", IG_ENOTFOUND,
     "kubernetes api '/apis/G/V': GitRepository (gitrepositories) is not served: is its CRD "
     "installed?"},
};

START_TEST(served_kinds)
{
	json_t *list = parse(served_cases[_i].list);
	struct error err = ERROR_INIT;
	int rc = kubesource_served(list, "/apis/G/V", served_cases[_i].group, &err);

	ck_assert_msg(rc == served_cases[_i].rc, "case %d: %d %s", _i, rc, err.msg);
	if (rc)
		ck_assert_str_eq(err.msg, served_cases[_i].want);
	json_decref(list);
}
END_TEST

/* ---- one object's document: what config reads of it, nothing more ---- */

static const struct {
	const char *kind, *object, *document;
} document_cases[] = {
    /* status, managedFields, uid, resourceVersion, kubectl's last-applied copy: left out */
    {"ImageRepository",
     "{\"apiVersion\": \"" IMG "/v1beta2\", \"kind\": \"ImageRepository\", \"metadata\": "
     "{\"name\": \"app\", \"namespace\": \"team\", \"uid\": \"u-1\", \"resourceVersion\": "
     "\"42\", \"generation\": 3, \"labels\": {\"tier\": \"web\"}, \"annotations\": "
     "{\"kubectl.kubernetes.io/last-applied-configuration\": \"{\\\"secret\\\": 1}\", "
     "\"note\": \"kept\"}, \"managedFields\": [{\"manager\": \"kubectl\"}]}, \"spec\": "
     "{\"image\": \"reg.example/app\", \"secretRef\": {\"name\": \"regcred\"}}, \"status\": "
     "{\"lastScanResult\": {\"tagCount\": 3}}}",
     "{\"apiVersion\": \"" IMG "/v1beta2\", \"kind\": \"ImageRepository\", \"metadata\": "
     "{\"name\": \"app\", \"namespace\": \"team\", \"labels\": {\"tier\": \"web\"}, "
     "\"annotations\": {\"note\": \"kept\"}}, \"spec\": {\"image\": \"reg.example/app\", "
     "\"secretRef\": {\"name\": \"regcred\"}}}"},
    /* only the last-applied annotation: an empty set stays; no labels: none */
    {"ImagePolicy",
     "{\"apiVersion\": \"" IMG "/v1\", \"metadata\": {\"name\": \"p\", \"namespace\": \"t\", "
     "\"annotations\": {\"kubectl.kubernetes.io/last-applied-configuration\": \"{}\"}}, "
     "\"spec\": {\"policy\": {\"semver\": {\"range\": \">=1\"}}}}",
     "{\"apiVersion\": \"" IMG "/v1\", \"kind\": \"ImagePolicy\", \"metadata\": {\"name\": "
     "\"p\", \"namespace\": \"t\", \"annotations\": {}}, \"spec\": {\"policy\": {\"semver\": "
     "{\"range\": \">=1\"}}}}"},
    /* the kind is the watch's, whatever the object says; no spec: none */
    {"GitRepository",
     "{\"apiVersion\": \"" SRC "/v1\", \"kind\": \"ImagePolicy\", \"metadata\": {\"name\": "
     "\"g\", \"namespace\": \"t\"}}",
     "{\"apiVersion\": \"" SRC "/v1\", \"kind\": \"GitRepository\", \"metadata\": {\"name\": "
     "\"g\", \"namespace\": \"t\"}}"},
    /* nothing to read: the keys are there, empty */
    {"ImageUpdateAutomation", "{}", "{\"kind\": \"ImageUpdateAutomation\", \"metadata\": {}}"},
};

START_TEST(documents)
{
	json_t *obj = parse(document_cases[_i].object), *want = parse(document_cases[_i].document);
	json_t *before = json_deep_copy(obj);
	json_t *doc = kubesource_document_json(document_cases[_i].kind, obj);
	char *got;

	ck_assert_ptr_nonnull(doc);
	got = json_dumps(doc, JSON_SORT_KEYS);
	ck_assert_msg(json_equal(doc, want), "case %d: %s", _i, got);
	free(got);
	/* the document's spec is a copy: rewriting its secret names leaves the watch's cache */
	if (json_object_get(doc, "spec"))
		json_object_set_new(json_object_get(doc, "spec"), "secretRef",
		                    json_pack("{s:s}", "name", "team.regcred"));
	if (json_object_get(doc, "metadata"))
		json_object_set_new(json_object_get(doc, "metadata"), "name", json_string("x"));
	ck_assert(json_equal(obj, before));
	json_decref(doc);
	json_decref(before);
	json_decref(want);
	json_decref(obj);
}
END_TEST

/* ---- a Secret into its folder ---- */

static char tmp[128];

static void tmp_make(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/imageguard-kubesource.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void tmp_remove(void)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* The file dir/name: its mode (-1 when it is not a regular file) and content into out. */
static int file_of(struct buf *out, const char *dir, const char *name)
{
	char path[400];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	buf_reset(out);
	ck_assert_int_eq(buf_read_file(out, path), 0);
	return (int)(st.st_mode & 07777);
}

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return (size_t)-1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static const struct {
	const char *secret;
	int rc;
	const char *msg; /* the error, or the files "name=content;..." */
} secret_cases[] = {
    {"{\"type\": \"kubernetes.io/basic-auth\", \"data\": {\"username\": \"dXNlcg==\", "
     "\"password\": \"cGFzcw==\", \".dockerconfigjson\": \"e30=\", \"ca.crt\": \"\"}}",
     0, "username=user;password=pass;.dockerconfigjson={};ca.crt="},
    {"{\"data\": {\"git_Key-1.pem\": \"eA==\"}}", 0, "git_Key-1.pem=x"},
    {"{\"type\": \"Opaque\"}", 0, ""}, /* no data: an empty folder */
    {"{\"data\": {\"../up\": \"eA==\"}}", IG_EINVALID, "secret 'ns/s': invalid key"},
    {"{\"data\": {\"a/b\": \"eA==\"}}", IG_EINVALID, "secret 'ns/s': invalid key"},
    {"{\"data\": {\".\": \"eA==\"}}", IG_EINVALID, "secret 'ns/s': invalid key"},
    {"{\"data\": {\"..\": \"eA==\"}}", IG_EINVALID, "secret 'ns/s': invalid key"},
    {"{\"data\": {\"\": \"eA==\"}}", IG_EINVALID, "secret 'ns/s': invalid key"},
    {"{\"data\": {\"k y\": \"eA==\"}}", IG_EINVALID, "secret 'ns/s': invalid key"},
    /* a good key first: nothing is left of it either */
    {"{\"data\": {\"ok\": \"eA==\", \"n\\nl\": \"eA==\"}}", IG_EINVALID,
     "secret 'ns/s': invalid key"},
    {"{\"data\": {\"k\": 7}}", IG_EINVALID, "secret 'ns/s': invalid key"},
    {"{\"data\": {\"k\": \"not base64!\"}}", IG_EINVALID, "secret 'ns/s': key 'k' is not base64"},
};

START_TEST(secret_folder)
{
	json_t *s = parse(secret_cases[_i].secret);
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;
	char dir[200];
	struct stat st;
	int rc;

	tmp_make();
	snprintf(dir, sizeof(dir), "%s/ns.s", tmp);
	umask(022);
	rc = kubesource_secret_write(dir, s, "secret 'ns/s'", &err);
	ck_assert_msg(rc == secret_cases[_i].rc, "case %d: %d %s", _i, rc, err.msg);
	if (rc < 0) {
		ck_assert_str_eq(err.msg, secret_cases[_i].msg);
		ck_assert_int_eq(lstat(dir, &st), -1); /* nothing left */
	} else {
		const char *p = secret_cases[_i].msg;
		size_t files = 0;

		ck_assert_int_eq(lstat(dir, &st), 0);
		ck_assert(S_ISDIR(st.st_mode));
		ck_assert_int_eq(st.st_mode & 07777, 0700);
		while (*p) {
			char name[64], want[64];
			size_t n = strcspn(p, "="), m;

			snprintf(name, sizeof(name), "%.*s", (int)n, p);
			p += n + 1;
			m = strcspn(p, ";");
			snprintf(want, sizeof(want), "%.*s", (int)m, p);
			p += m + (p[m] == ';');
			ck_assert_msg(file_of(&b, dir, name) == 0600, "case %d: %s", _i, name);
			ck_assert_uint_eq(b.len, strlen(want));
			ck_assert(memcmp(b.data ? b.data : "", want, b.len) == 0);
			files++;
		}
		ck_assert_uint_eq(entries(dir), files);
	}
	buf_release(&b);
	json_decref(s);
	tmp_remove();
}
END_TEST

/* Kubernetes' own limit: 64 keys write, 65 do not; a key of 253 bytes writes, 254 do not. */
START_TEST(secret_caps)
{
	json_t *s = json_object(), *data = json_object();
	struct error err = ERROR_INIT;
	char dir[200], key[300];
	struct stat st;

	tmp_make();
	snprintf(dir, sizeof(dir), "%s/ns.s", tmp);
	json_object_set_new(s, "data", data);
	for (int i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "k%02d", i);
		json_object_set_new(data, key, json_string("eA=="));
	}
	ck_assert_int_eq(kubesource_secret_write(dir, s, "secret 'ns/s'", &err), 0);
	ck_assert_uint_eq(entries(dir), 64);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		ck_assert_int_eq(system(cmd), 0);
	}
	json_object_set_new(data, "k64", json_string("eA=="));
	ck_assert_int_eq(kubesource_secret_write(dir, s, "secret 'ns/s'", &err), IG_ETOOBIG);
	ck_assert_str_eq(err.msg, "secret 'ns/s': more than 64 keys");
	ck_assert_int_eq(lstat(dir, &st), -1);

	json_object_clear(data);
	memset(key, 'a', 253);
	key[253] = '\0';
	json_object_set_new(data, key, json_string("eA=="));
	ck_assert_int_eq(kubesource_secret_write(dir, s, "secret 'ns/s'", &err), 0);
	ck_assert_uint_eq(entries(dir), 1);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		ck_assert_int_eq(system(cmd), 0);
	}
	json_object_clear(data);
	memset(key, 'a', 254);
	key[254] = '\0';
	json_object_set_new(data, key, json_string("eA=="));
	ck_assert_int_eq(kubesource_secret_write(dir, s, "secret 'ns/s'", &err), IG_EINVALID);
	ck_assert_int_eq(lstat(dir, &st), -1);

	/* a folder that cannot be made (its parent is missing) */
	json_object_clear(data);
	snprintf(dir, sizeof(dir), "%s/missing/ns.s", tmp);
	ck_assert_int_eq(kubesource_secret_write(dir, s, "secret 'ns/s'", &err), IG_EFAIL);
	ck_assert_ptr_nonnull(strstr(err.msg, "secret 'ns/s': cannot make its folder: "));
	json_decref(s);
	tmp_remove();
}
END_TEST

/* ---- the sum a pass compares: what a Secret holds, or how the API refused it ---- */

START_TEST(secret_sums)
{
	static const struct {
		const char *a, *b; /* NULL: no Secret (the API refused) */
		int code_a, code_b;
		bool same;
	} cases[] = {
	    /* the data in any order, and metadata (labels, resourceVersion) do not count */
	    {"{\"type\": \"Opaque\", \"data\": {\"u\": \"eA==\", \"p\": \"eQ==\"}}",
	     "{\"metadata\": {\"resourceVersion\": \"9\", \"labels\": {\"a\": \"b\"}}, \"type\": "
	     "\"Opaque\", \"data\": {\"p\": \"eQ==\", \"u\": \"eA==\"}}",
	     0, 0, true},
	    {"{\"type\": \"Opaque\", \"data\": {\"u\": \"eA==\"}}",
	     "{\"type\": \"Opaque\", \"data\": {\"u\": \"eQ==\"}}", 0, 0, false},
	    {"{\"type\": \"Opaque\", \"data\": {\"u\": \"eA==\"}}",
	     "{\"type\": \"Opaque\", \"data\": {\"v\": \"eA==\"}}", 0, 0, false},
	    {"{\"type\": \"Opaque\", \"data\": {\"u\": \"eA==\"}}",
	     "{\"type\": \"kubernetes.io/basic-auth\", \"data\": {\"u\": \"eA==\"}}", 0, 0, false},
	    {"{\"type\": \"Opaque\"}", "{\"type\": \"Opaque\", \"data\": {}}", 0, 0, false},
	    /* gone, then refused: each refusal is its own answer */
	    {NULL, NULL, IG_ENOTFOUND, IG_ENOTFOUND, true},
	    {NULL, NULL, IG_ENOTFOUND, IG_EAUTH, false},
	    {"{\"type\": \"Opaque\"}", NULL, 0, IG_ENOTFOUND, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *a = cases[i].a ? parse(cases[i].a) : NULL;
		json_t *b = cases[i].b ? parse(cases[i].b) : NULL;
		unsigned char sa[KUBESA_SUM_LEN], sb[KUBESA_SUM_LEN], zero[KUBESA_SUM_LEN] = {0};

		kubesource_secret_sum(sa, a, cases[i].code_a);
		kubesource_secret_sum(sb, b, cases[i].code_b);
		ck_assert_msg((memcmp(sa, sb, sizeof(sa)) == 0) == cases[i].same, "case %zu", i);
		ck_assert(memcmp(sa, zero, sizeof(sa)) != 0);
		json_decref(a);
		json_decref(b);
	}
}
END_TEST

/* ---- against the API fixture ---- */

static struct fixture etcd;

static void etcd_start(void)
{
	static const char *const extra[] = {"--preferred", IMG "=v1beta2", NULL};

	ck_assert_msg(fixture_kubeapi_start(&etcd, "kubeapi_etcd.py", extra) == 0,
	              "kubeapi_etcd.py did not start");
}

static void etcd_stop(void)
{
	fixture_kubeapi_stop(&etcd);
}

static char kubeconfig[300];
static struct kube_client *admin;

/* A client of the fixture for the test's own writes (made in the test's process). */
static void admin_open(void)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct error err = ERROR_INIT;

	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", etcd.dir);
	ck_assert_msg(kubeconfig_load(&kc, kubeconfig, &err) == 0, "%s", err.msg);
	ck_assert_msg(kube_client_new(&admin, &kc, NULL, &err) == 0, "%s", err.msg);
	kubeconfig_release(&kc);
}

static void admin_close(void)
{
	kube_client_free(admin);
	admin = NULL;
}

/* method path body (JSON; PATCH: a merge patch), which must succeed. */
static void api(const char *method, const char *path, const char *body)
{
	struct error err = ERROR_INIT;
	json_t *out = NULL;

	ck_assert_msg(kube_send(&out, admin, method, path,
	                        strcmp(method, "PATCH") == 0 ? "application/merge-patch+json"
	                                                     : "application/json",
	                        body, &err) == 0,
	              "%s %s: %s", method, path, err.msg);
	json_decref(out);
}

static struct kubesource *open_source(const char *ns)
{
	struct kubesource_options o = {0};
	struct kubesource *ks = NULL;
	struct error err = ERROR_INIT;

	o.kubeconfig = kubeconfig;
	o.ns = ns;
	o.secrets_parent = tmp;
	o.sync_timeout_ms = 60000;
	ck_assert_msg(kubesource_new(&ks, &o, &err) == 0, "%s", err.msg);
	return ks;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A configuration loaded now (diags kept in *diags, released by the caller). */
static struct config *load(struct kubesource *ks, struct config_diags *diags, const char **sdir)
{
	struct config *c = NULL;
	struct error err = ERROR_INIT;

	config_diags_release(diags);
	ck_assert_msg(kubesource_load(&c, sdir, ks, diags, &err) == 0, "%s", err.msg);
	return c;
}

START_TEST(watches_the_preferred_version)
{
	struct kubesource *ks;
	json_t *a;

	tmp_make();
	admin_open();
	/* written at v1, served at both: the watch reads it at the preferred v1beta2 */
	api("POST", "/apis/" IMG "/v1/namespaces/ks-pref/imageupdateautomations",
	    "{\"apiVersion\": \"" IMG "/v1\", \"kind\": \"ImageUpdateAutomation\", \"metadata\": "
	    "{\"name\": \"auto\"}, \"spec\": {\"interval\": \"1m\", \"sourceRef\": {\"kind\": "
	    "\"GitRepository\", \"name\": \"repo\"}, \"git\": {\"commit\": {\"author\": "
	    "{\"name\": \"a\", \"email\": \"a@example.com\"}}, \"push\": {\"branch\": "
	    "\"main\"}}}}");
	ks = open_source("ks-pref");
	ck_assert_str_eq(kubesource_image_api(ks), "/apis/" IMG "/v1beta2");
	{
		struct config_diags diags = CONFIG_DIAGS_INIT;
		const char *sdir;

		config_free(load(ks, &diags, &sdir));
		config_diags_release(&diags);
	}
	ck_assert_ptr_nonnull(a = kubesource_automation(ks, "ks-pref/auto"));
	ck_assert_str_eq(json_string_value(json_object_get(a, "apiVersion")), IMG "/v1beta2");
	json_decref(a);
	ck_assert_ptr_null(kubesource_automation(ks, "ks-pref/other"));
	ck_assert_ptr_null(kubesource_automation(ks, "default/auto"));
	kubesource_free(ks);
	admin_close();
	ck_assert_uint_eq(entries(tmp), 0); /* the secrets folder is gone with it */
	tmp_remove();
}
END_TEST

#define NS "ks-load"
#define SECRET(name, pass)                                                                         \
	"{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"" name "\"}, "  \
	"\"type\": \"Opaque\", \"data\": {\"username\": \"dXNlcg==\", \"password\": \"" pass       \
	"\"}}"
#define PASS "cGFzcw=="        /* pass */
#define ROTATED "cm90YXRlZA==" /* rotated */

START_TEST(load_reads_objects_and_secrets)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct kubesource *ks;
	struct config *c;
	struct buf b = BUF_INIT;
	const char *sdir = NULL;
	char folder[300];
	struct stat st;
	uint64_t changes;
	json_t *a;

	tmp_make();
	admin_open();
	api("POST", "/api/v1/namespaces/" NS "/secrets", SECRET("regcred", PASS));
	api("POST", "/api/v1/namespaces/" NS "/secrets", SECRET("gitcred", PASS));
	api("POST", "/api/v1/namespaces/" NS "/secrets",
	    "{\"metadata\": {\"name\": \"badkeys\"}, \"data\": {\"../ca.crt\": \"eA==\"}}");
	api("POST", "/apis/" IMG "/v1beta2/namespaces/" NS "/imagerepositories",
	    "{\"metadata\": {\"name\": \"app\", \"labels\": {\"tier\": \"web\"}, \"annotations\": "
	    "{\"kubectl.kubernetes.io/last-applied-configuration\": \"{}\"}}, \"spec\": "
	    "{\"image\": \"reg.example/team/app\", \"interval\": \"1m\", \"secretRef\": {\"name\": "
	    "\"regcred\"}}}");
	api("POST", "/apis/" IMG "/v1beta2/namespaces/" NS "/imagerepositories",
	    "{\"metadata\": {\"name\": \"other\"}, \"spec\": {\"image\": "
	    "\"reg.example/team/other\", "
	    "\"interval\": \"1m\", \"certSecretRef\": {\"name\": \"badkeys\"}}}");
	api("POST", "/apis/" IMG "/v1beta2/namespaces/" NS "/imagepolicies",
	    "{\"metadata\": {\"name\": \"app\"}, \"spec\": {\"imageRepositoryRef\": {\"name\": "
	    "\"app\"}, \"policy\": {\"semver\": {\"range\": \">=1.0.0\"}}}}");
	api("POST", "/apis/" SRC "/v1/namespaces/" NS "/gitrepositories",
	    "{\"metadata\": {\"name\": \"repo\"}, \"spec\": {\"url\": "
	    "\"https://git.example/team/repo.git\", \"interval\": \"1m\", \"ref\": {\"branch\": "
	    "\"main\"}, \"secretRef\": {\"name\": \"gitcred\"}}}");
	api("POST", "/apis/" IMG "/v1beta2/namespaces/" NS "/imageupdateautomations",
	    "{\"metadata\": {\"name\": \"auto\"}, \"spec\": {\"interval\": \"1m\", \"sourceRef\": "
	    "{\"kind\": \"GitRepository\", \"name\": \"repo\"}, \"git\": {\"checkout\": {\"ref\": "
	    "{\"branch\": \"main\"}}, \"commit\": {\"author\": {\"name\": \"a\", \"email\": "
	    "\"a@example.org\"}}, \"push\": {\"branch\": \"main\"}}, \"update\": {\"path\": "
	    "\"./\", "
	    "\"strategy\": \"Setters\"}}}");
	ks = open_source(NS);

	/* the objects as documents "Kind/ns/name", each Secret in "<ns>.<name>" */
	c = load(ks, &diags, &sdir);
	ck_assert_ptr_nonnull(sdir);
	ck_assert_ptr_eq(strstr(sdir, tmp), sdir);
	ck_assert_uint_eq(diags.errors, 1); /* other's Secret has a key no file may have */
	ck_assert_str_eq(diags.items[0].file, "ImageRepository/" NS "/other");
	ck_assert_str_eq(diags.items[0].message,
	                 "ImageRepository '" NS "/other': 'spec.certSecretRef': secret '" NS
	                 "/badkeys' not found in the Kubernetes API (or not readable: see the "
	                 "kube.secret warning)");
	ck_assert_uint_eq(c->repositories_len, 1);
	ck_assert_str_eq(c->repositories[0].id, NS "/app");
	ck_assert_str_eq(c->repositories[0].secret_ref, NS ".regcred");
	ck_assert_uint_eq(c->git_sources_len, 1);
	ck_assert_str_eq(c->git_sources[0].secret_ref, NS ".gitcred");
	ck_assert_uint_eq(c->automations_len, 1);
	ck_assert_str_eq(c->automations[0].id, NS "/auto");
	config_free(c);
	snprintf(folder, sizeof(folder), "%s/" NS ".regcred", sdir);
	ck_assert_int_eq(lstat(folder, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(file_of(&b, folder, "username"), 0600);
	ck_assert_str_eq(b.data, "user");
	ck_assert_int_eq(file_of(&b, folder, "password"), 0600);
	ck_assert_str_eq(b.data, "pass");
	ck_assert_uint_eq(entries(folder), 2);
	snprintf(folder, sizeof(folder), "%s/" NS ".badkeys", sdir);
	ck_assert_int_eq(lstat(folder, &st), -1);
	ck_assert_uint_eq(entries(sdir), 2); /* regcred, gitcred */
	ck_assert_ptr_nonnull(a = kubesource_automation(ks, NS "/auto"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "metadata"), "name")),
	                 "auto");
	/* the identity an Event names (kubectl describe filters on the uid) */
	{
		const json_t *md = json_object_get(a, "metadata");
		json_t *o;

		ck_assert_ptr_nonnull(
		    o = kubesource_object(ks, "ImageUpdateAutomation", NS, "auto"));
		ck_assert(json_equal(json_object_get(o, "metadata"), md));
		json_decref(o);
		ck_assert_ptr_nonnull(o = kubesource_object(ks, "ImagePolicy", NS, "app"));
		md = json_object_get(o, "metadata");
		ck_assert_str_eq(json_string_value(json_object_get(md, "name")), "app");
		ck_assert(json_string_length(json_object_get(md, "uid")) > 0);
		ck_assert(json_string_length(json_object_get(md, "resourceVersion")) > 0);
		ck_assert_ptr_null(json_object_get(o, "status")); /* the slim object */
		json_decref(o);
		ck_assert_ptr_null(kubesource_object(ks, "ImagePolicy", NS, "gone"));
		ck_assert_ptr_null(kubesource_object(ks, "Secret", NS, "regcred"));
	}
	json_decref(a);

	/* nothing changed; a label is not the content */
	ck_assert(!kubesource_refs_changed(ks, mono_ms() + 20000));
	api("PATCH", "/api/v1/namespaces/" NS "/secrets/regcred",
	    "{\"metadata\": {\"labels\": {\"rotated\": \"no\"}}}");
	ck_assert(!kubesource_refs_changed(ks, mono_ms() + 20000));

	/* rotated: seen at the next pass, and the load that follows writes the new value */
	api("PATCH", "/api/v1/namespaces/" NS "/secrets/regcred",
	    "{\"data\": {\"password\": \"" ROTATED "\"}}");
	ck_assert(kubesource_refs_changed(ks, mono_ms() + 20000));
	config_free(load(ks, &diags, &sdir));
	snprintf(folder, sizeof(folder), "%s/" NS ".regcred", sdir);
	ck_assert_int_eq(file_of(&b, folder, "password"), 0600);
	ck_assert_str_eq(b.data, "rotated");
	ck_assert(!kubesource_refs_changed(ks, mono_ms() + 20000));

	/* deleted: seen, and then an error naming it, its folder gone */
	{
		struct error err = ERROR_INIT;
		json_t *out = NULL;

		ck_assert_msg(kube_send(&out, admin, "DELETE",
		                        "/api/v1/namespaces/" NS "/secrets/regcred",
		                        "application/json", "{}", &err) == 0,
		              "%s", err.msg);
		json_decref(out);
	}
	ck_assert(kubesource_refs_changed(ks, mono_ms() + 20000));
	c = load(ks, &diags, &sdir);
	ck_assert_uint_eq(c->repositories_len, 0);
	ck_assert_uint_ge(diags.errors, 2);
	ck_assert_str_eq(diags.items[0].file, "ImageRepository/" NS "/app");
	ck_assert_str_eq(diags.items[0].message,
	                 "ImageRepository '" NS "/app': 'spec.secretRef': secret '" NS
	                 "/regcred' not found in the Kubernetes API (or not readable: see the "
	                 "kube.secret warning)");
	config_free(c);
	ck_assert_int_eq(lstat(folder, &st), -1);
	ck_assert(!kubesource_refs_changed(ks, mono_ms() + 20000)); /* still gone */

	/* made again: seen, used again */
	api("POST", "/api/v1/namespaces/" NS "/secrets", SECRET("regcred", PASS));
	ck_assert(kubesource_refs_changed(ks, mono_ms() + 20000));
	c = load(ks, &diags, &sdir);
	ck_assert_uint_eq(c->repositories_len, 1);
	ck_assert_uint_eq(diags.errors, 1);
	config_free(c);
	ck_assert_int_eq(file_of(&b, folder, "password"), 0600);
	ck_assert_str_eq(b.data, "pass");

	/* a change of what a configuration reads grows the count; the watch sees it soon */
	changes = kubesource_changes(ks);
	api("PATCH", "/apis/" IMG "/v1beta2/namespaces/" NS "/imagepolicies/app",
	    "{\"spec\": {\"policy\": {\"semver\": {\"range\": \">=2.0.0\"}}}}");
	for (int i = 0; i < 300 && kubesource_changes(ks) == changes; i++) {
		struct timespec ts = {0, 50000000L};
		nanosleep(&ts, NULL);
	}
	ck_assert_uint_gt(kubesource_changes(ks), changes);

	config_diags_release(&diags);
	buf_release(&b);
	kubesource_free(ks);
	admin_close();
	ck_assert_uint_eq(entries(tmp), 0); /* the Secrets' copies are gone */
	tmp_remove();
}
END_TEST

/* The signature gate's Secret (CONTRACT §12), named by Flux's ImagePolicy annotation: fetched
 * into its folder and the annotation rewritten; deleted, an error naming it ns/name. */
#define PUB_PEM "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUZrdwotLS0tLUVORCBQVUJMSUMgS0VZLS0tLS0K"
START_TEST(verify_secret_is_read)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct kubesource *ks;
	struct config *c;
	struct buf b = BUF_INIT;
	const char *sdir = NULL;
	char folder[300];

	tmp_make();
	admin_open();
	api("POST", "/api/v1/namespaces/ks-verify/secrets",
	    "{\"metadata\": {\"name\": \"cosign\"}, \"data\": {\"cosign.pub\": \"" PUB_PEM "\"}}");
	api("POST", "/apis/" IMG "/v1beta2/namespaces/ks-verify/imagerepositories",
	    "{\"metadata\": {\"name\": \"app\"}, \"spec\": {\"image\": \"reg.example/team/app\", "
	    "\"interval\": \"1m\"}}");
	api("POST", "/apis/" IMG "/v1beta2/namespaces/ks-verify/imagepolicies",
	    "{\"metadata\": {\"name\": \"app\", \"annotations\": "
	    "{\"imageguard.io/verify-provider\": "
	    "\"cosign\", \"imageguard.io/verify-secret\": \"cosign\"}}, \"spec\": "
	    "{\"imageRepositoryRef\": {\"name\": \"app\"}, \"policy\": {\"semver\": {\"range\": "
	    "\">=1.0.0\"}}}}");
	ks = open_source("ks-verify");
	c = load(ks, &diags, &sdir);
	ck_assert_uint_eq(diags.errors, 0);
	ck_assert_uint_eq(c->policies_len, 1);
	ck_assert_str_eq(c->policies[0].verify.secret, "ks-verify.cosign");
	config_free(c);
	snprintf(folder, sizeof(folder), "%s/ks-verify.cosign", sdir);
	ck_assert_int_eq(file_of(&b, folder, "cosign.pub"), 0600);
	ck_assert(strstr(b.data, "-----BEGIN PUBLIC KEY-----") == b.data);
	{
		struct error err = ERROR_INIT;
		json_t *out = NULL;

		ck_assert_msg(kube_send(&out, admin, "DELETE",
		                        "/api/v1/namespaces/ks-verify/secrets/cosign",
		                        "application/json", "{}", &err) == 0,
		              "%s", err.msg);
		json_decref(out);
	}
	ck_assert(kubesource_refs_changed(ks, mono_ms() + 20000));
	c = load(ks, &diags, &sdir);
	ck_assert_uint_eq(c->policies_len, 0);
	ck_assert_uint_ge(diags.errors, 1);
	ck_assert_msg(strstr(diags.items[0].message, "secret 'ks-verify/cosign' not found in the "
	                                             "Kubernetes API"),
	              "%s", diags.items[0].message);
	config_free(c);
	config_diags_release(&diags);
	buf_release(&b);
	kubesource_free(ks);
	admin_close();
	tmp_remove();
}
END_TEST

/* Nothing referenced: nothing to read again, nothing changed. */
START_TEST(no_references_nothing_to_read)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct kubesource *ks;
	const char *sdir;

	tmp_make();
	admin_open();
	ks = open_source("ks-empty");
	config_free(load(ks, &diags, &sdir));
	ck_assert_uint_eq(diags.errors, 0);
	ck_assert_uint_eq(entries(sdir), 0);
	ck_assert(!kubesource_refs_changed(ks, mono_ms() + 20000));
	config_diags_release(&diags);
	kubesource_free(ks);
	admin_close();
	tmp_remove();
}
END_TEST

/* ---- what a shard keeps ---- */

/* A watch keeps of a policy or repository what documents and Events read, nothing else. */
START_TEST(slim_objects)
{
	json_t *obj = parse(
	    "{\"apiVersion\": \"" IMG "/v1\", \"kind\": \"ImagePolicy\", \"metadata\": {\"name\": "
	    "\"p\", \"namespace\": \"n\", \"uid\": \"u-1\", \"resourceVersion\": \"7\", "
	    "\"generation\": 3, \"creationTimestamp\": \"2024-01-01T00:00:00Z\", \"labels\": "
	    "{\"a\": \"b\"}, \"annotations\": {\"kubectl.kubernetes.io/"
	    "last-applied-configuration\": \"{...}\", \"imageguard.io/settle\": \"1h\"}, "
	    "\"managedFields\": [{\"manager\": \"kubectl\"}]}, \"spec\": {\"imageRepositoryRef\": "
	    "{\"name\": \"r\"}}, \"status\": {\"latestRef\": {\"tag\": \"1.0.0\"}}}");
	json_t *want = parse(
	    "{\"apiVersion\": \"" IMG "/v1\", \"kind\": \"ImagePolicy\", \"metadata\": {\"name\": "
	    "\"p\", \"namespace\": \"n\", \"uid\": \"u-1\", \"resourceVersion\": \"7\", "
	    "\"labels\": {\"a\": \"b\"}, \"annotations\": {\"imageguard.io/settle\": \"1h\"}}, "
	    "\"spec\": {\"imageRepositoryRef\": {\"name\": \"r\"}}}");
	json_t *got = kubesource_slim(obj), *doc_full, *doc_slim;
	char *a, *b;

	ck_assert_msg(json_equal(got, want), "%s", a = json_dumps(got, JSON_SORT_KEYS));
	/* the document a configuration reads is the same either way */
	doc_full = kubesource_document_json("ImagePolicy", obj);
	doc_slim = kubesource_document_json("ImagePolicy", got);
	a = json_dumps(doc_full, JSON_SORT_KEYS);
	b = json_dumps(doc_slim, JSON_SORT_KEYS);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	json_decref(doc_full);
	json_decref(doc_slim);
	json_decref(got);
	json_decref(want);
	json_decref(obj);
}
END_TEST

/* What a watch keeps is one string: the slim object as text, a NUL, its resourceVersion, which
 * the watch leaves out when it compares: a write of the status alone (a new resourceVersion) is
 * no change; one of the spec is. */
START_TEST(packed_objects)
{
	static const char *const head =
	    "{\"apiVersion\": \"" IMG "/v1\", \"kind\": \"ImagePolicy\", \"metadata\": {\"name\": "
	    "\"p\", \"namespace\": \"n\", \"uid\": \"u-1\", \"resourceVersion\": \"%s\", "
	    "\"labels\": {\"a\": \"b\"}, \"annotations\": {\"kubectl.kubernetes.io/"
	    "last-applied-configuration\": \"{...}\"}, \"managedFields\": [{}]}, \"spec\": "
	    "{\"imageRepositoryRef\": {\"name\": \"%s\"}, \"policy\": {\"semver\": "
	    "{\"range\": \">=1.0.0\"}}}, \"status\": {\"latestRef\": {\"tag\": \"%s\"}}}";
	char text[1024];
	json_t *obj, *kept, *back, *slim, *again, *moved, *x, *y, *plain;
	size_t text_len;

	snprintf(text, sizeof(text), head, "7", "r", "1.0.0");
	obj = parse(text);
	ck_assert_ptr_nonnull(kept = kubesource_pack(obj));
	ck_assert(json_is_string(kept));
	text_len = strlen(json_string_value(kept));
	ck_assert_uint_eq(json_string_length(kept), text_len + 2);
	ck_assert_str_eq(json_string_value(kept) + text_len + 1, "7");
	ck_assert_ptr_null(strstr(json_string_value(kept), "managedFields"));
	/* unpacked: the slim object, resourceVersion included */
	ck_assert_ptr_nonnull(back = kubesource_unpack(kept));
	slim = kubesource_slim(obj);
	ck_assert_msg(json_equal(back, slim), "%s", json_string_value(kept));
	json_decref(obj);
	/* the status written: another resourceVersion, the same to the watch */
	snprintf(text, sizeof(text), head, "8", "r", "1.1.0");
	obj = parse(text);
	again = kubesource_pack(obj);
	json_decref(obj);
	snprintf(text, sizeof(text), head, "9", "other", "1.1.0");
	obj = parse(text);
	moved = kubesource_pack(obj);
	json_decref(obj);
	ck_assert(again && moved);
	ck_assert(!json_equal(kept, again)); /* a relist sees the new version */
	ck_assert(kubewatch_same(kept, again));
	ck_assert(!kubewatch_same(kept, moved));
	ck_assert(!kubewatch_same(kept, slim)); /* a string is never the same as an object */
	/* an object without a resourceVersion, and one that was never packed */
	obj = parse("{\"kind\": \"ImageRepository\", \"metadata\": {\"name\": \"r\"}}");
	ck_assert_ptr_nonnull(x = kubesource_pack(obj));
	ck_assert_uint_eq(json_string_length(x), strlen(json_string_value(x)));
	ck_assert_ptr_nonnull(y = kubesource_unpack(x));
	ck_assert(json_equal(y, obj));
	ck_assert_ptr_eq(plain = kubesource_unpack(obj), obj);
	json_decref(plain);
	json_decref(x);
	json_decref(y);
	json_decref(obj);
	/* objects: compared without status, resourceVersion and managedFields */
	snprintf(text, sizeof(text), head, "7", "r", "1.0.0");
	x = parse(text);
	snprintf(text, sizeof(text), head, "8", "r", "1.1.0");
	y = parse(text);
	ck_assert(kubewatch_same(x, y));
	json_object_set_new(json_object_get(x, "metadata"), "labels", json_object());
	ck_assert(!kubewatch_same(x, y));
	json_decref(x);
	json_decref(y);
	json_decref(again);
	json_decref(moved);
	json_decref(slim);
	json_decref(back);
	json_decref(kept);
}
END_TEST

/* A Git URL whose (URL, main) pair shard want of 2 owns (shard.h's hash, not re-implemented). */
static void url_of_shard(char *out, size_t n, unsigned want)
{
	for (int i = 0; i < 1000; i++) {
		struct error err = ERROR_INIT;
		char *norm = NULL;
		unsigned owner;

		snprintf(out, n, "https://git.example.com/team/app%d.git", i);
		ck_assert_int_eq(shard_normalize_url(&norm, out, &err), 0);
		owner = (unsigned)(shard_hash(norm, "main") % 2);
		free(norm);
		if (owner == want)
			return;
	}
	ck_abort_msg("no URL for shard %u", want);
}

/* A GitRepository NAME at url and the automation NAME writing main, in ns. */
static void automation_in(const char *ns, const char *name, const char *url)
{
	struct buf path = BUF_INIT, body = BUF_INIT;

	ck_assert_int_eq(buf_printf(&path, "/apis/" SRC "/v1/namespaces/%s/gitrepositories", ns),
	                 0);
	ck_assert_int_eq(buf_printf(&body,
	                            "{\"metadata\": {\"name\": \"%s\"}, \"spec\": {\"interval\": "
	                            "\"1m\", \"url\": \"%s\", \"ref\": {\"branch\": \"main\"}}}",
	                            name, url),
	                 0);
	api("POST", path.data, body.data);
	buf_reset(&path);
	buf_reset(&body);
	ck_assert_int_eq(
	    buf_printf(&path, "/apis/" IMG "/v1beta2/namespaces/%s/imageupdateautomations", ns), 0);
	ck_assert_int_eq(
	    buf_printf(&body,
	               "{\"metadata\": {\"name\": \"%s\"}, \"spec\": {\"interval\": \"1m\", "
	               "\"sourceRef\": {\"kind\": \"GitRepository\", \"name\": \"%s\"}, \"git\": "
	               "{\"checkout\": {\"ref\": {\"branch\": \"main\"}}, \"commit\": "
	               "{\"author\": {\"name\": \"a\", \"email\": \"a@example.com\"}}, "
	               "\"push\": {\"branch\": \"main\"}}, \"update\": {\"path\": \"./\", "
	               "\"strategy\": \"Setters\"}}}",
	               name, name),
	    0);
	api("POST", path.data, body.data);
	buf_release(&path);
	buf_release(&body);
}

/* ImageRepository repo in ns, and with policy non-NULL the ImagePolicy policy using repo of
 * repo_ns (NULL: ns). */
static void policy_in(const char *ns, const char *repo, const char *policy, const char *repo_ns)
{
	struct buf path = BUF_INIT, body = BUF_INIT;

	ck_assert_int_eq(
	    buf_printf(&path, "/apis/" IMG "/v1beta2/namespaces/%s/imagerepositories", ns), 0);
	ck_assert_int_eq(buf_printf(&body,
	                            "{\"metadata\": {\"name\": \"%s\", \"annotations\": "
	                            "{\"kubectl.kubernetes.io/last-applied-configuration\": "
	                            "\"{}\"}}, \"spec\": {\"image\": \"reg.example/%s/%s\", "
	                            "\"interval\": \"1m\"}}",
	                            repo, ns, repo),
	                 0);
	api("POST", path.data, body.data);
	buf_reset(&path);
	buf_reset(&body);
	if (policy) {
		ck_assert_int_eq(
		    buf_printf(&path, "/apis/" IMG "/v1beta2/namespaces/%s/imagepolicies", ns), 0);
		ck_assert_int_eq(buf_printf(&body,
		                            "{\"metadata\": {\"name\": \"%s\"}, \"spec\": "
		                            "{\"imageRepositoryRef\": {\"name\": \"%s\"%s%s%s}, "
		                            "\"policy\": {\"semver\": {\"range\": \">=1.0.0\"}}}}",
		                            policy, repo, repo_ns ? ", \"namespace\": \"" : "",
		                            repo_ns ? repo_ns : "", repo_ns ? "\"" : ""),
		                 0);
		api("POST", path.data, body.data);
	}
	buf_release(&path);
	buf_release(&body);
}

static struct kubesource *open_shard(const struct shard_spec *shard)
{
	struct kubesource_options o = {0};
	struct kubesource *ks = NULL;
	struct error err = ERROR_INIT;

	o.kubeconfig = kubeconfig;
	o.secrets_parent = tmp;
	o.sync_timeout_ms = 60000;
	o.shards = shard->shards;
	o.shard = shard;
	ck_assert_msg(kubesource_new(&ks, &o, &err) == 0, "%s", err.msg);
	return ks;
}

static bool holds(struct kubesource *ks, const char *kind, const char *ns, const char *name)
{
	json_t *o = kubesource_object(ks, kind, ns, name);

	json_decref(o);
	return o != NULL;
}

/* Loads whenever the objects changed until whether kind ns/name is held is want, or 30 s;
 * returns whether it is held. */
static bool after_loads(struct kubesource *ks, const char *kind, const char *ns, const char *name,
                        bool want)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	const char *sdir;
	uint64_t seen = 0;
	bool held = holds(ks, kind, ns, name);

	for (int64_t end = mono_ms() + 30000; held != want && mono_ms() < end;) {
		struct timespec ts = {0, 50000000L};

		if (kubesource_changes(ks) != seen) {
			seen = kubesource_changes(ks);
			config_free(load(ks, &diags, &sdir));
			held = holds(ks, kind, ns, name);
		}
		nanosleep(&ts, NULL);
	}
	config_diags_release(&diags);
	return held;
}

static bool held_after_loads(struct kubesource *ks, const char *kind, const char *ns,
                             const char *name)
{
	return after_loads(ks, kind, ns, name, true);
}

/* Shard 1 of 2 holds the policies and repositories of the namespaces where it owns every
 * automation and the repositories their policies name elsewhere, nothing else of those kinds
 * (every automation and GitRepository, which say who owns what); an automation of its own in
 * a namespace of shard 0's brings only the policies its markers name there (kubesource_marked_
 * *), and their repositories; shard 0 holds everything. */
START_TEST(shard_keeps_its_namespaces)
{
	const struct shard_spec one = {NULL, 2, 1}, zero = {NULL, 2, 0};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct kubesource *ks;
	const char *sdir;
	char mine[200], theirs[200], later[200];

	tmp_make();
	admin_open();
	url_of_shard(mine, sizeof(mine), 1);
	url_of_shard(theirs, sizeof(theirs), 0);
	automation_in("kk-mine", "auto", mine);
	automation_in("kk-theirs", "auto", theirs);
	policy_in("kk-mine", "app", "app", NULL);
	policy_in("kk-mine", "far", "far", "kk-lib");
	policy_in("kk-lib", "far", NULL, NULL);
	policy_in("kk-lib", "other", "other", NULL);
	policy_in("kk-theirs", "app", "app", NULL);
	ks = open_shard(&one);
	config_free(load(ks, &diags, &sdir));
	ck_assert(holds(ks, "ImagePolicy", "kk-mine", "app"));
	ck_assert(holds(ks, "ImagePolicy", "kk-mine", "far"));
	ck_assert(holds(ks, "ImageRepository", "kk-mine", "app"));
	ck_assert(holds(ks, "ImageRepository", "kk-lib", "far"));
	ck_assert(holds(ks, "ImageUpdateAutomation", "kk-theirs", "auto"));
	ck_assert(holds(ks, "GitRepository", "kk-theirs", "auto"));
	ck_assert(!holds(ks, "ImageRepository", "kk-lib", "other"));
	ck_assert(!holds(ks, "ImagePolicy", "kk-lib", "other"));
	ck_assert(!holds(ks, "ImagePolicy", "kk-theirs", "app"));
	ck_assert(!holds(ks, "ImageRepository", "kk-theirs", "app"));
	/* one of shard 1's own in kk-theirs beside shard 0's: of that shared namespace, only what
	 * its markers name comes (a second list of those kinds) */
	policy_in("kk-theirs", "idle", "idle", NULL);
	url_of_shard(later, sizeof(later), 1);
	automation_in("kk-theirs", "later", later);
	ck_assert(held_after_loads(ks, "ImageUpdateAutomation", "kk-theirs", "later"));
	config_free(load(ks, &diags, &sdir)); /* which tells it that it shares kk-theirs */
	ck_assert(!holds(ks, "ImagePolicy", "kk-theirs", "app"));
	kubesource_marked_begin(ks);
	ck_assert(!kubesource_marked_note(ks, "kk-theirs/app")); /* listed for the next load */
	ck_assert(!kubesource_marked_note(ks, "kk-theirs/app")); /* a second marker: the same */
	ck_assert(kubesource_marked_note(ks, "kk-mine/app"));    /* its own namespace: all kept */
	ck_assert(kubesource_marked_note(ks, "kk-lib/other"));   /* not its namespace: never */
	ck_assert(kubesource_marked_end(ks));
	ck_assert(held_after_loads(ks, "ImagePolicy", "kk-theirs", "app"));
	ck_assert(held_after_loads(ks, "ImageRepository", "kk-theirs", "app"));
	ck_assert(!holds(ks, "ImagePolicy", "kk-theirs", "idle"));
	ck_assert(!holds(ks, "ImageRepository", "kk-theirs", "idle"));
	ck_assert(!holds(ks, "ImagePolicy", "kk-lib", "other"));
	ck_assert(holds(ks, "ImagePolicy", "kk-mine", "app"));
	/* the same again: nothing new, nothing to list */
	kubesource_marked_begin(ks);
	ck_assert(kubesource_marked_note(ks, "kk-theirs/app"));
	ck_assert(!kubesource_marked_end(ks));
	/* a round that could not read every automation's markers drops nothing */
	kubesource_marked_begin(ks);
	ck_assert(kubesource_marked_note(ks, NULL));
	ck_assert(!kubesource_marked_end(ks));
	config_free(load(ks, &diags, &sdir));
	ck_assert(holds(ks, "ImagePolicy", "kk-theirs", "app"));
	/* a whole round without that marker: the policy and its repository go */
	kubesource_marked_begin(ks);
	ck_assert(!kubesource_marked_end(ks));
	ck_assert(!after_loads(ks, "ImagePolicy", "kk-theirs", "app", false));
	ck_assert(!after_loads(ks, "ImageRepository", "kk-theirs", "app", false));
	ck_assert(holds(ks, "ImagePolicy", "kk-mine", "app"));
	kubesource_free(ks);
	ks = open_shard(&zero);
	config_free(load(ks, &diags, &sdir));
	ck_assert(holds(ks, "ImagePolicy", "kk-lib", "other"));
	ck_assert(holds(ks, "ImageRepository", "kk-lib", "other"));
	config_diags_release(&diags);
	kubesource_free(ks);
	admin_close();
	tmp_remove();
}
END_TEST

/* The first diagnostic of d that names ns, or NULL. */
static const struct config_diag *diag_naming(const struct config_diags *d, const char *ns)
{
	for (size_t i = 0; i < d->len; i++)
		if (strstr(d->items[i].message, ns) || strstr(d->items[i].file, ns))
			return &d->items[i];
	return NULL;
}

/* Every shard watches every automation, each with Flux's status (observedPolicies names every
 * policy it selects): the watch keeps them without status, managedFields and kubectl's
 * last-applied copy, with generation and the other annotations (the status write reports
 * them), listed in pages of a few (12 here: two pages), all of them loaded. */
START_TEST(automations_kept_without_status)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct kubesource *ks;
	struct config *c;
	const char *sdir;
	json_t *a;
	char name[32], path[300], url[64];

	tmp_make();
	admin_open();
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "auto%d", i);
		snprintf(url, sizeof(url), "https://git.example/%d.git", i);
		automation_in("ka", name, url);
		snprintf(path, sizeof(path),
		         "/apis/" IMG "/v1beta2/namespaces/ka/imageupdateautomations/%s", name);
		api("PATCH", path,
		    "{\"metadata\": {\"annotations\": {\"kubectl.kubernetes.io/"
		    "last-applied-configuration\": \"{...}\", \"reconcile.fluxcd.io/requestedAt\": "
		    "\"now\"}}}");
		snprintf(path, sizeof(path),
		         "/apis/" IMG "/v1beta2/namespaces/ka/imageupdateautomations/%s/status",
		         name);
		api("PATCH", path,
		    "{\"status\": {\"observedPolicies\": {\"app\": {\"name\": \"reg.example/app\", "
		    "\"tag\": \"1.0.0\"}}}}");
	}
	ks = open_source("ka");
	c = load(ks, &diags, &sdir);
	ck_assert_uint_eq(c->automations_len, 12);
	config_free(c);
	a = kubesource_object(ks, "ImageUpdateAutomation", "ka", "auto11");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_null(json_object_get(a, "status"));
	ck_assert_ptr_null(json_object_get(json_object_get(a, "metadata"), "managedFields"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(a, "metadata"), "generation"));
	ck_assert_ptr_null(
	    json_object_get(json_object_get(json_object_get(a, "metadata"), "annotations"),
	                    "kubectl.kubernetes.io/last-applied-configuration"));
	ck_assert_str_eq(json_string_value(json_object_get(
	                     json_object_get(json_object_get(a, "metadata"), "annotations"),
	                     "reconcile.fluxcd.io/requestedAt")),
	                 "now");
	json_decref(a);
	config_diags_release(&diags);
	kubesource_free(ks);
	admin_close();
	tmp_remove();
}
END_TEST

/* When a new automation brings a namespace to shard 1 of 2, its policies are listed again, then
 * the repository one of them names in a third namespace: no load in between sees that policy
 * without its repository (which would report it invalid for one load). */
START_TEST(shard_new_namespace_loads_whole)
{
	const struct shard_spec one = {NULL, 2, 1};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct kubesource *ks;
	const char *sdir;
	char url[200];
	uint64_t seen;
	bool held = false;

	tmp_make();
	admin_open();
	policy_in("kn-new", "app", "app", NULL);
	policy_in("kn-new", "far", "far", "kn-lib");
	api("POST", "/apis/" IMG "/v1beta2/namespaces/kn-lib/imagerepositories",
	    "{\"metadata\": {\"name\": \"far\"}, \"spec\": {\"image\": \"reg.example/kn-lib/far\", "
	    "\"interval\": \"1m\", \"accessFrom\": {\"namespaceSelectors\": [{\"matchLabels\": "
	    "{\"kubernetes.io/metadata.name\": \"kn-new\"}}]}}}");
	ks = open_shard(&one);
	config_free(load(ks, &diags, &sdir));
	ck_assert(!holds(ks, "ImagePolicy", "kn-new", "far"));
	url_of_shard(url, sizeof(url), 1);
	automation_in("kn-new", "auto", url);
	seen = 0; /* load at once, then whenever the objects changed */
	for (int64_t end = mono_ms() + 30000; !held && mono_ms() < end;) {
		struct timespec ts = {0, 20000000L};

		if (kubesource_changes(ks) != seen) {
			seen = kubesource_changes(ks);
			const struct config_diag *bad;

			config_free(load(ks, &diags, &sdir));
			bad = diag_naming(&diags, "kn-new");
			ck_assert_msg(!bad, "%s: %s", bad ? bad->file : "",
			              bad ? bad->message : "");
			held = holds(ks, "ImagePolicy", "kn-new", "far");
		}
		nanosleep(&ts, NULL);
	}
	ck_assert(held);
	ck_assert(holds(ks, "ImageRepository", "kn-lib", "far"));
	ck_assert(holds(ks, "ImagePolicy", "kn-new", "app"));
	ck_assert(holds(ks, "ImageRepository", "kn-new", "app"));
	config_diags_release(&diags);
	kubesource_free(ks);
	admin_close();
	tmp_remove();
}
END_TEST

/* ---- an API server without Flux's CRDs (kubeapi.py serves workloads only) ---- */

static struct fixture plain;

static void plain_start(void)
{
	ck_assert_msg(fixture_kubeapi_start(&plain, "kubeapi.py", NULL) == 0,
	              "kubeapi.py did not start");
}

static void plain_stop(void)
{
	fixture_kubeapi_stop(&plain);
}

START_TEST(missing_crds)
{
	struct kubesource_options o = {0};
	struct kubesource *ks = NULL;
	struct error err = ERROR_INIT;
	FILE *f;

	tmp_make();
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", tmp);
	ck_assert_ptr_nonnull(f = fopen(kubeconfig, "w"));
	fprintf(f,
	        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n"
	        "  cluster:\n    server: https://%s\n    certificate-authority: %s/ca.crt\n"
	        "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
	        "users:\n- name: u\n  user: {token: imageguard-test-token}\n",
	        plain.host, plain.dir);
	fclose(f);
	o.kubeconfig = kubeconfig;
	o.secrets_parent = tmp;
	o.sync_timeout_ms = 60000;
	ck_assert_int_eq(kubesource_new(&ks, &o, &err), IG_ENOTFOUND);
	ck_assert_ptr_null(ks);
	ck_assert_str_eq(err.msg, "kubernetes api: API group '" IMG "' is not served: are Flux's "
	                          "CRDs installed?");
	ck_assert_uint_eq(entries(tmp), 1); /* the kubeconfig: no secrets folder was made */
	tmp_remove();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kubesource");
	TCase *tc = tcase_create("core"), *kube = tcase_create("api"), *bare = tcase_create("crds");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, preferred_version, 0,
	                    sizeof(preferred_cases) / sizeof(preferred_cases[0]));
	tcase_add_loop_test(tc, served_kinds, 0, sizeof(served_cases) / sizeof(served_cases[0]));
	tcase_add_loop_test(tc, documents, 0, sizeof(document_cases) / sizeof(document_cases[0]));
	tcase_add_loop_test(tc, secret_folder, 0, sizeof(secret_cases) / sizeof(secret_cases[0]));
	tcase_add_test(tc, secret_caps);
	tcase_add_test(tc, secret_sums);
	tcase_add_test(tc, slim_objects);
	tcase_add_test(tc, packed_objects);
	suite_add_tcase(s, tc);

	tcase_add_unchecked_fixture(kube, etcd_start, etcd_stop);
	tcase_add_test(kube, watches_the_preferred_version);
	tcase_add_test(kube, load_reads_objects_and_secrets);
	tcase_add_test(kube, no_references_nothing_to_read);
	tcase_add_test(kube, verify_secret_is_read);
	tcase_add_test(kube, shard_keeps_its_namespaces);
	tcase_add_test(kube, automations_kept_without_status);
	tcase_add_test(kube, shard_new_namespace_loads_whole);
	tcase_set_timeout(kube, 180);
	suite_add_tcase(s, kube);

	tcase_add_unchecked_fixture(bare, plain_start, plain_stop);
	tcase_add_test(bare, missing_crds);
	tcase_set_timeout(bare, 120);
	suite_add_tcase(s, bare);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
