/* The pass's signature gate: see verifygate.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/config/config.h"
#include "imageguard/guard/decide.h"
#include "imageguard/pass/verifygate.h"
#include "imageguard/sigstore/oidcmatch.h"
#include "imageguard/sigstore/sigverify.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/error.h"

/* One policy's verification, loaded at its first candidate. */
struct gate_policy {
	bool loaded;
	struct sigverify_policy *sp; /* NULL with loaded: failed, error in load_error */
	char *load_error;
};

/* Which signature tags the pass's listing shows for a digest. */
enum {
	SIGTAG_COSIGN = 1,   /* sha256-<hex>.sig */
	SIGTAG_FALLBACK = 2, /* sha256-<hex>, the referrers tag scheme */
	SIGTAG_UNKNOWN = 4   /* no listing to ask */
};

/* One verdict: (digest, fingerprint) -> status, signer, detail, and when it was reached. */
struct verdict {
	char *digest, *fingerprint;
	char status[32];
	char signer[SIGVERIFY_SIGNER_MAX];
	char detail[SIGVERIFY_DETAIL_MAX];
	unsigned sigtags;   /* SIGTAG_* at the time */
	unsigned long pass; /* the cache's pass number */
	long long at_ms;    /* monotonic */
};

struct verifycache {
	struct verdict *verdicts;
	size_t len, cap;
	unsigned long pass; /* one more for every gate made over it */
	long negative_ttl_ms;
};

struct verifygate {
	const struct config *cfg;
	char *secrets_dir;
	struct gate_policy *policies; /* one per config policy */
	struct verifycache *cache;
	struct verifycache *own; /* the cache when the caller gave none */
	size_t checks;
	unsigned requests;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct verifycache *verifycache_new(long negative_ttl_ms)
{
	struct verifycache *c = calloc(1, sizeof(*c));

	if (c)
		c->negative_ttl_ms = negative_ttl_ms;
	return c;
}

static void verdict_release(struct verdict *v)
{
	free(v->digest);
	free(v->fingerprint);
}

void verifycache_free(struct verifycache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->len; i++)
		verdict_release(&c->verdicts[i]);
	free(c->verdicts);
	free(c);
}

size_t verifycache_len(const struct verifycache *c)
{
	return c->len;
}

int verifygate_new(struct verifygate **out, const struct config *cfg, const char *secrets_dir,
                   struct verifycache *cache, struct error *err)
{
	struct verifygate *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g || !(g->secrets_dir = strdup(secrets_dir ? secrets_dir : ".")) ||
	    !(g->policies =
	          calloc(cfg->policies_len ? cfg->policies_len : 1, sizeof(*g->policies))) ||
	    (!cache && !(cache = g->own = verifycache_new(0)))) {
		verifygate_free(g);
		return error_set(err, IG_EFAIL, "out of memory");
	}
	g->cfg = cfg;
	g->cache = cache;
	cache->pass++;
	*out = g;
	return 0;
}

void verifygate_free(struct verifygate *g)
{
	if (!g)
		return;
	for (size_t i = 0; g->policies && i < g->cfg->policies_len; i++) {
		sigverify_policy_free(g->policies[i].sp);
		free(g->policies[i].load_error);
	}
	verifycache_free(g->own);
	free(g->policies);
	free(g->secrets_dir);
	free(g);
}

/* The policy's trust root from <secrets_dir>/<secret> and its identity rules. */
static int load(struct gate_policy *gp, const struct config_verify *v, const char *secrets_dir,
                struct error *err)
{
	struct oidcmatch_rule rules[OIDCMATCH_MAX_RULES];
	struct sigverify_options o = {rules, 0, false, NULL, 0};
	struct trustroot *tr = NULL;
	char dir[4200];
	int rc;

	for (size_t i = 0; i < v->identities_len && i < OIDCMATCH_MAX_RULES; i++)
		rules[o.n_identities++] =
		    (struct oidcmatch_rule){v->identities[i].issuer, v->identities[i].subject};
	snprintf(dir, sizeof(dir), "%s/%s", secrets_dir, v->secret ? v->secret : "");
	if ((rc = trustroot_load(&tr, dir, v->secret ? v->secret : "", err)) < 0)
		return rc == IG_EFAIL ? rc : IG_EINVALID;
	rc = sigverify_policy_new(&gp->sp, tr, &o, err); /* takes tr */
	return rc < 0 && rc != IG_EFAIL ? IG_EINVALID : rc;
}

static struct verdict *find(const struct verifycache *c, const char *digest,
                            const char *fingerprint)
{
	for (size_t i = 0; i < c->len; i++)
		if (!strcmp(c->verdicts[i].digest, digest) &&
		    !strcmp(c->verdicts[i].fingerprint, fingerprint))
			return &c->verdicts[i];
	return NULL;
}

/* Whether v answers this pass, whose listing shows sigtags for the digest. A failure with a
 * signature tag listed is asked again every pass: cosign adds a signature to the same `.sig`
 * tag, so a good one may replace a bad one without any change to the listing. */
static bool reusable(const struct verifycache *c, const struct verdict *v, unsigned sigtags)
{
	return v->pass == c->pass || !strcmp(v->status, "ok") ||
	       (sigtags == 0 && v->sigtags == 0 && now_ms() - v->at_ms < c->negative_ttl_ms);
}

/* The entry for (digest, fingerprint): its old one, a new one, or the oldest one's place
 * when the cache is full. NULL: out of memory. */
static struct verdict *slot(struct verifycache *c, const char *digest, const char *fingerprint)
{
	struct verdict *v = find(c, digest, fingerprint);

	if (v)
		return v;
	if (c->len == VERIFYCACHE_MAX) {
		v = &c->verdicts[0];
		for (size_t i = 1; i < c->len; i++)
			if (c->verdicts[i].at_ms < v->at_ms)
				v = &c->verdicts[i];
		verdict_release(v);
	} else {
		if (c->len == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 8;
			void *p = realloc(c->verdicts, cap * sizeof(*c->verdicts));

			if (!p)
				return NULL;
			c->verdicts = p;
			c->cap = cap;
		}
		v = &c->verdicts[c->len++];
	}
	memset(v, 0, sizeof(*v));
	if (!(v->digest = strdup(digest)) || !(v->fingerprint = strdup(fingerprint))) {
		verdict_release(v);
		*v = c->verdicts[--c->len]; /* the last entry fills the hole */
		return NULL;
	}
	return v;
}

static unsigned sigtags(const struct sigverify_source *src, const char *digest)
{
	char tag[160];
	unsigned tags = 0;
	int has;

	if (!src->has_tag || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) > 100)
		return SIGTAG_UNKNOWN;
	snprintf(tag, sizeof(tag), "sha256-%s.sig", digest + 7);
	if ((has = src->has_tag(src->ctx, tag)) < 0)
		return SIGTAG_UNKNOWN;
	tags |= has ? SIGTAG_COSIGN : 0;
	tag[strlen(tag) - 4] = '\0';
	if ((has = src->has_tag(src->ctx, tag)) < 0)
		return SIGTAG_UNKNOWN;
	return tags | (has ? SIGTAG_FALLBACK : 0);
}

static void answer(struct decide_verified *out, const struct verdict *v)
{
	out->status = v->status;
	out->signer = *v->signer ? v->signer : NULL;
	out->detail = v->detail;
}

int verifygate_check(struct verifygate *g, size_t policy, const char *digest,
                     const struct sigverify_source *src, struct decide_verified *out,
                     struct error *err)
{
	struct gate_policy *gp = &g->policies[policy];
	const char *fingerprint;
	struct sigverify_result r = {0};
	struct verdict *v;
	unsigned tags;
	int rc;

	if (!gp->loaded) {
		gp->loaded = true;
		if ((rc = load(gp, &g->cfg->policies[policy].verify, g->secrets_dir, err)) < 0) {
			gp->load_error = strdup(err->msg);
			return rc;
		}
	}
	if (!gp->sp)
		return error_set(err, IG_EINVALID, "%s",
		                 gp->load_error ? gp->load_error : "trust root not loaded");
	fingerprint = sigverify_policy_fingerprint(gp->sp);
	tags = sigtags(src, digest);
	if ((v = find(g->cache, digest, fingerprint)) && reusable(g->cache, v, tags)) {
		answer(out, v);
		return 0;
	}
	rc = sigverify_check(&r, gp->sp, digest, src, err);
	g->checks++;
	g->requests += r.requests;
	if (rc < 0)
		return rc;
	if (!(v = slot(g->cache, digest, fingerprint)))
		return error_set(err, IG_EFAIL, "out of memory");
	v->sigtags = tags;
	v->pass = g->cache->pass;
	v->at_ms = now_ms();
	snprintf(v->status, sizeof(v->status), "%s", sigverify_status_name(r.status));
	snprintf(v->signer, sizeof(v->signer), "%s", r.status == SIGVERIFY_OK ? r.signer : "");
	snprintf(v->detail, sizeof(v->detail), "%s", r.detail);
	answer(out, v);
	return 0;
}

size_t verifygate_checks(const struct verifygate *g)
{
	return g->checks;
}

unsigned verifygate_requests(const struct verifygate *g)
{
	return g->requests;
}
