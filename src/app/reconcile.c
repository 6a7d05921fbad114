/* One pass of the controller. Order: open every automation's Git tree and read its markers,
 * list each repository a marker needs (once, concurrently), then per automation decide every
 * marker (guard_decide, manifest HEAD, guard_confirm) and commit. The commit's edit callback
 * re-reads the markers and decides again on whatever head it is given, so a value is only
 * ever written forward of what is committed at that moment. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/registry/buildtime.h"
#include "imageguard/registry/headcache.h"
#include "imageguard/git/commitmsg.h"
#include "imageguard/app/decide.h"
#include "imageguard/app/markerhistory.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/app/guard.h"
#include "imageguard/util/log.h"
#include "imageguard/markers/markers.h"
#include "imageguard/app/passmetrics.h"
#include "imageguard/policy/policy.h"
#include "imageguard/app/reconcile.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/safefile.h"
#include "imageguard/app/report.h"
#include "imageguard/app/scan.h"
#include "imageguard/app/settle.h"
#include "imageguard/util/strvec.h"

#define FILE_MAX_BYTES (16u << 20) /* a marked YAML file we rewrite */

struct autorun;

struct pass {
	const struct reconcile_options *o;
	const struct config *cfg;
	time_t now;
	struct registry_client *client;
	struct scan *scans;           /* one per config repository, same index */
	struct autorun *autoruns;     /* one per config automation, same index */
	size_t *policy_repo;          /* per config policy: index of its repository */
	bool *policy_marked;          /* per config policy: a marker names it */
	struct headcache *heads;      /* manifest HEADs, once per repository and tag */
	struct settle *settle;        /* since when each candidate is listed (settle windows) */
	struct buildtime *buildtimes; /* config `created` by digest, for digest-tracked policies */
	struct decide_listing *listings; /* per config repository, filled as each is final */
	bool *filled;                    /* per config repository: listing_fill done */
	struct decide_io io;
	struct decide_env env;
	struct report *report;
	char *git_failure; /* the first automation that could not be read, or NULL */
};

struct autorun {
	struct pass *p;
	const struct config_automation *a;
	struct gitstore *g;
	struct marker_set markers;
	struct decide_item *items;
	size_t len;
	bool opened;   /* phase one read its markers */
	bool reopen;   /* its clone was closed after phase one (another automation shares it) */
	bool finished; /* phase two done */
	bool committed;
	char commit[41];
	struct report report; /* its markers' items, joined to the pass's in config order */
};

/* ---- the decisions' I/O (decide_io) ---- */

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

/* The listings as decide reads them: none yet (each is filled by listing_fill once final). */
static int pass_listings(struct pass *p)
{
	size_t n = p->cfg->repositories_len;

	if (!(p->listings = calloc(n ? n : 1, sizeof(*p->listings))))
		return IG_EFAIL;
	p->io = (struct decide_io){io_head, io_created, io_replaced, io_listed_since, p};
	p->env = (struct decide_env){p->cfg, p->now, p->listings, &p->io};
	return 0;
}

/* Repository r's listing is final: decide may read it, and settle windows learn what it
 * holds. Called once per repository, on the pass's thread. */
static void listing_fill(struct pass *p, size_t r)
{
	const struct scan *sc = &p->scans[r];
	struct decide_listing *l = &p->listings[r];

	l->done = sc->done;
	l->ok = sc->done && sc->rc == 0;
	l->error = sc->done && sc->rc < 0 ? sc->err.msg : NULL;
	if (l->ok) {
		l->tags = (const char *const *)sc->listing.tags.items;
		l->tags_len = sc->listing.tags.len;
	}
	for (size_t i = 0; l->ok && i < p->cfg->policies_len; i++) {
		const struct config_policy *pol = &p->cfg->policies[i];

		if (pol->settle_s && p->policy_repo[i] == r)
			settle_keep_listed(p->settle, pol->id, l->tags, l->tags_len);
	}
}

/* ---- one automation ---- */

static void decided_release(struct autorun *ar)
{
	for (size_t i = 0; i < ar->len; i++)
		decide_item_release(&ar->items[i]);
	free(ar->items);
	ar->items = NULL;
	ar->len = 0;
}

static size_t policy_index(const struct config *cfg, const struct config_policy *pol)
{
	return (size_t)(pol - cfg->policies);
}

/* Decides every marker that names a configured policy, in scan order. */
static int decide_all(struct autorun *ar)
{
	const struct config *cfg = ar->p->cfg;

	decided_release(ar);
	if (ar->markers.len && !(ar->items = calloc(ar->markers.len, sizeof(*ar->items))))
		return IG_EFAIL;
	for (size_t i = 0; i < ar->markers.len; i++) {
		const struct config_policy *pol =
		    config_find_policy_id(cfg, ar->markers.items[i].policy);

		/* a policy this automation does not select (namespace, policySelector): untouched
		 */
		if (!pol || !config_automation_selects(ar->a, pol))
			continue;
		if (decide_marker(&ar->items[ar->len++], &ar->p->env, ar->a, &ar->markers, i,
		                  policy_index(cfg, pol)) < 0)
			return IG_EFAIL;
	}
	return 0;
}

static int scan_markers(struct autorun *ar, const char *workdir, struct error *err)
{
	int error;

	markers_release(&ar->markers);
	if ((error = markers_scan_tree(&ar->markers, workdir, ar->a->update_path, err)) < 0)
		return error == IG_ENOTFOUND ? config_automation_path_error(err, ar->a) : error;
	for (size_t i = 0; i < ar->markers.problems_len; i++)
		log_warn("markers.problem", "automation '%s': %s:%zu: %s", ar->a->id,
		         ar->markers.problems[i].file, ar->markers.problems[i].line,
		         ar->markers.problems[i].message);
	return 0;
}

/* Writes data to file (relative to the clone) through a random-named O_EXCL temporary and a
 * rename, keeping the mode: the clone is untrusted, so no link is followed or replaced. */
static int write_file(const char *workdir, const char *file, const struct buf *data,
                      struct error *err)
{
	struct error e = ERROR_INIT;
	int error = safefile_replace(workdir, file, data->data, data->len, &e);

	if (error < 0)
		error_set(err, error, "file '%s': cannot write: %s", file, safefile_reason(&e));
	return error;
}

/* Splices every new value of one file (the markers of file, in order) and writes it. */
static int apply_file(struct autorun *ar, const char *workdir, const char *file, struct error *err)
{
	struct marker_edit *edits = calloc(ar->len ? ar->len : 1, sizeof(*edits));
	struct buf in = BUF_INIT_MAX(FILE_MAX_BYTES), out = BUF_INIT;
	struct error e = ERROR_INIT;
	size_t n = 0;
	int error;

	if (!edits)
		return error_set(err, IG_EFAIL, "out of memory");
	for (size_t i = 0; i < ar->len; i++) {
		const struct marker *m = &ar->markers.items[ar->items[i].marker];

		if (ar->items[i].new_value && strcmp(m->file, file) == 0) {
			edits[n].marker = m;
			edits[n++].value = ar->items[i].new_value;
		}
	}
	if ((error = safefile_read(&in, workdir, file, &e)) < 0) {
		error_set(err, error, "file '%s': cannot read: %s", file, safefile_reason(&e));
		goto done;
	}
	if ((error = markers_apply(&out, in.data, in.len, edits, n, err)) < 0) {
		error_prefix(err, "file '%s'", file);
		goto done;
	}
	error = write_file(workdir, file, &out, err);
done:
	free(edits);
	buf_release(&in);
	buf_release(&out);
	return error;
}

static int apply_edits(struct autorun *ar, const char *workdir, struct error *err)
{
	for (size_t i = 0; i < ar->len; i++) {
		const char *file = ar->markers.items[ar->items[i].marker].file;
		bool seen = false;
		int error;

		if (!ar->items[i].new_value)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = ar->items[j].new_value &&
			       strcmp(ar->markers.items[ar->items[j].marker].file, file) == 0;
		if (!seen && (error = apply_file(ar, workdir, file, err)) < 0)
			return error;
	}
	return 0;
}

/* A printf string kept in notes until the message is built; *out borrows it. */
static int note(const char **out, struct strvec *notes, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	int error;

	va_start(ap, fmt);
	error = buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (error == 0 && (error = strvec_push_owned(notes, buf_detach(&b))) == 0)
		*out = notes->items[notes->len - 1];
	buf_release(&b);
	return error < 0 ? IG_EFAIL : 0;
}

/* The commit message through commitmsg (the automation's messageTemplate or the default);
 * a rollback's change carries its reason, and a template that drops it gets a trailer, so
 * the reason is always in the commit (CONTRACT §7). */
static int build_message(struct autorun *ar, struct buf *msg, struct error *err)
{
	const struct config *cfg = ar->p->cfg;
	struct commitmsg_change *changes = calloc(ar->len ? ar->len : 1, sizeof(*changes));
	struct commitmsg_input in = {0};
	struct strvec notes = STRVEC_INIT;
	size_t n = 0;
	int error = 0;

	if (!changes)
		return error_set(err, IG_EFAIL, "out of memory");
	for (size_t i = 0; i < ar->len && error == 0; i++) {
		const struct decide_item *it = &ar->items[i];
		const struct marker *m = &ar->markers.items[it->marker];
		const struct scan *sc = &ar->p->scans[ar->p->policy_repo[it->policy]];
		struct commitmsg_change *c = &changes[n];

		if (!it->new_value)
			continue;
		c->policy = cfg->policies[it->policy].id;
		c->old_value = m->value;
		c->new_value = it->new_value;
		c->file = m->file;
		c->setter = m->setter;
		c->api_version = m->api_version;
		c->kind = m->kind;
		c->name = m->name;
		c->namespace = m->namespace;
		c->tags_sha256 = sc->done && sc->rc == 0 ? sc->listing.sha256 : NULL;
		error = note(&c->decision, &notes, "%s/%s", guard_decision_name(it->d.decision),
		             guard_reason_name(it->d.reason));
		if (error == 0 && it->d.decision == GUARD_ROLLBACK) {
			c->rollback_reason = it->d.message;
			error = note(&c->reason, &notes, "rollback: %s", it->d.message);
		}
		n++;
	}
	in.tmpl = ar->a->message_template;
	in.tmpl_name = "messageTemplate";
	in.automation_namespace = ar->a->ns;
	in.automation_name = ar->a->name;
	in.update_path = ar->a->update_path;
	in.values = (const char *const *)ar->a->template_values.items;
	in.nvalues = ar->a->template_values.len / 2;
	in.changes = changes;
	in.n = n;
	buf_reset(msg);
	if (error == 0)
		error = commitmsg_render(msg, &in, err);
	else
		error_set(err, IG_EFAIL, "out of memory");
	free(changes);
	strvec_release(&notes);
	return error;
}

static int edit(void *ctx, const char *workdir, struct buf *message, struct error *err)
{
	struct autorun *ar = ctx;
	int error;

	if ((error = scan_markers(ar, workdir, err)) < 0)
		return error;
	if ((error = decide_all(ar)) < 0)
		return error_set(err, error, "automation '%s': out of memory", ar->a->id);
	if ((error = apply_edits(ar, workdir, err)) < 0)
		return error;
	return build_message(ar, message, err);
}

static bool any_write(const struct autorun *ar)
{
	for (size_t i = 0; i < ar->len; i++)
		if (ar->items[i].new_value)
			return true;
	return false;
}

static void fail_writes(struct autorun *ar, const char *msg)
{
	for (size_t i = 0; i < ar->len; i++)
		if (ar->items[i].new_value) {
			guard_fail(&ar->items[i].d, GUARD_GIT, "%s", msg);
			free(ar->items[i].new_value);
			ar->items[i].new_value = NULL;
		}
}

static int open_git(struct autorun *ar, struct error *err)
{
	const struct reconcile_options *o = ar->p->o;
	const struct config_automation *a = ar->a;
	struct gitstore_options go = {0};
	char *secret = NULL, *signing = NULL;
	int error;

	if (a->source->secret_ref &&
	    (error = config_secret_path(&secret, o->secrets_dir, a->source->secret_ref, err)) < 0)
		return error;
	if (a->signing_secret &&
	    (error = config_secret_path(&signing, o->secrets_dir, a->signing_secret, err)) < 0) {
		free(secret);
		return error;
	}
	go.url = a->source->url;
	go.branch = a->checkout_branch;
	go.push_branch = a->push_branch;
	go.state_dir = o->state_dir;
	go.secret_dir = secret;
	go.provider = a->source->provider;
	go.author_name = a->author_name;
	go.author_email = a->author_email;
	go.stop = o->stop; /* SIGTERM ends a clone or fetch; a push in flight is finished */
	go.signing_dir = signing;
	go.signing_name = a->signing_secret;
	go.push_refspec = a->push_refspec;
	go.refspec_only = a->push_refspec && !a->push_branch_given; /* as Flux */
	go.timeout_ms = (long)a->source->timeout_ms;
	error = gitstore_open(&ar->g, &go, err);
	free(secret);
	free(signing);
	return error;
}

static int commit(struct autorun *ar)
{
	struct pass *p = ar->p;
	struct error err = ERROR_INIT;
	int error;

	if (p->o->stop && *p->o->stop) {
		fail_writes(ar, "stopping: commit not started");
		return 0;
	}
	error = gitstore_commit_push(ar->commit, ar->g, edit, ar, &err);
	if (error < 0) {
		log_error("git.push", "automation '%s': %s", ar->a->id, err.msg);
		fail_writes(ar, err.msg);
		return 0;
	}
	if (ar->commit[0]) {
		ar->committed = true;
		p->report->commits++;
		passmetrics_commit(p->o->metrics);
		log_info("git.commit", "automation '%s': pushed %s", ar->a->id, ar->commit);
	}
	return 0;
}

/* ---- reporting ---- */

static void count_decision(struct pass *p, const struct report_item *it)
{
	passmetrics_decision(p->o->metrics, it);
	if (it->warnings & GUARD_WARN_CURRENT_MISSING)
		log_warn("guard.current-missing",
		         "policy '%s': %s:%zu: committed tag '%s' is absent from the listing of "
		         "'%s' (%zu tags): stale or truncated registry data",
		         it->policy, it->file ? it->file : "-", it->line,
		         it->current ? it->current : "", it->image ? it->image : "", it->tag_count);
	if (it->decision == GUARD_ERROR)
		p->report->errors++;
}

static void listing_info(struct report_item *it, const struct scan *sc)
{
	if (!sc->done || sc->rc < 0)
		return;
	it->listed = true;
	it->tag_count = sc->listing.tags.len;
	memcpy(it->tags_sha256, sc->listing.sha256, sizeof(it->tags_sha256));
	it->tags = &sc->listing.tags;
}

static int report_marker(struct autorun *ar, const struct decide_item *d)
{
	struct pass *p = ar->p;
	const struct config_policy *pol = &p->cfg->policies[d->policy];
	const struct marker *m = &ar->markers.items[d->marker];
	struct report_item *it;
	bool wrote = ar->committed && d->new_value && guard_writes(&d->d);
	const char *current =
	    m->part == MARKER_NAME || (m->part == MARKER_DIGEST && !d->current_tag)
	        ? m->value
	        : d->current_tag;

	if (report_add(&it, &ar->report) < 0)
		return IG_EFAIL;
	it->decision = d->d.decision;
	it->reason = d->d.reason;
	it->warnings = d->d.warnings;
	it->line = m->line;
	listing_info(it, &p->scans[p->policy_repo[d->policy]]);
	if (report_set(&it->policy, pol->id) < 0 ||
	    report_set(&it->image, pol->repository->image) || report_set(&it->file, m->file) < 0 ||
	    report_set(&it->current, current) < 0 ||
	    report_set(&it->candidate, *d->d.candidate ? d->d.candidate : NULL) < 0 ||
	    report_set(&it->digest, *d->d.digest ? d->d.digest : NULL) < 0 ||
	    report_set(&it->commit, wrote ? ar->commit : NULL) < 0 ||
	    report_set(&it->message, *d->d.message ? d->d.message : NULL) < 0 ||
	    report_set(&it->current_digest, d->current_digest) < 0 ||
	    report_set_created(&it->current_created, d->cur_created) < 0 ||
	    report_set_created(&it->candidate_created, d->cand_created) < 0 ||
	    report_set(&it->automation, ar->a->id) < 0)
		return IG_EFAIL;
	count_decision(p, it);
	return 0;
}

/* An automation that could not be read: its markers are unknown, so every policy not found
 * elsewhere ends in error/git (see report_unmarked). */
static void automation_failed(struct pass *p, const struct config_automation *a,
                              const struct error *err)
{
	struct buf b = BUF_INIT;

	log_error("git.open", "automation '%s': %s", a->id, err->msg);
	report_add_failure(p->report, a->id, err->msg); /* out of memory: status says less */
	if (p->git_failure)
		return;
	buf_printf(&b, "automation '%s': %s", a->id, err->msg);
	p->git_failure = buf_detach(&b);
}

/* Phase one for an automation: a fresh clone and its markers; notes which policies are
 * marked so that only the repositories they use are listed. */
static void open_automation(struct autorun *ar)
{
	struct pass *p = ar->p;
	struct error err = ERROR_INIT;

	if (open_git(ar, &err) < 0 || scan_markers(ar, gitstore_workdir(ar->g), &err) < 0) {
		automation_failed(p, ar->a, &err);
		gitstore_free(ar->g);
		ar->g = NULL;
		markers_release(&ar->markers);
		return;
	}
	ar->opened = true;
	for (size_t i = 0; i < ar->markers.len; i++) {
		const struct marker *m = &ar->markers.items[i];
		const struct config_policy *pol = config_find_policy_id(p->cfg, m->policy);

		if (pol && config_automation_selects(ar->a, pol))
			p->policy_marked[policy_index(p->cfg, pol)] = true;
		else if (pol)
			log_debug(
			    "markers.not-selected",
			    "automation '%s': %s:%zu: policy '%s' is not selected (namespace, "
			    "spec.policySelector): left untouched",
			    ar->a->id, m->file, m->line, m->policy);
		else if (!config_find_invalid_id(p->cfg, CONFIG_KIND_POLICY, m->policy))
			log_warn("markers.unknown-policy",
			         "automation '%s': %s:%zu: marker names policy '%s', absent from "
			         "the configuration",
			         ar->a->id, m->file, m->line, m->policy);
	}
}

/* Whether another automation of the pass uses ar's Git cache (the same URL): the cache is
 * locked while open, so both close their clones after phase one and reopen them, one at a
 * time, to commit. */
static bool cache_shared(const struct autorun *ar, const struct autorun *all, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (&all[i] != ar && strcmp(all[i].a->source->url, ar->a->source->url) == 0)
			return true;
	return false;
}

/* Phase two, after the listings: decide, commit, report. */
static int finish_automation(struct autorun *ar)
{
	struct error err = ERROR_INIT;
	int error = 0;

	if (!ar->opened)
		return 0;
	if (ar->reopen && open_git(ar, &err) < 0) {
		log_error("git.open", "automation '%s': %s", ar->a->id, err.msg);
		if ((error = decide_all(ar)) < 0)
			return error;
		for (size_t i = 0; i < ar->len; i++) {
			guard_fail(&ar->items[i].d, GUARD_GIT, "%s", err.msg);
			free(ar->items[i].new_value);
			ar->items[i].new_value = NULL;
		}
		goto report;
	}
	if ((error = decide_all(ar)) < 0)
		return error;
	if (!ar->p->o->dry_run && any_write(ar) && (error = commit(ar)) < 0)
		return error;
report:
	for (size_t i = 0; i < ar->len && error == 0; i++)
		error = report_marker(ar, &ar->items[i]);
	return error;
}

static void autorun_release(struct autorun *ar)
{
	/* the report stays: list_and_finish joins it to the pass's */
	decided_release(ar);
	markers_release(&ar->markers);
	gitstore_free(ar->g);
	ar->g = NULL;
}

static int report_unmarked(struct pass *p)
{
	for (size_t i = 0; i < p->cfg->policies_len; i++) {
		const struct config_policy *pol = &p->cfg->policies[i];
		const struct config_invalid *bad;
		struct report_item *it;

		if (p->policy_marked[i])
			continue;
		if (report_add(&it, p->report) < 0 || report_set(&it->policy, pol->id) < 0 ||
		    report_set(&it->image, pol->repository->image) < 0)
			return IG_EFAIL;
		if (p->git_failure) {
			it->decision = GUARD_ERROR;
			it->reason = GUARD_GIT;
			if (report_set(&it->message, p->git_failure) < 0)
				return IG_EFAIL;
		} else if ((bad =
		                config_find_invalid_in(p->cfg, CONFIG_KIND_AUTOMATION, pol->ns))) {
			/* its namespace's automation was left out of the config */
			it->decision = GUARD_ERROR;
			it->reason = GUARD_CONFIG;
			if (report_set(&it->message, bad->message) < 0)
				return IG_EFAIL;
		} else {
			it->decision = GUARD_NONE;
			it->reason = GUARD_NO_MARKERS;
		}
		count_decision(p, it);
	}
	return 0;
}

/* The policies left out of the configuration (invalid, or on an invalid repository):
 * error/config with the one-line reason; other invalid objects are logged. */
static int report_invalid(struct pass *p)
{
	for (size_t i = 0; i < p->cfg->invalid_len; i++) {
		const struct config_invalid *v = &p->cfg->invalid[i];
		struct report_item *it;

		if (v->kind != CONFIG_KIND_POLICY || !v->id) {
			log_error("config.invalid", "%s", v->message ? v->message : "");
			continue;
		}
		if (report_add(&it, p->report) < 0 || report_set(&it->policy, v->id) < 0 ||
		    report_set(&it->message, v->message) < 0)
			return IG_EFAIL;
		it->decision = GUARD_ERROR;
		it->reason = GUARD_CONFIG;
		count_decision(p, it);
	}
	return 0;
}

/* ---- listings as they complete ---- */

/* The scan runs on its own thread while the pass finishes each automation as soon as the
 * repositories it needs are listed: one slow registry delays only the policies that use it. */
struct progress {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool *listed;  /* per repository: its listing is final (scan's done hook) */
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

/* Whether every repository ar's markers need is final. Under g->mu. */
static bool automation_ready(const struct progress *g, const struct autorun *ar)
{
	const struct pass *p = g->p;

	for (size_t i = 0; i < ar->markers.len; i++) {
		const struct config_policy *pol =
		    config_find_policy_id(p->cfg, ar->markers.items[i].policy);

		if (pol && config_automation_selects(ar->a, pol) &&
		    !repository_final(g, p->policy_repo[policy_index(p->cfg, pol)]))
			return false;
	}
	return true;
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

			left |= !ar->finished;
			if (!ar->finished && automation_ready(g, ar))
				ready = ar;
		}
		if (ready || !left)
			break;
		pthread_cond_wait(&g->cv, &g->mu);
	}
	for (size_t r = 0; ready && r < p->cfg->repositories_len; r++)
		if (!p->filled[r] && (g->finished || g->listed[r])) {
			listing_fill(p, r);
			p->filled[r] = true;
		}
	pthread_mutex_unlock(&g->mu);
	return ready;
}

/* Lists and finishes every automation; the pass's report gets their items in config order. */
static int list_and_finish(struct pass *p, struct error *err)
{
	struct progress g = {
	    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, false, 0, ERROR_INIT, p};
	struct autorun *ar;
	pthread_t th;
	int error = 0;

	if (!(g.listed = calloc(p->cfg->repositories_len + 1, sizeof(bool))) ||
	    !(p->filled = calloc(p->cfg->repositories_len + 1, sizeof(bool)))) {
		free(g.listed);
		return error_set(err, IG_EFAIL, "reconcile: out of memory");
	}
	if (pthread_create(&th, NULL, scan_main, &g) != 0) {
		free(g.listed);
		return error_set(err, IG_EFAIL, "reconcile: cannot start the listings");
	}
	while (error == 0 && (ar = next_ready(&g))) {
		if (!(p->o->stop && *p->o->stop))
			error = finish_automation(ar);
		ar->finished = true;
		autorun_release(ar);
	}
	pthread_join(th, NULL);
	for (size_t r = 0; r < p->cfg->repositories_len; r++)
		if (!p->filled[r]) {
			listing_fill(p, r);
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
	if (!p->scans || !p->policy_repo || !p->policy_marked || !p->autoruns ||
	    buildtime_new(&p->buildtimes) < 0 || headcache_new(&p->heads) < 0)
		return error_set(err, IG_EFAIL, "reconcile: out of memory");
	if (settle_open(&p->settle, o->state_dir, err) < 0)
		return err->code;
	for (size_t i = 0; i < cfg->repositories_len; i++)
		p->scans[i].repo = &cfg->repositories[i];
	for (size_t i = 0; i < cfg->policies_len; i++)
		p->policy_repo[i] = repository_index(cfg, cfg->policies[i].repository);
	for (size_t i = 0; i < cfg->automations_len; i++) {
		p->autoruns[i].p = p;
		p->autoruns[i].a = &cfg->automations[i];
	}
	if (o->client)
		p->client = o->client;
	else if (passmetrics_client_new(&p->client, o->metrics, err) < 0)
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
	free(p->filled);
	buildtime_free(p->buildtimes);
	for (size_t i = 0; p->autoruns && i < p->o->config->automations_len; i++) {
		autorun_release(&p->autoruns[i]);
		report_release(&p->autoruns[i].report);
	}
	free(p->autoruns);
	free(p->scans);
	free(p->policy_repo);
	free(p->policy_marked);
	free(p->git_failure);
	if (p->client != p->o->client)
		registry_client_free(p->client);
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
	for (size_t i = 0; i < cfg->automations_len; i++) {
		struct autorun *ar = &p.autoruns[i];

		open_automation(ar);
		if (ar->g && cache_shared(ar, p.autoruns, cfg->automations_len)) {
			gitstore_free(ar->g);
			ar->g = NULL;
			ar->reopen = true;
		}
	}
	for (size_t i = 0; i < cfg->policies_len; i++)
		if (p.policy_marked[i])
			p.scans[p.policy_repo[i]].wanted = true;
	if ((error = pass_listings(&p)) < 0) {
		error = error_set(err, error, "reconcile: out of memory");
		goto done;
	}
	if ((error = list_and_finish(&p, err)) < 0)
		goto done;
	passmetrics_listings(o->metrics, p.scans, cfg->repositories_len);
	if (error == 0)
		error = report_unmarked(&p);
	if (error == 0)
		error = report_invalid(&p);
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
	return error;
}
