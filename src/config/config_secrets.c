/* The secrets a configuration names, checked when it is loaded (check-config --secrets-dir,
 * and plan/reconcile/run): each folder exists under --secrets-dir and holds what its use needs,
 * parsed. A missing secret is an error naming it and its path, never anonymous access; under
 * run --kube, naming it ns/name in the Kubernetes API instead (its folder is internal). Only
 * names and paths go into messages, never a value. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "config_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define MAX_DOCKER_CONFIG (1u << 20)

enum use { USE_REGISTRY, USE_CA, USE_GIT_SSH, USE_GIT_HTTP, USE_SIGNING, USE_VERIFY };

static bool has_file(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The host[:port] a Docker config key names ("https://ghcr.io/v2/" is "ghcr.io"), Docker Hub's
 * aliases folded, as creds.c matches them. */
static void key_host(char *out, size_t n, const char *key)
{
	const char *p = key;

	if (!strncasecmp(p, "https://", 8))
		p += 8;
	else if (!strncasecmp(p, "http://", 7))
		p += 7;
	snprintf(out, n, "%.*s", (int)strcspn(p, "/"), p);
	if (!strcasecmp(out, "docker.io") || !strcasecmp(out, "index.docker.io"))
		snprintf(out, n, "%s", "registry-1.docker.io");
}

static int b64_value(char c)
{
	static const char digits[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(digits, c) : NULL;

	return p ? (int)(p - digits) : -1;
}

/* An `auth` value is base64 of "user:password" (Docker's format): checked without keeping the
 * decoded bytes, only whether a ':' is among them. */
static bool is_auth_value(const char *s)
{
	size_t n = strlen(s), bits = 0;
	unsigned acc = 0;
	bool colon = false;

	if (n == 0 || n % 4 != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value(s[i]);

		if (s[i] == '=' && i >= n - 2 && (i == n - 1 || s[n - 1] == '='))
			break;
		if (v < 0)
			return false;
		acc = (acc << 6 | (unsigned)v) & 0xffffff;
		if ((bits += 6) >= 8) {
			bits -= 8;
			colon |= ((acc >> bits) & 0xff) == ':';
		}
	}
	return colon;
}

static bool entry_has_credentials(json_t *e)
{
	static const char *const fields[] = {"auth", "username", "registrytoken", "identitytoken"};

	for (size_t i = 0; i < 4; i++) {
		json_t *v = json_object_get(e, fields[i]);

		if (json_is_string(v) && json_string_value(v)[0])
			return true;
	}
	return false;
}

/* "" when .dockerconfigjson in dir parses and has credentials for host, else the problem. */
static void check_dockerconfig(char *msg, size_t n, const char *dir, const char *host)
{
	struct buf b = BUF_INIT_MAX(MAX_DOCKER_CONFIG), path = BUF_INIT;
	json_error_t jerr;
	json_t *root = NULL, *auths, *v;
	const char *key;
	char h[512];
	bool found = false;

	*msg = '\0';
	if (buf_printf(&path, "%s/.dockerconfigjson", dir) < 0 ||
	    buf_read_file(&b, path.data) < 0) {
		snprintf(msg, n, "'.dockerconfigjson' cannot be read (or is larger than 1 MiB)");
		goto done;
	}
	/* jansson's text may quote the secret: the position only */
	if (!(root = json_loadb(b.data, b.len, 0, &jerr))) {
		snprintf(msg, n, "'.dockerconfigjson' is not JSON (line %d, column %d)", jerr.line,
		         jerr.column);
		goto done;
	}
	if (!json_is_object(auths = json_object_get(root, "auths"))) {
		snprintf(msg, n, "'.dockerconfigjson' has no \"auths\" object");
		goto done;
	}
	json_object_foreach(auths, key, v)
	{
		json_t *auth = json_object_get(v, "auth");

		key_host(h, sizeof(h), key);
		if (strcasecmp(h, host) != 0 || !json_is_object(v))
			continue;
		if (json_is_string(auth) && json_string_value(auth)[0] &&
		    !is_auth_value(json_string_value(auth))) {
			snprintf(msg, n,
			         "'.dockerconfigjson': auths.\"%s\".auth is not base64 of "
			         "user:password",
			         key);
			goto done;
		}
		found |= entry_has_credentials(v);
	}
	if (!found)
		snprintf(msg, n, "'.dockerconfigjson' has no credentials for registry '%s'", host);
done:
	json_decref(root);
	if (b.data)
		memset(b.data, 0, b.len);
	buf_release(&b);
	buf_release(&path);
}

/* "" when the folder dir holds what use needs, else the problem. */
static void check_folder(char *msg, size_t n, const char *dir, enum use use, const char *host)
{
	bool user = has_file(dir, "username"), pass = has_file(dir, "password");
	bool token = has_file(dir, "bearerToken");

	*msg = '\0';
	if (use == USE_VERIFY) {
		config_verify_check_folder(msg, n, dir, host != NULL); /* host: keyless */
	} else if (user && !pass) {
		snprintf(msg, n, "'username' without 'password'");
	} else if (use == USE_REGISTRY && has_file(dir, ".dockerconfigjson")) {
		check_dockerconfig(msg, n, dir, host);
	} else if (use == USE_REGISTRY && !user && !token) {
		snprintf(msg, n,
		         "no '.dockerconfigjson', 'username'/'password' or 'bearerToken' (for "
		         "anonymous access, remove the secretRef)");
	} else if (use == USE_CA && has_file(dir, "tls.crt")) {
		snprintf(msg, n, "'tls.crt': client certificates are not supported");
	} else if (use == USE_CA && !has_file(dir, "ca.crt")) {
		snprintf(msg, n, "no 'ca.crt'");
	} else if (use == USE_GIT_SSH && !has_file(dir, "identity")) {
		snprintf(msg, n, "no 'identity' (the SSH private key)");
	} else if (use == USE_GIT_SSH && !has_file(dir, "known_hosts")) {
		snprintf(msg, n, "no 'known_hosts' (an SSH host key is never trusted unseen)");
	} else if (use == USE_SIGNING && !has_file(dir, "git.asc")) {
		snprintf(msg, n, "no 'git.asc' (the armored OpenPGP private key)");
	} else if (use == USE_GIT_HTTP && !user && !token && !has_file(dir, "ca.crt")) {
		snprintf(msg, n, "no 'username'/'password', 'bearerToken' or 'ca.crt'");
	}
}

/* run --kube's folder name "<ns>.<name>" as Kubernetes names the Secret, "ns/name" (a namespace
 * is a DNS label: the first '.' ends it); a name without one is the object's namespace's. */
static void api_name(char *out, size_t n, const char *ns, const char *secret)
{
	const char *dot = strchr(secret, '.');

	if (dot)
		snprintf(out, n, "%.*s/%s", (int)(dot - secret), secret, dot + 1);
	else
		snprintf(out, n, "%s/%s", ns ? ns : "", secret);
}

/* The folder dir of a Secret read from the API, named ns/name: its error, never the
 * folder's path. The folder is missing when the Secret is deleted, never
 * made, or could not be read (kubesource logs why as kube.secret). */
static void check_api_secret(struct loader *L, enum config_kind k, const char *id, const char *file,
                             size_t line, const char *field, const char *name, const char *dir,
                             enum use use, const char *host)
{
	struct stat st;
	char msg[512];

	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		config_diag_error(
		    L, file, line,
		    "%s '%s': '%s': secret '%s' not found in the Kubernetes API (or not "
		    "readable: see the kube.secret warning)",
		    config_kind_name(k), id, field, name);
	else if (check_folder(msg, sizeof(msg), dir, use, host), *msg)
		config_diag_error(L, file, line, "%s '%s': '%s': secret '%s': %s",
		                  config_kind_name(k), id, field, name, msg);
}

/* One secret of one object: an error of that object when it is not usable. */
static void check_secret(struct loader *L, enum config_kind k, const char *ns, const char *name,
                         const char *id, struct config_origin origin, size_t line,
                         const char *field, const char *secret, enum use use, const char *host)
{
	const char *sdir = L->opts.secrets_dir;
	size_t first = L->diags->len;
	struct stat st;
	char dir[4096], msg[512], shown[600];

	if (!secret)
		return;
	snprintf(dir, sizeof(dir), "%s/%s", sdir ? sdir : "", secret);
	if (sdir && L->opts.secrets_from_api) {
		api_name(shown, sizeof(shown), ns, secret);
		check_api_secret(L, k, id, origin.file, line, field, shown, dir, use, host);
	} else if (!sdir) {
		config_diag_error(
		    L, origin.file, line,
		    "%s '%s': '%s': secret '%s' needs --secrets-dir (its keys are read "
		    "from the folder <secrets-dir>/%s)",
		    config_kind_name(k), id, field, secret, secret);
	} else if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		config_diag_error(L, origin.file, line,
		                  "%s '%s': '%s': secret '%s' not found: '%s' is not a folder",
		                  config_kind_name(k), id, field, secret, dir);
	} else if (check_folder(msg, sizeof(msg), dir, use, host), *msg) {
		config_diag_error(L, origin.file, line, "%s '%s': '%s': secret '%s' ('%s'): %s",
		                  config_kind_name(k), id, field, secret, dir, msg);
	}
	if (L->diags->len > first && !config_invalid_at(L->c, k, origin.file, origin.line)) {
		struct config_invalid *v =
		    config_invalid_note(L, k, ns, name, origin.file, origin.line, first);

		/* the automation's own Secret (signingKey): Flux's source manager reads it */
		if (v && k == CONFIG_KIND_AUTOMATION)
			v->reason = CONFIG_REASON_SOURCE_MANAGER_FAILED;
	}
}

#define VERIFY_SEEN 16 /* Secrets remembered as usable: most fleets share one or a few */

/* The signature gate's Secrets (CONTRACT §12). A Secret (namespace, name, keyless or not) found
 * usable is not read again for the next policy naming it: 500 policies with one Secret read
 * its folder once. */
static void check_verify_secrets(struct loader *L)
{
	struct config *c = L->c;
	const struct config_policy *seen[VERIFY_SEEN];
	size_t nseen = 0;

	for (size_t i = 0; i < c->policies_len; i++) {
		struct config_policy *p = &c->policies[i];
		size_t errors = L->diags->errors;
		bool known = false;

		if (!p->verify.provider || !p->verify.secret ||
		    config_invalid_at(c, CONFIG_KIND_POLICY, p->origin.file, p->origin.line))
			continue;
		for (size_t k = 0; k < nseen && !known; k++)
			known = same_str(seen[k]->verify.secret, p->verify.secret) &&
			        same_str(seen[k]->ns, p->ns) &&
			        !seen[k]->verify.identities_len == !p->verify.identities_len;
		if (known)
			continue;
		check_secret(L, CONFIG_KIND_POLICY, p->ns, p->name, p->id, p->origin,
		             p->verify.line, p->verify.field, p->verify.secret, USE_VERIFY,
		             p->verify.identities_len ? "keyless" : NULL);
		if (L->diags->errors == errors && nseen < VERIFY_SEEN)
			seen[nseen++] = p;
	}
}

void config_secrets_check_all(struct loader *L)
{
	struct config *c = L->c;

	for (size_t i = 0; i < c->repositories_len; i++) {
		struct config_repository *r = &c->repositories[i];

		if (config_invalid_at(c, CONFIG_KIND_REPOSITORY, r->origin.file, r->origin.line))
			continue;
		check_secret(L, CONFIG_KIND_REPOSITORY, r->ns, r->name, r->id, r->origin,
		             r->secret_ref_line, "spec.secretRef", r->secret_ref, USE_REGISTRY,
		             r->ref.registry);
		check_secret(L, CONFIG_KIND_REPOSITORY, r->ns, r->name, r->id, r->origin,
		             r->cert_secret_ref_line, "spec.certSecretRef", r->cert_secret_ref,
		             USE_CA, NULL);
	}
	for (size_t i = 0; i < c->git_sources_len; i++) {
		struct config_git_source *g = &c->git_sources[i];

		if (config_invalid_at(c, CONFIG_KIND_GIT_SOURCE, g->origin.file, g->origin.line))
			continue;
		check_secret(L, CONFIG_KIND_GIT_SOURCE, g->ns, g->name, g->id, g->origin,
		             g->secret_ref_line, "spec.secretRef", g->secret_ref,
		             g->url && !strncmp(g->url, "ssh://", 6) ? USE_GIT_SSH : USE_GIT_HTTP,
		             NULL);
	}
	for (size_t i = 0; i < c->automations_len; i++) {
		struct config_automation *a = &c->automations[i];

		if (config_invalid_at(c, CONFIG_KIND_AUTOMATION, a->origin.file, a->origin.line))
			continue;
		check_secret(L, CONFIG_KIND_AUTOMATION, a->ns, a->name, a->id, a->origin,
		             a->signing_secret_line, "spec.git.commit.signingKey.secretRef",
		             a->signing_secret, USE_SIGNING, NULL);
	}
	check_verify_secrets(L);
}
