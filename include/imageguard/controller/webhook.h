/* `run --webhook-listen`: POST /hooks/registry (CONTRACT §11). Registry notifications (Docker
 * distribution envelopes, or a generic {"image": "host/repo"}) authenticated by a bearer token
 * mark the repositories they name as wanted; run's loop takes the wanted set, debounced, and
 * runs a pass early. A hint only: the pass lists and confirms everything as usual. */
#ifndef IMAGEGUARD_WEBHOOK_H
#define IMAGEGUARD_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct error;
struct metrics;

#define WEBHOOK_BODY_MAX ((size_t)1 << 20) /* 1 MiB: larger bodies are 400 */
#define WEBHOOK_TOKEN_MAX 4096             /* bytes of the token file */
#define WEBHOOK_QUIET_MS 500               /* a pass starts once no hint came for this long, */
#define WEBHOOK_MAX_DELAY_MS 3000          /* or this long after the first hint of a burst */
#define WEBHOOK_REPEAT_MS 10000            /* at most one early pass per repository in this time */
#define WEBHOOK_BODY_TIME_MS 10000  /* an authenticated body must arrive within this: else 408 */
#define WEBHOOK_REJECT_LOG_MS 60000 /* one rejection line per client address per interval, */
#define WEBHOOK_REJECT_LINES 20     /* and at most this many lines per interval in all */

enum webhook_result {
	WEBHOOK_ACCEPTED,     /* 202: at least one push for a configured repository */
	WEBHOOK_IGNORED,      /* 202: pulls, deletes, unknown repositories only */
	WEBHOOK_UNAUTHORIZED, /* 401: missing or wrong bearer token */
	WEBHOOK_BAD_REQUEST,  /* 400: too big, not JSON, not an envelope nor a generic body */
};

/* The label value of imageguard_webhook_requests_total for r. */
const char *webhook_result_name(enum webhook_result r);

/* One event of a body: action ("push", "pull", "delete", ...), the repository as
 * "host/path" (host empty when the envelope named none) and the notification's time. */
struct webhook_event {
	char *action;     /* owned */
	char *host;       /* owned, "" when absent */
	char *repository; /* owned: the path, without tag or digest */
	double timestamp; /* Unix seconds; 0 when absent or unreadable */
};

struct webhook_events {
	struct webhook_event *items; /* owned */
	size_t len;
};

#define WEBHOOK_EVENTS_INIT                                                                        \
	{                                                                                          \
		NULL, 0                                                                            \
	}

/* Parses a body (len bytes, at most WEBHOOK_BODY_MAX) into out (caller-owned; release with
 * webhook_events_release): an envelope {"events": [...]}, a generic {"image": "..."} (action
 * "push"), or Harbor's Default payload (PUSH_ARTIFACT is "push", other types "other", one
 * event per event_data.resources[].resource_url). Returns 0, IG_EINVALID (one line in err),
 * IG_EFAIL out of memory. */
int webhook_parse(struct webhook_events *out, const char *body, size_t len, struct error *err);
void webhook_events_release(struct webhook_events *ev);

/* An RFC 3339 time ("2026-12-01T08:00:00.123456Z", "...-08:00") in Unix seconds; 0 when s is
 * not one. Exported for tests. */
double webhook_parse_time(const char *s);

struct webhook; /* thread-safe: the listener thread marks, run's loop takes */

/* Creates the hint set for token (copied; the bearer token requests must present). Returns 0,
 * IG_EINVALID for an empty token, IG_EFAIL. Free with webhook_free (stops the listener). */
int webhook_new(struct webhook **out, const char *token, struct metrics *m, struct error *err);
void webhook_free(struct webhook *w); /* NULL-safe */

/* Reads the token file (first line, surrounding white space trimmed; at most
 * WEBHOOK_TOKEN_MAX bytes). Returns 0, or IG_ENOTFOUND/IG_EINVALID/IG_ETOOBIG naming the file. */
int webhook_read_token(char **out, const char *path, struct error *err);

/* The repositories the loop's configuration names (called after every load and reload); a
 * push for any other repository is ignored. Returns 0 or IG_EFAIL (the old set is kept). */
int webhook_set_known(struct webhook *w, const struct config *cfg);

/* Handles one request: the Authorization header (NULL: none), the body and whether it was cut
 * at WEBHOOK_BODY_MAX. Marks wanted repositories and counts the result in the metrics. */
enum webhook_result webhook_handle(struct webhook *w, const char *authorization, const char *body,
                                   size_t len, bool oversized);

/* Serves POST /hooks/registry on listen (as httpd_start: "ADDR:PORT", port 0 picks one) with
 * the health endpoint's connection limits and timeouts. Returns 0, IG_EUSAGE, IG_EFAIL. */
int webhook_listen(struct webhook *w, const char *listen, struct error *err);
unsigned webhook_port(const struct webhook *w);

/* Waits up to ms for a hint to fall due (the loop's sleep). Returns true when a debounced hint
 * is due: the loop then calls webhook_take. */
bool webhook_wait(struct webhook *w, long ms);
/* Takes the due hint set: fills wanted (one per known repository in the order given to
 * webhook_set_known, the caller's array of n) when non-NULL and returns the earliest
 * notification time of the burst (Unix seconds; 0 when none was given), or -1 when nothing was
 * due. */
double webhook_take(struct webhook *w, bool *wanted, size_t n);

#endif
