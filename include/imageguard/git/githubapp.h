/* GitRepository `provider: github`: a GitHub App installation token as the HTTPS password of
 * the user `x-access-token`, as Flux's auth/githubapp does. The Secret folder holds
 * githubAppID, githubAppInstallationID or githubAppInstallationOwner, githubAppPrivateKey
 * (PEM RSA) and optionally githubAppBaseURL (GitHub Enterprise: https://HOST/api/v3). Tokens
 * are cached process-wide until a fifth of their lifetime is left. The key, the JWT and the
 * token are secrets: never in a message. Thread-safe. */
#ifndef IMAGEGUARD_GITHUBAPP_H
#define IMAGEGUARD_GITHUBAPP_H

#include <stddef.h>

struct error;

#define GITHUBAPP_USER "x-access-token"

/* Checks that secret_dir holds what the app needs (no network). IG_EINVALID names the file. */
int githubapp_check(const char *secret_dir, struct error *err);

/* The installation token for the app in secret_dir, newly allocated (wipe and free it).
 * Returns 0; IG_EINVALID for a bad secret; IG_EAUTH when GitHub refuses the app's JWT or knows
 * no such installation; IG_EFAIL/IG_ETIMEOUT for transport failures. */
int githubapp_token(char **out, const char *secret_dir, struct error *err);

/* Drops the cached token of secret_dir (after the Git server refused it). */
void githubapp_forget(const char *secret_dir);

/* The RS256 JWT GitHub wants from an app (iss = app id, iat 30 s back for clock drift, exp two
 * minutes on, as Flux signs it) for the PEM key, newly allocated; exposed for tests. */
int githubapp_jwt(char **out, const char *app_id, const char *pem, size_t pem_len, long long now,
                  struct error *err);

/* Parses GitHub's installation-token answer {"token", "expires_at"}; exposed for fuzzing. */
int githubapp_parse_token(char **token, long long *expires, const char *json, size_t len,
                          struct error *err);

#endif
