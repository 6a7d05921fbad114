/* Sharding by hash (`--shards N --shard-index I`): the unit a shard owns is a normalised
 * (Git URL, push branch) pair, hashed (FNV-1a 64, then fmix64) modulo N, so that every
 * automation writing the same branch of the same repository lands on the same shard and two
 * shards never push to one pair. Pure functions, thread-safe. */
#ifndef IMAGEGUARD_SHARD_H
#define IMAGEGUARD_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct config_automation;
struct config_policy;
struct error;

/* Longest Git URL or branch normalised; longer is IG_EINVALID. */
#define SHARD_MAX_URL 4096

/* Which instance this is: a label selector (--watch-label-selector, NULL: none) and a hash
 * shard (shards 0: no hash sharding; else 0 <= index < shards). */
struct shard_spec {
	const char *selector; /* borrowed */
	unsigned shards;
	unsigned index;
};

#define SHARD_SPEC_INIT                                                                            \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

/* The normalised Git URL of url into *out (newly allocated, free() it): the scheme and user
 * dropped for ssh, http and https (scp-like "user@host:path" is ssh), the host lower-cased,
 * the default port (22, 80, 443) dropped, repeated '/' folded, and trailing '/' and one ".git"
 * dropped: "ssh://git@GitHub.com:22/org/app.git/" and "git@github.com:org/app" both give
 * "github.com/org/app". file:// URLs and plain paths keep "file://" and their path.
 * The URL is split by giturl_parse, the transport's own parser. Returns 0, IG_EINVALID
 * (empty, too long, or refused by giturl_parse: no host, a bad scheme or port) or
 * IG_EFAIL (out of memory), err set. */
int shard_normalize_url(char **out, const char *url, struct error *err);

/* The push branch of a (refs/heads/ dropped): git.push.branch, else the destination of
 * git.push.refspec when only it is given, else the checkout branch. Borrowed from a, or a
 * pointer into its refspec; never NULL. */
const char *shard_push_branch(const struct config_automation *a);

/* FNV-1a 64 (offset basis 14695981039346656037, prime 1099511628211) of the unit
 * "<normalised url>\n<branch>", then MurmurHash3's fmix64 finaliser (x ^= x >> 33;
 * x *= 0xff51afd7ed558ccd; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53; x ^= x >> 33), so that every
 * bit of the result, the low ones too, depends on every byte. */
uint64_t shard_hash(const char *normalised_url, const char *branch);

/* The shard (0..shards-1) that owns a's (URL, push branch) pair. Returns 0 or the error of
 * shard_normalize_url. shards must be at least 1. */
int shard_of(unsigned *out, const struct config_automation *a, unsigned shards, struct error *err);

/* Whether the instance s acts on automation a: always when s is NULL or s->shards is 0, else
 * when shard_of is s->index. A URL that cannot be normalised (it failed validation already)
 * belongs to shard 0, so exactly one shard reports it. */
bool shard_owns(const struct shard_spec *s, const struct config_automation *a);

/* Whether the instance s reports policy p when no marker of its own automations names it:
 * when every automation of c that selects p is its own (another shard may write p), or, for a
 * policy no automation selects, when s is shard 0. Always true without hash sharding. owns
 * (NULL: computed here) holds shard_owns for each of c's automations, so that a pass hashes
 * each URL once rather than once per policy. */
bool shard_reports_policy(const struct shard_spec *s, const struct config *c, const bool *owns,
                          const struct config_policy *p);

/* The string naming this instance's shard, for the leader-election Lease's name (lease_name
 * hashes it): "" without sharding, the selector alone by label (so a label shard's Lease is
 * named from its selector, as before hash sharding existed), "shards=N/index=I" by hash, and
 * "<selector>;shards=N/index=I" with both. Newly allocated (free() it); NULL when out of
 * memory. */
char *shard_key(const struct shard_spec *s);

#endif
