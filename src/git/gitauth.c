/* Git transport credentials and checks: which transport a URL uses, what the secret folder
 * holds, and the libgit2 callbacks that present keys and verify hosts without ever prompting. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/git/gitauth.h"
#include "imageguard/git/giturl.h"
#include "imageguard/git/githubapp.h"
#include "imageguard/git/gitstream.h"
#include "imageguard/git/knownhosts.h"
#include "imageguard/util/http.h"

#define SECRET_MAX (64 * 1024)
#define KNOWN_HOSTS_MAX (1024 * 1024)
#define SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

/* libgit2's CA location is one process-wide setting; this lock is what makes per-repository
 * ca.crt files safe (see gitauth_begin). */
static pthread_mutex_t ca_lock = PTHREAD_MUTEX_INITIALIZER;

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool scheme_is(const struct giturl *u, const char *name)
{
	return u->scheme_len == strlen(name) && !memcmp(u->scheme, name, u->scheme_len);
}

/* The transport of url, and the host, port and user info it names (schemes as written in
 * lower case: "HTTPS://" is refused as it always was). */
static int classify(struct gitauth *a, const char *url)
{
	struct giturl u;
	unsigned port = 22;
	int rc;

	if ((rc = giturl_parse(&u, url)) < 0)
		return rc;
	if (u.form == GITURL_PATH || (u.form == GITURL_SCHEME && scheme_is(&u, "file")))
		return a->transport = GITAUTH_LOCAL, 0;
	if (u.form == GITURL_SCP || scheme_is(&u, "ssh"))
		a->transport = GITAUTH_SSH;
	else if (scheme_is(&u, "https"))
		a->transport = GITAUTH_HTTP, a->tls = true, port = 443;
	else if (scheme_is(&u, "http"))
		a->transport = GITAUTH_HTTP, port = 80;
	else
		return IG_EINVALID;
	if (!(a->host = strndup(u.host, u.host_len)) ||
	    (u.user && !(a->url_user = strndup(u.user, u.user_len))) ||
	    (u.password && !(a->url_password = strndup(u.password, u.password_len))))
		return IG_EFAIL;
	a->port = u.port ? u.port : port;
	return 0;
}

char *gitauth_scrub_url(const char *url)
{
	struct buf b = BUF_INIT;
	const char *sep = strstr(url, "://"), *auth, *at = NULL, *p;

	if (!sep)
		return strdup(url);
	auth = sep + 3;
	/* the authority ends at '/', or, inside an error message, at a space or quote */
	for (p = auth; *p && !strchr("/ \t'\"", *p); p++)
		if (*p == '@')
			at = p;
	if (buf_append(&b, url, (size_t)(auth - url)) < 0)
		goto fail;
	if (at && has_prefix(url, "ssh://")) {
		/* an SSH user name is no secret; a password after it is */
		const char *colon = memchr(auth, ':', (size_t)(at - auth));

		if (buf_append(&b, auth, (size_t)((colon ? colon : at) - auth)) < 0 ||
		    buf_puts(&b, "@") < 0)
			goto fail;
	}
	if (buf_puts(&b, at ? at + 1 : auth) < 0)
		goto fail;
	return buf_detach(&b);
fail:
	buf_release(&b);
	return NULL;
}

/* Reads secret_dir/name, trimming one trailing newline (files made with `echo`). Absent: NULL
 * and 0. The error names the file, never its content. */
static int read_secret(char **out, const char *dir, const char *name, size_t max, size_t *len,
                       struct error *err)
{
	struct buf path = BUF_INIT, b = BUF_INIT_MAX(max);
	int rc;

	*out = NULL;
	if (!dir)
		return 0;
	if ((rc = buf_printf(&path, "%s/%s", dir, name)) < 0)
		goto done;
	rc = buf_read_file(&b, path.data);
	if (rc == IG_ENOTFOUND) {
		rc = 0;
		goto done;
	}
	if (rc < 0) {
		error_set(err, rc == IG_ETOOBIG ? IG_ETOOBIG : IG_EINVALID, "secret file '%s': %s",
		          path.data, rc == IG_ETOOBIG ? "too large" : "cannot be read");
		goto done;
	}
	if (b.len && b.data[b.len - 1] == '\n')
		b.data[--b.len] = '\0';
	if (b.len && b.data[b.len - 1] == '\r')
		b.data[--b.len] = '\0';
	if (len)
		*len = b.len;
	*out = buf_detach(&b);
done:
	buf_release(&path);
	buf_release(&b);
	return rc;
}

static int secret_path(char **out, const char *dir, const char *name)
{
	struct buf path = BUF_INIT;

	*out = NULL;
	if (!dir)
		return 0;
	if (buf_printf(&path, "%s/%s", dir, name) < 0)
		return IG_EFAIL;
	if (access(path.data, R_OK) != 0) {
		buf_release(&path);
		return 0;
	}
	*out = buf_detach(&path);
	return 0;
}

static int load_secrets(struct gitauth *a, const char *dir, struct error *err)
{
	char *identity = NULL;
	struct stat st;
	int rc;

	/* A secret that is named but absent is an error, never anonymous access. */
	if (dir && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		return error_set(err, IG_ENOTFOUND, "secret '%s': not found", dir);

	if ((rc = read_secret(&a->username, dir, "username", SECRET_MAX, NULL, err)) < 0 ||
	    (rc = read_secret(&a->password, dir, "password", SECRET_MAX, NULL, err)) < 0 ||
	    (rc = read_secret(&a->token, dir, "bearerToken", SECRET_MAX, NULL, err)) < 0 ||
	    (rc = read_secret(&a->passphrase, dir, "passphrase", SECRET_MAX, NULL, err)) < 0 ||
	    (rc = read_secret(&a->known_hosts, dir, "known_hosts", KNOWN_HOSTS_MAX,
	                      &a->known_hosts_len, err)) < 0 ||
	    (rc = read_secret(&identity, dir, "identity", SECRET_MAX, NULL, err)) < 0)
		return rc;
	free(identity); /* only checks that it is readable: libssh2 reads it by path */
	if (secret_path(&a->identity_path, dir, "identity") < 0 ||
	    secret_path(&a->identity_pub_path, dir, "identity.pub") < 0 ||
	    secret_path(&a->ca_path, dir, "ca.crt") < 0)
		return error_oom(err);
	if (a->token) {
		struct buf h = BUF_INIT;

		if (buf_printf(&h, "Authorization: Bearer %s", a->token) < 0)
			return error_oom(err);
		a->header = buf_detach(&h);
		a->headers[0] = a->header;
	}
	return 0;
}

int gitauth_load(struct gitauth *a, const char *url, const char *secret_dir, struct error *err)
{
	int rc;

	memset(a, 0, sizeof(*a));
	if (!(a->url_safe = gitauth_scrub_url(url)))
		return error_oom(err);
	if ((rc = classify(a, url)) < 0)
		return error_set(err, rc, "git url '%s': %s", a->url_safe,
		                 rc == IG_EINVALID
		                     ? "unsupported or malformed URL (use ssh://, "
		                       "git@host:path, https://, http://, file:// or a path)"
		                     : "out of memory");
	return load_secrets(a, secret_dir, err);
}

static void free_secret(char *s)
{
	/* wipe credential bytes before handing the memory back */
	if (s) {
		volatile char *p = s;

		while (*p)
			*p++ = '\0';
	}
	free(s);
}

void gitauth_release(struct gitauth *a)
{
	free(a->url_safe);
	free(a->host);
	free_secret(a->username);
	free_secret(a->password);
	free_secret(a->token);
	free_secret(a->passphrase);
	free(a->url_user);
	free_secret(a->url_password);
	free_secret(a->header);
	free(a->github_app_dir);
	free(a->identity_path);
	free(a->identity_pub_path);
	free(a->known_hosts);
	free(a->ca_path);
	memset(a, 0, sizeof(*a));
}

static int refuse(struct gitauth *a, int code, const char *fmt, const char *arg)
{
	error_set(&a->cb_err, code, fmt, arg);
	git_error_set_str(GIT_ERROR_CALLBACK, a->cb_err.msg);
	return GIT_EUSER;
}

/* The installation token (cached), then once more a fresh one when the server refused it. */
static int github_app_credentials(git_credential **out, struct gitauth *a)
{
	char *token = NULL;

	if (a->userpass_tries++ > 1)
		return refuse(a, IG_EAUTH,
		              "git '%s': github app installation token refused by the server",
		              a->url_safe);
	if (a->userpass_tries == 2)
		githubapp_forget(a->github_app_dir);
	if (githubapp_token(&token, a->github_app_dir, &a->cb_err) < 0) {
		git_error_set_str(GIT_ERROR_CALLBACK, a->cb_err.msg);
		return GIT_EUSER;
	}
	/* Kept as the password so that gitauth_scrub removes it from every message. */
	free_secret(a->password);
	a->password = token;
	return git_credential_userpass_plaintext_new(out, GITHUBAPP_USER, token);
}

int gitauth_use_github_app(struct gitauth *a, const char *secret_dir, struct error *err)
{
	int rc;

	if (a->transport != GITAUTH_HTTP)
		return error_set(err, IG_EINVALID, "git '%s': provider 'github' needs an https URL",
		                 a->url_safe);
	if ((rc = githubapp_check(secret_dir, err)) < 0)
		return rc;
	free(a->github_app_dir);
	if (!(a->github_app_dir = strdup(secret_dir)))
		return error_oom(err);
	return 0;
}

/* Over HTTP, credentials go only to the configured origin (the registry client's rule). */
static bool is_configured_origin(const struct gitauth *a, const char *url)
{
	return a->transport != GITAUTH_HTTP || (url && http_same_origin(a->url_safe, url));
}

static int userpass(git_credential **out, struct gitauth *a)
{
	const char *user = a->url_password ? a->url_user : a->username;
	const char *pass = a->url_password ? a->url_password : a->password;

	if (!user || !pass)
		return refuse(
		    a, IG_EAUTH,
		    "git '%s': authentication required (no username/password in the secret)",
		    a->url_safe);
	if (a->userpass_tries++ > 0)
		return refuse(a, IG_EAUTH, "git '%s': username/password refused by the server",
		              a->url_safe);
	return git_credential_userpass_plaintext_new(out, user, pass);
}

static int on_credentials(git_credential **out, const char *url, const char *user_from_url,
                          unsigned int allowed, void *payload)
{
	struct gitauth *a = payload;
	const char *user = user_from_url && *user_from_url ? user_from_url : NULL;

	if (!is_configured_origin(a, url))
		return refuse(a, IG_EAUTH,
		              "git '%s': credentials asked for by another origin, not offered",
		              a->url_safe);
	if (allowed & GIT_CREDENTIAL_SSH_KEY) {
		if (!a->identity_path)
			return refuse(a, IG_EAUTH,
			              "git '%s': ssh needs an 'identity' key in the secret",
			              a->url_safe);
		if (a->key_tries++ > 0)
			return refuse(a, IG_EAUTH, "git '%s': ssh key refused by the server",
			              a->url_safe);
		return git_credential_ssh_key_new(
		    out, user ? user : (a->username ? a->username : "git"), a->identity_pub_path,
		    a->identity_path, a->passphrase);
	}
	if (allowed & GIT_CREDENTIAL_USERNAME)
		return git_credential_username_new(out, user ? user
		                                             : (a->username ? a->username : "git"));
	if ((allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) && a->github_app_dir)
		return github_app_credentials(out, a);
	if (allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT)
		return userpass(out, a);
	return refuse(a, IG_EAUTH, "git '%s': the server asks for an unsupported credential type",
	              a->url_safe);
}

static int on_certificate(git_cert *cert, int valid, const char *host, void *payload)
{
	struct gitauth *a = payload;
	struct error e = ERROR_INIT;
	struct knownhosts_key key = {NULL, 0, NULL};

	if (cert->cert_type == GIT_CERT_X509) {
		if (valid)
			return 0;
		return refuse(a, IG_EAUTH,
		              "git '%s': TLS certificate not trusted (set ca.crt in the secret)",
		              a->url_safe);
	}
	if (cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2)
		return refuse(a, IG_EAUTH, "git '%s': unsupported certificate type", a->url_safe);
	if (!a->known_hosts)
		return refuse(
		    a, IG_EAUTH,
		    "git '%s': no known_hosts in the secret: refusing an unverified ssh host",
		    a->url_safe);
	{
		const git_cert_hostkey *hk = (const git_cert_hostkey *)cert;

		if (hk->type & GIT_CERT_SSH_RAW) {
			key.raw = (const unsigned char *)hk->hostkey;
			key.raw_len = hk->hostkey_len;
		} else if (hk->type & GIT_CERT_SSH_SHA256) {
			key.sha256 = hk->hash_sha256;
		} else {
			return refuse(a, IG_EAUTH, "git '%s': ssh host key not available to check",
			              a->url_safe);
		}
	}
	if (knownhosts_check(a->known_hosts, a->known_hosts_len, a->host ? a->host : host, a->port,
	                     &key, &e) == 0)
		return 0;
	error_set(&a->cb_err, IG_EAUTH, "git '%s': %s", a->url_safe, e.msg);
	git_error_set_str(GIT_ERROR_CALLBACK, a->cb_err.msg);
	return GIT_EUSER;
}

static int on_push_update(const char *refname, const char *status, void *payload)
{
	struct gitauth *a = payload;

	(void)refname;
	if (status)
		snprintf(a->push_reject, sizeof(a->push_reject), "%s", status);
	return 0;
}

void gitauth_prepare(struct gitauth *a, git_remote_callbacks *cb, git_strarray *headers)
{
	a->key_tries = 0;
	a->userpass_tries = 0;
	error_clear(&a->cb_err);
	a->push_reject[0] = '\0';
	cb->push_update_reference = on_push_update;
	cb->credentials = on_credentials;
	cb->certificate_check = on_certificate;
	cb->payload = a;
	headers->strings = a->header ? a->headers : NULL;
	headers->count = a->header ? 1 : 0;
}

int gitauth_begin(struct gitauth *a, struct error *err)
{
	const char *file;
	int rc;

	gitstream_allow(a->host, a->port);
	gitstream_bound(a->stop, a->io_timeout_ms);
	gitstream_deadline(a->deadline_ms);
	if (!a->tls)
		return 0;
	pthread_mutex_lock(&ca_lock);
	file = a->ca_path ? a->ca_path : SYSTEM_CA_FILE;
	if (access(file, R_OK) != 0)
		return 0;
	if ((rc = git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, file, NULL)) < 0) {
		pthread_mutex_unlock(&ca_lock);
		return error_set(err, IG_EINVALID, "git '%s': CA file '%s' cannot be loaded",
		                 a->url_safe, file);
	}
	return 0;
}

void gitauth_end(struct gitauth *a)
{
	gitstream_allow(NULL, 0);
	gitstream_bound(NULL, 0);
	if (a->tls)
		pthread_mutex_unlock(&ca_lock);
}

void gitauth_scrub(const struct gitauth *a, char *msg, size_t cap)
{
	char *p, *scrubbed;

	error_scrub_secret(msg, cap, a->password);
	error_scrub_secret(msg, cap, a->token);
	error_scrub_secret(msg, cap, a->passphrase);
	error_scrub_secret(msg, cap, a->url_password);
	/* any other "scheme://user:secret@" in libgit2's text */
	for (p = msg; (p = strstr(p, "://")); p += 3) {
		if (!(scrubbed = gitauth_scrub_url(p))) /* scrubs from "://" on */
			return;
		if (strlen(scrubbed) < strlen(p))
			memmove(p, scrubbed, strlen(scrubbed) + 1);
		free(scrubbed);
	}
}

int gitauth_error(struct gitauth *a, int git_rc, const char *what, struct error *err)
{
	const git_error *ge = git_error_last();
	char msg[ERROR_MSG_MAX];
	int code = IG_EFAIL;

	if (a->cb_err.code)
		return error_set(err, a->cb_err.code, "%s: %s", what, a->cb_err.msg);
	snprintf(msg, sizeof(msg), "%s", ge && ge->message ? ge->message : "unknown libgit2 error");
	gitauth_scrub(a, msg, sizeof(msg));
	if (git_rc == GIT_EAUTH || git_rc == GIT_ECERTIFICATE)
		code = IG_EAUTH;
	else if (git_rc == GIT_ENOTFOUND)
		code = IG_ENOTFOUND;
	else if (ge && (ge->klass == GIT_ERROR_SSH || ge->klass == GIT_ERROR_HTTP) &&
	         (strstr(msg, "authentication") || strstr(msg, "401") || strstr(msg, "403")))
		code = IG_EAUTH;
	return error_set(err, code, "%s '%s': %s", what, a->url_safe, msg);
}
