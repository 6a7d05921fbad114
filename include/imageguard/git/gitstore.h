/* The Git store: a cached clone per URL in the state dir, refreshed each pass (fetch + hard
 * reset, recloning a broken cache), and commits pushed safely: never blindly forced; when the
 * remote moved (non-fast-forward, or a refusal such as "failed to update ref" from a push that
 * landed during ours) the edit is re-applied on the new head and the push retried. */
#ifndef IMAGEGUARD_GITSTORE_H
#define IMAGEGUARD_GITSTORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct error;

struct gitstore_options {
	const char *url;          /* ssh://, scp-like, https://, http://, file:// or a path */
	const char *branch;       /* the checkout branch */
	const char *push_branch;  /* NULL: the checkout branch; created from it when missing */
	const char *state_dir;    /* the clone lives in <state_dir>/git/<key of url> */
	const char *secret_dir;   /* NULL or a folder with identity, identity.pub, known_hosts,
	                             username, password, bearerToken, ca.crt, passphrase */
	const char *author_name;  /* default "imageguard" */
	const char *author_email; /* default "imageguard@localhost" */
	unsigned max_attempts;    /* pushes tried while the remote moves, default 5 */
	const char *provider;     /* NULL/"generic", or "github": a GitHub App in secret_dir */
	/* When non-NULL and set (SIGTERM), a clone or fetch ends at libgit2's next progress
	 * callback ("stopping"; the cache is kept). A push is never cut: the commit in flight is
	 * finished. A host that sends nothing calls no callback: that wait is not bounded here. */
	const volatile sig_atomic_t *stop;
	/* GitRepository spec.timeout: how long the Git host may stay silent in a connect, read or
	 * write before the operation fails; 0: 60 s, Flux's default (src/git/gitstream.c). */
	long timeout_ms;
	/* NULL, or the folder of the signing Secret (git.asc, passphrase): every commit is then
	 * OpenPGP-signed (gitsign, GNUPGHOME below <state_dir>/gnupg), and a signing failure is
	 * an error naming signing_name; nothing unsigned is pushed. */
	const char *signing_dir;
	const char *signing_name; /* the Secret's name, for messages */
	/* NULL, or Flux's spec.git.push.refspec "SRC:DST": the commit is also pushed to DST
	 * (never forced; a leading '+' is IG_EINVALID). SRC is HEAD or the branch committed to
	 * (push_branch, as a name or refs/heads/NAME); DST is under refs/. */
	const char *push_refspec;
	/* With push_refspec: push with the refspec only, not to push_branch (Flux: a refspec and
	 * no spec.git.push.branch). A destination refs/heads/Y other than the checkout branch
	 * then makes Y the push branch (rebuilt or appended to, see gitstore_open). */
	bool refspec_only;
};

struct gitstore;

/* Opens (cloning once) and refreshes the cache to the base: the checkout branch's head, or,
 * for a separate push branch on the remote with commits beyond the checkout branch, its head
 * when a person's commit is among them (appended to, with a warning); when all are
 * imageguard's own (Imageguard-Policy trailers) the checkout head, and the push rebuilds the
 * push branch by compare-and-swap on the head read. The cache is locked (flock) until
 * gitstore_free: a second open of the same URL, from another thread or process, waits. Credentials
 * never appear in errors. See docs/git.md. */
int gitstore_open(struct gitstore **out, const struct gitstore_options *opts, struct error *err);
void gitstore_free(struct gitstore *g);

/* The work tree of the checkout (borrowed, valid until gitstore_free). */
const char *gitstore_workdir(const struct gitstore *g);
/* The hex id of the checked-out head commit, the base edits apply to (borrowed). */
const char *gitstore_head(const struct gitstore *g);
/* The clone's directory, "<state_dir>/git/<key>" (borrowed): caches of the work tree may keep
 * files in its .git (gitmarkers' marker index). */
const char *gitstore_dir(const struct gitstore *g);
/* How many times since open the work tree was rewritten wholesale (a hard reset): bytes of an
 * unchanged blob may then differ, so a cache keyed by blob kept across a change of this number
 * must be dropped. */
uint64_t gitstore_worktree_epoch(const struct gitstore *g);

#define GITSTORE_OID_LEN 20 /* a SHA-1 object id, raw */

/* One checked-out file as Git's index records it (stage 0). */
struct gitstore_entry {
	const char *path; /* borrowed; relative to the work tree, '/'-separated */
	unsigned char oid[GITSTORE_OID_LEN];
	unsigned mode; /* Git's: 0100644 and 0100755 regular, 0120000 link, 0160000 gitlink */
};

/* The checkout's files from Git's index (stage-0 entries; a clean checkout has no others):
 * *out is the caller's (free), its paths are borrowed until the next call or gitstore_free.
 * Returns 0, or IG_EFAIL when the index cannot be read or memory runs out. */
int gitstore_list_index(struct gitstore_entry **out, size_t *n, struct gitstore *g,
                        struct error *err);

/* Edits the work tree for one commit: writes the files it changes and sets the commit
 * message. Called again after a rejected push, on the new remote head, so it must re-read
 * the files (another writer may have moved a marker). Returns 0, 1 when this is one part of a
 * larger edit (commit it, then call edit again for the next part: one push takes every part's
 * commit, at most 4096), or negative to abort. */
typedef int (*gitstore_edit_fn)(void *ctx, const char *workdir, struct buf *message,
                                struct error *err);

/* Called from edit: the push that follows (that one only) must end by deadline_ms
 * (CLOCK_MONOTONIC ms; 0: none), however lively the host: each of its network waits ends
 * there (gitstream_deadline), and the push fails as timed out. A fenced push sets the instant
 * its gate admitted it for. */
void gitstore_push_deadline(struct gitstore *g, int64_t deadline_ms);

/* Runs edit, commits what changed (nothing changed: no commit, out_commit ""), pushes, and when
 * the remote moved (non-fast-forward, stale, "failed to update ref", a ref lock, or any refusal
 * after which the remote branch is seen moved) fetches, resets, re-runs edit and retries up to
 * max_attempts;
 * IG_ECONFLICT when it still fails. out_commit gets the pushed commit's hex id. */
int gitstore_commit_push(char out_commit[41], struct gitstore *g, gitstore_edit_fn edit, void *ctx,
                         struct error *err);

/* gitstore_commit_push in two halves, so that the caller can go on (decide its next automation)
 * while this push is on the wire. _start runs the first attempt's edit and commits on the
 * calling thread, then starts their push on a thread of its own: 1 when a push is in flight,
 * 0 when nothing changed (no commit, nothing to land), negative on failure (g left as
 * gitstore_commit_push leaves it). _finish lands it: waits for the push, and when the remote
 * moved makes the remaining attempts exactly as gitstore_commit_push does (edit again on the
 * calling thread); it returns what gitstore_commit_push would have. In between, g belongs to
 * the push: the caller must not use it (gitstore_free waits for the push, which is finished,
 * never cut, as under SIGTERM). */
int gitstore_push_start(struct gitstore *g, gitstore_edit_fn edit, void *ctx, struct error *err);
int gitstore_push_finish(char out_commit[41], struct gitstore *g, gitstore_edit_fn edit, void *ctx,
                         struct error *err);

#endif
