/* client-go's EventCorrelator (kubernetes/client-go tools/record/events_cache.go) as data and
 * rules: what to do with one more Event, given the ones recorded before. Pure: the clock is an
 * argument, nothing is written here (kubeevents.c writes). Not thread-safe: one caller. */
#ifndef IMAGEGUARD_EVENTCORR_H
#define IMAGEGUARD_EVENTCORR_H

#include <stddef.h>
#include <stdint.h>

/* client-go's defaults: entries per cache, similar events before aggregation, the interval
 * after which a group starts again, and the spam filter's token bucket (per source+object). */
#define EVENTCORR_CACHE_ENTRIES 4096
#define EVENTCORR_AGGREGATE_MAX 10
#define EVENTCORR_AGGREGATE_INTERVAL_S 600
#define EVENTCORR_SPAM_BURST 25
#define EVENTCORR_SPAM_REFILL_S 300 /* one token every 5 minutes */
#define EVENTCORR_COMBINED_PREFIX "(combined from similar events): "
#define EVENTCORR_MAX_MESSAGE 1024

/* The fields client-go's keys read (borrowed; NULL reads as ""). involvedObject.fieldPath is
 * never set by imageguard and is not a field here. */
struct eventcorr_event {
	const char *component, *host;                     /* source */
	const char *kind, *ns, *name, *uid, *api_version; /* involvedObject */
	const char *type, *reason, *message;
	const char *reporting_controller, *reporting_instance;
};

enum eventcorr_action {
	EVENTCORR_CREATE, /* POST a new Event named result.name */
	EVENTCORR_PATCH,  /* patch count, lastTimestamp and message of the Event result.name */
	EVENTCORR_SKIP    /* the spam filter holds it: write nothing */
};

struct eventcorr_result {
	enum eventcorr_action action;
	char name[320]; /* metadata.name: "<involvedObject.name>.<hex nanoseconds>" */
	long count;
	int64_t first_ns;                    /* firstTimestamp */
	char message[EVENTCORR_MAX_MESSAGE]; /* the message, or the combined one */
};

struct eventcorr;

/* Returns 0 or IG_EFAIL (out of memory). Free with eventcorr_free (NULL-safe). */
int eventcorr_new(struct eventcorr **out);
void eventcorr_free(struct eventcorr *c);

/* Correlates e at now_ns (nanoseconds since the epoch) as EventCorrelate does: aggregation
 * (the EVENTCORR_AGGREGATE_MAXth distinct message of the same source, object, type, reason
 * and reporter within EVENTCORR_AGGREGATE_INTERVAL_S of the group's last event becomes one
 * combined Event), then de-duplication (an identical Event, or the group's combined one,
 * patches the one written before with count + 1), then the spam filter. The caches are
 * updated before the write, as client-go does; when a PATCH answers 404 the caller creates
 * result.name with result.count. Returns 0 or IG_EFAIL (out of memory: *out undefined). */
int eventcorr_correlate(struct eventcorr_result *out, struct eventcorr *c,
                        const struct eventcorr_event *e, int64_t now_ns);

#endif
