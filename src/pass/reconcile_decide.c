/* The decide phase of a pass: every marker of an automation decided (decide.c over the pass's
 * decide_io), either all kept (the commit's edit, which decides again on each head) or, the
 * first time, only the writers kept while every other decision goes straight to its report
 * item. */
#include <stdlib.h>
#include <string.h>

#include "reconcile_private.h"
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

/* Decides every marker as reconcile_decide_all does, in the same order, but a decision that
 * writes nothing goes straight to its report item and its decide_item is released: an
 * up-to-date pass holds no decide_item (1 KiB) per marker. Writers keep their item and a
 * report item left empty (filled by report_items, after the commit). */
int reconcile_decide_and_report(struct autorun *ar)
{
	const struct config *cfg = ar->p->cfg;

	reconcile_decided_release(ar);
	ar->partial = true;
	if (report_reserve(&ar->report, ar->report.len + ar->markers.len) < 0)
		return IG_EFAIL;
	for (size_t i = 0; i < ar->markers.len; i++) {
		const struct config_policy *pol =
		    config_find_policy_id(cfg, ar->markers.items[i].policy);
		struct decide_item tmp;
		struct report_item *it;
		int error;

		if (!pol || !config_automation_selects(ar->a, pol))
			continue;
		memset(&tmp, 0, sizeof(tmp));
		if (reconcile_listing_open(ar->p, reconcile_policy_index(cfg, pol)) < 0)
			return IG_EFAIL;
		error = decide_marker(&tmp, &ar->p->env, ar->a, &ar->markers, i,
		                      reconcile_policy_index(cfg, pol));
		if (error == 0)
			error = report_add(&it, &ar->report);
		if (error == 0 && tmp.new_value &&
		    (error = keep_writer(ar, &tmp, ar->report.len - 1)) == 0)
			continue;
		if (error == 0)
			error = reconcile_report_fill(ar, it, &tmp);
		decide_item_release(&tmp);
		if (error < 0)
			return error;
	}
	return 0;
}
