/* Unit tests for the Kubernetes client's pure parts: kubeconfig files (good and bad), the
 * in-cluster service account folder, base64, imageID digests and tags, label selectors and the
 * workload finder. */
#define _XOPEN_SOURCE 700 /* nftw, to remove the fixture's folder */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/util/buf.h"

#include "imageguard/util/error.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/kubeimage.h"
#include "imageguard/markers/workload.h"

#define HEAD "apiVersion: v1\nkind: Config\ncurrent-context: c1\n"
#define CTX "contexts:\n- name: c1\n  context:\n    cluster: k1\n    user: u1\n"
#define CLUSTER "clusters:\n- name: k1\n  cluster:\n    server: https://10.0.0.1:6443\n"
/* "-----BEGIN X-----\n" in base64 */
#define PEM_B64 "LS0tLS1CRUdJTiBYLS0tLS0K"

static const struct {
	const char *what, *yaml;
	int rc;
	const char *server, *ca_file, *ca_pem, *token, *token_file, *cert, *key, *ns;
	const char *msg; /* substring of the error, with rc < 0 */
} configs[] = {
    {"token and CA data",
     HEAD CTX CLUSTER "    certificate-authority-data: " PEM_B64 "\n"
                      "users:\n- name: u1\n  user:\n    token: abc.def\n",
     0, "https://10.0.0.1:6443", NULL, "-----BEGIN X-----\n", "abc.def", NULL, NULL, NULL,
     "default", NULL},
    {"relative CA and key files, context namespace",
     HEAD "contexts:\n- name: c1\n  context:\n    cluster: k1\n    user: u1\n    namespace: "
          "prod\n" CLUSTER "    certificate-authority: certs/ca.crt\nusers:\n- name: u1\n  user:\n"
          "    client-certificate: /abs/c.crt\n    client-key: k.key\n",
     0, "https://10.0.0.1:6443", "/etc/kube/certs/ca.crt", NULL, NULL, NULL, "/abs/c.crt",
     "/etc/kube/k.key", "prod", NULL},
    {"client cert data, trailing slash",
     HEAD CTX "clusters:\n- name: k1\n  cluster:\n    server: https://h:443/\n"
              "    insecure-skip-tls-verify: true\nusers:\n- name: u1\n  user:\n"
              "    client-certificate-data: " PEM_B64 "\n    client-key-data: " PEM_B64 "\n",
     0, "https://h:443", NULL, NULL, NULL, NULL, "-----BEGIN X-----\n", "-----BEGIN X-----\n",
     "default", NULL},
    {"tokenFile", HEAD CTX CLUSTER "users:\n- name: u1\n  user:\n    tokenFile: tok\n", 0,
     "https://10.0.0.1:6443", NULL, NULL, NULL, "/etc/kube/tok", NULL, NULL, "default", NULL},
    {"no user", HEAD "contexts:\n- name: c1\n  context:\n    cluster: k1\n" CLUSTER, 0,
     "https://10.0.0.1:6443", NULL, NULL, NULL, NULL, NULL, NULL, "default", NULL},
    {"picks current-context among several",
     HEAD
     "contexts:\n- name: c0\n  context:\n    cluster: k0\n- name: c1\n  context:\n    cluster: k1\n"
     "clusters:\n- name: k0\n  cluster:\n    server: https://wrong\n"
     "- name: k1\n  cluster:\n    server: http://127.0.0.1:8001\n",
     0, "http://127.0.0.1:8001", NULL, NULL, NULL, NULL, NULL, NULL, "default", NULL},
    {"no current-context", "apiVersion: v1\nkind: Config\n" CTX CLUSTER, IG_EINVALID, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, "current-context: missing"},
    {"unknown context", "current-context: nope\n" CTX CLUSTER, IG_EINVALID, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, "line 3: contexts: no entry named 'nope'"},
    {"unknown cluster", HEAD CTX "clusters:\n- name: k2\n  cluster:\n    server: https://x\n",
     IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "clusters: no entry named 'k1'"},
    {"no server",
     HEAD CTX "clusters:\n- name: k1\n  cluster:\n    insecure-skip-tls-verify: "
              "true\n",
     IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "clusters[k1].cluster.server: missing"},
    {"server not a URL", HEAD CTX "clusters:\n- name: k1\n  cluster:\n    server: 10.0.0.1\n",
     IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "line 12: clusters[k1].cluster.server: expected an https:// or http:// URL"},
    {"bad CA base64", HEAD CTX CLUSTER "    certificate-authority-data: '@@@'\n", IG_EINVALID, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "line 13: clusters[k1].cluster.certificate-authority-data: not valid base64"},
    {"empty CA data", HEAD CTX CLUSTER "    certificate-authority-data: ''\n", IG_EINVALID, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "certificate-authority-data: empty"},
    {"bad insecure flag", HEAD CTX CLUSTER "    insecure-skip-tls-verify: maybe\n", IG_EINVALID,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "expected true or false"},
    {"exec plugin",
     HEAD CTX CLUSTER "users:\n- name: u1\n  user:\n    exec:\n"
                      "      command: aws\n",
     IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "users[u1].user.exec: not supported"},
    {"basic auth", HEAD CTX CLUSTER "users:\n- name: u1\n  user:\n    password: hunter2\n",
     IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "users[u1].user.password: not supported"},
    {"cert without key",
     HEAD CTX CLUSTER "users:\n- name: u1\n  user:\n"
                      "    client-certificate: c.crt\n",
     IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "users[u1].user: a client certificate needs a client key"},
    {"token is a list", HEAD CTX CLUSTER "users:\n- name: u1\n  user:\n    token: [a]\n",
     IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "users[u1].user.token: expected a string"},
    {"clusters not a list", HEAD CTX "clusters: {}\n", IG_EINVALID, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, "clusters: expected a list"},
    {"context body missing", HEAD "contexts:\n- name: c1\n" CLUSTER, IG_EINVALID, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, "contexts[c1].context: missing"},
    {"not a mapping", "- a\n- b\n", IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "document: expected a mapping"},
    {"YAML syntax", "current-context: [\n", IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, "kubeconfig '/etc/kube/config': line 2:"},
    {"empty file", "", IG_EINVALID, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "document: expected a mapping"},
};

START_TEST(kubeconfig_table)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct error err = ERROR_INIT;
	const char *y = configs[_i].yaml;
	int rc = kubeconfig_parse(&kc, "/etc/kube/config", y, strlen(y), &err);

	ck_assert_msg(rc == configs[_i].rc, "%s: rc %d (%s)", configs[_i].what, rc, err.msg);
	if (rc == 0) {
		ck_assert_str_eq(kc.server, configs[_i].server);
		ck_assert_pstr_eq(kc.ca_file, configs[_i].ca_file);
		ck_assert_pstr_eq(kc.ca_pem, configs[_i].ca_pem);
		ck_assert_pstr_eq(kc.token, configs[_i].token);
		ck_assert_pstr_eq(kc.token_file, configs[_i].token_file);
		ck_assert_pstr_eq(kc.cert_pem ? kc.cert_pem : kc.cert_file, configs[_i].cert);
		ck_assert_pstr_eq(kc.key_pem ? kc.key_pem : kc.key_file, configs[_i].key);
		ck_assert_str_eq(kc.ns, configs[_i].ns);
		ck_assert_str_eq(kc.source, "kubeconfig '/etc/kube/config'");
	} else {
		ck_assert_msg(strstr(err.msg, configs[_i].msg) != NULL, "%s: %s", configs[_i].what,
		              err.msg);
		ck_assert_msg(strstr(err.msg, "kubeconfig '/etc/kube/config'") == err.msg, "%s",
		              err.msg);
		ck_assert_msg(!strstr(err.msg, "hunter2"), "a secret in the error: %s", err.msg);
		ck_assert_ptr_null(kc.server);
	}
	kubeconfig_release(&kc);
}
END_TEST

START_TEST(kubeconfig_file)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(kubeconfig_load(&kc, "/nonexistent/kubeconfig", &err), IG_ENOTFOUND);
	ck_assert_str_eq(err.msg, "kubeconfig '/nonexistent/kubeconfig': no such file");
	kubeconfig_release(&kc);
}
END_TEST

static const struct {
	const char *in, *out;
	int rc;
} b64[] = {
    {"aGVsbG8=", "hello", 0},         {"aGVsbG8", "hello", 0},
    {"aGVs\nbG8=\n", "hello", 0},     {"", "", 0},
    {"aGVsbG8=x", NULL, IG_EINVALID}, {"a", NULL, IG_EINVALID},
    {"aGVsbG9=", NULL, IG_EINVALID}, /* non-zero trailing bits */
    {"a-b_", NULL, IG_EINVALID},      {"====", NULL, IG_EINVALID},
};

START_TEST(base64_table)
{
	char *out = NULL;
	size_t len;
	int rc = kubeconfig_base64_decode(&out, &len, b64[_i].in);

	ck_assert_msg(rc == b64[_i].rc, "'%s': rc %d", b64[_i].in, rc);
	if (rc == 0) {
		ck_assert_str_eq(out, b64[_i].out);
		ck_assert_uint_eq(len, strlen(b64[_i].out));
	} else {
		ck_assert_ptr_null(out);
	}
	free(out);
}
END_TEST

/* A service account folder in a temp dir: token, ca.crt, namespace (each optional). */
static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(in_cluster)
{
	char dir[] = "/tmp/imageguard-sa.XXXXXX", path[512];
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct error err = ERROR_INIT;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	ck_assert_int_eq(kubeconfig_in_cluster(&kc, dir, &err), IG_ENOTFOUND);
	ck_assert(strstr(err.msg, "KUBERNETES_SERVICE_HOST") != NULL);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	ck_assert_int_eq(kubeconfig_in_cluster(&kc, dir, &err), IG_ENOTFOUND);
	ck_assert_msg(strstr(err.msg, "/token': no such file") != NULL, "%s", err.msg);
	write_file(dir, "token", "tok\n");
	ck_assert_int_eq(kubeconfig_in_cluster(&kc, dir, &err), IG_ENOTFOUND);
	ck_assert_msg(strstr(err.msg, "/ca.crt': cannot read") != NULL, "%s", err.msg);
	write_file(dir, "ca.crt", "x");
	ck_assert_int_eq(kubeconfig_in_cluster(&kc, dir, &err), 0);
	ck_assert_str_eq(kc.server, "https://[fd00::1]:443");
	ck_assert_str_eq(kc.ns, "default");
	ck_assert_ptr_null(kc.token); /* read by the client, so rotation is picked up */
	snprintf(path, sizeof(path), "%s/token", dir);
	ck_assert_str_eq(kc.token_file, path);
	write_file(dir, "namespace", "team-a\n");
	ck_assert_int_eq(kubeconfig_in_cluster(&kc, dir, &err), 0);
	ck_assert_str_eq(kc.ns, "team-a");
	kubeconfig_release(&kc);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	for (const char *const *n = (const char *const[]){"token", "ca.crt", "namespace", NULL}; *n;
	     n++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *n);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

START_TEST(client_token_file)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct kube_client *c = NULL;
	struct error err = ERROR_INIT;
	char dir[] = "/tmp/imageguard-tok.XXXXXX", path[512];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	kc.source = strdup("test");
	kc.server = strdup("https://127.0.0.1:1");
	kc.token_file = strdup(path);
	ck_assert_int_eq(kube_client_new(&c, &kc, NULL, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "no such file") != NULL, "%s", err.msg);
	write_file(dir, "token", "line1\nline2\n");
	ck_assert_int_eq(kube_client_new(&c, &kc, NULL, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "several lines") != NULL && !strstr(err.msg, "line1"), "%s",
	              err.msg);
	write_file(dir, "token", "good\n");
	ck_assert_int_eq(kube_client_new(&c, &kc, NULL, &err), 0);
	ck_assert_str_eq(kube_namespace(c), "default");
	kube_client_free(c);
	free(kc.server);
	kc.server = strdup("ftp://x");
	ck_assert_int_eq(kube_client_new(&c, &kc, NULL, &err), IG_EINVALID);
	kubeconfig_release(&kc);
	unlink(path);
	rmdir(dir);
}
END_TEST

#define HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
static const struct {
	const char *id;
	int rc;
	const char *digest;
} image_ids[] = {
    {"docker-pullable://ghcr.io/o/app@sha256:" HEX, 0, "sha256:" HEX},
    {"ghcr.io/o/app@sha256:" HEX, 0, "sha256:" HEX},
    {"docker.io/library/nginx@sha256:" HEX, 0, "sha256:" HEX},
    {"docker://127.0.0.1:5000/o/app@sha256:" HEX, 0, "sha256:" HEX},
    {"docker://sha256:" HEX, IG_ENOTFOUND, NULL},
    {"sha256:" HEX, IG_ENOTFOUND, NULL},
    {"", IG_ENOTFOUND, NULL},
    {NULL, IG_ENOTFOUND, NULL},
    {"docker-pullable://", IG_ENOTFOUND, NULL},
    {"ghcr.io/o/app@sha256:abc", IG_EINVALID, NULL},
    {"ghcr.io/o/app@sha256:" HEX "00", IG_EINVALID, NULL},
    {"ghcr.io/o/app@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
     IG_EINVALID, NULL},
    {"ghcr.io/o/app@md5:" HEX, IG_EINVALID, NULL},
    {"ghcr.io/o/app@", IG_EINVALID, NULL},
};

START_TEST(image_id_table)
{
	struct error err = ERROR_INIT;
	char *d = NULL;
	int rc = kubeimage_digest(&d, image_ids[_i].id, &err);

	ck_assert_msg(rc == image_ids[_i].rc, "'%s': rc %d (%s)", image_ids[_i].id, rc, err.msg);
	ck_assert_pstr_eq(d, image_ids[_i].digest);
	if (rc < 0)
		ck_assert(err.msg[0] != '\0');
	free(d);
}
END_TEST

static const struct {
	const char *image, *tag;
} image_tags[] = {
    {"ghcr.io/o/app:v1.2", "v1.2"},
    {"127.0.0.1:5000/o/app:v1", "v1"},
    {"127.0.0.1:5000/o/app", NULL},
    {"nginx:1.25@sha256:" HEX, "1.25"},
    {"nginx@sha256:" HEX, NULL},
    {"sha256:" HEX, NULL},
    {"docker-pullable://nginx:1", "1"},
    {"", NULL},
    {NULL, NULL},
};

START_TEST(image_tag_table)
{
	char *t = NULL;

	ck_assert_int_eq(kubeimage_tag(&t, image_tags[_i].image), 0);
	ck_assert_pstr_eq(t, image_tags[_i].tag);
	free(t);
}
END_TEST

static const struct {
	const char *json;
	int rc;
	const char *out;
} selectors[] = {
    {"{\"matchLabels\": {\"app\": \"web\"}}", 0, "app=web"},
    {"{\"matchLabels\": {\"a\": \"1\", \"b\": \"2\"}}", 0, "a=1,b=2"},
    {"{\"matchLabels\": {\"a\": \"1\"}, \"matchExpressions\": [{\"key\": \"t\", \"operator\": "
     "\"In\", \"values\": [\"x\", \"y\"]}, {\"key\": \"u\", \"operator\": \"NotIn\", \"values\": "
     "[\"z\"]}, {\"key\": \"e\", \"operator\": \"Exists\"}, {\"key\": \"n\", \"operator\": "
     "\"DoesNotExist\"}]}",
     0, "a=1,t in (x,y),u notin (z),e,!n"},
    {"{}", IG_EINVALID, NULL},
    {"{\"matchLabels\": {}}", IG_EINVALID, NULL},
    {"null", IG_EINVALID, NULL},
    {"{\"matchLabels\": {\"a\": 1}}", IG_EINVALID, NULL},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Gt\", \"values\": [\"1\"]}]}",
     IG_EINVALID, NULL},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\"}]}", IG_EINVALID, NULL},
    {"{\"matchExpressions\": [{\"operator\": \"Exists\"}]}", IG_EINVALID, NULL},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", \"values\": [1]}]}",
     IG_EINVALID, NULL},
};

START_TEST(selector_table)
{
	json_t *j = json_loads(selectors[_i].json, JSON_DECODE_ANY, NULL);
	struct error err = ERROR_INIT;
	char *s = NULL;
	int rc = kube_label_selector(&s, j, &err);

	ck_assert_msg(rc == selectors[_i].rc, "%s: rc %d (%s)", selectors[_i].json, rc, err.msg);
	ck_assert_pstr_eq(s, selectors[_i].out);
	if (rc < 0)
		ck_assert(strncmp(err.msg, "selector: ", 10) == 0);
	free(s);
	json_decref(j);
}
END_TEST

static const char manifest[] =
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"                /* 1-4 */
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"   /* 5-9 */
    "spec:\n  template:\n    spec:\n      initContainers:\n"                 /* 10-13 */
    "        - name: init\n          image: busybox:1\n"                     /* 14-15 */
    "      containers:\n        - name: app\n"                               /* 16-17 */
    "          image: ghcr.io/o/app:v1 # {\"$imagepolicy\": \"a:b\"}\n"      /* 18 */
    "        - {name: side, image: \"ghcr.io/o/side:v2\"}\n"                 /* 19 */
    "        - name: noimage\n"                                              /* 20 */
    "---\nkind: CronJob\nmetadata:\n  name: nightly\n  namespace: batch\n"   /* 21-25 */
    "spec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"     /* 26-30 */
    "          containers:\n          - name: job\n            image: j:3\n" /* 31-33 */
    "---\nkind: Pod\nmetadata:\n  name: solo\nspec:\n  containers:\n"        /* 34-39 */
    "  - name: c\n    image: p:4\n"                                          /* 40-41 */
    "---\nkind: Deployment\nspec: {template: {spec: {containers: [{name: x, image: y}]}}}\n";

START_TEST(workloads)
{
	struct workload_set s = WORKLOAD_SET_INIT;
	struct error err = ERROR_INIT;
	const struct workload_container *c;
	char *p;

	ck_assert_int_eq(workload_scan_buffer(&s, "m.yaml", manifest, strlen(manifest), &err), 0);
	ck_assert_uint_eq(s.len, 5); /* the nameless Deployment is skipped */
	c = workload_at_line(&s, 18);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->kind, "Deployment");
	ck_assert_str_eq(c->ns, "default");
	ck_assert_str_eq(c->container, "app");
	ck_assert_str_eq(c->image, "ghcr.io/o/app:v1");
	ck_assert(!c->init);
	c = workload_at_line(&s, 15);
	ck_assert(c && c->init && strcmp(c->container, "init") == 0);
	c = workload_at_line(&s, 19);
	ck_assert(c && strcmp(c->image, "ghcr.io/o/side:v2") == 0);
	c = workload_at_line(&s, 33);
	ck_assert(c && strcmp(c->kind, "CronJob") == 0 && strcmp(c->ns, "batch") == 0);
	c = workload_at_line(&s, 41);
	ck_assert(c && strcmp(c->kind, "Pod") == 0 && strcmp(c->name, "solo") == 0);
	ck_assert_ptr_null(workload_at_line(&s, 4));
	workload_set_release(&s);

	ck_assert_int_eq(workload_scan_buffer(&s, "bad.yaml", "kind: [\n", 8, &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "'bad.yaml': line 2") == err.msg, "%s", err.msg);
	workload_set_release(&s);

	p = workload_api_path("StatefulSet", "prod", "db");
	ck_assert_str_eq(p, "/apis/apps/v1/namespaces/prod/statefulsets/db");
	free(p);
	p = workload_api_path("Pod", "prod", "x");
	ck_assert_str_eq(p, "/api/v1/namespaces/prod/pods/x");
	free(p);
	ck_assert_ptr_null(workload_api_path("Service", "prod", "x"));
	/* names from Git content never name another path */
	ck_assert_ptr_null(workload_api_path("Deployment", "prod", ".."));
	ck_assert_ptr_null(workload_api_path("Deployment", "..", "x"));
	ck_assert_ptr_null(workload_api_path("Deployment", "prod", "a/b"));
}
END_TEST

/* kube_path: every name an object gives is checked before it is put in a URL (a '..' would be
 * squashed by the client into a request for the namespace itself), and escaped. */
static const struct {
	const char *ns, *name, *sub, *want; /* want NULL: refused, IG_EINVALID */
} paths[] = {
    {"apps", "regcred", NULL, "/api/v1/namespaces/apps/secrets/regcred"},
    {"apps", NULL, NULL, "/api/v1/namespaces/apps/secrets"},
    {"apps", "a.b-c", "status", "/api/v1/namespaces/apps/secrets/a.b-c/status"},
    {"apps", "..", NULL, NULL},
    {"apps", ".", NULL, NULL},
    {"apps", "a..b", NULL, NULL},
    {"apps", "a/b", NULL, NULL},
    {"apps", "x%2f..", NULL, NULL},
    {"apps", "x?watch=true", NULL, NULL},
    {"apps", "x#y", NULL, NULL},
    {"apps", "", NULL, NULL},
    {"..", "x", NULL, NULL},
    {"a.b", "x", NULL, NULL}, /* a namespace is a DNS label: no dots */
    {"", "x", NULL, NULL},
    {NULL, "x", NULL, NULL},
    {"Apps", "x", NULL, NULL},
};

START_TEST(path_table)
{
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct buf b = BUF_INIT;
		struct error err = ERROR_INIT;
		int rc = kube_path(&b, "/api/v1", paths[i].ns, "secrets", paths[i].name,
		                   paths[i].sub, "secret", &err);

		if (paths[i].want) {
			ck_assert_msg(rc == 0, "%zu: %s", i, err.msg);
			ck_assert_str_eq(b.data, paths[i].want);
		} else {
			ck_assert_msg(rc == IG_EINVALID, "%zu: accepted as '%s'", i,
			              b.data ? b.data : "");
			ck_assert_msg(strncmp(err.msg, "secret '", 8) == 0 &&
			                  strstr(err.msg, "is not a valid"),
			              "%s", err.msg);
			ck_assert_uint_eq(b.len, 0);
		}
		buf_release(&b);
	}
}
END_TEST

/* ---- the client against the fixture API server (test/fixtures/kubeapi.py) ---- */

extern char **environ;

static struct {
	char dir[64];
	pid_t pid;
	char server[64];
} api;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void api_start(void)
{
	const char *src = getenv("IMAGEGUARD_SRC") ? getenv("IMAGEGUARD_SRC") : ".";
	char script[512], port_file[128];
	const char *argv[] = {"/usr/bin/python3", script, "serve",       "--dir", api.dir,
	                      "--pods",           "7",    "--page-size", "3",     "--token",
	                      "client-token",     NULL};
	posix_spawn_file_actions_t fa;
	struct buf port = BUF_INIT;

	snprintf(api.dir, sizeof(api.dir), "/tmp/imageguard-kubeapi.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(api.dir));
	snprintf(script, sizeof(script), "%s/test/fixtures/kubeapi.py", src);
	snprintf(port_file, sizeof(port_file), "%s/port", api.dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	ck_assert_int_eq(posix_spawn(&api.pid, argv[0], &fa, NULL, (char *const *)argv, environ),
	                 0);
	posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; i < 400 && !port.len; i++) {
		struct timespec ts = {0, 50000000L};
		if (buf_read_file(&port, port_file) < 0)
			nanosleep(&ts, NULL);
	}
	ck_assert_msg(port.len > 0, "kubeapi.py did not start");
	port.data[strcspn(port.data, "\n")] = '\0';
	snprintf(api.server, sizeof(api.server), "https://127.0.0.1:%s", port.data);
	buf_release(&port);
}

static void api_stop(void)
{
	if (api.pid > 0) {
		kill(api.pid, SIGTERM);
		waitpid(api.pid, NULL, 0);
		api.pid = 0;
	}
	if (api.dir[0])
		nftw(api.dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	api.dir[0] = '\0';
}

/* A client for the fixture: token or client certificate, the fixture's CA or none. */
static struct kube_client *client(const char *token, bool cert, bool ca,
                                  const struct kube_options *o)
{
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct kube_client *c = NULL;
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;

	kc.source = strdup("test kubeconfig");
	kc.server = strdup(api.server);
	kc.token = token ? strdup(token) : NULL;
	if (ca) {
		buf_printf(&b, "%s/ca.crt", api.dir);
		kc.ca_file = buf_detach(&b);
	}
	if (cert) {
		buf_printf(&b, "%s/client.crt", api.dir);
		kc.cert_file = buf_detach(&b);
		buf_printf(&b, "%s/client.key", api.dir);
		kc.key_file = buf_detach(&b);
	}
	ck_assert_msg(kube_client_new(&c, &kc, o, &err) == 0, "%s", err.msg);
	kubeconfig_release(&kc);
	return c;
}

START_TEST(client_requests)
{
	struct kube_options o;
	struct kube_client *c;
	struct error err = ERROR_INIT;
	json_t *j = NULL;
	int rc;

	kube_options_init(&o);
	c = client("client-token", false, true, &o);
	ck_assert_msg(kube_list(&j, c, "/api/v1/namespaces/prod/pods", "app=web", &err) == 0, "%s",
	              err.msg);
	ck_assert_uint_eq(json_array_size(j), 7); /* three pages of at most 3 */
	json_decref(j);
	ck_assert_int_eq(kube_list(&j, c, "/api/v1/namespaces/prod/pods", "app=other", &err), 0);
	ck_assert_uint_eq(json_array_size(j), 0);
	json_decref(j);
	ck_assert_int_eq(kube_get(&j, c, "/apis/apps/v1/namespaces/prod/deployments/web", &err), 0);
	ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "Deployment");
	json_decref(j);
	rc = kube_get(&j, c, "/apis/apps/v1/namespaces/prod/deployments/nope", &err);
	ck_assert_int_eq(rc, IG_ENOTFOUND);
	ck_assert_str_eq(err.msg, "kubernetes api 'GET /apis/apps/v1/namespaces/prod/deployments/"
	                          "nope': 404 not found: deployments.apps \"nope\" not found");
	ck_assert_ptr_null(j);
	kube_client_free(c);

	o.max_pages = 2;
	c = client("client-token", false, true, &o);
	ck_assert_int_eq(kube_list(&j, c, "/api/v1/namespaces/prod/pods", NULL, &err), IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "more than 2 pages") != NULL, "%s", err.msg);
	ck_assert_ptr_null(j);
	kube_client_free(c);

	kube_options_init(&o);
	o.max_items = 5;
	c = client("client-token", false, true, &o);
	ck_assert_int_eq(kube_list(&j, c, "/api/v1/namespaces/prod/pods", NULL, &err), IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "more than 5 items") != NULL, "%s", err.msg);
	kube_client_free(c);

	kube_options_init(&o);
	o.max_body = 2048;
	c = client("client-token", false, true, &o);
	ck_assert_int_eq(kube_list(&j, c, "/api/v1/namespaces/prod/pods", NULL, &err), IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "response larger than 2048 bytes") != NULL, "%s", err.msg);
	kube_client_free(c);
}
END_TEST

/* kube_list_each: every item of every page to the callback, in order, the page's memory
 * dropped as it goes; the caps as kube_list's; a callback's error ends the list with it. */
struct seen {
	size_t n, stop_at;
	json_t *names;
};

static int see(void *ctx, json_t *item, struct error *err)
{
	struct seen *s = ctx;

	if (++s->n == s->stop_at)
		return error_set(err, IG_EINVALID, "stop at %zu", s->n);
	json_array_append(s->names, json_object_get(json_object_get(item, "metadata"), "name"));
	return 0;
}

START_TEST(list_each_pages)
{
	struct kube_options o;
	struct kube_client *c;
	struct error err = ERROR_INIT;
	struct seen s = {0, 0, json_array()};
	json_t *all = NULL;
	char *rv = NULL;

	kube_options_init(&o);
	c = client("client-token", false, true, &o);
	ck_assert_msg(
	    kube_list_each(&rv, c, "/api/v1/namespaces/prod/pods", "app=web", see, &s, &err) == 0,
	    "%s", err.msg);
	ck_assert_ptr_nonnull(rv);
	ck_assert_int_eq(kube_list(&all, c, "/api/v1/namespaces/prod/pods", "app=web", &err), 0);
	ck_assert_uint_eq(s.n, 7); /* three pages of at most 3, as kube_list */
	for (size_t i = 0; i < json_array_size(all); i++)
		ck_assert(json_equal(
		    json_array_get(s.names, i),
		    json_object_get(json_object_get(json_array_get(all, i), "metadata"), "name")));
	json_decref(all);
	free(rv);
	s = (struct seen){0, 5, s.names};
	ck_assert_int_eq(
	    kube_list_each(NULL, c, "/api/v1/namespaces/prod/pods", "app=web", see, &s, &err),
	    IG_EINVALID);
	ck_assert_str_eq(err.msg, "stop at 5");
	kube_client_free(c);
	o.max_items = 5;
	c = client("client-token", false, true, &o);
	s = (struct seen){0, 0, s.names};
	ck_assert_int_eq(
	    kube_list_each(NULL, c, "/api/v1/namespaces/prod/pods", NULL, see, &s, &err),
	    IG_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "more than 5 items") != NULL, "%s", err.msg);
	kube_client_free(c);
	json_decref(s.names);
}
END_TEST

START_TEST(client_auth_and_tls)
{
	struct kube_client *c;
	struct error err = ERROR_INIT;
	json_t *j = NULL;

	c = client("wrong-secret", false, true, NULL);
	ck_assert_int_eq(kube_list(&j, c, "/api/v1/namespaces/prod/pods", NULL, &err), IG_EAUTH);
	ck_assert_str_eq(err.msg, "kubernetes api 'GET /api/v1/namespaces/prod/pods': 401 "
	                          "unauthorized: Unauthorized");
	kube_client_free(c);
	c = client(NULL, false, true, NULL);
	ck_assert_int_eq(kube_get(&j, c, "/api/v1/namespaces/prod/pods/web-1", &err), IG_EAUTH);
	kube_client_free(c);
	c = client(NULL, true, true, NULL);
	ck_assert_msg(kube_get(&j, c, "/api/v1/namespaces/prod/pods/web-1", &err) == 0, "%s",
	              err.msg);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "metadata"), "name")),
	                 "web-1");
	json_decref(j);
	kube_client_free(c);
	c = client("client-token", false, false, NULL);
	ck_assert_int_eq(kube_get(&j, c, "/api/v1/namespaces/prod/pods/web-1", &err), IG_EFAIL);
	ck_assert_msg(strstr(err.msg, "certificate") != NULL, "%s", err.msg);
	kube_client_free(c);
}
END_TEST

static volatile sig_atomic_t api_stop_flag;

static void *raise_stop(void *arg)
{
	struct timespec ts = {0, 400000000L};

	(void)arg;
	nanosleep(&ts, NULL);
	api_stop_flag = 1;
	return NULL;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An API server that accepts (the kernel's backlog) and never answers: the stop flag ends the
 * request within about a second, long before the 30 s timeout and its retries. */
START_TEST(stop_ends_a_stalled_request)
{
	struct sockaddr_in a = {0};
	socklen_t alen = sizeof(a);
	struct kubeconfig kc = KUBECONFIG_INIT;
	struct kube_options o;
	struct kube_client *c = NULL;
	struct error err = ERROR_INIT;
	char server[64];
	json_t *j = NULL;
	pthread_t th;
	int64_t t0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 8) == 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", ntohs(a.sin_port));
	kc.source = strdup("test kubeconfig");
	kc.server = strdup(server);
	kube_options_init(&o);
	o.stop = &api_stop_flag;
	api_stop_flag = 0;
	ck_assert_msg(kube_client_new(&c, &kc, &o, &err) == 0, "%s", err.msg);
	t0 = mono_ms();
	ck_assert_int_eq(pthread_create(&th, NULL, raise_stop, NULL), 0);
	ck_assert_int_eq(kube_get(&j, c, "/api/v1/namespaces/prod/pods/x", &err), IG_EFAIL);
	pthread_join(th, NULL);
	ck_assert_msg(mono_ms() - t0 < 2500, "%lld ms", (long long)(mono_ms() - t0));
	ck_assert_msg(strstr(err.msg, "stopping"), "%s", err.msg);
	ck_assert_ptr_null(j);
	kube_client_free(c);
	kubeconfig_release(&kc);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kube");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, kubeconfig_table, 0, sizeof(configs) / sizeof(configs[0]));
	tcase_add_test(tc, kubeconfig_file);
	tcase_add_loop_test(tc, base64_table, 0, sizeof(b64) / sizeof(b64[0]));
	tcase_add_test(tc, in_cluster);
	tcase_add_test(tc, client_token_file);
	tcase_add_loop_test(tc, image_id_table, 0, sizeof(image_ids) / sizeof(image_ids[0]));
	tcase_add_loop_test(tc, image_tag_table, 0, sizeof(image_tags) / sizeof(image_tags[0]));
	tcase_add_loop_test(tc, selector_table, 0, sizeof(selectors) / sizeof(selectors[0]));
	tcase_add_test(tc, workloads);
	tcase_add_test(tc, path_table);
	tcase_add_test(tc, stop_ends_a_stalled_request);
	suite_add_tcase(s, tc);
	tc = tcase_create("client");
	tcase_add_unchecked_fixture(tc, api_start, api_stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, client_requests);
	tcase_add_test(tc, list_each_pages);
	tcase_add_test(tc, client_auth_and_tls);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
