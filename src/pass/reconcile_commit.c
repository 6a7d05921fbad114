/* One automation's commit: the edits spliced into its files (through safefile), the message
 * (commitmsg: template and trailers), the Git store's commit and push. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile_private.h"
#include "imageguard/guard/guard.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/pass/scan.h"
#include "imageguard/git/commitmsg.h"
#include "imageguard/git/githistory.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/pass/gitmarkers.h"
#include "imageguard/kube/lease.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "imageguard/util/safefile.h"
#include "imageguard/util/strvec.h"

#define FILE_MAX_BYTES (16u << 20) /* a marked YAML file we rewrite */

static int write_file(const char *workdir, const char *file, const struct buf *data,
                      struct error *err)
{
	struct error e = ERROR_INIT;
	int error = safefile_replace(workdir, file, data->data, data->len, &e);

	if (error < 0)
		error_set(err, error, "file '%s': cannot write: %s", file, safefile_reason(&e));
	return error;
}

static const char *item_file(const struct autorun *ar, size_t item)
{
	return ar->markers.items[ar->items[item].marker].file;
}

/* Splices the new values of one file (items order[0..n), the file's writers in scan order)
 * and writes it. */
static int apply_file(struct autorun *ar, const char *workdir, const size_t *order, size_t n,
                      struct error *err)
{
	const char *file = item_file(ar, order[0]);
	struct marker_edit *edits = calloc(n, sizeof(*edits));
	struct buf in = BUF_INIT_MAX(FILE_MAX_BYTES), out = BUF_INIT;
	struct error e = ERROR_INIT;
	int error;

	if (!edits)
		return error_oom(err);
	for (size_t i = 0; i < n; i++) {
		edits[i].marker = &ar->markers.items[ar->items[order[i]].marker];
		edits[i].value = ar->items[order[i]].new_value;
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

/* ---- one pass's edit in parts ---- */

void reconcile_parts_release(struct commit_parts *cp)
{
	free(cp->order);
	free(cp->group_start);
	free(cp->group_of);
	*cp = (struct commit_parts){0};
}

struct writer {
	const char *file;
	size_t item;
};

static int cmp_writer(const void *a, const void *b)
{
	const struct writer *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	return c ? c : (x->item > y->item) - (x->item < y->item);
}

/* Groups the writers by file: a file is never split between commits (its markers' byte ranges
 * hold only for the file as scanned). */
static int parts_plan(struct autorun *ar, struct error *err)
{
	struct commit_parts *cp = &ar->parts;
	size_t n = 0, len = ar->len ? ar->len : 1;
	struct writer *w = malloc(len * sizeof(*w));

	reconcile_parts_release(cp);
	cp->order = malloc(len * sizeof(*cp->order));
	cp->group_start = malloc((len + 1) * sizeof(*cp->group_start));
	cp->group_of = malloc(len * sizeof(*cp->group_of));
	if (!w || !cp->order || !cp->group_start || !cp->group_of) {
		free(w);
		reconcile_parts_release(cp);
		return error_oom(err);
	}
	for (size_t i = 0; i < ar->len; i++) {
		cp->group_of[i] = SIZE_MAX;
		if (ar->items[i].new_value)
			w[n++] = (struct writer){item_file(ar, i), i};
	}
	qsort(w, n, sizeof(*w), cmp_writer);
	for (size_t k = 0; k < n; k++) {
		if (k == 0 || strcmp(w[k].file, w[k - 1].file) != 0)
			cp->group_start[cp->ngroups++] = k;
		cp->order[k] = w[k].item;
		cp->group_of[w[k].item] = cp->ngroups - 1;
	}
	cp->group_start[cp->ngroups] = n;
	free(w);
	return 0;
}

/* Writes the files of groups [from, to). */
static int apply_edits(struct autorun *ar, const char *workdir, size_t from, size_t to,
                       struct error *err)
{
	const struct commit_parts *cp = &ar->parts;
	int error;

	for (size_t g = from; g < to; g++)
		if ((error = apply_file(ar, workdir, cp->order + cp->group_start[g],
		                        cp->group_start[g + 1] - cp->group_start[g], err)) < 0)
			return error;
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
static int build_message(struct autorun *ar, struct buf *msg, size_t from, size_t to,
                         struct error *err)
{
	const struct config *cfg = ar->p->cfg;
	struct commitmsg_change *changes = calloc(ar->len ? ar->len : 1, sizeof(*changes));
	struct commitmsg_input in = {0};
	struct strvec notes = STRVEC_INIT;
	size_t n = 0;
	int error = 0;

	if (!changes)
		return error_oom(err);
	for (size_t i = 0; i < ar->len && error == 0; i++) {
		const struct decide_item *it = &ar->items[i];
		const struct marker *m = &ar->markers.items[it->marker];
		struct scan *sc = &ar->p->scans[ar->p->policy_repo[it->policy]];
		struct commitmsg_change *c = &changes[n];

		if (!it->new_value || ar->parts.group_of[i] < from || ar->parts.group_of[i] >= to)
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
		c->tags_sha256 = scan_tags_sha256(sc);
		c->verified_by = it->verified_by;
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
		error_oom(err);
	free(changes);
	strvec_release(&notes);
	return error;
}

/* ---- fencing under leader election ---- */

#define HEAD_MESSAGE_MAX (1u << 20)

/* The push timeout the gate assumes: the GitRepository's, capped by the leader's. */
static int64_t push_ms(const struct autorun *ar, const struct reconcile_fence *f)
{
	int64_t cap = f->push_ms(f->ctx), t = ar->a->source->timeout_ms;

	return t > 0 && t < cap ? t : cap;
}

/* How far back the head check looks for the last commit imageguard wrote (commits of people in
 * between carry no trailer). */
#define HEAD_LEASE_WALK 256

static bool has_lease_trailer(void *ctx, const char *msg)
{
	char name[LEASE_MAX_ID];
	long gen;

	(void)ctx;
	return commitmsg_lease_of(name, sizeof(name), &gen, msg);
}

/* The last commit on the head's first-parent line that carries a lease trailer (a person's
 * commits on top do not hide it) was written under a newer generation of our lease: a newer
 * leader exists, so this one must not push (defence in depth behind the time gate). */
static int check_head_lease(const char *workdir, const char *ours, struct error *err)
{
	struct buf msg = BUF_INIT_MAX(HEAD_MESSAGE_MAX);
	char name[LEASE_MAX_ID], mine[LEASE_MAX_ID];
	long theirs, my_gen;
	int error =
	    githistory_first_message(&msg, workdir, HEAD_LEASE_WALK, has_lease_trailer, NULL, err);

	if (error == 0 &&
	    commitmsg_lease_of(name, sizeof(name), &theirs, msg.data ? msg.data : "") &&
	    commitmsg_lease_of(mine, sizeof(mine), &my_gen, ours) && strcmp(name, mine) == 0 &&
	    theirs > my_gen)
		error = error_set(err, IG_EFAIL,
		                  "the head was written under lease '%s' generation %ld, ours is "
		                  "%ld: a newer leader exists, not pushing",
		                  name, theirs, my_gen);
	buf_release(&msg);
	return error;
}

/* Before each push attempt: still the leader (with time for the push), and not behind the
 * head's generation. The generation goes into the message's trailer. A refusal is IG_EFAIL,
 * not IG_ECONFLICT: gitstore then resets the work tree the edit changed. */
static int fence(struct autorun *ar, const char *workdir, struct buf *message, struct error *err)
{
	const struct reconcile_fence *f = ar->p->o->fence;
	char gen[LEASE_MAX_ID + 24], trailer[LEASE_MAX_ID + 48];
	int64_t until;

	if (!f)
		return 0;
	if (!f->may_write_until(f->ctx, push_ms(ar, f), &until))
		return error_set(err, IG_EFAIL,
		                 "lease '%s' not renewed in time for a push: not the leader, "
		                 "read-only",
		                 f->lease_name(f->ctx));
	f->generation(f->ctx, gen, sizeof(gen));
	snprintf(trailer, sizeof(trailer), "Imageguard-Lease: %s", gen);
	if (check_head_lease(workdir, trailer, err) < 0)
		return err->code;
	/* the push ends by the instant the gate admitted it for, however lively the host */
	gitstore_push_deadline(ar->g, until);
	return commitmsg_add_lease(message, gen, err);
}

/* Room kept in a part's message for the lease trailer that fence() adds. */
#define LEASE_TRAILER_ROOM 512u

/* The message of the part that starts at group parts.next: every group left when it fits, else
 * the most that fit (found by halving); *to is the part's end. */
static int part_message(struct autorun *ar, struct buf *msg, size_t *to, struct error *err)
{
	const struct commit_parts *cp = &ar->parts;
	size_t max = msg->max, lo = cp->next + 1, hi = cp->ngroups, fits = cp->next;
	int error;

	if (max > LEASE_TRAILER_ROOM)
		msg->max = max - LEASE_TRAILER_ROOM;
	*to = cp->ngroups;
	error = build_message(ar, msg, cp->next, cp->ngroups, err);
	if (error < 0 && commitmsg_too_long(err) && cp->ngroups - cp->next > 1) {
		hi = cp->ngroups - 1;
		while (lo <= hi && (error == 0 || commitmsg_too_long(err))) {
			size_t mid = lo + (hi - lo) / 2;

			error_clear(err);
			if ((error = build_message(ar, msg, cp->next, mid, err)) == 0)
				fits = mid, lo = mid + 1;
			else
				hi = mid - 1;
		}
		if (fits > cp->next && (error == 0 || commitmsg_too_long(err))) {
			error_clear(err);
			*to = fits;
			error = build_message(ar, msg, cp->next, fits, err);
		}
	}
	msg->max = max;
	if (error < 0 && commitmsg_too_long(err) && !ar->a->message_template) {
		size_t g = cp->next, n = cp->group_start[g + 1] - cp->group_start[g];

		return error_set(
		    err, error,
		    "file '%s': its %zu change%s need a commit message over %zu bytes, "
		    "the most one commit takes; split the file",
		    item_file(ar, cp->order[cp->group_start[g]]), n, n == 1 ? "" : "s",
		    max - LEASE_TRAILER_ROOM);
	}
	if (error < 0 && error != IG_EFAIL) {
		/* the template is the automation's configuration (over budget, or failing on the
		 * real data): error/config naming the object and the field */
		ar->template_failed = true;
		error_prefix(err, "automation '%s': 'spec.git.commit.messageTemplate'", ar->a->id);
	}
	return error;
}

/* One part of a pass's edit (gitstore_edit_fn). The first part of an attempt reads the markers
 * again and decides; each part writes the files whose changes fit one commit message, and asks
 * for the next part (returns 1) while files are left. */
static int edit(void *ctx, const char *workdir, struct buf *message, struct error *err)
{
	struct autorun *ar = ctx;
	struct commit_parts *cp = &ar->parts;
	const struct reconcile_fence *f = ar->p->o->fence;
	size_t to;
	int error;

	if (f && !f->may_write_until(f->ctx, 0, NULL))
		return error_set(err, IG_EFAIL, "lease '%s': not the leader, read-only",
		                 f->lease_name(f->ctx));
	if (!cp->pending) {
		if ((error = reconcile_scan_markers(ar, workdir, err)) < 0)
			return error;
		if ((error = reconcile_decide_all(ar)) < 0)
			return error_set(err, error, "automation '%s': out of memory", ar->a->id);
		if ((error = parts_plan(ar, err)) < 0)
			return error;
	}
	cp->pending = false;
	if ((error = part_message(ar, message, &to, err)) < 0 ||
	    (error = apply_edits(ar, workdir, cp->next, to, err)) < 0 ||
	    (error = fence(ar, workdir, message, err)) < 0)
		return error;
	cp->next = to;
	cp->pending = to < cp->ngroups;
	return cp->pending ? 1 : 0;
}

bool reconcile_any_write(const struct autorun *ar)
{
	for (size_t i = 0; i < ar->len; i++)
		if (ar->items[i].new_value)
			return true;
	return false;
}

static void fail_writes(struct autorun *ar, enum guard_reason reason, const char *msg)
{
	for (size_t i = 0; i < ar->len; i++)
		if (ar->items[i].new_value) {
			guard_fail(&ar->items[i].d, reason, "%s", msg);
			free(ar->items[i].new_value);
			ar->items[i].new_value = NULL;
		}
}

void reconcile_fail_writes(struct autorun *ar, const char *msg)
{
	fail_writes(ar, GUARD_GIT, msg);
}

/* Opens (cloning once) the Git cache of automation a as a pass does; *out NULL on failure. */
static int open_git(struct gitstore **out, const struct reconcile_options *o,
                    const struct config_automation *a, struct error *err)
{
	struct gitstore_options go = {0};
	char *secret = NULL, *signing = NULL;
	int error;

	*out = NULL;
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
	if (o->fence && (!go.timeout_ms || go.timeout_ms > o->fence->push_ms(o->fence->ctx)))
		go.timeout_ms =
		    (long)o->fence->push_ms(o->fence->ctx); /* a fenced push's Git I/O */
	error = gitstore_open(out, &go, err);
	free(secret);
	free(signing);
	return error;
}

int reconcile_open_git(struct autorun *ar, struct error *err)
{
	ar->markers_epoch = 0;
	return open_git(&ar->g, ar->p->o, ar->a, err);
}

int reconcile_warm_git(const struct reconcile_options *o, const struct config_automation *a,
                       struct error *err)
{
	struct gitstore *g = NULL;
	struct marker_set markers = {0};
	uint64_t epoch = 0; /* as a pass's open (reconcile_open_git) */
	int error = open_git(&g, o, a, err);

	if (error == 0 && o->marker_named)
		error = gitmarkers_scan(&markers, g, a->update_path, &epoch, err);
	for (size_t i = 0; error == 0 && i < markers.len; i++)
		o->marker_named(o->marker_ctx, markers.items[i].policy);
	if (error < 0 && o->marker_named)
		o->marker_named(o->marker_ctx, NULL);
	markers_release(&markers);
	gitstore_free(g);
	return error;
}

/* What a commit's end means for ar's writers: the error (the template's is error/config, any
 * other error/git), or the commit counted. */
static void landed(struct autorun *ar, int error, const struct error *err)
{
	struct pass *p = ar->p;

	reconcile_parts_release(&ar->parts);
	if (error < 0 && ar->template_failed) {
		log_error("config.template", "%s", err->msg);
		fail_writes(ar, GUARD_CONFIG, err->msg);
	} else if (error < 0) {
		log_error("git.push", "automation '%s': %s", ar->a->id, err->msg);
		reconcile_fail_writes(ar, err->msg);
	} else if (ar->commit[0]) {
		ar->state = AUTORUN_COMMITTED;
		p->report->commits++;
		passmetrics_commit(p->o->metrics);
		log_info("git.commit", "automation '%s': pushed %s", ar->a->id, ar->commit);
	}
}

int reconcile_commit_start(struct autorun *ar)
{
	struct error err = ERROR_INIT;
	int error;

	ar->commit[0] = '\0';
	if (ar->p->o->stop && *ar->p->o->stop) {
		reconcile_fail_writes(ar, "stopping: commit not started");
		return 0;
	}
	ar->template_failed = false;
	ar->parts.pending = false;
	if ((error = gitstore_push_start(ar->g, edit, ar, &err)) > 0)
		return 1;
	landed(ar, error, &err);
	return 0;
}

void reconcile_commit_finish(struct autorun *ar)
{
	struct error err = ERROR_INIT;

	landed(ar, gitstore_push_finish(ar->commit, ar->g, edit, ar, &err), &err);
}
