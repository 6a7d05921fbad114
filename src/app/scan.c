/* Concurrent repository listings for one pass: a small pool of pthreads pulls the next scan
 * whose registry host is below SCAN_PER_HOST_MAX requests in flight. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/app/kubesa.h"
#include "imageguard/config/config.h"
#include "imageguard/registry/cloudauth.h"
#include "imageguard/util/log.h"
#include "imageguard/app/scan.h"
#include "imageguard/util/buf.h"

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct scan *scans;
	size_t n;
	bool *taken;
	unsigned *inflight; /* per scan: requests in flight on its host (shared by host) */
	size_t *host_of;    /* per scan: index of the first scan with the same host */
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
		error = buf_printf(&ca, "%s/ca.crt", dir) < 0
		            ? error_set(err, IG_EFAIL, "out of memory")
		            : 0;
		free(dir);
		if (error == 0)
			*ca_file = buf_detach(&ca);
		buf_release(&ca);
	}
	return error;
}

static int load_secrets(struct scan *s, const char *secrets_dir)
{
	return scan_load_access(&s->creds, &s->ca_file, s->repo, secrets_dir, &s->err);
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

static void list_one(struct scan *s, struct registry_client *client, const char *secrets_dir)
{
	struct registry_target t;

	s->done = true;
	if ((s->rc = load_secrets(s, secrets_dir)) < 0) {
		error_prefix(&s->err, "repository '%s'", s->repo->id);
		log_warn("registry.credentials", "%s",
		         s->err.msg); /* never a secret: see creds.h */
		return;
	}
	scan_target(&t, s);
	s->rc = s->repo->service_account
	            ? kubesa_list_tags(&s->listing, client, &t, s->repo, &s->creds, &s->err)
	            : cloudauth_list_tags(&s->listing, client, &t, s->repo->provider, &s->creds,
	                                  &s->err);
	if (s->rc < 0)
		log_warn("registry.list", "repository '%s': %s", s->repo->id, s->err.msg);
	else
		log_debug("registry.list", "repository '%s': %zu tags in %zu pages", s->repo->id,
		          s->listing.tags.len, s->listing.pages);
}

/* The next pending scan whose host has room, or n when none; waits while all are blocked. */
static size_t take_next(struct pool *p)
{
	for (;;) {
		bool any = false;

		for (size_t i = 0; i < p->n; i++) {
			if (p->taken[i] || !is_pending(&p->scans[i]))
				continue;
			any = true;
			if (p->inflight[p->host_of[i]] >= p->per_host)
				continue;
			p->taken[i] = true;
			p->inflight[p->host_of[i]]++;
			return i;
		}
		if (!any)
			return p->n;
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
		p->inflight[p->host_of[i]]--;
		pthread_cond_broadcast(&p->changed);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void group_hosts(struct pool *p)
{
	for (size_t i = 0; i < p->n; i++) {
		p->host_of[i] = i;
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->scans[j].repo->ref.registry,
			           p->scans[i].repo->ref.registry) == 0) {
				p->host_of[i] = p->host_of[j];
				break;
			}
	}
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
	p.taken = calloc(n, sizeof(*p.taken));
	p.inflight = calloc(n, sizeof(*p.inflight));
	p.host_of = calloc(n, sizeof(*p.host_of));
	threads = calloc(want, sizeof(*threads));
	if (!p.taken || !p.inflight || !p.host_of || !threads) {
		error = error_set(err, IG_EFAIL, "registry scan: out of memory");
		goto done;
	}
	group_hosts(&p);
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
	free(p.taken);
	free(p.inflight);
	free(p.host_of);
	return error;
}

void scan_release(struct scan *scans, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		registry_listing_release(&scans[i].listing);
		creds_release(&scans[i].creds);
		free(scans[i].ca_file);
		scans[i].ca_file = NULL;
	}
}
