/* provider: gcp. An access token of the pod's Google service account from the metadata server
 * (GKE workload identity), used with the username `oauth2accesstoken` for Artifact Registry and
 * GCR, as Flux's auth/gcp does; or an object's own account (object-level workload identity):
 * its TokenRequest token through Google STS and IAM Credentials. GCE_METADATA_HOST moves the
 * metadata server, as Google's libraries allow; GOOGLE_STS_ENDPOINT and
 * GOOGLE_IAM_CREDENTIALS_ENDPOINT move the two APIs (imageguard's own variables, as
 * AWS_ENDPOINT_URL_STS: Google's SDKs take them from a credential file's token_url and
 * service_account_impersonation_url). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cloudauth_common.h"
#include "imageguard/registry/cloudhost.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define METADATA_HOST "metadata.google.internal"
#define TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define GCP_USER "oauth2accesstoken"

static bool is_gcp_registry(const char *host)
{
	struct cloudhost h;

	return cloudhost_match(&h, host) == CLOUDHOST_GCP;
}

/* Google's clients accept only answers that say they come from the metadata server. */
static bool is_google(const struct http_response *r)
{
	char *v = http_header(r, "Metadata-Flavor");
	bool ok = v && strcmp(v, "Google") == 0;

	free(v);
	return ok;
}

static void wipe_free(char *s)
{
	if (s)
		memset(s, 0, strlen(s));
	free(s);
}

/* ---- object-level workload identity (fluxcd/pkg auth/gcp provider.go, commit 3976c501;
 * gke_metadata.go, commit 2b8d3abb; options.go, commit b8275343) ---- */

#define CLUSTER_KEY "gcp\ncluster"
#define STS_URL "https://sts.googleapis.com"
#define IAM_URL "https://iamcredentials.googleapis.com"
#define SCOPES                                                                                     \
	"https://www.googleapis.com/auth/cloud-platform "                                          \
	"https://www.googleapis.com/auth/userinfo.email"
#define MAX_METADATA 256 /* a project id, location or cluster name */

/* One metadata value ("project/project-id"), newly allocated; empty is an error, as in Flux. */
static int metadata_get(char **out, const char *host, const char *what, struct error *err)
{
	static const char *const headers[] = {"Metadata-Flavor: Google", NULL};
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT;
	int error;

	*out = NULL;
	if (buf_printf(&url, "http://%s/computeMetadata/v1/%s", host, what) < 0)
		return error_oom(err);
	struct http_request req = {.url = url.data,
	                           .headers = headers,
	                           .label = "gcp-metadata",
	                           .allow_http = true,
	                           .max_body = MAX_METADATA};
	if ((error = cloudauth_http(&r, &req, err)) < 0)
		goto done;
	if (r.status != 200)
		error = cloudauth_refused(err, what, &r);
	else if (!is_google(&r))
		error = error_set(err, IG_EINVALID, "%s: answer without 'Metadata-Flavor: Google'",
		                  what);
	else if (!r.body.data || !r.body.len || strpbrk(r.body.data, "/\r\n \t"))
		error = error_set(err, IG_EINVALID, "%s: empty or not a name", what);
	else if (!(*out = strdup(r.body.data)))
		error = error_oom(err);
done:
	buf_release(&url);
	http_response_release(&r);
	return error;
}

/* The GKE cluster (project, location, name) from the metadata server, read once: it does not
 * change while the process lives (Flux loads it once too). */
static int cluster(struct cloudauth_token *c, struct error *err)
{
	const char *env = cloudauth_env("GCE_METADATA_HOST");
	const char *host = env ? env : METADATA_HOST;
	int error;

	if (cloudauth_cache_get(c, CLUSTER_KEY))
		return 0;
	memset(c, 0, sizeof(*c));
	if ((error = metadata_get(&c->a, host, "project/project-id", err)) < 0 ||
	    (error = metadata_get(&c->b, host, "instance/attributes/cluster-location", err)) < 0 ||
	    (error = metadata_get(&c->c, host, "instance/attributes/cluster-name", err)) < 0) {
		error_prefix(err, "provider 'gcp': GKE cluster from metadata server '%s'", host);
		cloudauth_token_release(c);
		return error;
	}
	cloudauth_cache_put(CLUSTER_KEY, c); /* expires 0: kept */
	return 0;
}

/* Flux's audience: identitynamespace:<pool>:<provider> of the cluster's workload identity. */
static int audience(struct buf *out, struct error *err)
{
	struct cloudauth_token c = {0};
	int error;

	if ((error = cluster(&c, err)) < 0)
		return error;
	if (buf_printf(out,
	               "identitynamespace:%s.svc.id.goog:https://container.googleapis.com/v1/"
	               "projects/%s/locations/%s/clusters/%s",
	               c.a, c.a, c.b, c.c) < 0)
		error = error_oom(err);
	cloudauth_token_release(&c);
	return error;
}

/* The base URL of a Google API: its override variable or the default, without a final '/'. */
static int base_url(struct buf *out, const char *var, const char *def)
{
	const char *v = cloudauth_env(var);

	v = v ? v : def;
	return buf_printf(out, "%.*s", (int)(strlen(v) - (v[strlen(v) - 1] == '/')), v);
}

static int sts_form(struct buf *f, const char *aud, const char *subject)
{
	if (buf_puts(f, "audience=") < 0 || cloudauth_form_append(f, aud) < 0 ||
	    buf_puts(f, "&grant_type=") < 0 ||
	    cloudauth_form_append(f, "urn:ietf:params:oauth:grant-type:token-exchange") < 0 ||
	    buf_puts(f, "&requested_token_type=") < 0 ||
	    cloudauth_form_append(f, "urn:ietf:params:oauth:token-type:access_token") < 0 ||
	    buf_puts(f, "&scope=") < 0 || cloudauth_form_append(f, SCOPES) < 0 ||
	    buf_puts(f, "&subject_token=") < 0 || cloudauth_form_append(f, subject) < 0 ||
	    buf_puts(f, "&subject_token_type=") < 0 ||
	    cloudauth_form_append(f, "urn:ietf:params:oauth:token-type:jwt") < 0)
		return IG_EFAIL;
	return 0;
}

static void wipe(struct buf *b)
{
	if (b->data)
		memset(b->data, 0, b->len);
	buf_release(b);
}

/* Google STS: the account's Kubernetes token for a federated access token (t->b). */
static int sts_exchange(struct cloudauth_token *t, const char *aud, const char *subject,
                        struct error *err)
{
	static const char *const headers[] = {"Accept: application/json", NULL};
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT, form = BUF_INIT;
	long long expires_in;
	int error = IG_EFAIL;

	if (base_url(&url, "GOOGLE_STS_ENDPOINT", STS_URL) < 0 || buf_puts(&url, "/v1/token") < 0 ||
	    sts_form(&form, aud, subject) < 0) {
		error = error_oom(err);
		goto done;
	}
	struct http_request req = {.method = "POST",
	                           .url = url.data,
	                           .headers = headers,
	                           .form = form.data,
	                           .label = "gcp-sts",
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};
	if ((error = cloudauth_http(&r, &req, err)) < 0)
		goto done;
	if (r.status != 200) {
		error = cloudauth_refused(err, "sts token exchange", &r);
		goto done;
	}
	t->issued = cloudauth_now();
	if ((error = cloudauth_parse_oauth(&t->b, &expires_in, r.body.data, r.body.len,
	                                   "access_token", err)) == 0)
		t->expires = t->issued + (expires_in ? expires_in : 300);
done:
	wipe(&form);
	buf_release(&url);
	http_response_release(&r);
	return error;
}

/* IAM Credentials generateAccessToken of gsa, authorized by the federated token; t->b is
 * replaced by the Google service account's access token. */
static int impersonate(struct cloudauth_token *t, const char *gsa, struct error *err)
{
	static const char *const headers[] = {"Content-Type: application/json",
	                                      "Accept: application/json", NULL};
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT, authz = BUF_INIT;
	json_t *j = NULL;
	const char *tok, *exp;
	int error = IG_EFAIL;

	if (base_url(&url, "GOOGLE_IAM_CREDENTIALS_ENDPOINT", IAM_URL) < 0 ||
	    buf_printf(&url, "/v1/projects/-/serviceAccounts/%s:generateAccessToken", gsa) < 0 ||
	    buf_printf(&authz, "Bearer %s", t->b) < 0) {
		error = error_oom(err);
		goto done;
	}
	struct http_request req = {.method = "POST",
	                           .url = url.data,
	                           .headers = headers,
	                           .authorization = authz.data,
	                           .form = "{\"scope\":[\"https://www.googleapis.com/auth/"
	                                   "cloud-platform\",\"https://www.googleapis.com/auth/"
	                                   "userinfo.email\"]}",
	                           .label = "gcp-iamcredentials",
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};
	if ((error = cloudauth_http(&r, &req, err)) < 0)
		goto done;
	if (r.status != 200) {
		error = cloudauth_refused(err, "iamcredentials generateAccessToken", &r);
		goto done;
	}
	j = json_loadb(r.body.data, r.body.len, 0, NULL);
	tok = json_string_value(json_object_get(j, "accessToken"));
	exp = json_string_value(json_object_get(j, "expireTime"));
	if (!tok || !*tok || cloudauth_parse_time(exp) < 0) {
		error = error_set(err, IG_EINVALID,
		                  "generateAccessToken answer without "
		                  "'accessToken' and 'expireTime'");
		goto done;
	}
	wipe_free(t->b);
	t->issued = cloudauth_now();
	t->expires = cloudauth_parse_time(exp);
	if (!(t->b = strdup(tok)))
		error = error_oom(err);
done:
	if (j) {
		json_object_del(j, "accessToken");
		json_decref(j);
	}
	wipe(&authz);
	buf_release(&url);
	http_response_release(&r);
	return error;
}

/* The account's token for Flux's audience, exchanged at STS, then (with the
 * iam.gke.io/gcp-service-account annotation) the annotated Google service account's token;
 * without it the federated token itself (Flux's direct access). */
static int object_fetch(struct cloudauth_token *out, const struct cloudauth_identity *id,
                        struct error *err)
{
	struct buf aud = BUF_INIT;
	char *subject = NULL;
	int error;

	if ((error = audience(&aud, err)) < 0)
		goto done;
	if ((error = id->token(&subject, id->ctx, aud.data, err)) < 0)
		goto prefix;
	if ((error = sts_exchange(out, aud.data, subject, err)) < 0)
		goto prefix;
	if (id->gcp_service_account && (error = impersonate(out, id->gcp_service_account, err)) < 0)
		error_prefix(err, "service account '%s'", id->gcp_service_account);
prefix:
	if (error < 0)
		error_prefix(err, "provider 'gcp': serviceaccount '%s/%s'", id->ns, id->name);
done:
	if (subject)
		memset(subject, 0, strlen(subject));
	free(subject);
	buf_release(&aud);
	return error;
}

static int gcp_fetch(struct cloudauth_token *out, const char *registry_host, bool insecure,
                     const struct cloudauth_identity *id, struct error *err)
{
	static const char *const headers[] = {"Metadata-Flavor: Google", NULL};
	const char *host = cloudauth_env("GCE_METADATA_HOST");
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT;
	long long expires_in;
	int error;

	(void)insecure; /* only ACR's token exchange has a plain-HTTP mode */
	memset(out, 0, sizeof(*out));
	if (!is_gcp_registry(registry_host))
		return error_set(err, IG_EINVALID,
		                 "provider 'gcp': registry '%s' is not Artifact Registry or GCR "
		                 "(*-docker.pkg.dev, gcr.io, *.gcr.io)",
		                 registry_host);
	if (id) {
		if ((error = object_fetch(out, id, err)) == 0 && !(out->a = strdup(GCP_USER)))
			error = error_oom(err);
		if (error < 0)
			cloudauth_token_release(out);
		return error;
	}
	if (buf_printf(&url, "http://%s" TOKEN_PATH, host ? host : METADATA_HOST) < 0)
		return error_oom(err);
	struct http_request req = {.url = url.data,
	                           .headers = headers,
	                           .label = "gcp-metadata",
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};
	if ((error = cloudauth_http(&r, &req, err)) < 0)
		goto prefix;
	if (r.status != 200) {
		error = cloudauth_refused(err, "metadata server token", &r);
		goto prefix;
	}
	if (!is_google(&r)) {
		error = error_set(err, IG_EINVALID, "answer without 'Metadata-Flavor: Google'");
		goto prefix;
	}
	out->issued = cloudauth_now();
	if ((error = cloudauth_parse_oauth(&out->b, &expires_in, r.body.data, r.body.len,
	                                   "access_token", err)) < 0)
		goto prefix;
	out->expires = expires_in ? out->issued + expires_in : out->issued + 300;
	if (!(out->a = strdup(GCP_USER))) {
		cloudauth_token_release(out);
		error = error_oom(err);
	}
	goto done;
prefix:
	error_prefix(err, "provider 'gcp': metadata server '%s'", host ? host : METADATA_HOST);
done:
	buf_release(&url);
	http_response_release(&r);
	return error;
}

static void gcp_forget(const struct cloudauth_identity *id)
{
	/* The metadata server's token is the registry credential itself: nothing else cached. */
	(void)id;
}

const struct cloudauth_backend cloudauth_gcp = {"gcp", gcp_fetch, gcp_forget};
