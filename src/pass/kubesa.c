/* spec.serviceAccountName under run --kube: the ServiceAccount's imagePullSecrets fetched into
 * the secrets folder with the configuration and read back, after spec.secretRef, when the
 * repository's credentials are loaded; or, with a cloud provider, the account's own identity
 * (its annotations, a TokenRequest token) handed to cloudauth. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/pass/kubesa.h"
#include "imageguard/config/config.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/kubename.h"
#include "imageguard/registry/cloudauth.h"
#include "imageguard/registry/creds.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define MAX_ERROR_FILE 1024 /* the one-line "error" file */

static int sa_dir(struct buf *out, const char *secrets_dir, const char *ns, const char *name)
{
	return buf_printf(out, "%s/%s.%s@serviceaccount", secrets_dir, ns, name);
}

/* Removes the account's folder and the files in it (it has no sub-folders). */
static void remove_dir(const char *dir)
{
	struct buf p = BUF_INIT;

	for (int i = 0; i < KUBESA_MAX_PULL_SECRETS; i++) {
		buf_reset(&p);
		if (buf_printf(&p, "%s/%d.json", dir, i) == 0)
			unlink(p.data);
	}
	buf_reset(&p);
	if (buf_printf(&p, "%s/error", dir) == 0)
		unlink(p.data);
	buf_release(&p);
	rmdir(dir);
}

static int write_file(const char *dir, const char *file, const char *data, size_t len,
                      struct error *err)
{
	struct buf path = BUF_INIT;
	int fd = -1, error = 0;

	if (buf_printf(&path, "%s/%s", dir, file) < 0 ||
	    (fd = open(path.data, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) <
	        0 ||
	    write(fd, data, len) != (ssize_t)len)
		error = error_set(err, IG_EFAIL, "cannot write '%s'", path.data ? path.data : dir);
	if (fd >= 0)
		close(fd);
	buf_release(&path);
	return error;
}

/* A pull Secret's Docker config JSON, newly allocated: .dockerconfigjson as it is, or a
 * legacy .dockercfg (the "auths" object alone) wrapped in "auths". */
static int pull_config(char **out, size_t *len, const json_t *secret, const char *what,
                       struct error *err)
{
	const json_t *data = json_object_get(secret, "data");
	const char *b64 = json_string_value(json_object_get(data, ".dockerconfigjson"));
	const char *legacy = json_string_value(json_object_get(data, ".dockercfg"));
	json_t *auths = NULL, *wrapped = NULL;
	int error = 0;

	*out = NULL;
	if (!b64 && !legacy)
		return error_set(err, IG_EINVALID, "%s: no .dockerconfigjson or .dockercfg key",
		                 what);
	if (kubeconfig_base64_decode(out, len, b64 ? b64 : legacy) < 0)
		return error_set(err, IG_EINVALID, "%s: its key is not base64", what);
	if (b64)
		return 0;
	if (!(auths = json_loadb(*out, *len, 0, NULL)) || !json_is_object(auths)) {
		error = error_set(err, IG_EINVALID, "%s: .dockercfg is not a JSON object", what);
		goto done;
	}
	memset(*out, 0, *len);
	free(*out);
	*out = NULL;
	if (!(wrapped = json_pack("{sO}", "auths", auths)) ||
	    !(*out = json_dumps(wrapped, JSON_COMPACT))) {
		error = error_oom(err);
		goto done;
	}
	*len = strlen(*out);
done:
	if (error < 0 && *out) {
		memset(*out, 0, *len);
		free(*out);
		*out = NULL;
	}
	json_decref(wrapped);
	json_decref(auths);
	return error;
}

/* Whether a failure is the API's answer (a 404, a 403, a bad object), which the sum of a read
 * records, rather than no answer (a timeout, a 5xx, a stop, a local failure). */
static bool is_answer(int code)
{
	return code == 0 || code == IG_ENOTFOUND || code == IG_EAUTH || code == IG_EINVALID ||
	       code == IG_ETOOBIG;
}

/* Adds len bytes to the sum, after their length: no two sequences of fields sum alike. */
static void sum_add(EVP_MD_CTX *md, const void *data, size_t len)
{
	unsigned long long n = len;

	EVP_DigestUpdate(md, &n, sizeof(n));
	EVP_DigestUpdate(md, data, len);
}

/* Secret ns/name's Docker config into the sum (after its name) and, with dir, dir/<i>.json. */
static int fetch_pull_secret(kubesa_get_fn get, void *ctx, const char *dir, const char *ns,
                             const char *name, int i, EVP_MD_CTX *md, struct error *err)
{
	struct buf path = BUF_INIT;
	char what[600], file[32];
	json_t *s = NULL;
	char *conf = NULL;
	size_t len = 0;
	int error;

	snprintf(what, sizeof(what), "image pull secret '%s/%s'", ns, name);
	snprintf(file, sizeof(file), "%d.json", i);
	if ((error = kube_path(&path, "/api/v1", ns, "secrets", name, NULL, "image pull secret",
	                       err)) < 0)
		goto done;
	if ((error = get(&s, ctx, path.data, err)) < 0) {
		error_prefix(err, "%s", what);
		goto done;
	}
	if ((error = pull_config(&conf, &len, s, what, err)) < 0)
		goto done;
	sum_add(md, name, strlen(name));
	sum_add(md, conf, len);
	if (dir)
		error = write_file(dir, file, conf, len, err);
done:
	if (conf)
		memset(conf, 0, len);
	free(conf);
	json_decref(s);
	buf_release(&path);
	return error;
}

static int fetch_all(kubesa_get_fn get, void *ctx, const char *dir, const char *ns,
                     const char *name, EVP_MD_CTX *md, struct error *err)
{
	struct buf path = BUF_INIT;
	json_t *sa = NULL, *list, *item;
	size_t i;
	int error = 0;

	if ((error = kube_path(&path, "/api/v1", ns, "serviceaccounts", name, NULL,
	                       "serviceaccount", err)) < 0 ||
	    (error = get(&sa, ctx, path.data, err)) < 0)
		goto done;
	list = json_object_get(sa, "imagePullSecrets");
	if (json_array_size(list) > KUBESA_MAX_PULL_SECRETS) {
		error = error_set(err, IG_ETOOBIG, "more than %d imagePullSecrets",
		                  KUBESA_MAX_PULL_SECRETS);
		goto done;
	}
	json_array_foreach(list, i, item)
	{
		const char *s = json_string_value(json_object_get(item, "name"));

		/* the account's own list: the API server does not check these names */
		if (!kubename_is_name(s)) {
			error = error_set(err, IG_EINVALID,
			                  "imagePullSecrets[%zu]: not a Secret name", i);
			goto done;
		}
		if ((error = fetch_pull_secret(get, ctx, dir, ns, s, (int)i, md, err)) < 0)
			goto done;
	}
done:
	json_decref(sa);
	buf_release(&path);
	return error;
}

/* The sum of a failure that is an answer: its code and message. */
static void sum_failure(unsigned char sum[KUBESA_SUM_LEN], int code, const char *msg)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	memset(sum, 0, KUBESA_SUM_LEN);
	if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
		sum_add(md, &code, sizeof(code));
		sum_add(md, msg, strlen(msg));
		EVP_DigestFinal_ex(md, sum, NULL);
	}
	EVP_MD_CTX_free(md);
}

/* The failure err into dir/error (a fresh folder), for kubesa_load_creds to report. */
static void record_failure(const char *dir, const struct error *err)
{
	struct error ignored = ERROR_INIT;

	remove_dir(dir);
	if (mkdir(dir, 0700) == 0)
		write_file(dir, "error", err->msg, strlen(err->msg), &ignored);
}

/* Makes dir empty (the account's previous read removed). */
static int fresh_dir(struct buf *dir, const char *secrets_dir, const char *ns, const char *name,
                     struct error *err)
{
	if (sa_dir(dir, secrets_dir, ns, name) < 0)
		return error_oom(err);
	remove_dir(dir->data);
	if (mkdir(dir->data, 0700) < 0)
		return error_set(err, IG_EFAIL, "serviceaccount '%s/%s': cannot make '%s': %s", ns,
		                 name, dir->data, strerror(errno));
	return 0;
}

int kubesa_read(unsigned char sum[KUBESA_SUM_LEN], bool *summed, kubesa_get_fn get, void *ctx,
                const char *secrets_dir, const char *ns, const char *name, struct error *err)
{
	struct buf dir = BUF_INIT;
	EVP_MD_CTX *md = NULL;
	int error = 0;

	*summed = false;
	if (!kubename_is_namespace(ns) || !kubename_is_name(name)) {
		error = error_set(err, IG_EINVALID, "serviceaccount '%s/%s': not a valid name", ns,
		                  name);
		goto done;
	}
	if (!(md = EVP_MD_CTX_new()) || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		error = error_oom(err);
		goto done;
	}
	if (secrets_dir && (error = fresh_dir(&dir, secrets_dir, ns, name, err)) < 0)
		goto done;
	if ((error = fetch_all(get, ctx, dir.data, ns, name, md, err)) < 0) {
		error_prefix(err, "serviceaccount '%s/%s'", ns, name);
		if (dir.data)
			record_failure(dir.data, err);
	} else if (EVP_DigestFinal_ex(md, sum, NULL) == 1) {
		*summed = true;
	}
done:
	if (error < 0 && is_answer(error)) {
		sum_failure(sum, error, err->msg);
		*summed = true;
	}
	EVP_MD_CTX_free(md);
	buf_release(&dir);
	return error;
}

static int client_get(json_t **out, void *ctx, const char *path, struct error *err)
{
	return kube_get(out, ctx, path, err);
}

int kubesa_fetch(struct kube_client *c, const char *secrets_dir, const char *ns, const char *name,
                 struct error *err)
{
	unsigned char sum[KUBESA_SUM_LEN];
	bool summed;

	return kubesa_read(sum, &summed, client_get, c, secrets_dir, ns, name, err);
}

const char *kubesa_fetch_spec(unsigned char sum[KUBESA_SUM_LEN], bool *summed, kubesa_get_fn get,
                              void *ctx, const char *secrets_dir, const char *ns,
                              const json_t *spec)
{
	const char *sa = json_string_value(json_object_get(spec, "serviceAccountName"));
	const char *provider = json_string_value(json_object_get(spec, "provider"));
	struct error err = ERROR_INIT;

	*summed = false;
	if (!sa || !*sa || !ns || cloudauth_is_cloud(provider))
		return NULL;
	if (kubesa_read(sum, summed, get, ctx, secrets_dir, ns, sa, &err) < 0)
		log_warn("kube.serviceaccount", "%s", err.msg);
	return sa;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The account's recorded fetch failure, when there is one: IG_EINVALID with its message. */
static int recorded_failure(const char *dir, const struct config_repository *r, struct error *err)
{
	struct buf path = BUF_INIT, b = BUF_INIT_MAX(MAX_ERROR_FILE);
	int error = 0;

	if (buf_printf(&path, "%s/error", dir) < 0) {
		error = error_oom(err);
	} else if (buf_read_file(&b, path.data) == 0 && b.data) {
		error_flatten(b.data);
		error = error_set(err, IG_EINVALID, "%s", b.data);
	} else if (!exists(dir)) {
		error = error_set(err, IG_EINVALID,
		                  "serviceaccount '%s/%s': its imagePullSecrets were not read",
		                  r->ns, r->service_account);
	}
	buf_release(&path);
	buf_release(&b);
	return error;
}

/* spec.secretRef's credentials for host when it has them: a .dockerconfigjson without an
 * entry for host leaves out empty (the account's secrets are tried next), anything else is
 * creds_load_secret's answer. */
static int secret_ref_creds(struct registry_creds *out, const struct config_repository *r,
                            const char *secrets_dir, struct error *err)
{
	struct buf conf = BUF_INIT;
	char *dir = NULL;
	int error;

	if ((error = config_secret_path(&dir, secrets_dir, r->secret_ref, err)) < 0)
		return error;
	if (buf_printf(&conf, "%s/.dockerconfigjson", dir) < 0)
		error = error_oom(err);
	else if (exists(conf.data))
		error = creds_load_docker_config(out, conf.data, r->ref.registry, err);
	else
		error = creds_load_secret(out, dir, r->ref.registry, err);
	free(dir);
	buf_release(&conf);
	return error;
}

static bool has_creds(const struct registry_creds *c)
{
	return c->username || c->token;
}

static int object_creds(struct registry_creds *out, const struct config_repository *r,
                        struct error *err);

int kubesa_load_creds(struct registry_creds *out, const struct config_repository *r,
                      const char *secrets_dir, struct error *err)
{
	struct registry_creds got = REGISTRY_CREDS_INIT;
	struct buf dir = BUF_INIT, path = BUF_INIT;
	int error = 0, n = 0;

	if (cloudauth_is_cloud(r->provider))
		return object_creds(out, r, err);

	if (r->secret_ref &&
	    ((error = secret_ref_creds(&got, r, secrets_dir, err)) < 0 || has_creds(&got)))
		goto done;
	if (!secrets_dir || sa_dir(&dir, secrets_dir, r->ns, r->service_account) < 0) {
		error = error_set(err, IG_EINVALID, "serviceaccount '%s/%s': needs run --kube",
		                  r->ns, r->service_account);
		goto done;
	}
	if ((error = recorded_failure(dir.data, r, err)) < 0)
		goto done;
	for (; n < KUBESA_MAX_PULL_SECRETS && !has_creds(&got); n++) {
		buf_reset(&path);
		if (buf_printf(&path, "%s/%d.json", dir.data, n) < 0) {
			error = error_oom(err);
			goto done;
		}
		if (!exists(path.data))
			break;
		if ((error = creds_load_docker_config(&got, path.data, r->ref.registry, err)) < 0)
			goto done;
	}
	if (!has_creds(&got) && (n > 0 || r->secret_ref))
		error =
		    error_set(err, IG_EINVALID,
		              "no credentials for registry '%s' in %s%s%s%d imagePullSecrets of "
		              "serviceaccount '%s/%s'",
		              r->ref.registry, r->secret_ref ? "secret '" : "",
		              r->secret_ref ? r->secret_ref : "",
		              r->secret_ref ? "' or the " : "the ", n, r->ns, r->service_account);
done:
	if (error == 0 && has_creds(&got)) {
		creds_release(out);
		*out = got;
	} else {
		creds_release(&got);
	}
	buf_release(&dir);
	buf_release(&path);
	return error;
}

/* ---- object-level workload identity (aws, azure, gcp) ---- */

/* The API client the scan threads share, one request at a time: module state because the
 * scans have no handle to carry it (as cloudauth's cache). */
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kube_client *api;

int kubesa_start(const struct kubeconfig *cfg, const volatile sig_atomic_t *stop, struct error *err)
{
	struct kube_client *c = NULL;
	struct kube_options o;
	int error;

	kube_options_init(&o);
	o.stop = stop;
	if ((error = kube_client_new(&c, cfg, &o, err)) < 0)
		return error;
	pthread_mutex_lock(&api_lock);
	kube_client_free(api);
	api = c;
	pthread_mutex_unlock(&api_lock);
	return 0;
}

void kubesa_stop(void)
{
	pthread_mutex_lock(&api_lock);
	kube_client_free(api);
	api = NULL;
	pthread_mutex_unlock(&api_lock);
}

/* GET or POST (body non-NULL) path with the shared client. */
static int api_call(json_t **out, const char *path, const char *body, struct error *err)
{
	int error;

	pthread_mutex_lock(&api_lock);
	if (!api)
		error = error_set(err, IG_EINVALID, "needs run --kube (the Kubernetes API)");
	else if (body)
		error = kube_send(out, api, "POST", path, "application/json", body, err);
	else
		error = kube_get(out, api, path, err);
	pthread_mutex_unlock(&api_lock);
	return error;
}

/* fluxcd/pkg auth/aws's role ARN pattern: ^arn:aws[\w-]*:iam::[0-9]{1,30}:role/.{1,200}$ */
static bool is_role_arn(const char *s)
{
	size_t digits = 0, rest;

	if (strncmp(s, "arn:aws", 7) != 0)
		return false;
	for (s += 7; *s && *s != ':'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	if (strncmp(s, ":iam::", 6) != 0)
		return false;
	for (s += 6; *s >= '0' && *s <= '9'; s++)
		digits++;
	if (digits < 1 || digits > 30 || strncmp(s, ":role/", 6) != 0)
		return false;
	rest = strlen(s + 6);
	return rest >= 1 && rest <= 200 && !strpbrk(s + 6, "\n\r");
}

struct object_id {
	struct cloudauth_identity id;
	char *a, *b; /* owned: aws the role ARN; azure the client and tenant ids; gcp the GSA */
};

/* TokenRequest (authentication.k8s.io/v1) for the account, audience aud. */
static int request_token(char **out, void *ctx, const char *aud, struct error *err)
{
	const struct object_id *o = ctx;
	json_t *req = NULL, *res = NULL;
	struct buf path = BUF_INIT;
	char *body = NULL;
	const char *token;
	int error;

	*out = NULL;
	if ((error = kube_path(&path, "/api/v1", o->id.ns, "serviceaccounts", o->id.name, "token",
	                       "serviceaccount", err)) < 0)
		return error;
	req = json_pack("{s:s, s:s, s:{s:[s]}}", "apiVersion", "authentication.k8s.io/v1", "kind",
	                "TokenRequest", "spec", "audiences", aud);
	if (!req || !(body = json_dumps(req, JSON_COMPACT))) {
		error = error_oom(err);
		goto done;
	}
	if ((error = api_call(&res, path.data, body, err)) < 0)
		goto done;
	token = json_string_value(json_object_get(json_object_get(res, "status"), "token"));
	if (!token || !*token)
		error = error_set(err, IG_EINVALID, "TokenRequest answered without status.token");
	else if (!(*out = strdup(token)))
		error = error_oom(err);
done:
	if (res) {
		json_t *st = json_object_get(res, "status");

		if (json_is_object(st))
			json_object_del(st, "token");
	}
	json_decref(res);
	json_decref(req);
	free(body);
	buf_release(&path);
	return error;
}

/* Annotation key of the account's metadata, newly allocated; NULL when absent (IG_EINVALID
 * naming it, with why when it is there but bad). */
static int annotation(char **out, const json_t *sa, const char *key, bool (*ok)(const char *),
                      const char *shape, struct error *err)
{
	const char *v = json_string_value(
	    json_object_get(json_object_get(json_object_get(sa, "metadata"), "annotations"), key));

	*out = NULL;
	if (!v || !*v)
		return error_set(err, IG_EINVALID, "annotation %s is missing", key);
	if (!ok(v) || strlen(v) > 256)
		return error_set(err, IG_EINVALID, "annotation %s is not %s", key, shape);
	return (*out = strdup(v)) ? 0 : error_oom(err);
}

/* An Entra client or tenant id: a GUID-like token of hex digits and '-' (names are allowed
 * for tenants: letters, digits, '.', '-'). */
static bool is_azure_id(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* fluxcd/pkg auth/gcp options.go's (commit b8275343) service account email pattern:
 * ^[a-zA-Z0-9-]{1,100}@[a-zA-Z0-9-]{1,100}\.iam\.gserviceaccount\.com$ */
static bool is_gsa_email(const char *s)
{
	static const char suffix[] = ".iam.gserviceaccount.com";
	const char *at = strchr(s, '@');
	size_t n = strlen(s), dom;

	if (!at || at == s || at - s > 100 || n < sizeof(suffix) ||
	    strcmp(s + n - (sizeof(suffix) - 1), suffix) != 0)
		return false;
	dom = n - (sizeof(suffix) - 1) - (size_t)(at - s) - 1;
	if (dom < 1 || dom > 100)
		return false;
	for (const char *p = s; p < s + n - (sizeof(suffix) - 1); p++)
		if (p != at && !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		                 (*p >= '0' && *p <= '9') || *p == '-'))
			return false;
	return true;
}

/* The gcp annotation: optional (without it Flux uses the federated token itself). */
static int gcp_annotation(char **out, const json_t *sa, struct error *err)
{
	static const char key[] = "iam.gke.io/gcp-service-account";
	const json_t *a = json_object_get(json_object_get(sa, "metadata"), "annotations");
	const char *v = json_string_value(json_object_get(a, key));

	*out = NULL;
	if (!v || !*v)
		return 0;
	return annotation(out, sa, key, is_gsa_email, "<name>@<project>.iam.gserviceaccount.com",
	                  err);
}

/* The account's identity for r->provider, read now: fluxcd/pkg auth/aws (identity.go: the
 * eks.amazonaws.com/role-arn annotation), auth/azure (identity.go: the
 * azure.workload.identity/client-id and tenant-id annotations, both required) and auth/gcp
 * (provider.go: the iam.gke.io/gcp-service-account annotation, optional). */
static int object_identity(struct object_id *o, const struct config_repository *r,
                           struct error *err)
{
	struct buf path = BUF_INIT;
	json_t *sa = NULL;
	int error;

	memset(o, 0, sizeof(*o));
	o->id = (struct cloudauth_identity){r->ns, r->service_account, NULL, NULL,
	                                    NULL,  request_token,      o,    NULL};
	if ((error = kube_path(&path, "/api/v1", r->ns, "serviceaccounts", r->service_account, NULL,
	                       "serviceaccount", err)) < 0 ||
	    (error = api_call(&sa, path.data, NULL, err)) < 0)
		goto done;
	if (strcmp(r->provider, "aws") == 0) {
		error = annotation(&o->a, sa, "eks.amazonaws.com/role-arn", is_role_arn,
		                   "arn:aws:iam::<account>:role/<name>", err);
		o->id.role_arn = o->a;
	} else if (strcmp(r->provider, "gcp") == 0) {
		error = gcp_annotation(&o->a, sa, err);
		o->id.gcp_service_account = o->a;
	} else if ((error = annotation(&o->a, sa, "azure.workload.identity/client-id", is_azure_id,
	                               "a client id", err)) == 0) {
		error = annotation(&o->b, sa, "azure.workload.identity/tenant-id", is_azure_id,
		                   "a tenant id", err);
		o->id.client_id = o->a;
		o->id.tenant_id = o->b;
	}
done:
	if (error < 0)
		error_prefix(err, "provider '%s': serviceaccount '%s/%s'", r->provider, r->ns,
		             r->service_account);
	json_decref(sa);
	buf_release(&path);
	return error;
}

static int object_creds(struct registry_creds *out, const struct config_repository *r,
                        struct error *err)
{
	struct object_id o;
	int error;

	if ((error = object_identity(&o, r, err)) == 0)
		error =
		    cloudauth_creds_as(out, r->provider, r->ref.registry, r->insecure, &o.id, err);
	free(o.a);
	free(o.b);
	return error;
}

int kubesa_list_tags(struct registry_listing *out, struct registry_client *c,
                     const struct registry_target *t, const struct config_repository *r,
                     struct registry_creds *creds, struct error *err)
{
	struct cloudauth_identity key = {r->ns, r->service_account, NULL, NULL, NULL, NULL, NULL,
	                                 NULL};
	int error = registry_list_tags(out, c, t, err);

	if (error != IG_EAUTH || !cloudauth_is_cloud(r->provider))
		return error;
	log_info("cloudauth.refused",
	         "provider '%s' registry '%s' serviceaccount '%s/%s': credential refused, "
	         "fetching a new one",
	         r->provider, r->ref.registry, r->ns, r->service_account);
	cloudauth_forget_as(r->provider, r->ref.registry, &key);
	registry_listing_release(out);
	error_clear(err);
	if ((error = object_creds(creds, r, err)) < 0)
		return error;
	return registry_list_tags(out, c, t, err);
}
