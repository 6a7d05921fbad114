/* provider: aws. The credential chain of the AWS SDKs (static environment keys, then a web
 * identity token file with a role through STS AssumeRoleWithWebIdentity (IRSA), then the
 * container credentials endpoint (EKS Pod Identity, ECS)), then ECR's GetAuthorizationToken
 * signed with SigV4 in the region of the registry host, as Flux's auth/aws does. */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudauth_common.h"
#include "imageguard/registry/cloudhost.h"
#include "imageguard/registry/sigv4.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define IDENTITY_KEY "aws\nidentity"
#define STS_VERSION "2011-06-15"
#define ECR_TARGET "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"
#define ECR_PUBLIC_TARGET "SpencerFrontendService.GetAuthorizationToken"
#define PUBLIC_ECR "public.ecr.aws"

void cloudauth_aws_keys_release(struct cloudauth_aws_keys *k)
{
	struct cloudauth_token t = {k->access_key_id, k->secret_access_key, k->session_token, 0, 0};

	cloudauth_token_release(&t);
	k->access_key_id = k->secret_access_key = k->session_token = NULL;
}

/* ---- the registry host ---- */

/* The region of an ECR host (newly allocated) and its partition (static), or NULL: the host
 * must be an ECR host as a whole (cloudhost), never a look-alike that merely contains one. */
static char *ecr_region_partition(const char *host, const char **partition)
{
	struct cloudhost h;

	if (cloudhost_match(&h, host) != CLOUDHOST_ECR)
		return NULL;
	*partition = h.partition;
	return strdup(h.region);
}

char *cloudauth_ecr_region(const char *registry_host, bool *public_ecr)
{
	const char *partition;

	*public_ecr = strcmp(registry_host, PUBLIC_ECR) == 0;
	if (*public_ecr)
		return strdup("us-east-1");
	return ecr_region_partition(registry_host, &partition);
}

/* ---- parsing answers ---- */

/* The first occurrence of needle[0..m) in hay[0..n), or NULL (memmem is not POSIX). */
static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
	for (size_t i = 0; m <= n && i <= n - m; i++)
		if (memcmp(hay + i, needle, m) == 0)
			return hay + i;
	return NULL;
}

/* The text of the first <name>...</name> in xml[0..len), entities decoded, newly allocated. */
static char *xml_text(const char *xml, size_t len, const char *name)
{
	char open[64], close[64];
	const char *s, *e;
	struct buf b = BUF_INIT_MAX(CLOUDAUTH_MAX_BODY);
	static const struct {
		const char *ent, *ch;
	} ents[] = {
	    {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};

	snprintf(open, sizeof(open), "<%s>", name);
	snprintf(close, sizeof(close), "</%s>", name);
	if (!(s = find_bytes(xml, len, open, strlen(open))))
		return NULL;
	s += strlen(open);
	if (!(e = find_bytes(s, len - (size_t)(s - xml), close, strlen(close))))
		return NULL;
	while (s < e) {
		size_t i, n = 1;

		for (i = 0; *s == '&' && i < 5; i++)
			if ((size_t)(e - s) >= strlen(ents[i].ent) &&
			    strncmp(s, ents[i].ent, strlen(ents[i].ent)) == 0)
				break;
		if (*s == '&' && i < 5) {
			n = strlen(ents[i].ent);
			if (buf_puts(&b, ents[i].ch) < 0)
				goto fail;
		} else if (buf_append(&b, s, 1) < 0) {
			goto fail;
		}
		s += n;
	}
	return buf_detach(&b);
fail:
	buf_release(&b);
	return NULL;
}

int cloudauth_parse_sts(struct cloudauth_aws_keys *out, const char *xml, size_t len,
                        struct error *err)
{
	const char *cred = find_bytes(xml, len, "<Credentials>", 13);
	size_t rest = cred ? len - (size_t)(cred - xml) : 0;
	char *expiration = NULL;
	int error = 0;

	memset(out, 0, sizeof(*out));
	if (find_bytes(xml, len, "<ErrorResponse", 14))
		return error_set(err, IG_EAUTH, "sts refused the web identity");
	if (!cred)
		return error_set(err, IG_EINVALID, "sts answer without Credentials");
	out->access_key_id = xml_text(cred, rest, "AccessKeyId");
	out->secret_access_key = xml_text(cred, rest, "SecretAccessKey");
	out->session_token = xml_text(cred, rest, "SessionToken");
	expiration = xml_text(cred, rest, "Expiration");
	out->expires = cloudauth_parse_time(expiration);
	if (!out->access_key_id || !*out->access_key_id || !out->secret_access_key ||
	    !*out->secret_access_key || !out->session_token || out->expires < 0) {
		cloudauth_aws_keys_release(out);
		error = error_set(err, IG_EINVALID, "sts answer with a missing or malformed %s",
		                  out->expires < 0 ? "Expiration" : "key");
	}
	free(expiration);
	return error;
}

static char *dup_field(json_t *o, const char *name)
{
	const char *v = json_string_value(json_object_get(o, name));

	return v && *v ? strdup(v) : NULL;
}

int cloudauth_parse_container(struct cloudauth_aws_keys *out, const char *json, size_t len,
                              struct error *err)
{
	json_t *j = json_loadb(json, len, 0, NULL);
	int error = 0;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(j)) {
		json_decref(j);
		return error_set(err, IG_EINVALID,
		                 "container credentials answer is not a JSON object");
	}
	out->access_key_id = dup_field(j, "AccessKeyId");
	out->secret_access_key = dup_field(j, "SecretAccessKey");
	out->session_token = dup_field(j, "Token");
	out->expires = cloudauth_parse_time(json_string_value(json_object_get(j, "Expiration")));
	if (!out->access_key_id || !out->secret_access_key || out->expires < 0) {
		cloudauth_aws_keys_release(out);
		error = error_set(err, IG_EINVALID,
		                  "container credentials answer with a missing or malformed %s",
		                  out->expires < 0 ? "Expiration" : "key");
	}
	json_decref(j);
	return error;
}

/* base64 "user:password" split at its one ':' (Flux's rule). */
static int split_token(char **user, char **pass, const char *b64)
{
	size_t len = strlen(b64), pad = 0;
	unsigned char *raw;
	char *colon;
	int n, error = IG_EINVALID;

	if (len == 0 || len % 4 != 0 || !(raw = malloc(len / 4 * 3 + 1)))
		return IG_EINVALID;
	n = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)len);
	while (n >= 0 && pad < 2 && b64[len - 1 - pad] == '=')
		pad++;
	if (n >= 0) {
		n -= (int)pad;
		raw[n] = '\0';
		colon = strchr((char *)raw, ':');
		if (colon && strlen((char *)raw) == (size_t)n && !strchr(colon + 1, ':') &&
		    colon != (char *)raw) {
			*user = strndup((char *)raw, (size_t)(colon - (char *)raw));
			*pass = strdup(colon + 1);
			error = *user && *pass ? 0 : IG_EFAIL;
		}
		memset(raw, 0, (size_t)n);
	}
	free(raw);
	return error;
}

int cloudauth_parse_ecr(char **user, char **pass, long long *expires, const char *json, size_t len,
                        bool public_ecr, struct error *err)
{
	json_t *j = json_loadb(json, len, 0, NULL), *d, *e;
	const char *tok;
	int error = IG_EINVALID;

	*user = *pass = NULL;
	d = json_object_get(j, "authorizationData");
	if (!public_ecr)
		d = json_array_get(d, 0);
	tok = json_string_value(json_object_get(d, "authorizationToken"));
	e = json_object_get(d, "expiresAt");
	if (!tok || !json_is_number(e)) {
		error_set(err, IG_EINVALID, "ecr answer without %s",
		          tok ? "authorizationData.expiresAt"
		              : "authorizationData.authorizationToken");
		goto done;
	}
	if (!cloudauth_json_seconds(e, expires)) {
		error_set(err, IG_EINVALID, "ecr answer with an out-of-range expiresAt");
		goto done;
	}
	if ((error = split_token(user, pass, tok)) < 0) {
		free(*user), free(*pass);
		*user = *pass = NULL;
		error_set(err, error, "ecr answer with a malformed authorizationToken");
	}
done:
	json_decref(j);
	return error;
}

/* ---- endpoints ---- */

/* The endpoint URL: the service's own variable, then AWS_ENDPOINT_URL, then the default. */
static char *endpoint(const char *service_var, const char *fmt, const char *region,
                      const char *partition)
{
	const char *v = cloudauth_env(service_var);
	struct buf b = BUF_INIT;

	if (!v)
		v = cloudauth_env("AWS_ENDPOINT_URL");
	if (v)
		return strdup(v);
	if (buf_printf(&b, fmt, region, partition) < 0)
		return NULL;
	return buf_detach(&b);
}

/* ---- the chain ---- */

static int keys_from_env(struct cloudauth_token *out, struct error *err)
{
	const char *id = cloudauth_env("AWS_ACCESS_KEY_ID"), *tok;
	const char *secret = cloudauth_env("AWS_SECRET_ACCESS_KEY");

	if (!secret)
		return error_set(
		    err, IG_EINVALID,
		    "provider 'aws': AWS_SECRET_ACCESS_KEY is not set (AWS_ACCESS_KEY_ID is)");
	tok = cloudauth_env("AWS_SESSION_TOKEN");
	*out = (struct cloudauth_token){strdup(id), strdup(secret), tok ? strdup(tok) : NULL,
	                                cloudauth_now(), 0};
	if (!out->a || !out->b || (tok && !out->c)) {
		cloudauth_token_release(out);
		return error_oom(err);
	}
	return 0;
}

static void keys_take(struct cloudauth_token *out, struct cloudauth_aws_keys *k)
{
	*out = (struct cloudauth_token){k->access_key_id, k->secret_access_key, k->session_token,
	                                cloudauth_now(), k->expires};
	k->access_key_id = k->secret_access_key = k->session_token = NULL;
}

static int sts_form(struct buf *form, const char *role, const char *session, const char *token)
{
	if (buf_puts(form, "Action=AssumeRoleWithWebIdentity&RoleArn=") < 0 ||
	    cloudauth_form_append(form, role) < 0 || buf_puts(form, "&RoleSessionName=") < 0 ||
	    cloudauth_form_append(form, session) < 0 ||
	    buf_puts(form, "&Version=" STS_VERSION "&WebIdentityToken=") < 0 ||
	    cloudauth_form_append(form, token) < 0)
		return IG_EFAIL;
	return 0;
}

/* The token (a ServiceAccount's, for audience sts.amazonaws.com) and the role go to STS
 * AssumeRoleWithWebIdentity (an unsigned call: the token is proof). */
static int assume_role(struct cloudauth_token *out, const char *region, const char *partition,
                       const char *role, const char *session, const char *token, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf form = BUF_INIT;
	struct cloudauth_aws_keys k;
	const char *headers[] = {"Accept: text/xml", NULL};
	char *url = NULL;
	int error = IG_EFAIL;

	if (!(url = endpoint("AWS_ENDPOINT_URL_STS", "https://sts.%s.%s/", region, partition)) ||
	    sts_form(&form, role, session, token) < 0) {
		error_oom(err);
		goto done;
	}
	struct http_request req = {.method = "POST",
	                           .url = url,
	                           .headers = headers,
	                           .form = form.data,
	                           .label = "sts",
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};
	if ((error = cloudauth_http(&r, &req, err)) < 0)
		goto done;
	if (r.status != 200) {
		error = cloudauth_refused(err, "sts AssumeRoleWithWebIdentity", &r);
		goto done;
	}
	if ((error = cloudauth_parse_sts(&k, r.body.data, r.body.len, err)) < 0)
		goto done;
	keys_take(out, &k);
done:
	if (error < 0)
		error_prefix(err, "provider 'aws': role '%s'", role);
	if (form.data)
		memset(form.data, 0, form.len);
	buf_release(&form);
	free(url);
	http_response_release(&r);
	return error;
}

static void wipe(char *s)
{
	if (s)
		memset(s, 0, strlen(s));
	free(s);
}

/* IRSA: the projected token file and AWS_ROLE_ARN. */
static int keys_from_web_identity(struct cloudauth_token *out, const char *region,
                                  const char *partition, struct error *err)
{
	const char *role = cloudauth_env("AWS_ROLE_ARN");
	const char *name = cloudauth_env("AWS_ROLE_SESSION_NAME");
	char *token = NULL, fallback[64];
	int error;

	if (!role)
		return error_set(err, IG_EINVALID,
		                 "provider 'aws': AWS_ROLE_ARN is not set "
		                 "(AWS_WEB_IDENTITY_TOKEN_FILE is)");
	if ((error = cloudauth_read_env_file(&token, "aws", "AWS_WEB_IDENTITY_TOKEN_FILE", err)) <
	    0)
		return error;
	snprintf(fallback, sizeof(fallback), "imageguard-%lld", cloudauth_now());
	error = assume_role(out, region, partition, role, name ? name : fallback, token, err);
	wipe(token);
	return error;
}

/* Object-level workload identity, as fluxcd/pkg auth/aws (provider.go, commit 0722e4ea):
 * the account's token for audience "sts.amazonaws.com", its role, the session name
 * "<name>.<namespace>.<region>.fluxcd.io" and STS in the registry's region. */
static int keys_from_object(struct cloudauth_token *out, const char *region, const char *partition,
                            const struct cloudauth_identity *id, struct error *err)
{
	char session[600], *token = NULL;
	int error;

	snprintf(session, sizeof(session), "%s.%s.%s.fluxcd.io", id->name, id->ns, region);
	if ((error = id->token(&token, id->ctx, "sts.amazonaws.com", err)) < 0) {
		error_prefix(err, "provider 'aws': serviceaccount '%s/%s'", id->ns, id->name);
		return error;
	}
	error = assume_role(out, region, partition, id->role_arn, session, token, err);
	if (error < 0)
		error_prefix(err, "serviceaccount '%s/%s'", id->ns, id->name);
	wipe(token);
	return error;
}

/* Where the keys an identity gave are cached: the pod's, or one object's account. */
static void identity_key(char *out, size_t n, const struct cloudauth_identity *id)
{
	if (id)
		snprintf(out, n, "%s\n%s/%s", IDENTITY_KEY, id->ns, id->name);
	else
		snprintf(out, n, "%s", IDENTITY_KEY);
}

/* The SDKs call a container endpoint over plain HTTP only on loopback or the ECS/EKS link-local
 * addresses. */
static bool is_allowed_container_url(const char *url)
{
	static const char *const ok[] = {"http://127.",
	                                 "http://localhost",
	                                 "http://[::1]",
	                                 "http://169.254.170.2/",
	                                 "http://169.254.170.23/",
	                                 "http://[fd00:ec2::23]",
	                                 "https://"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strncmp(url, ok[i], strlen(ok[i])) == 0)
			return true;
	return false;
}

static int container_authorization(char **out, struct error *err)
{
	const char *v;

	*out = NULL;
	if (cloudauth_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"))
		return cloudauth_read_env_file(out, "aws", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
		                               err);
	if ((v = cloudauth_env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) && !(*out = strdup(v)))
		return error_oom(err);
	return 0;
}

/* EKS Pod Identity (and ECS): GET the credentials URI with the agent's token. */
static int keys_from_container(struct cloudauth_token *out, struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	struct cloudauth_aws_keys k;
	const char *full = cloudauth_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	const char *rel = cloudauth_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	char *auth = NULL, *url = NULL;
	struct buf b = BUF_INIT;
	int error;

	if (full)
		url = strdup(full);
	else if (buf_printf(&b, "http://169.254.170.2%s", rel) == 0)
		url = buf_detach(&b);
	if (!url)
		return error_oom(err);
	if (!is_allowed_container_url(url)) {
		error = error_set(
		    err, IG_EINVALID,
		    "provider 'aws': AWS_CONTAINER_CREDENTIALS_FULL_URI must be https or a "
		    "loopback or EKS/ECS link-local address");
		goto done;
	}
	if ((error = container_authorization(&auth, err)) < 0)
		goto done;
	struct http_request req = {.url = url,
	                           .authorization = auth,
	                           .label = "aws-container",
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};
	if ((error = cloudauth_http(&r, &req, err)) < 0)
		goto prefix;
	if (r.status != 200) {
		error = cloudauth_refused(err, "container credentials", &r);
		goto prefix;
	}
	if ((error = cloudauth_parse_container(&k, r.body.data, r.body.len, err)) < 0)
		goto prefix;
	keys_take(out, &k);
	goto done;
prefix:
	error_prefix(err, "provider 'aws'");
done:
	if (auth)
		memset(auth, 0, strlen(auth));
	free(auth), free(url);
	http_response_release(&r);
	return error;
}

static int resolve_keys(struct cloudauth_token *out, const char *region, const char *partition,
                        const struct cloudauth_identity *id, struct error *err)
{
	char key[600];

	identity_key(key, sizeof(key), id);
	if (cloudauth_cache_get(out, key))
		return 0;
	if (id)
		return keys_from_object(out, region, partition, id, err);
	if (cloudauth_env("AWS_ACCESS_KEY_ID"))
		return keys_from_env(out, err);
	if (cloudauth_env("AWS_WEB_IDENTITY_TOKEN_FILE") || cloudauth_env("AWS_ROLE_ARN")) {
		if (!cloudauth_env("AWS_WEB_IDENTITY_TOKEN_FILE"))
			return error_set(err, IG_EINVALID,
			                 "provider 'aws': AWS_WEB_IDENTITY_TOKEN_FILE "
			                 "is not set (AWS_ROLE_ARN is)");
		return keys_from_web_identity(out, region, partition, err);
	}
	if (cloudauth_env("AWS_CONTAINER_CREDENTIALS_FULL_URI") ||
	    cloudauth_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"))
		return keys_from_container(out, err);
	return error_set(err, IG_EINVALID,
	                 "provider 'aws': no credentials: set AWS_WEB_IDENTITY_TOKEN_FILE and "
	                 "AWS_ROLE_ARN (IRSA), AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod "
	                 "Identity) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
}

/* ---- GetAuthorizationToken ---- */

struct ecr_call {
	const char *url, *region, *service, *target;
	const struct cloudauth_token *keys;
};

/* The signed header lines; [0] is Host, which curl sends itself. */
struct ecr_lines {
	struct buf line[5];
	const char *v[6];
};

static void ecr_lines_release(struct ecr_lines *l)
{
	for (size_t i = 0; i < 5; i++) {
		if (l->line[i].data)
			memset(l->line[i].data, 0, l->line[i].len);
		buf_release(&l->line[i]);
	}
}

static int ecr_headers(struct ecr_lines *l, const struct ecr_call *c, const char *amz_date)
{
	char *host = http_host(c->url);
	size_t n = 0;
	int error = 0;

	memset(l, 0, sizeof(*l));
	if (!host)
		return IG_EINVALID;
	if (buf_printf(&l->line[0], "Host:%s", host) < 0 ||
	    buf_puts(&l->line[1], "Content-Type:application/x-amz-json-1.1") < 0 ||
	    buf_printf(&l->line[2], "X-Amz-Date:%s", amz_date) < 0 ||
	    buf_printf(&l->line[3], "X-Amz-Target:%s", c->target) < 0 ||
	    (c->keys->c && buf_printf(&l->line[4], "X-Amz-Security-Token:%s", c->keys->c) < 0))
		error = IG_EFAIL;
	free(host);
	for (size_t i = 0; i < 5; i++)
		if (l->line[i].data)
			l->v[n++] = l->line[i].data;
	l->v[n] = NULL;
	return error;
}

/* The path of url as curl sends it ("/" when empty), the query left out: what is signed. */
static void url_path(char *out, size_t n, const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	p += strcspn(p, "/?");
	if (*p != '/')
		snprintf(out, n, "/");
	else
		snprintf(out, n, "%.*s", (int)strcspn(p, "?"), p);
}

static int ecr_post(struct http_response *r, const struct ecr_call *c, struct error *err)
{
	struct sigv4_key key = {c->keys->a, c->keys->b, c->region, c->service};
	struct buf authz = BUF_INIT;
	struct ecr_lines l;
	char date[17], path[512];
	int error;

	url_path(path, sizeof(path), c->url);

	sigv4_format_date(date, cloudauth_now());
	if ((error = ecr_headers(&l, c, date)) < 0) {
		error_set(err, error, "bad ecr endpoint");
		goto done;
	}
	struct sigv4_request sr = {"POST", path, NULL, l.v, "{}", 2};
	if ((error = sigv4_sign(&authz, &sr, &key, date, err)) < 0)
		goto done;
	struct http_request req = {.method = "POST",
	                           .url = c->url,
	                           .headers = l.v + 1,
	                           .authorization = authz.data,
	                           .form = "{}",
	                           .label = "ecr",
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};
	error = cloudauth_http(r, &req, err);
done:
	ecr_lines_release(&l);
	if (authz.data)
		memset(authz.data, 0, authz.len);
	buf_release(&authz);
	return error;
}

static int ecr_token(struct cloudauth_token *out, const struct ecr_call *c, bool public_ecr,
                     struct error *err)
{
	struct http_response r = HTTP_RESPONSE_INIT;
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = ecr_post(&r, c, err)) < 0)
		goto done;
	if (r.status != 200) {
		error = cloudauth_refused(err, "ecr GetAuthorizationToken", &r);
		goto done;
	}
	out->issued = cloudauth_now();
	error = cloudauth_parse_ecr(&out->a, &out->b, &out->expires, r.body.data, r.body.len,
	                            public_ecr, err);
done:
	http_response_release(&r);
	return error;
}

static int aws_fetch(struct cloudauth_token *out, const char *registry_host, bool insecure,
                     const struct cloudauth_identity *id, struct error *err)
{
	struct cloudauth_token keys = {0};
	char key[600];
	const char *partition = "amazonaws.com";
	bool pub = strcmp(registry_host, PUBLIC_ECR) == 0;
	char *region = pub ? strdup("us-east-1") : ecr_region_partition(registry_host, &partition);
	char *url = NULL;
	int error;

	(void)insecure; /* only ACR's token exchange has a plain-HTTP mode */
	if (!region)
		return error_set(err, IG_EINVALID,
		                 "provider 'aws': registry '%s' is not an ECR host "
		                 "(<account>.dkr.ecr.<region>.amazonaws.com or public.ecr.aws)",
		                 registry_host);
	if ((error = resolve_keys(&keys, region, partition, id, err)) < 0)
		goto done;
	identity_key(key, sizeof(key), id);
	cloudauth_cache_put(key, &keys);
	url = pub ? endpoint("AWS_ENDPOINT_URL_ECR_PUBLIC", "https://api.ecr-public.%s.%s/", region,
	                     partition)
	          : endpoint("AWS_ENDPOINT_URL_ECR", "https://api.ecr.%s.%s/", region, partition);
	if (!url) {
		error = error_oom(err);
		goto done;
	}
	struct ecr_call c = {url, region, pub ? "ecr-public" : "ecr",
	                     pub ? ECR_PUBLIC_TARGET : ECR_TARGET, &keys};
	if ((error = ecr_token(out, &c, pub, err)) < 0)
		error_prefix(err, "provider 'aws': registry '%s'", registry_host);
done:
	cloudauth_token_release(&keys);
	free(region), free(url);
	return error;
}

static void aws_forget(const struct cloudauth_identity *id)
{
	char key[600];

	identity_key(key, sizeof(key), id);
	cloudauth_cache_drop(key);
}

const struct cloudauth_backend cloudauth_aws = {"aws", aws_fetch, aws_forget};
