/* The pass's signature gate (CONTRACT §12): each verified policy's trust root, loaded once from
 * its Secret's folder, and the verdict for a (policy, digest), cached per digest and policy
 * fingerprint (the trust root, the identity rules) so that a digest two markers or two policies
 * with the same trust share is verified once. The verdicts may outlive the pass in a
 * verifycache (`run` keeps one), so that an unchanged candidate costs no request after its
 * first pass. Not thread-safe: the pass decides on one thread. */
#ifndef IMAGEGUARD_VERIFYGATE_H
#define IMAGEGUARD_VERIFYGATE_H

#include <stddef.h>

struct config;
struct decide_verified;
struct error;
struct sigverify_source;
struct verifycache;
struct verifygate;

/* Verdicts kept across passes, at most VERIFYCACHE_MAX (the oldest goes first). A pass reuses
 * any verdict of its own; from an earlier pass it reuses `ok` (a digest is immutable and the
 * fingerprint names the trust), and a failure only while the listing shows no signature tag
 * for the digest (`sha256-<hex>.sig`, `sha256-<hex>`), for negative_ttl_ms at most: a signature
 * pushed under a tag is seen on the next pass, one attached through a registry's referrers API
 * only within negative_ttl_ms. A failure with a signature tag listed is asked again each pass
 * (a `.sig` tag may be re-signed in place). */
#define VERIFYCACHE_MAX 4096
#define VERIFYCACHE_NEGATIVE_TTL_MS (5 * 60 * 1000)
struct verifycache *verifycache_new(long negative_ttl_ms); /* NULL: out of memory */
void verifycache_free(struct verifycache *c);
size_t verifycache_len(const struct verifycache *c);

/* A gate for cfg's policies, whose Secrets are folders of secrets_dir (NULL: "."), one pass's:
 * its verdicts go to cache (borrowed; NULL: a cache of the gate's own, gone with it). Nothing
 * is loaded yet. Returns 0 or IG_EFAIL (out of memory). */
int verifygate_new(struct verifygate **out, const struct config *cfg, const char *secrets_dir,
                   struct verifycache *cache, struct error *err);
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
 * was made (this pass). */
size_t verifygate_checks(const struct verifygate *g);
unsigned verifygate_requests(const struct verifygate *g);

#endif
