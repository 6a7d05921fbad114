/* One kind's informer for run --kube: list, then a watch stream from the list's
 * resourceVersion on a thread; events update a cache keyed by "ns/name". */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/kubewatch.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define WATCH_SECONDS 300 /* one stream's timeoutSeconds; the server may end it sooner */

struct kubewatch {
	struct kube_client *client; /* the thread's own */
	char *path, *selector;
	const volatile sig_atomic_t *stop;
	volatile sig_atomic_t quit; /* kubewatch_free */
	volatile sig_atomic_t cut;  /* ends the watch stream in flight: quit or a refilter */
	kubewatch_admit_fn admit;   /* NULL: every object as it came */
	void *admit_ctx;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu; /* guards everything below */
	json_t *objects;    /* "ns/name" -> object */
	char *rv;           /* NULL: list next */
	bool synced;
	bool refilter; /* kubewatch_refilter: list again with the admit function's new answers */
	/* kubewatch_refilter's calls, and how many of them the last list began after (settled
	 * when the two are equal) */
	uint64_t refilters, refilters_listed;
	uint64_t changes;
	struct error last;
};

static bool stopping(const struct kubewatch *w)
{
	return w->quit || (w->stop && *w->stop);
}

/* "ns/name" of obj into key. */
static void key_of(char *key, size_t n, const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *name = json_string_value(json_object_get(md, "name"));

	snprintf(key, n, "%s/%s", ns ? ns : "", name ? name : "");
}

/* obj without what does not change a configuration: status, resourceVersion, managedFields. */
static json_t *essence(const json_t *obj)
{
	json_t *e = json_deep_copy(obj), *md;

	if (!e)
		return NULL;
	json_object_del(e, "status");
	if ((md = json_object_get(e, "metadata"))) {
		json_object_del(md, "resourceVersion");
		json_object_del(md, "managedFields");
	}
	return e;
}

bool kubewatch_same(const json_t *a, const json_t *b)
{
	json_t *x, *y;
	bool same;

	if (json_is_string(a) || json_is_string(b)) {
		const char *s = json_string_value(a), *t = json_string_value(b);

		return s && t && strcmp(s, t) == 0;
	}
	x = essence(a);
	y = essence(b);
	same = x && y && json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

static void set_rv(struct kubewatch *w, const json_t *obj)
{
	const char *v =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	char *copy;

	if (v && *v && (copy = strdup(v))) {
		free(w->rv);
		w->rv = copy;
	}
}

/* One watch event into the cache. Returns IG_ECONFLICT for 410 (relist), 0 otherwise. */
static int on_event(void *ctx, json_t *ev)
{
	struct kubewatch *w = ctx;
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object"), *old, *kept = NULL;
	char key[600];
	int error = 0;

	if (!type || !json_is_object(obj))
		return IG_EINVALID;
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		kept = w->admit ? w->admit(w->admit_ctx, obj) : json_incref(obj);
		if (!kept)
			type = "DELETED"; /* not (or no longer) admitted: as if it were gone */
	}
	pthread_mutex_lock(&w->mu);
	if (strcmp(type, "ERROR") == 0) {
		json_int_t code = json_integer_value(json_object_get(obj, "code"));
		const char *msg = json_string_value(json_object_get(obj, "message"));

		error_set(&w->last, IG_EFAIL, "kubernetes api 'GET %s': watch error %lld: %.300s",
		          w->path, (long long)code, msg ? msg : "");
		error = code == 410 ? IG_ECONFLICT : IG_EFAIL;
		goto done;
	}
	set_rv(w, obj);
	if (strcmp(type, "BOOKMARK") == 0)
		goto done;
	key_of(key, sizeof(key), obj);
	old = json_object_get(w->objects, key);
	if (strcmp(type, "DELETED") == 0) {
		if (old) {
			json_object_del(w->objects, key);
			w->changes++;
		}
	} else if (kept) {
		if (!old || !kubewatch_same(old, kept))
			w->changes++;
		json_object_set_new(w->objects, key, kept);
		kept = NULL;
	}
done:
	pthread_mutex_unlock(&w->mu);
	json_decref(kept);
	return error;
}

struct listing {
	struct kubewatch *w;
	json_t *objects;
};

/* One listed object into the new cache, as the admit function keeps it. */
static int take(void *ctx, json_t *it, struct error *err)
{
	struct listing *l = ctx;
	json_t *kept = l->w->admit ? l->w->admit(l->w->admit_ctx, it) : json_incref(it);
	char key[600];

	if (!kept)
		return 0;
	key_of(key, sizeof(key), it);
	return json_object_set_new(l->objects, key, kept) < 0 ? error_oom(err) : 0;
}

static int relist(struct kubewatch *w, struct error *err)
{
	struct listing l = {w, json_object()};
	json_t *objects;
	char *rv = NULL;
	uint64_t refilters;
	int error;

	if (!(objects = l.objects))
		return error_oom(err);
	/* the admit function's answers were changed before each of these calls */
	pthread_mutex_lock(&w->mu);
	refilters = w->refilters;
	pthread_mutex_unlock(&w->mu);
	if ((error = kube_list_each(&rv, w->client, w->path, w->selector, take, &l, err)) < 0) {
		json_decref(objects);
		return error;
	}
	pthread_mutex_lock(&w->mu);
	if (!w->synced || !json_equal(objects, w->objects))
		w->changes++;
	json_decref(w->objects);
	w->objects = objects;
	free(w->rv);
	w->rv = rv;
	w->synced = true;
	w->refilters_listed = refilters;
	error_clear(&w->last);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* path?watch=true&allowWatchBookmarks=true&timeoutSeconds=N&resourceVersion=RV[&labelSelector=S] */
static int watch_path(struct buf *b, struct kubewatch *w)
{
	char *rv, *sel = NULL;
	int error;

	pthread_mutex_lock(&w->mu);
	rv = w->rv ? strdup(w->rv) : NULL;
	pthread_mutex_unlock(&w->mu);
	if (!rv)
		return IG_EFAIL;
	if (w->selector && !(sel = kube_escape(w->selector))) {
		free(rv);
		return IG_EFAIL;
	}
	buf_reset(b);
	error =
	    buf_printf(b,
	               "%s?watch=true&allowWatchBookmarks=true&timeoutSeconds=%d"
	               "&resourceVersion=%s%s%s",
	               w->path, WATCH_SECONDS, rv, sel ? "&labelSelector=" : "", sel ? sel : "");
	free(rv);
	free(sel);
	return error;
}

static void pause_ms(struct kubewatch *w, long ms)
{
	while (ms > 0 && !stopping(w)) {
		long step = ms < 100 ? ms : 100;
		struct timespec ts = {0, step * 1000000L};

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

static void fail(struct kubewatch *w, const struct error *err, long *backoff)
{
	pthread_mutex_lock(&w->mu);
	error_set(&w->last, err->code, "%s", err->msg);
	pthread_mutex_unlock(&w->mu);
	log_warn("kube.watch", "%s (retrying in %ld ms)", err->msg, *backoff);
	pause_ms(w, *backoff);
	*backoff = *backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *backoff * 2;
}

static void *run(void *arg)
{
	struct kubewatch *w = arg;
	struct buf path = BUF_INIT;
	long backoff = BACKOFF_MIN_MS;

	while (!stopping(w)) {
		struct error err = ERROR_INIT;
		bool need_list;
		int error;

		pthread_mutex_lock(&w->mu);
		if (w->refilter) { /* asked again after this point: the next stream is cut */
			w->refilter = false;
			w->cut = w->quit;
			free(w->rv);
			w->rv = NULL;
		}
		need_list = !w->rv;
		pthread_mutex_unlock(&w->mu);
		if (need_list && relist(w, &err) < 0) {
			fail(w, &err, &backoff);
			continue;
		}
		if (watch_path(&path, w) < 0) {
			error_oom(&err);
			fail(w, &err, &backoff);
			continue;
		}
		error = kube_watch(w->client, path.data, WATCH_SECONDS + 30, on_event, w, &w->cut,
		                   &err);
		if (error == IG_ECONFLICT) {
			/* 410 Gone: the version was compacted away; list again */
			log_info("kube.watch", "'%s': resourceVersion expired, listing again",
			         w->path);
			pthread_mutex_lock(&w->mu);
			free(w->rv);
			w->rv = NULL;
			pthread_mutex_unlock(&w->mu);
			continue;
		}
		if (error < 0 && w->cut && !stopping(w))
			continue; /* cut by kubewatch_refilter: list again at once */
		if (error < 0) {
			if (!err.msg[0])
				error_set(&err, error, "kubernetes api 'GET %s': watch failed",
				          w->path);
			fail(w, &err, &backoff);
			continue;
		}
		backoff = BACKOFF_MIN_MS;
		if (!stopping(w))
			pause_ms(w, 50); /* a stream the server ended at once must not spin */
	}
	buf_release(&path);
	return NULL;
}

int kubewatch_start(struct kubewatch **out, const struct kubeconfig *cfg, const char *path,
                    const char *label_selector, const volatile sig_atomic_t *stop,
                    struct error *err)
{
	return kubewatch_start_admit(out, cfg, path, label_selector, NULL, NULL, 0, stop, err);
}

int kubewatch_start_admit(struct kubewatch **out, const struct kubeconfig *cfg, const char *path,
                          const char *label_selector, kubewatch_admit_fn admit, void *ctx,
                          size_t page_limit, const volatile sig_atomic_t *stop, struct error *err)
{
	struct kubewatch *w = calloc(1, sizeof(*w));
	struct kube_options opts;
	int error;

	*out = NULL;
	if (!w)
		return error_oom(err);
	pthread_mutex_init(&w->mu, NULL);
	w->stop = stop;
	w->admit = admit;
	w->admit_ctx = ctx;
	kube_options_init(&opts);
	opts.stop = &w->quit; /* kubewatch_free cuts a list in flight too, not only a watch */
	if (page_limit) {     /* as many objects in all as before, in more pages */
		opts.page_limit = page_limit;
		opts.max_pages = opts.max_items / page_limit + 1;
	}
	if (!(w->path = strdup(path)) ||
	    (label_selector && !(w->selector = strdup(label_selector))) ||
	    !(w->objects = json_object())) {
		error = error_oom(err);
		goto fail;
	}
	if ((error = kube_client_new(&w->client, cfg, &opts, err)) < 0)
		goto fail;
	if (pthread_create(&w->thread, NULL, run, w) != 0) {
		error = error_set(err, IG_EFAIL, "kube watch '%s': cannot start a thread", path);
		goto fail;
	}
	w->started = true;
	*out = w;
	return 0;
fail:
	kubewatch_free(w);
	return error;
}

void kubewatch_cancel(struct kubewatch *w)
{
	if (!w)
		return;
	w->quit = 1;
	w->cut = 1;
}

void kubewatch_free(struct kubewatch *w)
{
	if (!w)
		return;
	kubewatch_cancel(w);
	if (w->started)
		pthread_join(w->thread, NULL);
	kube_client_free(w->client);
	json_decref(w->objects);
	free(w->rv);
	free(w->path);
	free(w->selector);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

void kubewatch_refilter(struct kubewatch *w)
{
	pthread_mutex_lock(&w->mu);
	w->refilter = true;
	w->refilters++;
	w->cut = 1;
	pthread_mutex_unlock(&w->mu);
}

bool kubewatch_settled(struct kubewatch *w)
{
	bool s;

	pthread_mutex_lock(&w->mu);
	s = w->synced && w->refilters_listed == w->refilters;
	pthread_mutex_unlock(&w->mu);
	return s;
}

bool kubewatch_synced(struct kubewatch *w)
{
	bool s;

	pthread_mutex_lock(&w->mu);
	s = w->synced;
	pthread_mutex_unlock(&w->mu);
	return s;
}

uint64_t kubewatch_changes(struct kubewatch *w)
{
	uint64_t n;

	pthread_mutex_lock(&w->mu);
	n = w->changes;
	pthread_mutex_unlock(&w->mu);
	return n;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *kubewatch_snapshot_named(struct kubewatch *w, json_t **names)
{
	json_t *out = json_array(), *v, *named = names ? json_array() : NULL;
	const char **keys = NULL, *k;
	size_t n = 0;

	pthread_mutex_lock(&w->mu);
	if (!out || (names && !named) ||
	    !(keys = calloc(json_object_size(w->objects) + 1, sizeof(*keys))))
		goto fail;
	json_object_foreach(w->objects, k, v) keys[n++] = k;
	qsort(keys, n, sizeof(*keys), by_key);
	for (size_t i = 0; i < n; i++)
		if (json_array_append(out, json_object_get(w->objects, keys[i])) < 0 ||
		    (named && json_array_append_new(named, json_string_nocheck(keys[i])) < 0))
			goto fail;
	pthread_mutex_unlock(&w->mu);
	free(keys);
	if (names)
		*names = named;
	return out;
fail:
	pthread_mutex_unlock(&w->mu);
	free(keys);
	json_decref(out);
	json_decref(named);
	return NULL;
}

json_t *kubewatch_get(struct kubewatch *w, const char *key)
{
	json_t *v;

	pthread_mutex_lock(&w->mu);
	v = json_incref(json_object_get(w->objects, key));
	pthread_mutex_unlock(&w->mu);
	return v;
}

json_t *kubewatch_snapshot(struct kubewatch *w)
{
	return kubewatch_snapshot_named(w, NULL);
}

void kubewatch_last_error(struct kubewatch *w, struct error *err)
{
	pthread_mutex_lock(&w->mu);
	*err = w->last;
	pthread_mutex_unlock(&w->mu);
}
