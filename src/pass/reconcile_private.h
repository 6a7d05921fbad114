/* The pass's state shared by reconcile.c (the phases and their order), reconcile_io.c (what
 * decide reads: listings, HEADs, build times, history, settle), reconcile_commit.c (edits,
 * message, commit and push) and reconcile_report.c (report items, counts, logs). Private to
 * those four files. */
#ifndef IMAGEGUARD_RECONCILE_PRIVATE_H
#define IMAGEGUARD_RECONCILE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "imageguard/guard/decide.h"
#include "imageguard/pass/reconcile.h"
#include "imageguard/report/report.h"
#include "imageguard/config/config.h"
#include "imageguard/markers/markers.h"

struct buf;
struct error;

struct autorun;

struct pass {
	const struct reconcile_options *o;
	const struct config *cfg;
	time_t now;
	struct registry_client *client;
	struct scan *scans;           /* one per config repository, same index */
	struct autorun *autoruns;     /* one per config automation, same index */
	bool *owned;                  /* per config automation: this shard's (shard_owns) */
	size_t *policy_repo;          /* per config policy: index of its repository */
	bool *policy_marked;          /* per config policy: a marker names it */
	struct headcache *heads;      /* manifest HEADs, once per repository and tag */
	struct settle *settle;        /* since when each candidate is listed (settle windows) */
	struct buildtime *buildtimes; /* config `created` by digest, for digest-tracked policies */
	struct verifygate *verify;    /* the signature gate; NULL: no policy verifies */
	struct decide_listing *listings; /* per config repository, filled as each is final */
	bool *filled;                    /* per config repository: listing_fill done */
	/* The tags of the one packed listing open for a decision (reconcile_listing_open):
	 * scratch of scratch_cap pointers, open_repo's (or SIZE_MAX: none). */
	const char **scratch;
	size_t scratch_cap, open_repo;
	/* Every listing of the pass is final (set by the pass's thread when an automation becomes
	 * ready): the scan holds no connection, so a batch of HEADs may use them all without
	 * going over SCAN_PER_HOST_MAX requests to one host. */
	bool listings_final;
	size_t *settled; /* the config policies with a settle window */
	size_t settled_len;
	struct decide_io io;
	struct decide_env env;
	struct report *report;
	char *git_failure; /* the first automation that could not be read, or NULL */
};

/* Where an automation is in its pass (reconcile.c drives it, in this order). */
enum autorun_state {
	AUTORUN_UNREAD,    /* phase one has not read its markers (yet, or it failed: error/git) */
	AUTORUN_FOREIGN,   /* another shard owns it: never opened, never written */
	AUTORUN_OPEN,      /* phase one read its markers; its clone is open */
	AUTORUN_PARKED,    /* as open, but its clone was closed after phase one (another
	                    * automation shares the Git cache): phase two reopens it */
	AUTORUN_COMMITTED, /* phase two pushed its commit (ar->commit) */
	AUTORUN_FINISHED,  /* phase two done, with or without a commit */
};

struct autorun {
	struct pass *p;
	const struct config_automation *a;
	struct gitstore *g;
	uint64_t markers_epoch; /* gitmarkers_scan's memory of g's work tree epoch */
	struct marker_set markers;
	struct decide_item *items;
	size_t len;
	/* After a pass's first decide (reconcile.c): only the writers' items are kept, each
	 * decision that writes nothing went straight to its report item; slots[k] is the report
	 * item of items[k]. False once every marker's item is kept (reconcile_decide_all). */
	bool partial;
	size_t *slots, items_cap;
	enum autorun_state state;
	size_t ready_from; /* markers before it are known to have final listings */
	char commit[41];
	bool pushing;         /* its push is in flight: reconcile_commit_finish lands it */
	size_t report_first;  /* its first report item of this pass (report_items) */
	bool template_failed; /* the commit's messageTemplate failed: error/config, not git */
	/* One pass's edit split into commits whose messages fit gitstore's cap
	 * (reconcile_commit.c): the writers' item indices grouped by file (order,
	 * group_start[g]..group_start[g+1]), each item's group (group_of, SIZE_MAX: writes
	 * nothing), the next part's first group. */
	struct commit_parts {
		size_t *order, *group_start, *group_of;
		size_t ngroups, next;
		bool pending; /* the last edit asked for another part of the same attempt */
	} parts;
	struct report report; /* its markers' items, joined to the pass's in config order */
};

/* Nothing is left to do for it in this pass. */
static inline bool autorun_done(const struct autorun *ar)
{
	return ar->state == AUTORUN_FINISHED || ar->state == AUTORUN_FOREIGN;
}

static inline size_t reconcile_policy_index(const struct config *cfg,
                                            const struct config_policy *pol)
{
	return (size_t)(pol - cfg->policies);
}

/* reconcile_commit.c */
void reconcile_parts_release(struct commit_parts *cp);

/* reconcile.c */
int reconcile_scan_markers(struct autorun *ar, const char *workdir, struct error *err);

/* reconcile_decide.c */
/* Frees ar's decisions (kept items and their report slots). */
void reconcile_decided_release(struct autorun *ar);
/* Decides every marker that names a policy ar selects, in scan order, keeping every item (the
 * commit's edit). 0 or IG_EFAIL (out of memory). */
int reconcile_decide_all(struct autorun *ar);
/* As reconcile_decide_all, but a decision that writes nothing goes straight to its report item
 * and is released: an up-to-date pass holds no decide_item (1 KiB) per marker. Writers keep
 * their item and an empty report item (ar->slots), filled after the commit. */
int reconcile_decide_and_report(struct autorun *ar);

/* reconcile_io.c: the listings (none filled yet) and the decisions' I/O; 0 or IG_EFAIL. */
int reconcile_io_init(struct pass *p);
/* Repository r's listing is final: decide may read it, settle windows learn what it holds. */
void reconcile_listing_fill(struct pass *p, size_t r);
/* Makes the listing config policy number policy reads hold its tags, before a decision: a
 * packed listing (scan.h) is rebuilt in the pass's scratch, which the listing opened before
 * gives up. Returns 0 or IG_EFAIL (out of memory). */
int reconcile_listing_open(struct pass *p, size_t policy);

/* reconcile_commit.c */
int reconcile_open_git(struct autorun *ar, struct error *err);
bool reconcile_any_write(const struct autorun *ar);
void reconcile_fail_writes(struct autorun *ar, const char *msg);
/* Commits ar's writes (re-deciding on the head it is given) and starts their push: 1 when it
 * is in flight (reconcile_commit_finish lands it; ar->g is the push's until then), else 0 with
 * the commit over (nothing to commit, or failed: a failure turns the writes into error/git,
 * or error/config for the message template). */
int reconcile_commit_start(struct autorun *ar);
/* Lands the push reconcile_commit_start left in flight (and its retries, should the remote
 * have moved), as reconcile_commit_start's end. */
void reconcile_commit_finish(struct autorun *ar);

/* reconcile_report.c */
/* Fills report item it from decision d (the counts come after: reconcile_report_count). */
int reconcile_report_fill(struct autorun *ar, struct report_item *it, const struct decide_item *d);
/* Counts a filled item: metrics, the current-missing warning, the pass's errors. */
void reconcile_report_count(struct pass *p, const struct report_item *it);
void reconcile_automation_failed(struct pass *p, const struct config_automation *a,
                                 const struct error *err);
int reconcile_report_unmarked(struct pass *p);
int reconcile_report_invalid(struct pass *p);

#endif
