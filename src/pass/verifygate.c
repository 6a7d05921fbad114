/* The pass's signature gate: see verifygate.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One verdict: (digest, fingerprint) -> status, signer, detail. */
struct verdict {
	char *digest, *fingerprint;
	char status[32];
	char signer[SIGVERIFY_SIGNER_MAX];
	char detail[SIGVERIFY_DETAIL_MAX];
};

struct verifygate {
	const struct config *cfg;
	char *secrets_dir;
	struct gate_policy *policies; /* one per config policy */
	struct verdict *verdicts;
	size_t len, cap;
	size_t checks;
	unsigned requests;
};

int verifygate_new(struct verifygate **out, const struct config *cfg, const char *secrets_dir,
                   struct error *err)
{
	struct verifygate *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g || !(g->secrets_dir = strdup(secrets_dir ? secrets_dir : ".")) ||
	    !(g->policies =
	          calloc(cfg->policies_len ? cfg->policies_len : 1, sizeof(*g->policies)))) {
		verifygate_free(g);
		return error_set(err, IG_EFAIL, "out of memory");
	}
	g->cfg = cfg;
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
	for (size_t i = 0; i < g->len; i++) {
		free(g->verdicts[i].digest);
		free(g->verdicts[i].fingerprint);
	}
	free(g->verdicts);
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

static const struct verdict *find(const struct verifygate *g, const char *digest,
                                  const char *fingerprint)
{
	for (size_t i = 0; i < g->len; i++)
		if (!strcmp(g->verdicts[i].digest, digest) &&
		    !strcmp(g->verdicts[i].fingerprint, fingerprint))
			return &g->verdicts[i];
	return NULL;
}

static struct verdict *add(struct verifygate *g, const char *digest, const char *fingerprint)
{
	struct verdict *v;

	if (g->len == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;
		void *p = realloc(g->verdicts, cap * sizeof(*g->verdicts));

		if (!p)
			return NULL;
		g->verdicts = p;
		g->cap = cap;
	}
	v = &g->verdicts[g->len];
	memset(v, 0, sizeof(*v));
	if (!(v->digest = strdup(digest)) || !(v->fingerprint = strdup(fingerprint))) {
		free(v->digest);
		free(v->fingerprint);
		return NULL;
	}
	g->len++;
	return v;
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
	const struct verdict *hit;
	struct sigverify_result r = {0};
	struct verdict *v;
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
	if ((hit = find(g, digest, sigverify_policy_fingerprint(gp->sp)))) {
		answer(out, hit);
		return 0;
	}
	rc = sigverify_check(&r, gp->sp, digest, src, err);
	g->checks++;
	g->requests += r.requests;
	if (rc < 0)
		return rc;
	if (!(v = add(g, digest, sigverify_policy_fingerprint(gp->sp))))
		return error_set(err, IG_EFAIL, "out of memory");
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
