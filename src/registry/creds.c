/* Registry credentials from Kubernetes-style secret folders and Docker config files. Nothing
 * read here is ever put into a message: errors name the file and the field only. */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "imageguard/util/buf.h"
#include "imageguard/registry/creds.h"
#include "imageguard/util/error.h"

#define MAX_CONFIG (1u << 20)
#define MAX_SECRET (64u << 10)
#define DOCKER_HUB "registry-1.docker.io"

void creds_release(struct registry_creds *c)
{
	if (!c)
		return;
	/* Wipe before freeing: secrets should not linger in freed heap memory. */
	if (c->password)
		memset(c->password, 0, strlen(c->password));
	if (c->token)
		memset(c->token, 0, strlen(c->token));
	free(c->username);
	free(c->password);
	free(c->token);
	c->username = c->password = c->token = NULL;
}

/* A config key ("https://ghcr.io/v2/", "ghcr.io", "https://index.docker.io/v1/") reduced to
 * the host[:port] it names, with Docker Hub's aliases folded to the registry host. */
static void key_host(char *out, size_t n, const char *key)
{
	const char *p = key, *end;
	size_t len;

	if (strncasecmp(p, "https://", 8) == 0)
		p += 8;
	else if (strncasecmp(p, "http://", 7) == 0)
		p += 7;
	end = p + strcspn(p, "/");
	len = (size_t)(end - p);
	if ((len == 9 && strncasecmp(p, "docker.io", 9) == 0) ||
	    (len == 15 && strncasecmp(p, "index.docker.io", 15) == 0))
		snprintf(out, n, "%s", DOCKER_HUB);
	else
		snprintf(out, n, "%.*s", (int)len, p);
	for (char *s = out; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

static int base64_userpass(struct registry_creds *out, const char *b64)
{
	size_t len = strlen(b64), pad = 0;
	unsigned char *raw;
	char *colon;
	int n;

	if (len == 0 || len % 4 != 0 || len > MAX_SECRET)
		return IG_EINVALID;
	if (!(raw = malloc(len / 4 * 3 + 1)))
		return IG_EFAIL;
	n = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)len);
	if (n < 0) {
		free(raw);
		return IG_EINVALID;
	}
	/* EVP_DecodeBlock counts padding as zero bytes. */
	while (pad < 2 && b64[len - 1 - pad] == '=')
		pad++;
	n -= (int)pad;
	raw[n] = '\0';
	colon = memchr(raw, ':', (size_t)n);
	if (!colon || strlen((char *)raw) != (size_t)n) {
		memset(raw, 0, (size_t)n);
		free(raw);
		return IG_EINVALID;
	}
	*colon = '\0';
	out->username = strdup((char *)raw);
	out->password = strdup(colon + 1);
	memset(raw, 0, (size_t)n);
	free(raw);
	return out->username && out->password ? 0 : IG_EFAIL;
}

static const char *opt_string(json_t *entry, const char *field, bool *bad)
{
	json_t *v = json_object_get(entry, field);

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		*bad = true;
		return NULL;
	}
	return json_string_value(v)[0] ? json_string_value(v) : NULL;
}

static int from_entry(struct registry_creds *out, json_t *entry, const char *path, const char *key,
                      struct error *err)
{
	bool bad = false;
	const char *auth = opt_string(entry, "auth", &bad);
	const char *user = opt_string(entry, "username", &bad);
	const char *pass = opt_string(entry, "password", &bad);
	const char *token = opt_string(entry, "registrytoken", &bad);
	int error;

	if (bad || !json_is_object(entry))
		return error_set(err, IG_EINVALID, "'%s': auths.\"%s\": fields must be strings",
		                 path, key);
	if (user) {
		out->username = strdup(user);
		out->password = strdup(pass ? pass : "");
		if (!out->username || !out->password)
			return error_set(err, IG_EFAIL, "'%s': out of memory", path);
	} else if (auth && (error = base64_userpass(out, auth)) < 0) {
		return error_set(err, error, "'%s': auths.\"%s\".auth: not base64 of user:password",
		                 path, key);
	}
	if (token && !(out->token = strdup(token)))
		return error_set(err, IG_EFAIL, "'%s': out of memory", path);
	return 0;
}

/* Picks the entry for registry_host: an exact key first, then any key naming the same host. */
static json_t *find_entry(json_t *auths, const char *registry_host, const char **key_out)
{
	const char *key;
	json_t *v;
	char host[512];

	if ((v = json_object_get(auths, registry_host))) {
		*key_out = registry_host;
		return v;
	}
	json_object_foreach(auths, key, v)
	{
		key_host(host, sizeof(host), key);
		if (strcasecmp(host, registry_host) == 0) {
			*key_out = key;
			return v;
		}
	}
	return NULL;
}

int creds_load_docker_config(struct registry_creds *out, const char *path,
                             const char *registry_host, struct error *err)
{
	struct buf b = BUF_INIT_MAX(MAX_CONFIG);
	json_error_t jerr;
	json_t *root = NULL, *auths, *entry;
	const char *key = NULL;
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = buf_read_file(&b, path)) < 0) {
		error_set(err, error, "'%s': %s", path,
		          error == IG_ENOTFOUND ? "no such file"
		          : error == IG_ETOOBIG ? "larger than 1 MiB"
		                                : "cannot read");
		goto done;
	}
	/* jansson's message may quote the text near the error, which can be a secret: only the
	 * position is reported. */
	if (!(root = json_loadb(b.data, b.len, 0, &jerr))) {
		error = error_set(err, IG_EINVALID, "'%s':%d:%d: invalid JSON", path, jerr.line,
		                  jerr.column);
		goto done;
	}
	auths = json_object_get(root, "auths");
	if (!json_is_object(root) || (auths && !json_is_object(auths))) {
		error = error_set(err, IG_EINVALID,
		                  "'%s': expected an object with an \"auths\" object", path);
		goto done;
	}
	if (auths && (entry = find_entry(auths, registry_host, &key)))
		error = from_entry(out, entry, path, key, err);
done:
	if (error < 0)
		creds_release(out);
	json_decref(root);
	if (b.data)
		memset(b.data, 0, b.len);
	buf_release(&b);
	return error;
}

/* Reads a secret file's value without its trailing newline; IG_ENOTFOUND when absent. */
static int read_value(char **out, const char *dir, const char *name, struct error *err)
{
	struct buf path = BUF_INIT, b = BUF_INIT_MAX(MAX_SECRET);
	int error;

	*out = NULL;
	if ((error = buf_printf(&path, "%s/%s", dir, name)) < 0)
		goto done;
	if ((error = buf_read_file(&b, path.data)) < 0) {
		if (error != IG_ENOTFOUND)
			error_set(err, error, "'%s': %s", path.data,
			          error == IG_ETOOBIG ? "larger than 64 KiB" : "cannot read");
		goto done;
	}
	while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
		b.data[--b.len] = '\0';
	if (strlen(b.data) != b.len) {
		error = error_set(err, IG_EINVALID, "'%s': contains a NUL byte", path.data);
		memset(b.data, 0, b.len);
		buf_release(&b);
		goto done;
	}
	*out = buf_detach(&b);
done:
	buf_release(&path);
	return error;
}

/* The folder must exist: a missing secret never means anonymous access. */
static int check_folder(const char *secret_dir, struct error *err)
{
	struct stat st;

	if (stat(secret_dir, &st) < 0)
		return error_set(err, IG_ENOTFOUND, "secret folder '%s' does not exist",
		                 secret_dir);
	if (!S_ISDIR(st.st_mode))
		return error_set(err, IG_EINVALID, "secret '%s' is not a folder", secret_dir);
	return 0;
}

int creds_load_secret(struct registry_creds *out, const char *secret_dir, const char *registry_host,
                      struct error *err)
{
	struct buf path = BUF_INIT;
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = check_folder(secret_dir, err)) < 0 ||
	    (error = buf_printf(&path, "%s/.dockerconfigjson", secret_dir)) < 0)
		goto done;
	error = creds_load_docker_config(out, path.data, registry_host, err);
	if (error == 0 && !out->username && !out->token)
		error = error_set(err, IG_EINVALID, "'%s': no credentials for registry '%s'",
		                  path.data, registry_host);
	if (error != IG_ENOTFOUND)
		goto done;
	error_clear(err);
	if ((error = read_value(&out->username, secret_dir, "username", err)) < 0 &&
	    error != IG_ENOTFOUND)
		goto done;
	if (out->username) {
		if ((error = read_value(&out->password, secret_dir, "password", err)) < 0) {
			if (error == IG_ENOTFOUND)
				error = error_set(err, IG_EINVALID,
				                  "'%s': username without password", secret_dir);
			goto done;
		}
	}
	if ((error = read_value(&out->token, secret_dir, "bearerToken", err)) == IG_ENOTFOUND)
		error = 0;
	if (error == 0 && !out->username && !out->token)
		error = error_set(err, IG_EINVALID,
		                  "'%s': no .dockerconfigjson, username/password or bearerToken",
		                  secret_dir);
done:
	if (error < 0)
		creds_release(out);
	buf_release(&path);
	return error;
}
