/* The rules of client-go's EventCorrelator (tools/record/events_cache.go at commit
 * 928244b13ad2eb19a8a910669ec0bbb498cb74c1), in three small LRU caches: the aggregator
 * (similar events by reason), the logger (identical events by full key) and the spam filter
 * (a token bucket per source and object). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/kube/eventcorr.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/strvec.h"

#define NS_PER_S 1000000000LL

/* One cache entry; which payload is used depends on the cache. */
struct entry {
	char *key;
	uint64_t used; /* the cache's tick at the last get or add: the least is evicted */
	/* aggregator */
	struct strvec local; /* distinct messages of the group, in insertion order */
	int64_t last_ns;     /* also the spam filter's last refill */
	/* logger */
	long count;
	int64_t first_ns;
	char *name;
	/* spam filter */
	double tokens;
};

struct cache {
	struct entry *items;
	size_t len;
	uint64_t tick;
};

struct eventcorr {
	struct cache aggregate, log, spam;
};

static void entry_release(struct entry *x)
{
	free(x->key);
	free(x->name);
	strvec_release(&x->local);
	memset(x, 0, sizeof(*x));
}

static void cache_release(struct cache *c)
{
	for (size_t i = 0; c->items && i < c->len; i++)
		entry_release(&c->items[i]);
	free(c->items);
}

int eventcorr_new(struct eventcorr **out)
{
	struct eventcorr *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c || !(c->aggregate.items = calloc(EVENTCORR_CACHE_ENTRIES, sizeof(struct entry))) ||
	    !(c->log.items = calloc(EVENTCORR_CACHE_ENTRIES, sizeof(struct entry))) ||
	    !(c->spam.items = calloc(EVENTCORR_CACHE_ENTRIES, sizeof(struct entry)))) {
		eventcorr_free(c);
		return IG_EFAIL;
	}
	*out = c;
	return 0;
}

void eventcorr_free(struct eventcorr *c)
{
	if (!c)
		return;
	cache_release(&c->aggregate);
	cache_release(&c->log);
	cache_release(&c->spam);
	free(c);
}

/* The entry under key, or NULL; a hit counts as a use. */
static struct entry *cache_get(struct cache *c, const char *key)
{
	for (size_t i = 0; i < c->len; i++)
		if (strcmp(c->items[i].key, key) == 0) {
			c->items[i].used = ++c->tick;
			return &c->items[i];
		}
	return NULL;
}

/* A fresh entry under key (the least recently used one is dropped when full), or NULL. */
static struct entry *cache_add(struct cache *c, const char *key)
{
	struct entry *x;

	if (c->len < EVENTCORR_CACHE_ENTRIES)
		x = &c->items[c->len++];
	else {
		x = &c->items[0];
		for (size_t i = 1; i < c->len; i++)
			if (c->items[i].used < x->used)
				x = &c->items[i];
		entry_release(x);
	}
	if (!(x->key = strdup(key))) {
		*x = c->items[--c->len]; /* a hole would break the scans */
		memset(&c->items[c->len], 0, sizeof(*x));
		return NULL;
	}
	x->used = ++c->tick;
	return x;
}

static const char *s(const char *v)
{
	return v ? v : "";
}

/* client-go joins the fields with no separator; a newline keeps "ab"+"c" apart from "a"+"bc". */
static int key_event(struct buf *b, const struct eventcorr_event *e)
{
	return buf_printf(b, "%s\n%s\n%s\n%s\n%s\n\n%s\n%s\n%s\n%s\n%s", s(e->component),
	                  s(e->host), s(e->kind), s(e->ns), s(e->name), s(e->uid),
	                  s(e->api_version), s(e->type), s(e->reason), s(e->message));
}

static int key_aggregate(struct buf *b, const struct eventcorr_event *e)
{
	return buf_printf(b, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s", s(e->component),
	                  s(e->host), s(e->kind), s(e->ns), s(e->name), s(e->uid),
	                  s(e->api_version), s(e->type), s(e->reason), s(e->reporting_controller),
	                  s(e->reporting_instance));
}

static int key_spam(struct buf *b, const struct eventcorr_event *e)
{
	return buf_printf(b, "%s\n%s\n%s\n%s\n%s\n%s\n%s", s(e->component), s(e->host), s(e->kind),
	                  s(e->ns), s(e->name), s(e->uid), s(e->api_version));
}

/* EventAggregate: sets *combined when this event is the group's combined one, and the key the
 * logger files it under (the full key, else the group's). */
static int aggregate(struct eventcorr *c, const struct eventcorr_event *e, int64_t now,
                     bool *combined, struct buf *logkey)
{
	struct buf key = BUF_INIT;
	struct entry *x;
	int error = IG_EFAIL;

	*combined = false;
	if (key_aggregate(&key, e) < 0)
		goto done;
	if (!(x = cache_get(&c->aggregate, key.data)) && !(x = cache_add(&c->aggregate, key.data)))
		goto done;
	/* a group quiet for longer than the interval (or new: last_ns 0) starts again */
	if (now - x->last_ns > (int64_t)EVENTCORR_AGGREGATE_INTERVAL_S * NS_PER_S)
		strvec_release(&x->local);
	if (!strvec_has(&x->local, s(e->message)) && strvec_push(&x->local, s(e->message)) < 0)
		goto done;
	x->last_ns = now;
	if (x->local.len < EVENTCORR_AGGREGATE_MAX) {
		error = key_event(logkey, e);
		goto done;
	}
	/* the set never grows past the maximum: client-go drops an arbitrary member (Go's map
	 * order), here the oldest, so that the outcome is reproducible */
	free(x->local.items[0]);
	memmove(x->local.items, x->local.items + 1, (x->local.len - 1) * sizeof(char *));
	x->local.items[--x->local.len] = NULL;
	*combined = true;
	error = buf_printf(logkey, "%s", key.data);
done:
	buf_release(&key);
	return error < 0 ? IG_EFAIL : 0;
}

/* eventObserve: a PATCH of the Event logged under key, else a CREATE; the log updated. */
static int observe(struct eventcorr *c, struct eventcorr_result *out, const char *key,
                   const struct eventcorr_event *e, int64_t now)
{
	struct entry *x = cache_get(&c->log, key);

	out->action = EVENTCORR_CREATE;
	out->count = 1;
	out->first_ns = now;
	snprintf(out->name, sizeof(out->name), "%s.%llx", s(e->name), (unsigned long long)now);
	if (x && x->count > 0) {
		out->action = EVENTCORR_PATCH;
		out->count = x->count + 1;
		out->first_ns = x->first_ns;
		snprintf(out->name, sizeof(out->name), "%s", x->name);
	} else if (!(x = cache_add(&c->log, key)))
		return IG_EFAIL;
	free(x->name);
	if (!(x->name = strdup(out->name)))
		return IG_EFAIL;
	x->count = out->count;
	x->first_ns = out->first_ns;
	return 0;
}

/* EventSourceObjectSpamFilter: true when the object's bucket has no token left. */
static int spam_held(bool *held, struct eventcorr *c, const struct eventcorr_event *e, int64_t now)
{
	struct buf key = BUF_INIT;
	struct entry *x;

	if (key_spam(&key, e) < 0)
		return IG_EFAIL;
	if (!(x = cache_get(&c->spam, key.data))) {
		if (!(x = cache_add(&c->spam, key.data))) {
			buf_release(&key);
			return IG_EFAIL;
		}
		x->tokens = EVENTCORR_SPAM_BURST; /* a new bucket starts full */
		x->last_ns = now;
	}
	buf_release(&key);
	if (now > x->last_ns) {
		x->tokens += (double)(now - x->last_ns) / NS_PER_S / EVENTCORR_SPAM_REFILL_S;
		if (x->tokens > EVENTCORR_SPAM_BURST)
			x->tokens = EVENTCORR_SPAM_BURST;
		x->last_ns = now;
	}
	*held = x->tokens < 1;
	if (!*held)
		x->tokens -= 1;
	return 0;
}

int eventcorr_correlate(struct eventcorr_result *out, struct eventcorr *c,
                        const struct eventcorr_event *e, int64_t now_ns)
{
	struct eventcorr_event observed = *e;
	struct buf logkey = BUF_INIT;
	bool combined, held;
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = aggregate(c, e, now_ns, &combined, &logkey)) < 0)
		goto done;
	snprintf(out->message, sizeof(out->message), "%s%s",
	         combined ? EVENTCORR_COMBINED_PREFIX : "", s(e->message));
	observed.message = out->message;
	if ((error = observe(c, out, logkey.data, &observed, now_ns)) < 0 ||
	    (error = spam_held(&held, c, &observed, now_ns)) < 0)
		goto done;
	if (held)
		out->action = EVENTCORR_SKIP;
done:
	buf_release(&logkey);
	return error;
}
