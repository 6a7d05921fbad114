/* Commit signing with GPGME over a throwaway GNUPGHOME: import, pick the signing key, sign
 * detached and armored with the passphrase given through loopback pinentry, then stop the
 * agent and remove the home. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gpgme.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imageguard/git/gitsign.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

extern char **environ;

#define HOME_DEPTH_MAX 4 /* GNUPGHOME's own layout: private-keys-v1.d/ and the like */

struct gitsign {
	gpgme_ctx_t ctx;
	char *home;       /* <home_root>/gnupg-XXXXXX, 0700 */
	char *passphrase; /* owned; NULL when the Secret has none */
	char fpr[64];
	bool bad_passphrase;
};

/* Removes dir (fd-relative, never following a link) and everything below it. */
static void remove_tree_at(int parent, const char *name, int depth)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;

	if (fd < 0) {
		unlinkat(parent, name, 0);
		return;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno == EISDIR &&
		    depth < HOME_DEPTH_MAX)
			remove_tree_at(dirfd(d), e->d_name, depth + 1);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

/* gpgconf --homedir HOME --kill gpg-agent: the agent the signing started ends with us. */
static void kill_agent(const char *home)
{
	char *argv[] = {"gpgconf", "--homedir", (char *)home, "--kill", "gpg-agent", NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return;
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, "gpgconf", &fa, NULL, argv, environ) == 0)
		waitpid(pid, &status, 0);
	posix_spawn_file_actions_destroy(&fa);
}

void gitsign_free(struct gitsign *s)
{
	if (!s)
		return;
	if (s->ctx)
		gpgme_release(s->ctx);
	if (s->home) {
		kill_agent(s->home);
		remove_tree_at(AT_FDCWD, s->home, 0);
	}
	if (s->passphrase) {
		explicit_bzero(s->passphrase, strlen(s->passphrase));
		free(s->passphrase);
	}
	free(s->home);
	free(s);
}

static gpgme_error_t on_passphrase(void *hook, const char *uid_hint, const char *info,
                                   int prev_was_bad, int fd)
{
	struct gitsign *s = hook;
	const char *p = s->passphrase ? s->passphrase : "";

	(void)uid_hint;
	(void)info;
	if (prev_was_bad) {
		s->bad_passphrase = true;
		return gpg_error(GPG_ERR_BAD_PASSPHRASE);
	}
	if (gpgme_io_writen(fd, p, strlen(p)) < 0 || gpgme_io_writen(fd, "\n", 1) < 0)
		return gpg_error(GPG_ERR_CANCELED);
	return 0;
}

/* <dir>/<name> read whole (capped), or NULL when absent; *rc < 0 on other failures. */
static char *read_key_file(const char *dir, const char *name, size_t *len, int *rc)
{
	struct buf path = BUF_INIT, data = BUF_INIT_MAX(GITSIGN_KEY_MAX);
	char *out = NULL;

	*rc = 0;
	if (buf_printf(&path, "%s/%s", dir, name) < 0)
		*rc = IG_EFAIL;
	else if (buf_read_file(&data, path.data) < 0)
		*rc = errno == ENOENT ? 0 : IG_EINVALID;
	else if (!(out = buf_detach(&data)) && data.len == 0)
		out = strdup("");
	*len = out ? strlen(out) : 0;
	buf_release(&path);
	buf_release(&data);
	return out;
}

static int fail(struct error *err, int code, const char *secret_dir, const char *what,
                gpgme_error_t ge)
{
	return error_set(err, code, "signing secret '%s': %s%s%s", secret_dir, what, ge ? ": " : "",
	                 ge ? gpgme_strerror(ge) : "");
}

/* The first secret key of the home that can sign: it becomes the signer. */
static int pick_signer(struct gitsign *s, const char *secret_dir, struct error *err)
{
	gpgme_key_t key = NULL;
	gpgme_error_t ge;

	if ((ge = gpgme_op_keylist_start(s->ctx, NULL, 1)))
		return fail(err, IG_EFAIL, secret_dir, "listing keys", ge);
	while (!gpgme_op_keylist_next(s->ctx, &key)) {
		if (key->can_sign && !key->revoked && !key->expired && !key->disabled && key->fpr)
			break;
		gpgme_key_unref(key);
		key = NULL;
	}
	gpgme_op_keylist_end(s->ctx);
	if (!key)
		return fail(err, IG_EINVALID, secret_dir,
		            "git.asc holds no secret key that can sign", 0);
	snprintf(s->fpr, sizeof(s->fpr), "%s", key->fpr);
	ge = gpgme_signers_add(s->ctx, key);
	gpgme_key_unref(key);
	return ge ? fail(err, IG_EFAIL, secret_dir, "selecting the key", ge) : 0;
}

static int make_home(struct gitsign *s, const char *home_root, struct error *err)
{
	struct buf b = BUF_INIT;

	mkdir(home_root, 0700);
	if (buf_printf(&b, "%s/gnupg-XXXXXX", home_root) < 0)
		return error_oom(err);
	if (!mkdtemp(b.data)) {
		error_set(err, IG_EFAIL, "signing: cannot create a GNUPGHOME below '%s': %s",
		          home_root, strerror(errno));
		buf_release(&b);
		return IG_EFAIL;
	}
	s->home = buf_detach(&b);
	return 0;
}

static int import_key(struct gitsign *s, const char *secret_dir, const char *key, size_t len,
                      struct error *err)
{
	gpgme_data_t data = NULL;
	gpgme_import_result_t r;
	gpgme_error_t ge;

	if ((ge = gpgme_data_new_from_mem(&data, key, len, 0)))
		return fail(err, IG_EFAIL, secret_dir, "reading git.asc", ge);
	ge = gpgme_op_import(s->ctx, data);
	gpgme_data_release(data);
	if (ge)
		return fail(err, IG_EINVALID, secret_dir, "git.asc does not import", ge);
	r = gpgme_op_import_result(s->ctx);
	if (!r || r->secret_imported + r->secret_unchanged == 0)
		return fail(err, IG_EINVALID, secret_dir, "git.asc holds no secret key", 0);
	return 0;
}

/* GPGME's one-time initialisation: the first gpgme_check_version sets the library up; it runs
 * once, before any context exists, whichever thread signs first. */
static pthread_once_t gpgme_once = PTHREAD_ONCE_INIT;

static void gpgme_start(void)
{
	gpgme_check_version(NULL);
}

int gitsign_new(struct gitsign **out, const char *secret_dir, const char *home_root,
                struct error *err)
{
	struct gitsign *s = calloc(1, sizeof(*s));
	char *key = NULL;
	size_t len = 0, plen = 0;
	int rc = 0;

	*out = NULL;
	if (!s)
		return error_oom(err);
	if (!(key = read_key_file(secret_dir, "git.asc", &len, &rc)) || rc < 0) {
		rc = rc < 0 ? fail(err, rc, secret_dir, "git.asc cannot be read", 0)
		            : fail(err, IG_EINVALID, secret_dir, "no git.asc", 0);
		goto done;
	}
	s->passphrase = read_key_file(secret_dir, "passphrase", &plen, &rc);
	if (rc < 0) {
		rc = fail(err, rc, secret_dir, "passphrase cannot be read", 0);
		goto done;
	}
	while (s->passphrase && plen &&
	       (s->passphrase[plen - 1] == '\n' || s->passphrase[plen - 1] == '\r'))
		s->passphrase[--plen] = '\0'; /* as kubectl create secret --from-file leaves it */
	pthread_once(&gpgme_once, gpgme_start);
	if ((rc = make_home(s, home_root, err)) < 0)
		goto done;
	if (gpgme_new(&s->ctx) ||
	    gpgme_ctx_set_engine_info(s->ctx, GPGME_PROTOCOL_OpenPGP, NULL, s->home) ||
	    gpgme_set_pinentry_mode(s->ctx, GPGME_PINENTRY_MODE_LOOPBACK)) {
		rc = fail(err, IG_EFAIL, secret_dir, "GPGME cannot start gpg", 0);
		goto done;
	}
	gpgme_set_armor(s->ctx, 1);
	gpgme_set_passphrase_cb(s->ctx, on_passphrase, s);
	if ((rc = import_key(s, secret_dir, key, len, err)) == 0)
		rc = pick_signer(s, secret_dir, err);
done:
	if (key) {
		explicit_bzero(key, len);
		free(key);
	}
	if (rc < 0) {
		gitsign_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int gitsign_sign(struct gitsign *s, const char *data, size_t len, struct buf *sig,
                 struct error *err)
{
	gpgme_data_t in = NULL, out = NULL;
	gpgme_error_t ge;
	char chunk[4096];
	ssize_t n;
	int rc = 0;

	s->bad_passphrase = false;
	if ((ge = gpgme_data_new_from_mem(&in, data, len, 0)) || (ge = gpgme_data_new(&out))) {
		rc = error_set(err, IG_EFAIL, "signing: %s", gpgme_strerror(ge));
		goto done;
	}
	if ((ge = gpgme_op_sign(s->ctx, in, out, GPGME_SIG_MODE_DETACH))) {
		s->bad_passphrase |= gpg_err_code(ge) == GPG_ERR_BAD_PASSPHRASE;
		rc = error_set(err, s->bad_passphrase ? IG_EAUTH : IG_EFAIL,
		               "signing with key %s: %s", s->fpr,
		               s->bad_passphrase ? "the passphrase does not unlock the key"
		                                 : gpgme_strerror(ge));
		goto done;
	}
	gpgme_data_seek(out, 0, SEEK_SET);
	while ((n = gpgme_data_read(out, chunk, sizeof(chunk))) > 0)
		if (buf_append(sig, chunk, (size_t)n) < 0) {
			rc = error_oom(err);
			goto done;
		}
	if (n < 0 || !sig->len)
		rc = error_set(err, IG_EFAIL, "signing with key %s: no signature", s->fpr);
done:
	gpgme_data_release(in);
	gpgme_data_release(out);
	return rc;
}

const char *gitsign_fingerprint(const struct gitsign *s)
{
	return s->fpr;
}
