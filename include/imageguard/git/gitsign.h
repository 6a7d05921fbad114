/* OpenPGP commit signatures (Flux's spec.git.commit.signingKey) with GPGME: the Secret's
 * armored private key (`git.asc`) and optional `passphrase`, imported into a throwaway
 * GNUPGHOME under the state dir that gitsign_free removes. Not thread-safe: one signer per
 * automation and pass. */
#ifndef IMAGEGUARD_GITSIGN_H
#define IMAGEGUARD_GITSIGN_H

#include <stddef.h>

struct buf;
struct error;
struct gitsign;

/* The largest git.asc read (a key ring of a few keys is a few KiB). */
#define GITSIGN_KEY_MAX ((size_t)1 << 20)

/* Imports <secret_dir>/git.asc (and <secret_dir>/passphrase when present) into a new 0700
 * directory below home_root and picks its first secret key that can sign. Returns 0, or
 * IG_EINVALID with a one-line error naming the secret folder (missing git.asc, no secret key,
 * a key that cannot sign), IG_EFAIL otherwise. Never puts the key or passphrase in err. */
int gitsign_new(struct gitsign **out, const char *secret_dir, const char *home_root,
                struct error *err);

/* Appends to sig an armored detached signature of data[0..len) (a commit object's bytes, as
 * git_commit_create_buffer gives them). Returns 0, or IG_EAUTH when the passphrase does not
 * unlock the key, IG_EFAIL otherwise, with a one-line error. */
int gitsign_sign(struct gitsign *s, const char *data, size_t len, struct buf *sig,
                 struct error *err);

/* The signing key's fingerprint (borrowed, valid until gitsign_free). */
const char *gitsign_fingerprint(const struct gitsign *s);

/* Stops the GNUPGHOME's agent and removes the directory. NULL-safe. */
void gitsign_free(struct gitsign *s);

#endif
