/* What one marker's decision reads during a pass (struct decide_io): the HEAD cache, build
 * times, the marker's Git history, the settle memory, and the listings as each is final. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile_private.h"
#include "imageguard/guard/guard.h"
#include "imageguard/pass/markerhistory.h"
#include "imageguard/pass/scan.h"
#include "imageguard/pass/settle.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/policy/policy.h"
#include "imageguard/pass/buildtime.h"
#include "imageguard/pass/headcache.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/pass/verifygate.h"
#include "imageguard/registry/sigfetch.h"
#include "imageguard/sigstore/sigverify.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "imageguard/util/strvec.h"

/* The HEAD of repo:ref in this pass, done once and remembered (every marker, every push
 * attempt). */
static int io_head(void *ctx, size_t repo, const char *ref, enum guard_head *result,
                   const char **digest, const char **error)
{
	struct pass *p = ctx;
	const struct scan *sc = &p->scans[repo];
	struct headcache_entry *h;
	struct registry_target t;

	scan_target(&t, sc);
	if (!(h = headcache_get(p->heads, p->client, &t, sc->repo->id, ref)))
		return IG_EFAIL;
	*result = h->rc == 0              ? GUARD_HEAD_OK
	          : h->rc == IG_ENOTFOUND ? GUARD_HEAD_NOT_FOUND
	                                  : GUARD_HEAD_FAILED;
	*digest = h->digest;
	*error = h->error;
	if (h->rc < 0 && !h->logged) {
		h->logged = true;
		log_warn("registry.head", "repository '%s' tag '%s': %s", sc->repo->id, ref,
		         h->error);
	}
	return 0;
}

static int io_created(void *ctx, size_t repo, const char *digest, const char *platform,
                      const struct guard_created **out)
{
	struct pass *p = ctx;
	struct registry_target t;

	scan_target(&t, &p->scans[repo]);
	return buildtime_get(out, p->buildtimes, p->client, &t, repo, digest, platform);
}

static int io_replaced(void *ctx, const struct config_automation *a, const struct marker *m,
                       const char *digest, bool *out, struct error *err)
{
	struct pass *p = ctx;
	struct autorun *ar = &p->autoruns[a - p->cfg->automations];

	*out = false;
	if (!ar->g)
		return error_set(err, IG_EFAIL, "automation '%s': no clone", a->id);
	return markerhistory_replaced(out, gitstore_workdir(ar->g), m, digest, err);
}

static int io_listed_since(void *ctx, size_t policy, const char *candidate, const char *digest,
                           time_t *out)
{
	struct pass *p = ctx;

	*out = settle_since(p->settle, p->cfg->policies[policy].id, candidate, digest, p->now);
	return *out == (time_t)-1 ? IG_EFAIL : 0;
}

/* The signature gate over the candidate's repository (CONTRACT §12): the gate's cache first,
 * else the registry, the pass's listing sparing requests for signature tags it lacks. */
static int io_verify(void *ctx, size_t policy, size_t repo, const char *digest,
                     struct decide_verified *out, struct error *err)
{
	struct pass *p = ctx;
	const struct scan *sc = &p->scans[repo];
	struct registry_target t;
	const struct decide_listing *l = &p->listings[repo];
	struct sigfetch sf = {p->client, &t, NULL, 0, false};
	struct sigverify_source src = {sigfetch_manifest, sigfetch_blob, sigfetch_referrers,
	                               sigfetch_has_tag, &sf};
	int rc;

	scan_target(&t, sc);
	/* the listing decide reads (a packed one is open while its policy is decided) */
	if (l->ok && l->tags) {
		sf.tags = l->tags;
		sf.tags_len = l->tags_len;
	}
	rc = verifygate_check(p->verify, policy, digest, &src, out, err);
	passmetrics_verify(p->o->metrics, p->cfg->policies[policy].id,
	                   rc < 0 ? "error" : out->status);
	if (rc == 0 && strcmp(out->status, "ok") != 0)
		log_warn("verify.unverified", "policy '%s' digest '%s': %s%s%s",
		         p->cfg->policies[policy].id, digest, out->status, *out->detail ? ": " : "",
		         out->detail);
	return rc;
}

static bool any_verified(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->policies_len; i++)
		if (cfg->policies[i].verify.provider)
			return true;
	return false;
}

/* The listings as decide reads them: none yet (each is filled by reconcile_listing_fill once
 * final). */
int reconcile_io_init(struct pass *p)
{
	size_t n = p->cfg->repositories_len;

	if (!(p->listings = calloc(n ? n : 1, sizeof(*p->listings))))
		return IG_EFAIL;
	p->open_repo = SIZE_MAX;
	if (any_verified(p->cfg)) {
		struct error err = ERROR_INIT;

		if (verifygate_new(&p->verify, p->cfg, p->o->secrets_dir, p->o->verify_cache,
		                   &err) < 0)
			return IG_EFAIL;
	}
	p->io = (struct decide_io){
	    io_head, io_created, io_replaced, io_listed_since, p->verify ? io_verify : NULL, p};
	p->env = (struct decide_env){p->cfg, p->now, p->listings, &p->io};
	return 0;
}

/* Points listing r's tags at its scan's, a packed one's rebuilt in the scratch (given up by
 * the listing that had it). 0 or IG_EFAIL. */
static int open_listing(struct pass *p, size_t r)
{
	const struct scan *sc = &p->scans[r];
	struct decide_listing *l = &p->listings[r];

	if (!l->ok || !sc->packed || p->open_repo == r)
		return 0;
	if (sc->listing.tags.len + 1 > p->scratch_cap) {
		size_t cap = sc->listing.tags.len + 1;
		const char **s = realloc(p->scratch, cap * sizeof(*s));

		if (!s)
			return IG_EFAIL;
		p->scratch = s;
		p->scratch_cap = cap;
	}
	if (p->open_repo != SIZE_MAX)
		p->listings[p->open_repo].tags = NULL;
	l->tags = scan_tags(sc, p->scratch);
	p->open_repo = r;
	return 0;
}

int reconcile_listing_open(struct pass *p, size_t policy)
{
	return open_listing(p, p->policy_repo[policy]);
}

/* Repository r's listing is final: decide may read it (a packed one once opened), and
 * settle windows learn what it holds. Called once per repository, on the pass's thread. */
/* a listing's key is what policy_select_keyed remembers a pick under */
_Static_assert(POLICY_LISTING_KEY_LEN == LISTMEMO_KEY_LEN, "one key length");

void reconcile_listing_fill(struct pass *p, size_t r)
{
	const struct scan *sc = &p->scans[r];
	struct decide_listing *l = &p->listings[r];

	l->done = sc->done;
	l->ok = sc->done && sc->rc == 0;
	l->error = sc->done && sc->rc < 0 ? sc->error : NULL;
	if (l->ok) {
		l->tags = sc->packed ? NULL : (const char *const *)sc->listing.tags.items;
		l->tags_len = sc->listing.tags.len;
		l->key = sc->listing.keyed ? sc->listing.key : NULL;
	}
	/* only the policies with a settle window: a loop over every policy per listing made the
	 * pass quadratic */
	for (size_t k = 0; l->ok && k < p->settled_len; k++) {
		size_t i = p->settled[k];

		if (p->policy_repo[i] != r)
			continue;
		if (open_listing(p, r) < 0) { /* out of memory: the clock kept, as on a failure */
			log_error("settle.state", "policy '%s': out of memory",
			          p->cfg->policies[i].id);
			continue;
		}
		settle_keep_listed(p->settle, p->cfg->policies[i].id, l->tags, l->tags_len);
	}
}
