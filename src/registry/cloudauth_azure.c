/* provider: azure. Workload identity as Flux's auth/azure (azidentity) does it: the federated
 * token file is a client assertion for an Entra ID token of the Resource Manager scope, which
 * ACR's /oauth2/exchange turns into a refresh token; that is the registry password of the
 * all-zero user, which the registry's own token endpoint takes for access tokens. */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "cloudauth_common.h"
#include "imageguard/registry/cloudhost.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define AUTHORITY "https://login.microsoftonline.com/"
#define ACR_USER "00000000-0000-0000-0000-000000000000"
#define ASSERTION_TYPE "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#define ENTRA_KEY "azure\nentra\n"

/* The Resource Manager scope of the registry's cloud (Flux's GetScopeProiderOption). */
static const char *arm_scope(const char *host)
{
	if (cloudauth_host_ends(host, ".azurecr.cn"))
		return "https://management.chinacloudapi.cn/.default";
	if (cloudauth_host_ends(host, ".azurecr.us"))
		return "https://management.usgovcloudapi.net/.default";
	return "https://management.azure.com/.default";
}

static bool is_acr(const char *host)
{
	struct cloudhost h;

	return cloudhost_match(&h, host) == CLOUDHOST_ACR;
}

long long cloudauth_jwt_exp(const char *jwt)
{
	const char *p = jwt ? strchr(jwt, '.') : NULL, *e;
	size_t n;
	unsigned char *raw = NULL;
	char *b64 = NULL;
	json_t *j = NULL;
	long long exp = -1;
	int len;

	if (!p || !(e = strchr(++p, '.')) || (n = (size_t)(e - p)) == 0 || n > CLOUDAUTH_MAX_FILE)
		return -1;
	if (!(b64 = malloc(n + 4)) || !(raw = malloc(n + 4)))
		goto done;
	for (size_t i = 0; i < n; i++)
		b64[i] = p[i] == '-' ? '+' : p[i] == '_' ? '/' : p[i];
	while (n % 4)
		b64[n++] = '=';
	if ((len = EVP_DecodeBlock(raw, (unsigned char *)b64, (int)n)) < 0)
		goto done;
	/* Padding decodes to trailing NULs, which the JSON parser must not see. */
	while (len > 0 && raw[len - 1] == '\0')
		len--;
	j = json_loadb((char *)raw, (size_t)len, 0, NULL);
	if (!cloudauth_json_seconds(json_object_get(j, "exp"), &exp))
		exp = -1;
done:
	json_decref(j);
	free(b64), free(raw);
	return exp < 0 ? -1 : exp;
}

static int post_form(struct http_response *r, const char *url, const char *form, const char *label,
                     struct error *err)
{
	static const char *const headers[] = {"Accept: application/json", NULL};
	struct http_request req = {.method = "POST",
	                           .url = url,
	                           .headers = headers,
	                           .form = form,
	                           .label = label,
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};

	return cloudauth_http(r, &req, err);
}

static int entra_form(struct buf *f, const char *client, const char *assertion, const char *scope)
{
	if (buf_puts(f, "client_assertion=") < 0 || cloudauth_form_append(f, assertion) < 0 ||
	    buf_puts(f, "&client_assertion_type=") < 0 ||
	    cloudauth_form_append(f, ASSERTION_TYPE) < 0 || buf_puts(f, "&client_id=") < 0 ||
	    cloudauth_form_append(f, client) < 0 ||
	    buf_puts(f, "&grant_type=client_credentials&scope=") < 0 ||
	    cloudauth_form_append(f, scope) < 0)
		return IG_EFAIL;
	return 0;
}

static int need(const char **out, const char *var, struct error *err)
{
	if (!(*out = cloudauth_env(var)))
		return error_set(err, IG_EINVALID, "provider 'azure': %s is not set", var);
	return 0;
}

static void wipe_buf(struct buf *b)
{
	if (b->data)
		memset(b->data, 0, b->len);
	buf_release(b);
}

/* The client, the tenant and the client assertion: the pod's (the AZURE_* variables the
 * workload identity webhook injects), or an object's account (its annotations and a
 * TokenRequest token for audience api://AzureADTokenExchange, as fluxcd/pkg auth/azure). */
static int assertion_of(char **assertion, const char **client, const char **tenant,
                        const struct cloudauth_identity *id, struct error *err)
{
	int error;

	if (!id) {
		if ((error = need(client, "AZURE_CLIENT_ID", err)) < 0 ||
		    (error = need(tenant, "AZURE_TENANT_ID", err)) < 0)
			return error;
		return cloudauth_read_env_file(assertion, "azure", "AZURE_FEDERATED_TOKEN_FILE",
		                               err);
	}
	*client = id->client_id;
	*tenant = id->tenant_id;
	if ((error = id->token(assertion, id->ctx, "api://AzureADTokenExchange", err)) < 0)
		error_prefix(err, "provider 'azure': serviceaccount '%s/%s'", id->ns, id->name);
	return error;
}

/* The Entra ID token for scope from the federated token (client assertion). */
static int entra_token(char **out, long long *expires, const char *scope,
                       const struct cloudauth_identity *id, struct error *err)
{
	const char *client, *tenant, *authority = cloudauth_env("AZURE_AUTHORITY_HOST");
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT, form = BUF_INIT;
	char *assertion = NULL;
	long long expires_in;
	int error;

	*out = NULL;
	if ((error = assertion_of(&assertion, &client, &tenant, id, err)) < 0)
		return error;
	authority = authority ? authority : AUTHORITY;
	error = IG_EFAIL;
	if (buf_printf(&url, "%s%s%s/oauth2/v2.0/token", authority,
	               authority[strlen(authority) - 1] == '/' ? "" : "/", tenant) < 0 ||
	    entra_form(&form, client, assertion, scope) < 0) {
		error_oom(err);
		goto done;
	}
	if ((error = post_form(&r, url.data, form.data, "entra-id", err)) < 0)
		goto prefix;
	if (r.status != 200) {
		error = cloudauth_refused(err, "entra id token", &r);
		goto prefix;
	}
	if ((error = cloudauth_parse_oauth(out, &expires_in, r.body.data, r.body.len,
	                                   "access_token", err)) < 0)
		goto prefix;
	*expires = cloudauth_now() + (expires_in ? expires_in : 300);
	goto done;
prefix:
	error_prefix(err, "provider 'azure': client '%s' tenant '%s'", client, tenant);
done:
	if (assertion)
		memset(assertion, 0, strlen(assertion));
	free(assertion);
	wipe_buf(&form);
	buf_release(&url);
	http_response_release(&r);
	return error;
}

/* Where the Entra token for scope is cached: the pod's, or one object's account. */
static void entra_key(char *out, size_t n, const char *scope, const struct cloudauth_identity *id)
{
	if (id)
		snprintf(out, n, ENTRA_KEY "%s\n%s/%s", scope, id->ns, id->name);
	else
		snprintf(out, n, ENTRA_KEY "%s", scope);
}

/* The Entra token, cached per scope and identity. */
static int arm_token(struct cloudauth_token *t, const char *scope,
                     const struct cloudauth_identity *id, struct error *err)
{
	char key[700];
	int error;

	entra_key(key, sizeof(key), scope, id);
	if (cloudauth_cache_get(t, key))
		return 0;
	memset(t, 0, sizeof(*t));
	t->issued = cloudauth_now();
	if ((error = entra_token(&t->b, &t->expires, scope, id, err)) < 0)
		return error;
	cloudauth_cache_put(key, t);
	return 0;
}

static int exchange(struct cloudauth_token *out, const char *host, bool insecure, const char *aad,
                    struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT, form = BUF_INIT;
	size_t name_len = strcspn(host, ":");
	long long ignored;
	char *service = strndup(host, name_len);
	int error = IG_EFAIL;

	if (!service ||
	    buf_printf(&url, "%s://%s/oauth2/exchange", insecure ? "http" : "https", host) < 0 ||
	    buf_puts(&form, "grant_type=access_token&service=") < 0 ||
	    cloudauth_form_append(&form, service) < 0 || buf_puts(&form, "&access_token=") < 0 ||
	    cloudauth_form_append(&form, aad) < 0) {
		error_oom(err);
		goto done;
	}
	if ((error = post_form(&r, url.data, form.data, host, err)) < 0)
		goto done;
	if (r.status != 200) {
		error = cloudauth_refused(err, "acr token exchange", &r);
		goto done;
	}
	out->issued = cloudauth_now();
	if ((error = cloudauth_parse_oauth(&out->b, &ignored, r.body.data, r.body.len,
	                                   "refresh_token", err)) < 0)
		goto done;
	if ((out->expires = cloudauth_jwt_exp(out->b)) < 0) {
		error = error_set(err, IG_EINVALID, "acr refresh token without a JWT 'exp'");
		goto done;
	}
	if (!(out->a = strdup(ACR_USER)))
		error = error_oom(err);
done:
	if (error < 0)
		cloudauth_token_release(out);
	free(service);
	wipe_buf(&form);
	buf_release(&url);
	http_response_release(&r);
	return error;
}

static int azure_fetch(struct cloudauth_token *out, const char *registry_host, bool insecure,
                       const struct cloudauth_identity *id, struct error *err)
{
	struct cloudauth_token aad = {0};
	int error;

	memset(out, 0, sizeof(*out));
	if (!is_acr(registry_host))
		return error_set(
		    err, IG_EINVALID,
		    "provider 'azure': registry '%s' is not an ACR host (*.azurecr.io)",
		    registry_host);
	if ((error = arm_token(&aad, arm_scope(registry_host), id, err)) < 0)
		return error;
	if ((error = exchange(out, registry_host, insecure, aad.b, err)) < 0)
		error_prefix(err, "provider 'azure': registry '%s'", registry_host);
	cloudauth_token_release(&aad);
	return error;
}

static void azure_forget(const struct cloudauth_identity *id)
{
	static const char *const scopes[] = {"https://management.azure.com/.default",
	                                     "https://management.chinacloudapi.cn/.default",
	                                     "https://management.usgovcloudapi.net/.default"};
	char key[700];

	for (size_t i = 0; i < 3; i++) {
		entra_key(key, sizeof(key), scopes[i], id);
		cloudauth_cache_drop(key);
	}
}

const struct cloudauth_backend cloudauth_azure = {"azure", azure_fetch, azure_forget};
