/* One pass of the controller, in its phases: open every automation's Git tree and read its
 * markers (those with a Git cache of their own side by side); list each repository a marker needs
 * (once, concurrently, on a thread of its own); finish each automation as soon as its repositories
 * are listed (decide every marker, commit, report; its push on a thread of its own, landed while
 * later automations are decided); then the policies no marker names, audit, settle memory and
 * metrics. The commit's edit callback re-reads the markers and decides again on whatever head it is
 * given, so a value is only ever written forward of what is committed at that moment. The phases'
 * parts live beside it (reconcile_private.h): the decisions in reconcile_decide.c, the I/O they
 * read in reconcile_io.c, the commit in reconcile_commit.c and the report in
 * reconcile_report.c. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__) /* set by the headers above */
#include <malloc.h>
#endif

#include "reconcile_private.h"
#include "imageguard/pass/shard.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/pass/scan.h"
#include "imageguard/pass/settle.h"
#include "imageguard/pass/verifygate.h"
#include "imageguard/pass/gitmarkers.h"
#include "imageguard/git/gitauth.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/pass/buildtime.h"
#include "imageguard/pass/headcache.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

/* ---- one automation ---- */

int reconcile_scan_markers(struct autorun *ar, const char *workdir, struct error *err)
{
	int error;

	markers_release(&ar->markers);
	ar->ready_from = 0;
	/* the clone's own checkout: through the marker index, reading only changed blobs */
	if (ar->g && strcmp(workdir, gitstore_workdir(ar->g)) == 0)
		error = gitmarkers_scan(&ar->markers, ar->g, ar->a->update_path, &ar->markers_epoch,
		                        err);
	else
		error = markers_scan_tree(&ar->markers, workdir, ar->a->update_path, err);
	if (error < 0)
		return error == IG_ENOTFOUND ? config_automation_path_error(err, ar->a) : error;
	log_debug("markers.scan", "automation '%s': %zu markers", ar->a->id, ar->markers.len);
	for (size_t i = 0; i < ar->markers.problems_len; i++)
		log_warn("markers.problem", "automation '%s': %s:%zu: %s", ar->a->id,
		         ar->markers.problems[i].file, ar->markers.problems[i].line,
		         ar->markers.problems[i].message);
	return 0;
}

/* Phase one's I/O for an automation: its clone opened (fetched to the remote's head) and its
 * markers read. Touches nothing but ar, so automations with caches of their own are opened
 * side by side (open_all). */
static int open_git_and_markers(struct autorun *ar, struct error *err)
{
	if (reconcile_open_git(ar, err) < 0)
		return -1;
	return reconcile_scan_markers(ar, gitstore_workdir(ar->g), err);
}

/* Phase one for an automation, once its clone is open or failed (error, err): notes which
 * policies are marked so that only the repositories they use are listed. */
static void note_markers(struct autorun *ar, int error, const struct error *err)
{
	struct pass *p = ar->p;

	if (error < 0) {
		if (p->o->marker_named)
			p->o->marker_named(p->o->marker_ctx, NULL);
		reconcile_automation_failed(p, ar->a, err);
		gitstore_free(ar->g);
		ar->g = NULL;
		markers_release(&ar->markers);
		return;
	}
	ar->state = AUTORUN_OPEN;
	for (size_t i = 0; i < ar->markers.len; i++) {
		const struct marker *m = &ar->markers.items[i];
		const struct config_policy *pol = config_find_policy_id(p->cfg, m->policy);
		bool kept = !p->o->marker_named || p->o->marker_named(p->o->marker_ctx, m->policy);

		if (pol && config_automation_selects(ar->a, pol))
			p->policy_marked[reconcile_policy_index(p->cfg, pol)] = true;
		else if (pol)
			log_debug(
			    "markers.not-selected",
			    "automation '%s': %s:%zu: policy '%s' is not selected (namespace, "
			    "spec.policySelector): left untouched",
			    ar->a->id, m->file, m->line, m->policy);
		else if (!kept)
			log_debug(
			    "markers.not-kept",
			    "automation '%s': %s:%zu: policy '%s' is listed for the next pass",
			    ar->a->id, m->file, m->line, m->policy);
		else if (!config_find_invalid_id(p->cfg, CONFIG_KIND_POLICY, m->policy))
			log_warn("markers.unknown-policy",
			         "automation '%s': %s:%zu: marker names policy '%s', absent from "
			         "the configuration",
			         ar->a->id, m->file, m->line, m->policy);
	}
}

/* Whether another automation of the pass uses automation at's Git cache: its URL without the
 * user info (keys[], gitauth_scrub_url: the cache's key; NULL, out of memory: any), so that
 * "https://x@host/repo" beside "https://host/repo" is one cache too. The cache is locked while
 * open, so both close their clones after phase one and reopen them, one at a time, to commit. */
static bool cache_shared(size_t at, char *const *keys, const struct autorun *all, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (i != at && all[i].state != AUTORUN_FOREIGN &&
		    (!keys[i] || !keys[at] || strcmp(keys[i], keys[at]) == 0))
			return true;
	return false;
}

/* The report items of ar's decisions from item number first on, in marker order, then their
 * counts. When the commit decided again (every item kept), the early items are redone. */
static int report_items(struct autorun *ar, size_t first)
{
	int error = 0;

	if (ar->partial) {
		for (size_t k = 0; k < ar->len && error == 0; k++)
			error = reconcile_report_fill(ar, &ar->report.items[ar->slots[k]],
			                              &ar->items[k]);
	} else {
		report_truncate(&ar->report, first);
		for (size_t i = 0; i < ar->len && error == 0; i++) {
			struct report_item *it;

			if ((error = report_add(&it, &ar->report)) == 0)
				error = reconcile_report_fill(ar, it, &ar->items[i]);
		}
	}
	for (size_t i = first; i < ar->report.len && error == 0; i++)
		reconcile_report_count(ar->p, &ar->report.items[i]);
	return error;
}

/* Phase two, after the listings: decide, commit, report. When the commit's push is left in
 * flight (ar->pushing), land_oldest reports it once it lands. */
static int finish_automation(struct autorun *ar)
{
	struct error err = ERROR_INIT;
	int error = 0;

	ar->report_first = ar->report.len;
	if (ar->state == AUTORUN_UNREAD)
		return 0;
	if (ar->state == AUTORUN_PARKED && reconcile_open_git(ar, &err) < 0) {
		log_error("git.open", "automation '%s': %s", ar->a->id, err.msg);
		if ((error = reconcile_decide_all(ar)) < 0)
			return error;
		for (size_t i = 0; i < ar->len; i++) {
			guard_fail(&ar->items[i].d, GUARD_GIT, "%s", err.msg);
			free(ar->items[i].new_value);
			ar->items[i].new_value = NULL;
		}
		goto report;
	}
	if ((error = reconcile_decide_and_report(ar)) < 0)
		return error;
	if (!ar->p->o->dry_run && reconcile_any_write(ar) && reconcile_commit_start(ar) > 0) {
		ar->pushing = true;
		return 0;
	}
report:
	return report_items(ar, ar->report_first);
}

static void autorun_release(struct autorun *ar)
{
	/* the report stays: list_and_finish joins it to the pass's */
	reconcile_decided_release(ar);
	markers_release(&ar->markers);
	gitstore_free(ar->g);
	ar->g = NULL;
}

/* Nothing is left to do for ar in this pass but list_and_finish's join of its report. */
static void retire(struct autorun *ar)
{
	ar->state = AUTORUN_FINISHED;
	autorun_release(ar);
}

/* Pushes in flight at once, each to its own automation's remote, while the pass decides the
 * next automations: a pass that commits to several remotes waits about for the slowest push
 * instead of their sum. */
#define FLIGHT_MAX 4

struct flight {
	struct autorun *ar[FLIGHT_MAX]; /* oldest first */
	size_t len;
};

/* Lands the oldest push in flight and reports its automation; the first error is kept. */
static void land_oldest(struct flight *f, int *error)
{
	struct autorun *ar = f->ar[0];
	int rc;

	memmove(f->ar, f->ar + 1, --f->len * sizeof(f->ar[0]));
	reconcile_commit_finish(ar);
	ar->pushing = false;
	rc = report_items(ar, ar->report_first);
	if (*error == 0)
		*error = rc;
	retire(ar);
}

/* ---- listings as they complete ---- */

/* The scan runs on its own thread while the pass finishes each automation as soon as the
 * repositories it needs are listed: one slow registry delays only the policies that use it. */
struct progress {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool *listed;  /* per repository: its listing is final (scan's done hook) */
	bool *awaited; /* per repository: an automation the pass waits for needs it next */
	bool finished; /* scan_run_hooked returned */
	int rc;
	struct error err;
	struct pass *p;
};

static void on_listed(void *ctx, size_t r)
{
	struct progress *g = ctx;

	pthread_mutex_lock(&g->mu);
	g->listed[r] = true;
	/* only a listing some waiting automation needs next can make one ready: waking the pass
	 * for every listing was a context switch per repository (5,000 at 5,000 policies) */
	if (g->awaited[r])
		pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void *scan_main(void *arg)
{
	struct progress *g = arg;
	struct pass *p = g->p;
	struct scan_hooks hooks = {on_listed, g};
	struct error err = ERROR_INIT;
	int rc = scan_run_hooked(p->scans, p->cfg->repositories_len, p->client, p->o->secrets_dir,
	                         p->o->concurrency, &hooks, &err);

	pthread_mutex_lock(&g->mu);
	g->rc = rc;
	g->err = err;
	g->finished = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* Whether repository r's listing is final (or will never be made). Under g->mu. */
static bool repository_final(const struct progress *g, size_t r)
{
	const struct scan *sc = &g->p->scans[r];

	return g->finished || g->listed[r] || !sc->wanted || sc->repo->suspend;
}

/* The repository marker k of ar needs, if its listing is not final yet. Under g->mu. */
static bool needs_unlisted(const struct progress *g, const struct autorun *ar, size_t k, size_t *r)
{
	const struct pass *p = g->p;
	const struct config_policy *pol =
	    config_find_policy_id(p->cfg, ar->markers.items[k].policy);

	if (!pol || !config_automation_selects(ar->a, pol))
		return false;
	*r = p->policy_repo[reconcile_policy_index(p->cfg, pol)];
	return !repository_final(g, *r);
}

/* Whether every repository ar's markers need is final. If not, the one of them listed last
 * (the highest index: the scan takes them in index order) is marked awaited, so the pass
 * sleeps until then: waiting for the first one instead woke it about once per repository.
 * Under g->mu. A listing once final stays final, so
 * each call resumes at the first marker still waiting. */
static bool automation_ready(const struct progress *g, struct autorun *ar)
{
	size_t r, last = 0;

	while (ar->ready_from < ar->markers.len && !needs_unlisted(g, ar, ar->ready_from, &r))
		ar->ready_from++;
	if (ar->ready_from == ar->markers.len)
		return true;
	for (size_t k = ar->ready_from; k < ar->markers.len; k++)
		if (needs_unlisted(g, ar, k, &r) && r > last)
			last = r;
	g->awaited[last] = true;
	return false;
}

/* The next automation whose repositories are listed, waiting for listings as needed; NULL when
 * every automation is finished. Fills the listings that became final. */
static struct autorun *next_ready(struct progress *g)
{
	struct pass *p = g->p;
	struct autorun *ready = NULL;
	bool left;

	pthread_mutex_lock(&g->mu);
	for (;;) {
		left = false;
		for (size_t i = 0; i < p->cfg->automations_len && !ready; i++) {
			struct autorun *ar = &p->autoruns[i];

			left |= !autorun_done(ar) && !ar->pushing;
			if (!autorun_done(ar) && !ar->pushing && automation_ready(g, ar))
				ready = ar;
		}
		if (ready || !left)
			break;
		pthread_cond_wait(&g->cv, &g->mu);
	}
	p->listings_final = true;
	for (size_t r = 0; ready && r < p->cfg->repositories_len; r++) {
		p->listings_final &= repository_final(g, r);
		if (!p->filled[r] && (g->finished || g->listed[r])) {
			reconcile_listing_fill(p, r);
			p->filled[r] = true;
		}
	}
	pthread_mutex_unlock(&g->mu);
	return ready;
}

/* Lists and finishes every automation; the pass's report gets their items in config order. */
static int list_and_finish(struct pass *p, struct error *err)
{
	struct progress g = {.mu = PTHREAD_MUTEX_INITIALIZER,
	                     .cv = PTHREAD_COND_INITIALIZER,
	                     .err = ERROR_INIT,
	                     .p = p};
	struct autorun *ar;
	struct flight fl = {.len = 0};
	pthread_t th;
	int error = 0;

	if (!(g.listed = calloc(2 * (p->cfg->repositories_len + 1), sizeof(bool))) ||
	    !(p->filled = calloc(p->cfg->repositories_len + 1, sizeof(bool)))) {
		free(g.listed);
		return error_oom(err);
	}
	g.awaited = g.listed + p->cfg->repositories_len + 1;
	if (pthread_create(&th, NULL, scan_main, &g) != 0) {
		free(g.listed);
		return error_set(err, IG_EFAIL, "reconcile: cannot start the listings");
	}
	while (error == 0 && (ar = next_ready(&g))) {
		/* a parked automation opens the cache a push in flight may hold (same URL) */
		while (fl.len && (fl.len == FLIGHT_MAX || ar->state == AUTORUN_PARKED))
			land_oldest(&fl, &error);
		if (error == 0 && !(p->o->stop && *p->o->stop))
			error = finish_automation(ar);
		if (ar->pushing)
			fl.ar[fl.len++] = ar;
		else
			retire(ar);
	}
	while (fl.len) /* finished, never cut: also under SIGTERM or after an error */
		land_oldest(&fl, &error);
	pthread_join(th, NULL);
	for (size_t r = 0; r < p->cfg->repositories_len; r++)
		if (!p->filled[r]) {
			reconcile_listing_fill(p, r);
			p->filled[r] = true;
		}
	for (size_t i = 0; error == 0 && i < p->cfg->automations_len; i++)
		error = report_join(p->report, &p->autoruns[i].report);
	free(g.listed);
	if (g.rc < 0)
		return error_set(err, g.rc, "%s", g.err.msg);
	return error < 0 ? error_set(err, error, "reconcile: out of memory") : 0;
}

/* ---- the pass ---- */

/* Returns the pass's freed pages to the system before the report is printed and the next
 * pass runs. The listings were allocated on the scan threads and freed here: their arenas
 * keep those pages otherwise (glibc trims a thread arena only above a threshold that rises
 * past 1 MiB once a large block, such as the config file's, was freed). */
static void give_back_memory(void)
{
#if defined(__GLIBC__)
	malloc_trim(0);
#endif
}

static size_t repository_index(const struct config *cfg, const struct config_repository *r)
{
	return (size_t)(r - cfg->repositories);
}

static int pass_init(struct pass *p, struct report *out, const struct reconcile_options *o,
                     struct error *err)
{
	const struct config *cfg = o->config;

	memset(p, 0, sizeof(*p));
	p->o = o;
	p->cfg = cfg;
	p->report = out;
	p->now = time(NULL);
	p->scans = calloc(cfg->repositories_len ? cfg->repositories_len : 1, sizeof(*p->scans));
	p->policy_repo = calloc(cfg->policies_len ? cfg->policies_len : 1, sizeof(size_t));
	p->policy_marked = calloc(cfg->policies_len ? cfg->policies_len : 1, sizeof(bool));
	p->autoruns = calloc(cfg->automations_len ? cfg->automations_len : 1, sizeof(*p->autoruns));
	p->settled = calloc(cfg->policies_len ? cfg->policies_len : 1, sizeof(size_t));
	p->owned = calloc(cfg->automations_len ? cfg->automations_len : 1, sizeof(bool));
	if (!p->scans || !p->policy_repo || !p->policy_marked || !p->autoruns || !p->settled ||
	    !p->owned || buildtime_new(&p->buildtimes) < 0 || headcache_new(&p->heads) < 0)
		return error_oom(err);
	if (settle_open(&p->settle, o->state_dir, err) < 0)
		return err->code;
	for (size_t i = 0; i < cfg->repositories_len; i++)
		p->scans[i].repo = &cfg->repositories[i];
	for (size_t i = 0; i < cfg->policies_len; i++) {
		p->policy_repo[i] = repository_index(cfg, cfg->policies[i].repository);
		if (cfg->policies[i].settle_s)
			p->settled[p->settled_len++] = i;
	}
	for (size_t i = 0; i < cfg->automations_len; i++) {
		p->autoruns[i].p = p;
		p->autoruns[i].a = &cfg->automations[i];
		p->owned[i] = shard_owns(o->shard, &cfg->automations[i]);
		p->autoruns[i].state = p->owned[i] ? AUTORUN_UNREAD : AUTORUN_FOREIGN;
	}
	if (o->client)
		p->client = o->client;
	else if (passmetrics_client_new(&p->client, o->metrics, false, err) < 0)
		return err->code;
	return 0;
}

static void pass_release(struct pass *p)
{
	if (p->scans)
		scan_release(p->scans, p->o->config->repositories_len);
	headcache_free(p->heads);
	settle_free(p->settle);
	free(p->listings);
	free(p->scratch);
	free(p->filled);
	buildtime_free(p->buildtimes);
	verifygate_free(p->verify);
	for (size_t i = 0; p->autoruns && i < p->o->config->automations_len; i++) {
		autorun_release(&p->autoruns[i]);
		report_release(&p->autoruns[i].report);
	}
	free(p->autoruns);
	free(p->owned);
	free(p->scans);
	free(p->policy_repo);
	free(p->policy_marked);
	free(p->settled);
	free(p->git_failure);
	if (p->client != p->o->client)
		registry_client_free(p->client);
}

/* Phase one's opens side by side: each automation whose Git cache no other one of the pass
 * uses is opened on one of up to OPEN_THREADS threads (its remote's head check and fetch are
 * network round trips: one after another they were most of a small shard's pass); one sharing
 * its cache is opened here, in turn, as the cache is locked while open. */
#define OPEN_THREADS 4

struct opening {
	struct pass *p;
	pthread_mutex_t mu;
	size_t next; /* the next automation a thread takes */
	int *errors; /* per automation */
	struct error *errs;
	bool *apart; /* per automation: opened on a thread */
};

static void *open_main(void *arg)
{
	struct opening *o = arg;
	size_t n = o->p->o->config->automations_len;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&o->mu);
		while (o->next < n && !o->apart[o->next])
			o->next++;
		i = o->next++;
		pthread_mutex_unlock(&o->mu);
		if (i >= n)
			return NULL;
		o->errors[i] = open_git_and_markers(&o->p->autoruns[i], &o->errs[i]);
	}
}

static int open_all(struct pass *p, struct error *err)
{
	size_t n = p->o->config->automations_len, apart = 0, started = 0;
	struct opening o = {p,
	                    PTHREAD_MUTEX_INITIALIZER,
	                    0,
	                    calloc(n + 1, sizeof(int)),
	                    calloc(n + 1, sizeof(struct error)),
	                    calloc(n + 1, sizeof(bool))};
	char **keys = calloc(n + 1, sizeof(*keys));
	pthread_t th[OPEN_THREADS];

	if (!o.errors || !o.errs || !o.apart || !keys) {
		free(o.errors);
		free(o.errs);
		free(o.apart);
		free(keys);
		return error_set(err, IG_EFAIL, "reconcile: out of memory");
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = gitauth_scrub_url(p->autoruns[i].a->source->url);
	for (size_t i = 0; i < n; i++) {
		o.apart[i] = p->autoruns[i].state != AUTORUN_FOREIGN &&
		             !cache_shared(i, keys, p->autoruns, n);
		apart += o.apart[i];
	}
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	for (; apart > 1 && started < OPEN_THREADS && started < apart; started++)
		if (pthread_create(&th[started], NULL, open_main, &o) != 0)
			break;
	if (!started)
		open_main(&o);
	for (size_t t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	for (size_t i = 0; i < n; i++) {
		struct autorun *ar = &p->autoruns[i];

		if (ar->state == AUTORUN_FOREIGN)
			continue;
		if (!o.apart[i]) {
			o.errors[i] = open_git_and_markers(ar, &o.errs[i]);
			note_markers(ar, o.errors[i], &o.errs[i]);
			if (ar->g) { /* another one uses the cache: reopened to commit */
				gitstore_free(ar->g);
				ar->g = NULL;
				ar->state = AUTORUN_PARKED;
			}
		} else {
			note_markers(ar, o.errors[i], &o.errs[i]);
		}
	}
	pthread_mutex_destroy(&o.mu);
	free(o.errors);
	free(o.errs);
	free(o.apart);
	return 0;
}

int reconcile_pass(struct report *out, const struct reconcile_options *o, struct error *err)
{
	const struct config *cfg = o->config;
	struct timespec t0;
	struct pass p;
	int error;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((error = pass_init(&p, out, o, err)) < 0)
		goto done;
	if ((error = open_all(&p, err)) < 0)
		goto done;
	for (size_t i = 0; i < cfg->policies_len; i++)
		if (p.policy_marked[i])
			p.scans[p.policy_repo[i]].wanted = true;
	if ((error = reconcile_io_init(&p)) < 0) {
		error = error_set(err, error, "reconcile: out of memory");
		goto done;
	}
	if ((error = list_and_finish(&p, err)) < 0)
		goto done;
	passmetrics_listings(o->metrics, p.scans, cfg->repositories_len);
	if (error == 0)
		error = reconcile_report_unmarked(&p);
	if (error == 0)
		error = reconcile_report_invalid(&p);
	if (error < 0) {
		error = error_set(err, error, "reconcile: out of memory");
		goto done;
	}
	if (o->audit && !o->dry_run && report_audit(o->audit, out, err) < 0) {
		log_error("audit.write", "%s", err->msg);
		error_clear(err);
	}
	if (!o->dry_run && settle_save(p.settle, err) < 0) { /* clocks restart: never a skip */
		log_error("settle.state", "%s", err->msg);
		error_clear(err);
	}
	passmetrics_settling(o->metrics, out);
	passmetrics_pass_done(o->metrics, &t0);
done:
	pass_release(&p);
	give_back_memory();
	return error;
}
