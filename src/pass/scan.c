/* Concurrent repository listings for one pass: a small pool of pthreads pulls the next scan
 * whose registry host is below SCAN_PER_HOST_MAX requests in flight. Scheduling is O(hosts)
 * per scan taken: each host keeps its pending scans in index order with a cursor, so taking
 * one never rescans the scans already taken (5,000 repositories on one host made that
 * quadratic). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/pass/kubesa.h"
#include "imageguard/config/config.h"
#include "imageguard/registry/cloudauth.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/util/log.h"
#include "imageguard/pass/scan.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/strindex.h"

/* The pending scans of one registry host, in index order. */
struct host_queue {
	size_t *order;     /* scan indices, borrowed from pool.order */
	size_t len, next;  /* next: the first not yet taken */
	unsigned inflight; /* requests in flight on the host */
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct scan *scans;
	size_t n;
	struct host_queue *hosts;
	size_t nhosts;
	size_t *host_of; /* per scan: its host queue */
	size_t *order;   /* every pending scan, grouped by host */
	struct registry_client *client;
	const char *secrets_dir;
	unsigned per_host;
	const struct scan_hooks *hooks; /* NULL: none */
};

static bool is_pending(const struct scan *s)
{
	return s->wanted && !s->repo->suspend;
}

int scan_load_access(struct registry_creds *creds, char **ca_file,
                     const struct config_repository *r, const char *secrets_dir, struct error *err)
{
	struct buf ca = BUF_INIT;
	char *dir = NULL;
	int error = 0;

	*ca_file = NULL;
	if (r->service_account && (error = kubesa_load_creds(creds, r, secrets_dir, err)) < 0)
		return error;
	if (r->secret_ref && !r->service_account) {
		if ((error = config_secret_path(&dir, secrets_dir, r->secret_ref, err)) < 0)
			return error;
		error = creds_load_secret(creds, dir, r->ref.registry, err);
		free(dir);
		dir = NULL;
		if (error < 0)
			return error;
	}
	if (cloudauth_is_cloud(r->provider) && !r->service_account &&
	    (error = cloudauth_creds(creds, r->provider, r->ref.registry, r->insecure, err)) < 0)
		return error;
	if (r->cert_secret_ref) {
		if ((error = config_secret_path(&dir, secrets_dir, r->cert_secret_ref, err)) < 0)
			return error;
		error = buf_printf(&ca, "%s/ca.crt", dir) < 0 ? error_oom(err) : 0;
		free(dir);
		if (error == 0)
			*ca_file = buf_detach(&ca);
		buf_release(&ca);
	}
	return error;
}

void scan_target(struct registry_target *out, const struct scan *s)
{
	memset(out, 0, sizeof(*out));
	out->ref = &s->repo->ref;
	out->creds = &s->creds;
	out->insecure = s->repo->insecure;
	out->ca_file = s->ca_file;
	out->timeout_ms = (long)s->repo->timeout_ms;
	/* Flux's spec.timeout bounds the whole scan: every page of the listing, not one request */
	out->listing_timeout_ms = (long)s->repo->timeout_ms;
}

/* Drops the pointers of a listing whose tags are packed in one block (most are: see
 * tagarena_compact), on the thread that made them: their chunks are reused by its next
 * listing. */
static void pack(struct scan *s)
{
	if (!tagarena_is_packed(&s->listing.arena, &s->listing.tags))
		return;
	free(s->listing.tags.items);
	s->listing.tags.items = NULL;
	s->listing.tags.cap = 0;
	s->packed = true;
}

const char *const *scan_tags(const struct scan *s, const char **scratch)
{
	if (!s->packed)
		return (const char *const *)s->listing.tags.items;
	tagarena_unpack(scratch, tagarena_first(&s->listing.arena), s->listing.tags.len);
	return scratch;
}

const char *scan_tags_sha256(struct scan *s)
{
	const char **scratch;
	struct strvec v = STRVEC_INIT;

	if (!s->done || s->rc < 0)
		return NULL;
	if (s->listing.sha256[0])
		return s->listing.sha256;
	if (!s->packed) {
		registry_tags_sha256(s->listing.sha256, &s->listing.tags);
		return s->listing.sha256;
	}
	if (!(scratch = malloc((s->listing.tags.len + 1) * sizeof(*scratch))))
		return s->listing.sha256; /* "" as registry_tags_sha256 leaves it without memory */
	v.items = (char **)scan_tags(s, scratch);
	v.len = s->listing.tags.len;
	registry_tags_sha256(s->listing.sha256, &v);
	free(scratch);
	return s->listing.sha256;
}

/* Lists one repository. The message of a failure is kept as a string of its length: a
 * struct error (1 KiB) in each of 5,000 scans was 5 MiB of a pass. */
static void list_one(struct scan *s, struct registry_client *client, const char *secrets_dir)
{
	struct registry_target t;
	struct error err = ERROR_INIT;

	s->done = true;
	if ((s->rc = scan_load_access(&s->creds, &s->ca_file, s->repo, secrets_dir, &err)) < 0) {
		error_prefix(&err, "repository '%s'", s->repo->id);
		log_warn("registry.credentials", "%s", err.msg); /* never a secret: see creds.h */
		s->error = strdup(err.msg);
		return;
	}
	scan_target(&t, s);
	s->rc =
	    s->repo->service_account
	        ? kubesa_list_tags(&s->listing, client, &t, s->repo, &s->creds, &err)
	        : cloudauth_list_tags(&s->listing, client, &t, s->repo->provider, &s->creds, &err);
	if (s->rc < 0) {
		log_warn("registry.list", "repository '%s': %s", s->repo->id, err.msg);
		s->error = strdup(err.msg);
	} else {
		log_debug("registry.list", "repository '%s': %zu tags in %zu pages", s->repo->id,
		          s->listing.tags.len, s->listing.pages);
		pack(s);
	}
}

/* The next pending scan whose host has room, or n when none; waits while all are blocked.
 * Of the hosts with room, the one whose next scan has the lowest index goes first: the order
 * a single queue would give. */
static size_t take_next(struct pool *p)
{
	for (;;) {
		struct host_queue *best = NULL;
		bool any = false;

		for (size_t h = 0; h < p->nhosts; h++) {
			struct host_queue *q = &p->hosts[h];

			if (q->next == q->len)
				continue;
			any = true;
			if (q->inflight < p->per_host &&
			    (!best || q->order[q->next] < best->order[best->next]))
				best = q;
		}
		if (best) {
			best->inflight++;
			return best->order[best->next++];
		}
		if (!any) {
			/* nothing left to take: let every waiter see it and end too */
			pthread_cond_broadcast(&p->changed);
			return p->n;
		}
		pthread_cond_wait(&p->changed, &p->lock);
	}
}

static void *worker(void *arg)
{
	struct pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		size_t i = take_next(p);

		if (i == p->n)
			break;
		pthread_mutex_unlock(&p->lock);
		list_one(&p->scans[i], p->client, p->secrets_dir);
		if (p->hooks && p->hooks->done)
			p->hooks->done(p->hooks->ctx, i);
		pthread_mutex_lock(&p->lock);
		p->hosts[p->host_of[i]].inflight--;
		/* one slot freed: one waiter can use it (a broadcast woke them all to sleep again)
		 */
		pthread_cond_signal(&p->changed);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static const char *scan_host(const void *ctx, size_t i)
{
	return ((const struct scan *)ctx)[i].repo->ref.registry;
}

/* Puts every pending scan in its host's queue, in index order (hosts by a hash index). */
static int group_hosts(struct pool *p)
{
	struct strindex ix = STRINDEX_INIT;
	size_t *count = NULL, *first = NULL, at = 0;
	int error = IG_EFAIL;

	if (!(first = calloc(p->n, sizeof(*first))))
		goto done;
	for (size_t i = 0; i < p->n; i++) {
		size_t dup;

		if (!is_pending(&p->scans[i]))
			continue;
		if (strindex_add(&ix, i, scan_host, p->scans, &dup) < 0)
			goto done;
		if (dup == STRINDEX_NONE) {
			first[i] = p->nhosts++; /* a new host: its queue number */
			p->host_of[i] = first[i];
		} else {
			p->host_of[i] = first[dup];
		}
	}
	if (!(count = calloc(p->nhosts ? p->nhosts : 1, sizeof(*count))))
		goto done;
	for (size_t i = 0; i < p->n; i++)
		if (is_pending(&p->scans[i]))
			count[p->host_of[i]]++;
	for (size_t h = 0; h < p->nhosts; h++) {
		p->hosts[h].order = p->order + at;
		at += count[h];
	}
	for (size_t i = 0; i < p->n; i++)
		if (is_pending(&p->scans[i])) {
			struct host_queue *q = &p->hosts[p->host_of[i]];

			q->order[q->len++] = i;
		}
	error = 0;
done:
	strindex_release(&ix);
	free(first);
	free(count);
	return error;
}

/* No more threads than can ever run at once: at most per_host on each host (one registry
 * and 8 threads left 4 of them waiting for the whole pass). */
static size_t useful_threads(const struct pool *p, size_t want)
{
	size_t n = 0;

	for (size_t h = 0; h < p->nhosts && n < want; h++)
		n += p->hosts[h].len < p->per_host ? p->hosts[h].len : p->per_host;
	return n < want ? n : want;
}

int scan_run(struct scan *scans, size_t n, struct registry_client *client, const char *secrets_dir,
             unsigned concurrency, struct error *err)
{
	return scan_run_hooked(scans, n, client, secrets_dir, concurrency, NULL, err);
}

int scan_run_hooked(struct scan *scans, size_t n, struct registry_client *client,
                    const char *secrets_dir, unsigned concurrency, const struct scan_hooks *hooks,
                    struct error *err)
{
	struct pool p = {
	    .scans = scans, .n = n, .client = client, .secrets_dir = secrets_dir, .hooks = hooks};
	pthread_t *threads = NULL;
	size_t pending = 0, started = 0, want;
	int error = 0;

	for (size_t i = 0; i < n; i++)
		pending += is_pending(&scans[i]);
	if (pending == 0)
		return 0;
	want = concurrency < 1 ? 1 : concurrency;
	want = want < pending ? want : pending;
	p.per_host =
	    concurrency < SCAN_PER_HOST_MAX ? (concurrency ? concurrency : 1) : SCAN_PER_HOST_MAX;
	p.hosts = calloc(pending, sizeof(*p.hosts));
	p.order = calloc(pending, sizeof(*p.order));
	p.host_of = calloc(n, sizeof(*p.host_of));
	threads = calloc(want, sizeof(*threads));
	if (!p.hosts || !p.order || !p.host_of || !threads || group_hosts(&p) < 0) {
		error = error_oom(err);
		goto done;
	}
	want = useful_threads(&p, want);
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.changed, NULL);
	for (; started < want; started++)
		if (pthread_create(&threads[started], NULL, worker, &p) != 0)
			break;
	if (started == 0)
		worker(&p); /* no thread could start: do the work here rather than fail */
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	pthread_cond_destroy(&p.changed);
	pthread_mutex_destroy(&p.lock);
done:
	free(threads);
	free(p.hosts);
	free(p.order);
	free(p.host_of);
	return error;
}

void scan_release(struct scan *scans, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		registry_listing_release(&scans[i].listing);
		scans[i].packed = false;
		creds_release(&scans[i].creds);
		free(scans[i].ca_file);
		scans[i].ca_file = NULL;
		free(scans[i].error);
		scans[i].error = NULL;
	}
}
