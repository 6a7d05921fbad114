/* The decide phase of a pass: every marker of an automation decided (decide.c over the pass's
 * decide_io), either all kept (the commit's edit, which decides again on each head) or, the
 * first time, only the writers kept while every other decision goes straight to its report
 * item. */
#include <stdlib.h>
#include <string.h>

#include "reconcile_private.h"
#include "imageguard/pass/headcache.h"
#include "imageguard/pass/scan.h"
#include "imageguard/util/error.h"
#include "imageguard/util/vec.h"

void reconcile_decided_release(struct autorun *ar)
{
	for (size_t i = 0; i < ar->len; i++)
		decide_item_release(&ar->items[i]);
	free(ar->items);
	free(ar->slots);
	ar->items = NULL;
	ar->slots = NULL;
	ar->len = ar->items_cap = 0;
	ar->partial = false;
}

/* Decides every marker that names a configured policy, in scan order. */
int reconcile_decide_all(struct autorun *ar)
{
	const struct config *cfg = ar->p->cfg;

	reconcile_decided_release(ar);
	if (ar->markers.len && !(ar->items = calloc(ar->markers.len, sizeof(*ar->items))))
		return IG_EFAIL;
	for (size_t i = 0; i < ar->markers.len; i++) {
		const struct config_policy *pol =
		    config_find_policy_id(cfg, ar->markers.items[i].policy);

		/* a policy this automation does not select (namespace, policySelector): untouched
		 */
		if (!pol || !config_automation_selects(ar->a, pol))
			continue;
		if (reconcile_listing_open(ar->p, reconcile_policy_index(cfg, pol)) < 0 ||
		    decide_marker(&ar->items[ar->len++], &ar->p->env, ar->a, &ar->markers, i,
		                  reconcile_policy_index(cfg, pol)) < 0)
			return IG_EFAIL;
	}
	return 0;
}

/* Keeps writer *it (moved: the caller no longer owns it) with report item number slot. */
static int keep_writer(struct autorun *ar, struct decide_item *it, size_t slot)
{
	size_t cap = ar->items_cap;
	struct decide_item *items = vec_reserve(ar->items, &cap, ar->len, sizeof(*items), 4);
	size_t *slots;

	if (!items)
		return IG_EFAIL;
	ar->items = items;
	if (!(slots = realloc(ar->slots, cap * sizeof(*slots))))
		return IG_EFAIL;
	ar->slots = slots;
	ar->items_cap = cap;
	ar->slots[ar->len] = slot;
	ar->items[ar->len++] = *it;
	return 0;
}

/* Markers begun before their HEADs are made together: a chunk's items (1 KiB each) are all a
 * pass holds at once. */
#define DECIDE_CHUNK 64

/* The HEADs items[0..n) will ask for, made together on a few threads (headcache_prefetch):
 * one at a time, each waited a round trip on the pass's thread while the connections the
 * listings opened sat idle. Only once every listing is final: while the scan still lists
 * (another automation's repositories), they stay one at a time, as the per-host cap wants. */
static void prefetch_heads(struct pass *p, const struct decide_item *items, size_t n)
{
	struct registry_target targets[DECIDE_CHUNK];
	struct headcache_want want[DECIDE_CHUNK];
	unsigned threads =
	    p->o->concurrency < SCAN_PER_HOST_MAX ? p->o->concurrency : SCAN_PER_HOST_MAX;
	size_t k = 0;

	if (!p->listings_final)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *ref = decide_head_ref(&items[i]);
		const struct scan *sc = &p->scans[p->policy_repo[items[i].policy]];

		if (!ref)
			continue;
		scan_target(&targets[k], sc);
		want[k] = (struct headcache_want){&targets[k], sc->repo->id, ref};
		k++;
	}
	headcache_prefetch(p->heads, p->client, want, k, threads);
}

/* The rest of one begun item (decide_marker_finish), into the next report item: a writer is
 * kept (moved), anything else reported and released. */
static int finish_one(struct autorun *ar, struct decide_item *tmp)
{
	struct report_item *it;
	int error = 0;

	if (ar->p->cfg->policies[tmp->policy].verify.provider) /* io_verify reads the listing */
		error = reconcile_listing_open(ar->p, tmp->policy);
	if (error == 0)
		error = decide_marker_finish(tmp, &ar->p->env, ar->a, &ar->markers);
	if (error == 0)
		error = report_add(&it, &ar->report);
	if (error == 0 && tmp->new_value && (error = keep_writer(ar, tmp, ar->report.len - 1)) == 0)
		return 0;
	if (error == 0)
		error = reconcile_report_fill(ar, it, tmp);
	decide_item_release(tmp);
	return error;
}

/* Begins the markers from *next on, up to DECIDE_CHUNK of those ar selects, into chunk;
 * *next moves past them. Returns how many, or IG_EFAIL (out of memory: what was begun is
 * released). */
static int begin_chunk(struct autorun *ar, struct decide_item *chunk, size_t *next)
{
	const struct config *cfg = ar->p->cfg;
	int n = 0;

	for (; *next < ar->markers.len && n < DECIDE_CHUNK; (*next)++) {
		const struct config_policy *pol =
		    config_find_policy_id(cfg, ar->markers.items[*next].policy);
		size_t pi;

		if (!pol || !config_automation_selects(ar->a, pol))
			continue;
		pi = reconcile_policy_index(cfg, pol);
		if (reconcile_listing_open(ar->p, pi) < 0 ||
		    decide_marker_begin(&chunk[n++], &ar->p->env, ar->a, &ar->markers, *next, pi) <
		        0) {
			while (n > 0)
				decide_item_release(&chunk[--n]);
			return IG_EFAIL;
		}
	}
	return n;
}

/* Decides every marker as reconcile_decide_all does, in the same order, but a decision that
 * writes nothing goes straight to its report item and its decide_item is released: an
 * up-to-date pass holds no decide_item (1 KiB) per marker, only a chunk's. Writers keep their
 * item and a report item left empty (filled by report_items, after the commit). The HEADs a
 * chunk needs are made together before its decisions finish. */
int reconcile_decide_and_report(struct autorun *ar)
{
	struct decide_item *chunk;
	size_t next = 0;
	int n, error = 0;

	reconcile_decided_release(ar);
	ar->partial = true;
	if (report_reserve(&ar->report, ar->report.len + ar->markers.len) < 0 ||
	    !(chunk = calloc(DECIDE_CHUNK, sizeof(*chunk))))
		return IG_EFAIL;
	while (error == 0 && (n = begin_chunk(ar, chunk, &next)) > 0) {
		prefetch_heads(ar->p, chunk, (size_t)n);
		for (int i = 0; i < n; i++)
			if (error < 0)
				decide_item_release(&chunk[i]);
			else
				error = finish_one(ar, &chunk[i]);
	}
	free(chunk);
	if (error == 0 && n < 0) /* begin_chunk: out of memory */
		error = n;
	return error;
}
