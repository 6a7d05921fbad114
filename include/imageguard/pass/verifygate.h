/* The pass's signature gate (CONTRACT §12): each verified policy's trust root, loaded once from
 * its Secret's folder, and the verdict for a (policy, digest), cached per digest and policy
 * fingerprint (the trust root, the identity rules) so that a digest two markers or two policies
 * with the same trust share is verified once. Not thread-safe: the pass decides on one thread. */
#ifndef IMAGEGUARD_VERIFYGATE_H
#define IMAGEGUARD_VERIFYGATE_H

#include <stddef.h>

struct config;
struct decide_verified;
struct error;
struct sigverify_source;
struct verifygate;

/* A gate for cfg's policies, whose Secrets are folders of secrets_dir (NULL: "."). Nothing is
 * loaded yet. Returns 0 or IG_EFAIL (out of memory). */
int verifygate_new(struct verifygate **out, const struct config *cfg, const char *secrets_dir,
                   struct error *err);
void verifygate_free(struct verifygate *g);

/* The verdict for digest under config policy number policy's verification, asking src (the
 * candidate's repository) only when no verdict is cached. out's strings live as long as g.
 * Returns 0, IG_EINVALID when the policy's trust root cannot be used (the message names the
 * Secret and key; remembered for the gate's life), or the registry's negative code (not
 * cached: the next pass asks again). */
int verifygate_check(struct verifygate *g, size_t policy, const char *digest,
                     const struct sigverify_source *src, struct decide_verified *out,
                     struct error *err);

/* Verifications asked of a registry (not answered by the cache) and their requests, since g
 * was made. */
size_t verifygate_checks(const struct verifygate *g);
unsigned verifygate_requests(const struct verifygate *g);

#endif
