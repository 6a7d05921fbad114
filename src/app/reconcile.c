/* One pass of the controller. Order: open every automation's Git tree and read its markers,
 * list each repository a marker needs (once, concurrently), then per automation decide every
 * marker (guard_decide, manifest HEAD, guard_confirm) and commit. The commit's edit callback
 * re-reads the markers and decides again on whatever head it is given, so a value is only
 * ever written forward of what is committed at that moment. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/registry/buildtime.h"
#include "imageguard/git/commitmsg.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"
#include "imageguard/git/gitstore.h"
#include "imageguard/app/guard.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/util/log.h"
#include "imageguard/markers/markers.h"
#include "imageguard/app/metrics.h"
#include "imageguard/policy/policy.h"
#include "imageguard/app/reconcile.h"
#include "imageguard/registry/registry.h"
#include "imageguard/app/report.h"
#include "imageguard/app/scan.h"
#include "imageguard/util/strvec.h"

#define FILE_MAX_BYTES (16u << 20) /* a marked YAML file we rewrite */

struct autorun;

/* A manifest HEAD done in this pass: reused by every marker (and every push attempt). */
struct head {
	size_t repo;
	char *tag;
	enum guard_head result;
	char *digest;
	char *error;
};

struct pass {
	const struct reconcile_options *o;
	const struct config *cfg;
	time_t now;
	struct registry_client *client;
	struct scan *scans;       /* one per config repository, same index */
	struct autorun *autoruns; /* one per config automation, same index */
	size_t *policy_repo;      /* per config policy: index of its repository */
	bool *policy_marked;      /* per config policy: a marker names it */
	struct head *heads;
	size_t heads_len, heads_cap;
	struct buildtime *buildtimes; /* config `created` by digest, for digest-tracked policies */
	struct report *report;
	char *git_failure; /* the first automation that could not be read, or NULL */
};

/* One marker's decision, redone at every push attempt. */
struct decided {
	size_t marker;                      /* index in the automation's marker set */
	size_t policy;                      /* index in config->policies */
	char *current_tag, *current_digest; /* owned */
	struct guard_input in;
	struct guard_decision d;
	char *new_value; /* owned; what to write, NULL: nothing */
	/* borrowed from pass->buildtimes; set when the guard compared build times */
	const struct guard_created *cur_created, *cand_created;
};

struct autorun {
	struct pass *p;
	const struct config_automation *a;
	struct gitstore *g;
	struct marker_set markers;
	struct decided *items;
	size_t len;
	bool committed;
	char commit[41];
};

static const char *const decision_labels[] = {"policy", "decision", "reason"};
static const char *const registry_labels[] = {"registry", "code"};
static const char *const image_labels[] = {"image"};
static const char *const policy_labels[] = {"policy"};
static const double duration_buckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

int reconcile_metrics_declare(struct metrics *m)
{
	int error = 0;

	if (!error)
		error = metrics_declare(m, "imageguard_decisions_total", METRICS_COUNTER,
		                        "Marker decisions by policy, decision and reason.",
		                        decision_labels, 3, NULL, 0);
	if (!error)
		error =
		    metrics_declare(m, "imageguard_registry_requests_total", METRICS_COUNTER,
		                    "Registry HTTP responses by registry and status (0: transport "
		                    "failure).",
		                    registry_labels, 2, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_registry_tags", METRICS_GAUGE,
		                        "Tags in the last successful listing of an image.",
		                        image_labels, 1, NULL, 0);
	if (!error)
		error =
		    metrics_declare(m, "imageguard_reconcile_duration_seconds", METRICS_HISTOGRAM,
		                    "Duration of reconcile passes.", NULL, 0, duration_buckets,
		                    sizeof(duration_buckets) / sizeof(duration_buckets[0]));
	if (!error)
		error = metrics_declare(
		    m, "imageguard_last_success_timestamp_seconds", METRICS_GAUGE,
		    "Unix time of the end of the last complete pass.", NULL, 0, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_commits_total", METRICS_COUNTER,
		                        "Commits pushed.", NULL, 0, NULL, 0);
	if (!error)
		error = metrics_declare(m, "imageguard_current_missing_total", METRICS_COUNTER,
		                        "Decisions where the committed tag was absent from a "
		                        "successful listing (stale or truncated registry data).",
		                        policy_labels, 1, NULL, 0);
	return error;
}

static void observe_response(void *ctx, const char *registry, long code)
{
	char code_text[16];
	const char *values[2] = {registry, code_text};

	snprintf(code_text, sizeof(code_text), "%ld", code);
	metrics_add(ctx, "imageguard_registry_requests_total", values, 1);
}

int reconcile_client_new(struct registry_client **out, struct metrics *m, struct error *err)
{
	struct registry_options opts;

	registry_options_init(&opts);
	if (m) {
		opts.observe = observe_response;
		opts.observe_ctx = m;
	}
	return registry_client_new(out, &opts, err);
}

/* ---- manifest HEADs ---- */

static int head_add(struct pass *p, struct head **out)
{
	if (p->heads_len == p->heads_cap) {
		size_t cap = p->heads_cap ? p->heads_cap * 2 : 16;
		struct head *h = realloc(p->heads, cap * sizeof(*h));

		if (!h)
			return IG_EFAIL;
		p->heads = h;
		p->heads_cap = cap;
	}
	*out = &p->heads[p->heads_len++];
	memset(*out, 0, sizeof(**out));
	return 0;
}

/* The HEAD of repo:tag in this pass, done once and remembered. NULL when out of memory. */
static const struct head *head_of(struct pass *p, size_t repo, const char *tag)
{
	struct registry_target t;
	struct error err = ERROR_INIT;
	struct head *h;
	int rc;

	for (size_t i = 0; i < p->heads_len; i++)
		if (p->heads[i].repo == repo && strcmp(p->heads[i].tag, tag) == 0)
			return &p->heads[i];
	if (head_add(p, &h) < 0)
		return NULL;
	h->repo = repo;
	if (!(h->tag = strdup(tag))) {
		p->heads_len--;
		return NULL;
	}
	scan_target(&t, &p->scans[repo]);
	rc = registry_head_manifest(&h->digest, p->client, &t, tag, &err);
	if (rc == 0) {
		h->result = GUARD_HEAD_OK;
	} else {
		h->result = rc == IG_ENOTFOUND ? GUARD_HEAD_NOT_FOUND : GUARD_HEAD_FAILED;
		h->error = strdup(err.msg);
		log_warn("registry.head", "repository '%s' tag '%s': %s", p->scans[repo].repo->id,
		         tag, err.msg);
	}
	return h;
}

/* ---- one marker ---- */

static enum guard_digest_mode digest_mode(const struct marker *m, enum config_reflect r)
{
	switch (m->part) {
	case MARKER_IMAGE:
		return r == CONFIG_REFLECT_ALWAYS           ? GUARD_DIGEST_ALWAYS
		       : r == CONFIG_REFLECT_IF_NOT_PRESENT ? GUARD_DIGEST_IF_MISSING
		                                            : GUARD_DIGEST_NONE;
	case MARKER_DIGEST:
		return r == CONFIG_REFLECT_IF_NOT_PRESENT ? GUARD_DIGEST_IF_MISSING
		                                          : GUARD_DIGEST_ALWAYS;
	default:
		return GUARD_DIGEST_NONE;
	}
}

/* The `:tag` marker of the same policy nearest to m in its file, or NULL. */
static const struct marker *sibling_tag(const struct marker_set *s, const struct marker *m)
{
	const struct marker *best = NULL;
	size_t best_dist = (size_t)-1;

	for (size_t i = 0; i < s->len; i++) {
		const struct marker *o = &s->items[i];
		size_t dist = o->line > m->line ? o->line - m->line : m->line - o->line;

		if (o->part != MARKER_TAG || strcmp(o->file, m->file) != 0 ||
		    strcmp(o->policy, m->policy) != 0)
			continue;
		if (dist < best_dist) {
			best = o;
			best_dist = dist;
		}
	}
	return best;
}

static int dup_range(char **out, const char *s, size_t start, size_t len)
{
	*out = NULL;
	if (!len)
		return 0;
	if (!(*out = malloc(len + 1)))
		return IG_EFAIL;
	memcpy(*out, s + start, len);
	(*out)[len] = '\0';
	return 0;
}

/* What the marker holds: its tag (a sibling's for `:digest`/`:name`) and digest. */
static int read_current(struct decided *it, const struct marker_set *s, const struct marker *m)
{
	const struct marker *tag;
	struct imageref_parts parts;

	switch (m->part) {
	case MARKER_IMAGE:
		imageref_split(&parts, m->value, strlen(m->value));
		if (dup_range(&it->current_tag, m->value, parts.tag_start, parts.tag_len) < 0 ||
		    dup_range(&it->current_digest, m->value, parts.digest_start, parts.digest_len) <
		        0)
			return IG_EFAIL;
		return 0;
	case MARKER_TAG:
		return (it->current_tag = strdup(m->value)) ? 0 : IG_EFAIL;
	case MARKER_DIGEST:
		if (*m->value && !(it->current_digest = strdup(m->value)))
			return IG_EFAIL;
		tag = sibling_tag(s, m);
		if (tag && !(it->current_tag = strdup(tag->value)))
			return IG_EFAIL;
		return 0;
	case MARKER_NAME:
		tag = sibling_tag(s, m);
		if (tag && !(it->current_tag = strdup(tag->value)))
			return IG_EFAIL;
		return 0;
	}
	return 0;
}

static void fill_input(struct autorun *ar, struct decided *it, const struct marker *m)
{
	const struct config_policy *pol = &ar->p->cfg->policies[it->policy];
	const struct scan *sc = &ar->p->scans[ar->p->policy_repo[it->policy]];
	struct guard_input *in = &it->in;

	*in = (struct guard_input)GUARD_INPUT_INIT;
	in->policy = pol->policy;
	in->order_policy = pol->order_policy;
	in->policy_suspended = pol->suspend;
	in->repository_suspended = pol->repository->suspend;
	in->automation_suspended = ar->a->suspend;
	in->listing_ok = sc->done && sc->rc == 0;
	in->listing_error =
	    sc->done ? (sc->rc < 0 ? sc->err.msg : NULL) : "repository not listed in this pass";
	if (in->listing_ok) {
		in->tags = (const char *const *)sc->listing.tags.items;
		in->tags_len = sc->listing.tags.len;
	}
	in->rollback_to = pol->override.tag;
	in->rollback_reason = pol->override.reason;
	in->has_until = pol->override.has_until;
	in->until = pol->override.until;
	in->now = ar->p->now;
	in->current_tag = it->current_tag;
	in->current_digest = it->current_digest;
	in->digest_mode = digest_mode(m, pol->reflect);
	in->tracked_tag = pol->kind == CONFIG_POLICY_DIGEST ? pol->digest_tag : NULL;
}

/* `repo:tag[@digest]`, `tag`, `digest` or `repo`: the value a writing decision puts at m. */
static int new_value(char **out, const struct decided *it, const struct marker *m,
                     const struct config_policy *pol)
{
	const struct guard_decision *d = &it->d;
	struct error err = ERROR_INIT;
	struct buf b = BUF_INIT;
	const char *digest = NULL;
	char *value = NULL;
	int error = 0;

	*out = NULL;
	switch (m->part) {
	case MARKER_IMAGE:
		if (d->write_digest && *d->digest)
			digest = d->digest;
		else if (it->current_tag && it->current_digest &&
		         strcmp(it->current_tag, d->candidate) == 0)
			digest = it->current_digest; /* same tag: its pinned digest stays valid */
		/* the name as written in the marker (a Flux user's spelling stays) */
		if ((error = markers_value_for(&value, m, pol->repository->image, d->candidate,
		                               digest, &err)) == 0)
			error = buf_puts(&b, value);
		free(value);
		break;
	case MARKER_TAG:
		error = buf_puts(&b, d->candidate);
		break;
	case MARKER_DIGEST:
		error = buf_puts(&b, d->write_digest && *d->digest ? d->digest : m->value);
		break;
	case MARKER_NAME:
		error = buf_puts(&b, pol->repository->image);
		break;
	}
	if (error < 0) {
		buf_release(&b);
		return error == IG_EINVALID ? IG_EINVALID : IG_EFAIL;
	}
	if (strcmp(b.data, m->value) == 0) {
		buf_release(&b);
		return 0;
	}
	*out = buf_detach(&b);
	return 0;
}

/* A `:name` marker only ever holds the repository: it follows the registry's health (a
 * failed or suspended policy holds it too) but not the tag's movement. */
static void settle_name(struct decided *it, const struct marker *m, const struct config_policy *pol)
{
	struct guard_decision *d = &it->d;

	if (m->part != MARKER_NAME || (d->decision != GUARD_UPDATE && d->decision != GUARD_NONE &&
	                               d->decision != GUARD_ROLLBACK))
		return;
	if (strcmp(m->value, pol->repository->image) == 0) {
		d->decision = GUARD_NONE;
		d->reason = GUARD_UP_TO_DATE;
	} else {
		d->decision = GUARD_UPDATE;
		d->reason = GUARD_ADOPT;
	}
}

/* A digest-tracked policy's moved digest: the build times of the committed and the new image
 * decide (guard_confirm_created). */
static int confirm_created(struct pass *p, struct decided *it)
{
	const struct config_policy *pol = &p->cfg->policies[it->policy];
	size_t repo = p->policy_repo[it->policy];
	struct registry_target t;

	assert(it->current_digest);
	scan_target(&t, &p->scans[repo]);
	if (buildtime_get(&it->cur_created, p->buildtimes, p->client, &t, repo, it->current_digest,
	                  pol->digest_platform) < 0 ||
	    buildtime_get(&it->cand_created, p->buildtimes, p->client, &t, repo, it->d.digest,
	                  pol->digest_platform) < 0)
		return IG_EFAIL;
	guard_confirm_created(&it->d, &it->in, it->cur_created, it->cand_created);
	return 0;
}

static int decide_one(struct autorun *ar, struct decided *it)
{
	struct pass *p = ar->p;
	const struct marker *m = &ar->markers.items[it->marker];
	const struct config_policy *pol = &p->cfg->policies[it->policy];
	struct error err = ERROR_INIT;
	const struct head *h;
	int rc;

	if (read_current(it, &ar->markers, m) < 0)
		return IG_EFAIL;
	fill_input(ar, it, m);
	if (guard_decide(&it->d, &it->in, &err) < 0)
		return IG_EFAIL;
	if (it->d.needs_confirmation) {
		if (!(h = head_of(p, p->policy_repo[it->policy],
		                  guard_confirm_ref(&it->d, &it->in))))
			return IG_EFAIL;
		guard_confirm(&it->d, &it->in, h->result, h->digest, h->error);
	}
	if (it->d.needs_created && confirm_created(p, it) < 0)
		return IG_EFAIL;
	settle_name(it, m, pol);
	if (guard_writes(&it->d) && (rc = new_value(&it->new_value, it, m, pol)) < 0) {
		if (rc != IG_EINVALID)
			return IG_EFAIL;
		guard_fail(&it->d, GUARD_CONFIG, "%s:%zu: cannot build the new value", m->file,
		           m->line);
	}
	return 0;
}

/* ---- one automation ---- */

static void decided_release(struct autorun *ar)
{
	for (size_t i = 0; i < ar->len; i++) {
		free(ar->items[i].current_tag);
		free(ar->items[i].current_digest);
		free(ar->items[i].new_value);
	}
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
		struct decided *it;

		if (!pol)
			continue;
		it = &ar->items[ar->len++];
		it->marker = i;
		it->policy = policy_index(cfg, pol);
		if (decide_one(ar, it) < 0)
			return IG_EFAIL;
	}
	return 0;
}

static int scan_markers(struct autorun *ar, const char *workdir, struct error *err)
{
	int error;

	markers_release(&ar->markers);
	if ((error = markers_scan_tree(&ar->markers, workdir, ar->a->update_path, err)) < 0)
		return error;
	for (size_t i = 0; i < ar->markers.problems_len; i++)
		log_warn("markers.problem", "automation '%s': %s:%zu: %s", ar->a->id,
		         ar->markers.problems[i].file, ar->markers.problems[i].line,
		         ar->markers.problems[i].message);
	return 0;
}

/* Writes data to path through a temporary file and rename, keeping the mode. */
static int write_file(const char *path, const struct buf *data, struct error *err)
{
	struct buf tmp = BUF_INIT;
	struct stat st;
	int fd = -1, error = 0;

	if (stat(path, &st) < 0)
		st.st_mode = 0644;
	if ((error = buf_printf(&tmp, "%s.imageguard-tmp", path)) < 0)
		goto done;
	fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
	if (fd < 0 || write(fd, data->data, data->len) != (ssize_t)data->len || fsync(fd) < 0) {
		error = error_set(err, IG_EFAIL, "file '%s': %s", path, strerror(errno));
		goto done;
	}
	close(fd);
	fd = -1;
	if (rename(tmp.data, path) < 0)
		error = error_set(err, IG_EFAIL, "file '%s': %s", path, strerror(errno));
done:
	if (fd >= 0)
		close(fd);
	if (error < 0 && tmp.data)
		unlink(tmp.data);
	buf_release(&tmp);
	return error;
}

/* Splices every new value of one file (the markers of file, in order) and writes it. */
static int apply_file(struct autorun *ar, const char *workdir, const char *file, struct error *err)
{
	struct marker_edit *edits = calloc(ar->len ? ar->len : 1, sizeof(*edits));
	struct buf path = BUF_INIT, in = BUF_INIT_MAX(FILE_MAX_BYTES), out = BUF_INIT;
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
	if ((error = buf_printf(&path, "%s/%s", workdir, file)) < 0 ||
	    (error = buf_read_file(&in, path.data)) < 0) {
		error = error_set(err, error, "file '%s': cannot read", file);
		goto done;
	}
	if ((error = markers_apply(&out, in.data, in.len, edits, n, err)) < 0) {
		error_prefix(err, "file '%s'", file);
		goto done;
	}
	error = write_file(path.data, &out, err);
done:
	free(edits);
	buf_release(&path);
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

/* The commit message through commitmsg (the automation's messageTemplate or the default);
 * a rollback's change carries its reason, and a template that drops it gets a trailer, so
 * the reason is always in the commit (CONTRACT §7). */
static int build_message(struct autorun *ar, struct buf *msg, struct error *err)
{
	const struct config *cfg = ar->p->cfg;
	struct commitmsg_change *changes = calloc(ar->len ? ar->len : 1, sizeof(*changes));
	const char *slash = strchr(ar->a->id, '/');
	char *ns = slash ? strndup(ar->a->id, (size_t)(slash - ar->a->id)) : NULL;
	struct commitmsg_input in = {0};
	struct strvec notes = STRVEC_INIT;
	size_t n = 0;
	int error = 0;

	if (!changes || (slash && !ns)) {
		free(changes);
		return error_set(err, IG_EFAIL, "out of memory");
	}
	for (size_t i = 0; i < ar->len && error == 0; i++) {
		const struct decided *it = &ar->items[i];
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
		{
			struct buf d = BUF_INIT;

			error = buf_printf(&d, "%s/%s", guard_decision_name(it->d.decision),
			                   guard_reason_name(it->d.reason));
			if (error == 0 && (error = strvec_push_owned(&notes, buf_detach(&d))) == 0)
				c->decision = notes.items[notes.len - 1];
			buf_release(&d);
		}
		if (it->d.decision == GUARD_ROLLBACK) {
			struct buf note = BUF_INIT;

			c->rollback_reason = it->d.message;
			error = buf_printf(&note, "rollback: %s", it->d.message);
			if (error == 0 &&
			    (error = strvec_push_owned(&notes, buf_detach(&note))) == 0)
				c->reason = notes.items[notes.len - 1];
			buf_release(&note);
		}
		n++;
	}
	in.tmpl = ar->a->message_template;
	in.tmpl_name = "messageTemplate";
	in.automation_namespace = ns ? ns : "";
	in.automation_name = slash ? slash + 1 : ar->a->id;
	in.update_path = ar->a->update_path;
	in.changes = changes;
	in.n = n;
	buf_reset(msg);
	if (error == 0)
		error = commitmsg_render(msg, &in, err);
	else
		error_set(err, IG_EFAIL, "out of memory");
	free(changes);
	free(ns);
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
	char *secret = NULL;
	int error;

	if (a->source->secret_ref &&
	    (error = config_secret_path(&secret, o->secrets_dir ? o->secrets_dir : ".",
	                                a->source->secret_ref, err)) < 0)
		return error;
	go.url = a->source->url;
	go.branch = a->checkout_branch;
	go.push_branch = a->push_branch;
	go.state_dir = o->state_dir;
	go.secret_dir = secret;
	go.author_name = a->author_name;
	go.author_email = a->author_email;
	error = gitstore_open(&ar->g, &go, err);
	free(secret);
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
		if (p->o->metrics)
			metrics_add(p->o->metrics, "imageguard_commits_total", NULL, 1);
		log_info("git.commit", "automation '%s': pushed %s", ar->a->id, ar->commit);
	}
	return 0;
}

/* ---- reporting ---- */

static void count_decision(struct pass *p, const struct report_item *it)
{
	const char *values[3] = {it->policy, guard_decision_name(it->decision),
	                         guard_reason_name(it->reason)};

	if (p->o->metrics)
		metrics_add(p->o->metrics, "imageguard_decisions_total", values, 1);
	if (it->warnings & GUARD_WARN_CURRENT_MISSING) {
		log_warn("guard.current-missing",
		         "policy '%s': %s:%zu: committed tag '%s' is absent from the listing of "
		         "'%s' (%zu tags): stale or truncated registry data",
		         it->policy, it->file ? it->file : "-", it->line,
		         it->current ? it->current : "", it->image ? it->image : "", it->tag_count);
		if (p->o->metrics)
			metrics_add(p->o->metrics, "imageguard_current_missing_total", values, 1);
	}
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

static int report_marker(struct autorun *ar, const struct decided *d)
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

	if (report_add(&it, p->report) < 0)
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
	    report_set_created(&it->candidate_created, d->cand_created) < 0)
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
	for (size_t i = 0; i < ar->markers.len; i++) {
		const struct marker *m = &ar->markers.items[i];
		const struct config_policy *pol = config_find_policy_id(p->cfg, m->policy);

		if (pol)
			p->policy_marked[policy_index(p->cfg, pol)] = true;
		else
			log_warn("markers.unknown-policy",
			         "automation '%s': %s:%zu: marker names policy '%s', absent from "
			         "the configuration",
			         ar->a->id, m->file, m->line, m->policy);
	}
}

/* Phase two, after the listings: decide, commit, report. */
static int finish_automation(struct autorun *ar)
{
	int error = 0;

	if (!ar->g)
		return 0;
	if ((error = decide_all(ar)) < 0)
		return error;
	if (!ar->p->o->dry_run && any_write(ar) && (error = commit(ar)) < 0)
		return error;
	for (size_t i = 0; i < ar->len && error == 0; i++)
		error = report_marker(ar, &ar->items[i]);
	return error;
}

static void autorun_release(struct autorun *ar)
{
	decided_release(ar);
	markers_release(&ar->markers);
	gitstore_free(ar->g);
	ar->g = NULL;
}

static int report_unmarked(struct pass *p)
{
	for (size_t i = 0; i < p->cfg->policies_len; i++) {
		const struct config_policy *pol = &p->cfg->policies[i];
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
		} else {
			it->decision = GUARD_NONE;
			it->reason = GUARD_NO_MARKERS;
		}
		count_decision(p, it);
	}
	return 0;
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
	    buildtime_new(&p->buildtimes) < 0)
		return error_set(err, IG_EFAIL, "reconcile: out of memory");
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
	else if (reconcile_client_new(&p->client, o->metrics, err) < 0)
		return err->code;
	return 0;
}

static void pass_release(struct pass *p)
{
	if (p->scans)
		scan_release(p->scans, p->o->config->repositories_len);
	for (size_t i = 0; i < p->heads_len; i++) {
		free(p->heads[i].tag);
		free(p->heads[i].digest);
		free(p->heads[i].error);
	}
	free(p->heads);
	buildtime_free(p->buildtimes);
	for (size_t i = 0; p->autoruns && i < p->o->config->automations_len; i++)
		autorun_release(&p->autoruns[i]);
	free(p->autoruns);
	free(p->scans);
	free(p->policy_repo);
	free(p->policy_marked);
	free(p->git_failure);
	if (p->client != p->o->client)
		registry_client_free(p->client);
}

static void record_listings(struct pass *p)
{
	for (size_t i = 0; p->o->metrics && i < p->cfg->repositories_len; i++) {
		const struct scan *sc = &p->scans[i];
		const char *values[1] = {sc->repo->image};

		if (sc->done && sc->rc == 0)
			metrics_set(p->o->metrics, "imageguard_registry_tags", values,
			            (double)sc->listing.tags.len);
	}
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
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
	for (size_t i = 0; i < cfg->automations_len; i++)
		open_automation(&p.autoruns[i]);
	for (size_t i = 0; i < cfg->policies_len; i++)
		if (p.policy_marked[i])
			p.scans[p.policy_repo[i]].wanted = true;
	if ((error = scan_run(p.scans, cfg->repositories_len, p.client, o->secrets_dir,
	                      o->concurrency, err)) < 0)
		goto done;
	record_listings(&p);
	for (size_t i = 0; i < cfg->automations_len && error == 0; i++) {
		if (o->stop && *o->stop)
			break;
		error = finish_automation(&p.autoruns[i]);
		autorun_release(&p.autoruns[i]);
	}
	if (error == 0)
		error = report_unmarked(&p);
	if (error < 0) {
		error = error_set(err, error, "reconcile: out of memory");
		goto done;
	}
	if (o->audit && !o->dry_run && report_audit(o->audit, out, err) < 0) {
		log_error("audit.write", "%s", err->msg);
		error_clear(err);
	}
	if (o->metrics) {
		metrics_observe(o->metrics, "imageguard_reconcile_duration_seconds", NULL,
		                seconds_since(&t0));
		/* a complete pass, even with policies in error: those have their own counter */
		metrics_set(o->metrics, "imageguard_last_success_timestamp_seconds", NULL,
		            (double)time(NULL));
	}
done:
	pass_release(&p);
	return error;
}
