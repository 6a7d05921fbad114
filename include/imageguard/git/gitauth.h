/* Transport settings and credentials for the Git store: URL classification and scrubbing,
 * secret-folder credentials (CONTRACT §4), and the libgit2 callbacks that use them (SSH keys,
 * host keys against known_hosts, HTTP basic auth, bearer tokens, a CA file). */
#ifndef IMAGEGUARD_GITAUTH_H
#define IMAGEGUARD_GITAUTH_H

#include <signal.h>
#include <stdbool.h>
#include <git2.h>

#include "imageguard/util/error.h"

#define GITAUTH_REJECT_MAX 256 /* a remote's refusal of a push, bytes with the NUL */

enum gitauth_transport { GITAUTH_LOCAL, GITAUTH_SSH, GITAUTH_HTTP };

struct gitauth {
	enum gitauth_transport transport;
	bool tls;       /* https:// */
	char *url_safe; /* owned; the URL without any password or token, for messages and
	                 * for libgit2 (which stores it in reflogs, FETCH_HEAD, config):
	                 * HTTP loses its whole userinfo, SSH keeps the user name */
	char *host;     /* owned; NULL for local */
	unsigned port;  /* 0 for local */
	char *username; /* owned secret-folder values, NULL when absent */
	char *password;
	char *token;
	char *passphrase;
	char *url_user;      /* owned; the user name of the URL's userinfo, NULL when absent */
	char *url_password;  /* owned; its password (a secret: scrubbed, never given to libgit2
	                      * in a URL, offered only through the credential callback) */
	char *identity_path; /* owned paths in the secret folder */
	char *identity_pub_path;
	char *known_hosts; /* owned; file content */
	size_t known_hosts_len;
	char *ca_path;
	char *github_app_dir; /* owned; provider github: the secret folder of the app */
	char *header;         /* owned; "Authorization: Bearer ..." */
	char *headers[1];
	unsigned key_tries, userpass_tries;
	/* the operation's bounds, handed to gitstream by gitauth_begin (borrowed; NULL: none) */
	const volatile sig_atomic_t *stop;
	long io_timeout_ms;  /* 0: GITSTREAM_TIMEOUT_DEFAULT_MS */
	long deadline_ms;    /* CLOCK_MONOTONIC ms every wait ends by (gitstream_deadline); 0 */
	struct error cb_err; /* why a callback refused, preferred over libgit2's text */
	char push_reject[GITAUTH_REJECT_MAX]; /* the remote's reason for refusing the last push, ""
	                                         if none */
};

/* Classifies url and loads the credentials in secret_dir (may be NULL). Returns 0, or
 * IG_EINVALID (unsupported URL, unreadable secret file); the error names files, never values.
 * Release with gitauth_release. */
int gitauth_load(struct gitauth *a, const char *url, const char *secret_dir, struct error *err);
void gitauth_release(struct gitauth *a);

/* provider: github: HTTPS credentials become the GitHub App's installation token (fetched
 * and renewed by githubapp.c; a refused token is renewed once per operation). Checks the
 * secret; IG_EINVALID when it lacks what the app needs or the URL is not https/http. */
int gitauth_use_github_app(struct gitauth *a, const char *secret_dir, struct error *err);

/* A newly allocated copy of url without userinfo passwords or tokens (NULL: out of memory). */
char *gitauth_scrub_url(const char *url);

/* Fills libgit2 callbacks and custom headers for one network operation and resets the
 * per-operation state. The pointers stay valid while a lives. Credentials are offered only
 * when libgit2 asks for the configured origin (scheme, host, port: http_same_origin, the
 * registry client's rule), and redirects are refused (GIT_REMOTE_REDIRECT_NONE, and
 * gitstream refuses connections to any other endpoint). */
void gitauth_prepare(struct gitauth *a, git_remote_callbacks *cb, git_strarray *headers);

/* Brackets each network operation: libgit2's CA location (GIT_OPT_SET_SSL_CERT_LOCATIONS) is
 * process-global, so HTTPS operations are serialised under one mutex, each setting its own
 * ca.crt or the system bundle; and this thread's connections may reach only the URL's host
 * and port (gitstream_allow) until gitauth_end. */
int gitauth_begin(struct gitauth *a, struct error *err);
void gitauth_end(struct gitauth *a);

/* Turns libgit2's last error after operation `what` into err: a callback's reason when one
 * refused, else libgit2's text with every credential scrubbed. Returns the IG_* code. */
int gitauth_error(struct gitauth *a, int git_rc, const char *what, struct error *err);

/* Replaces every credential of a (Secret values, the URL's password) in msg with "***", in
 * place, with error_scrub_secret's rule (short values only as whole tokens; a user name is no
 * secret), and drops any URL userinfo. */
void gitauth_scrub(const struct gitauth *a, char *msg, size_t cap);

#endif
