/* A pass's report: one item per marker decision, the policies no marker names, the invalid
 * objects, with the counts, metrics and log lines that go with them. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile_private.h"
#include "imageguard/guard/guard.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/pass/scan.h"
#include "imageguard/pass/shard.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "imageguard/util/strvec.h"

void reconcile_report_count(struct pass *p, const struct report_item *it)
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

static void listing_info(struct report_item *it, struct scan *sc, bool audited)
{
	if (!sc->done || sc->rc < 0)
		return;
	it->listed = true;
	it->tag_count = sc->listing.tags.len;
	it->tags_sha256 = audited ? scan_tags_sha256(sc) : NULL; /* only the audit reads it */
	it->tags = &sc->listing.tags;
	it->tags_first = sc->packed ? tagarena_first(&sc->listing.arena) : NULL;
}

int reconcile_report_fill(struct autorun *ar, struct report_item *it, const struct decide_item *d)
{
	struct pass *p = ar->p;
	const struct config_policy *pol = &p->cfg->policies[d->policy];
	const struct marker *m = &ar->markers.items[d->marker];
	bool wrote = ar->state == AUTORUN_COMMITTED && d->new_value && guard_writes(&d->d);
	const char *current =
	    m->part == MARKER_NAME || (m->part == MARKER_DIGEST && !d->current_tag)
	        ? m->value
	        : d->current_tag;
	char cur_created[REPORT_CREATED_LEN], cand_created[REPORT_CREATED_LEN];
	struct report_strings s = {
	    .policy = pol->id,
	    .image = pol->repository->image,
	    .file = m->file,
	    .current = current,
	    .candidate = *d->d.candidate ? d->d.candidate : NULL,
	    .digest = *d->d.digest ? d->d.digest : NULL,
	    .commit = wrote ? ar->commit : NULL,
	    .message = *d->d.message ? d->d.message : NULL,
	    .current_digest = d->current_digest,
	    .current_created = report_created_text(cur_created, d->cur_created),
	    .candidate_created = report_created_text(cand_created, d->cand_created),
	    .automation = ar->a->id};

	it->decision = d->d.decision;
	it->reason = d->d.reason;
	it->warnings = d->d.warnings;
	it->line = m->line;
	listing_info(it, &p->scans[p->policy_repo[d->policy]], p->o->audit != NULL);
	return report_set_strings(it, &s);
}

/* An automation that could not be read: its markers are unknown, so every policy not found
 * elsewhere ends in error/git (see reconcile_report_unmarked). */
void reconcile_automation_failed(struct pass *p, const struct config_automation *a,
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

int reconcile_report_unmarked(struct pass *p)
{
	for (size_t i = 0; i < p->cfg->policies_len; i++) {
		const struct config_policy *pol = &p->cfg->policies[i];
		struct report_item *it;

		if (p->policy_marked[i] ||
		    !shard_reports_policy(p->o->shard, p->cfg, p->owned, pol))
			continue;
		if (!p->git_failure &&
		    config_find_invalid_in(p->cfg, CONFIG_KIND_AUTOMATION, pol->ns))
			continue; /* its namespace's invalid automation reports it (report_invalid)
			           */
		if (report_add(&it, p->report) < 0 || report_set(&it->policy, pol->id) < 0 ||
		    report_set(&it->image, pol->repository->image) < 0)
			return IG_EFAIL;
		if (p->git_failure) {
			it->decision = GUARD_ERROR;
			it->reason = GUARD_GIT;
			if (report_set(&it->message, p->git_failure) < 0)
				return IG_EFAIL;
		} else {
			it->decision = GUARD_NONE;
			it->reason = GUARD_NO_MARKERS;
		}
		reconcile_report_count(p, it);
	}
	return 0;
}

/* One error/config item for policy (NULL: unknown) from invalid object v. */
static int invalid_item(struct pass *p, const struct config_invalid *v, const char *policy,
                        const char *image, const char *automation)
{
	struct report_item *it;
	struct buf object = BUF_INIT;
	int error;

	if (buf_printf(&object, "%s/%s", config_kind_name(v->kind), v->id) < 0 ||
	    report_add(&it, p->report) < 0) {
		buf_release(&object);
		return IG_EFAIL;
	}
	it->object = buf_detach(&object);
	it->decision = GUARD_ERROR;
	it->reason = GUARD_CONFIG;
	it->kube_reason = v->reason; /* Flux's reason on status and Event */
	if ((error = report_set(&it->policy, policy)) < 0 ||
	    (error = report_set(&it->image, image)) < 0 ||
	    (error = report_set(&it->message, v->message)) < 0 ||
	    (error = report_set(&it->automation, automation)) < 0 || !it->object)
		return IG_EFAIL;
	reconcile_report_count(p, it);
	return 0;
}

/* An invalid automation: an error on each valid policy of its namespace (those it would
 * select), named by the automation, so that no output leaves it out; with no valid policy
 * there, one error for the automation itself (no policy, no image). */
static int invalid_automation(struct pass *p, const struct config_invalid *v)
{
	size_t named = 0;

	for (size_t i = 0; i < p->cfg->policies_len; i++) {
		const struct config_policy *pol = &p->cfg->policies[i];

		if (strcmp(pol->ns, v->ns) != 0)
			continue;
		if (invalid_item(p, v, pol->id, pol->repository->image, v->id) < 0)
			return IG_EFAIL;
		named++;
	}
	return named ? 0 : invalid_item(p, v, NULL, NULL, v->id);
}

/* The objects left out of the configuration: each invalid policy (or policy on an invalid
 * repository) is error/config with the one-line reason, and so is each policy an invalid
 * automation would select; every invalid object is logged. */
int reconcile_report_invalid(struct pass *p)
{
	for (size_t i = 0; i < p->cfg->invalid_len; i++) {
		const struct config_invalid *v = &p->cfg->invalid[i];
		int error = 0;

		/* under --shards, shard 0 alone reports them (every shard logs them) */
		bool reported =
		    v->id && !(p->o->shard && p->o->shard->shards && p->o->shard->index != 0);

		if (!reported || v->kind != CONFIG_KIND_POLICY)
			log_error("config.invalid", "%s", v->message ? v->message : "");
		if (reported && v->kind == CONFIG_KIND_POLICY)
			error = invalid_item(p, v, v->id, NULL, NULL);
		else if (reported && v->kind == CONFIG_KIND_AUTOMATION)
			error = invalid_automation(p, v);
		if (error < 0)
			return error;
	}
	return 0;
}
