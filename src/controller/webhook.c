/* Registry notifications (CONTRACT §11): bodies, the bearer token, and the debounced set of
 * wanted repositories shared by the listener thread and run's loop. The listener itself is in
 * webhook_httpd.c. */
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imageguard/util/metrics.h"
#include "imageguard/controller/webhook.h"
#include "imageguard/config/config.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "webhook_private.h"

#define EVENTS_MAX 4096 /* events of one envelope read (the rest ignored) */

const char *webhook_result_name(enum webhook_result r)
{
	switch (r) {
	case WEBHOOK_ACCEPTED:
		return "accepted";
	case WEBHOOK_IGNORED:
		return "ignored";
	case WEBHOOK_UNAUTHORIZED:
		return "unauthorized";
	case WEBHOOK_BAD_REQUEST:
		break;
	}
	return "bad-request";
}

/* ---- times ---- */

static int digits(const char *s, size_t n, int *out)
{
	int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static double parse_fraction(const char **p)
{
	double frac = 0, scale = 0.1;

	if (**p != '.')
		return 0;
	for ((*p)++; **p >= '0' && **p <= '9'; (*p)++, scale /= 10)
		frac += (**p - '0') * scale;
	return frac;
}

/* "Z", "+HH:MM" or "-HH:MM" in seconds east of UTC; -1 on error (stored in *ok). */
static long parse_offset(const char *p, int *ok)
{
	int hh, mm;

	*ok = 1;
	if ((p[0] == 'Z' || p[0] == 'z') && !p[1])
		return 0;
	if ((p[0] == '+' || p[0] == '-') && strlen(p) == 6 && p[3] == ':' &&
	    digits(p + 1, 2, &hh) == 0 && digits(p + 4, 2, &mm) == 0 && hh < 24 && mm < 60)
		return (p[0] == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
	*ok = 0;
	return 0;
}

double webhook_parse_time(const char *s)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, sec, ok;
	const char *p;
	double frac;
	long off;
	time_t t;

	if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
	    s[13] != ':' || s[16] != ':' || digits(s, 4, &y) || digits(s + 5, 2, &mo) ||
	    digits(s + 8, 2, &d) || digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) ||
	    digits(s + 17, 2, &sec))
		return 0;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return 0;
	p = s + 19;
	frac = parse_fraction(&p);
	off = parse_offset(p, &ok);
	if (!ok)
		return 0;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1)
		return 0;
	return (double)t - (double)off + frac;
}

/* ---- bodies ---- */

void webhook_events_release(struct webhook_events *ev)
{
	for (size_t i = 0; i < ev->len; i++) {
		free(ev->items[i].action);
		free(ev->items[i].host);
		free(ev->items[i].repository);
	}
	free(ev->items);
	ev->items = NULL;
	ev->len = 0;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	if (b)
		v = json_object_get(v, b);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int add_event(struct webhook_events *out, const char *action, const char *host,
                     const char *repo, double ts)
{
	struct webhook_event *e = &out->items[out->len];

	e->action = strdup(action);
	e->host = strdup(host ? host : "");
	e->repository = strdup(repo);
	e->timestamp = ts;
	out->len++;
	return e->action && e->host && e->repository ? 0 : IG_EFAIL;
}

/* Whether a push event is a blob's (a layer or a config: Docker distribution reports every
 * blob of a push before the tag's manifest): no tag, and a media type naming no manifest or
 * index. Such an event changes no tag, and as a hint it would spend the repository's early pass
 * before the tag exists (WEBHOOK_REPEAT_MS). */
static bool blob_push(const json_t *ev)
{
	const char *tag = str_at(ev, "target", "tag");
	const char *type = str_at(ev, "target", "mediaType");

	return (!tag || !*tag) && type && !strstr(type, "manifest") && !strstr(type, "index");
}

/* One envelope event; events without an action or a repository, and blob pushes, are
 * skipped. */
static int envelope_event(struct webhook_events *out, const json_t *ev)
{
	const char *action = str_at(ev, "action", NULL);
	const char *repo = str_at(ev, "target", "repository");

	if (!json_is_object(ev) || !action || !repo || !*repo ||
	    (strcmp(action, "push") == 0 && blob_push(ev)))
		return 0;
	return add_event(out, action, str_at(ev, "request", "host"), repo,
	                 webhook_parse_time(str_at(ev, "timestamp", NULL)));
}

static int parse_envelope(struct webhook_events *out, const json_t *events)
{
	size_t n = json_array_size(events);
	int error = 0;

	if (n > EVENTS_MAX)
		n = EVENTS_MAX;
	if (n && !(out->items = calloc(n, sizeof(*out->items))))
		return IG_EFAIL;
	for (size_t i = 0; i < n && !error; i++)
		error = envelope_event(out, json_array_get(events, i));
	return error;
}

/* One reference "host/repo[:tag][@digest]" as an event (action, time). */
static int add_reference(struct webhook_events *out, const char *action, const char *image,
                         double ts, struct error *err)
{
	struct imageref_parts parts;
	char *name;
	const char *slash;
	int error;

	imageref_split(&parts, image, strlen(image));
	if (!parts.name_len)
		return error_set(err, IG_EINVALID, "body: 'image' is empty");
	if (!(name = strndup(image, parts.name_len)))
		return IG_EFAIL;
	slash = strchr(name, '/');
	if (slash) {
		name[slash - name] = '\0';
		error = add_event(out, action, name, slash + 1, ts);
	} else {
		error = add_event(out, action, "", name, ts);
	}
	free(name);
	return error;
}

/* {"image": "host/repo[:tag][@digest]", "timestamp"?: RFC 3339}: one push. */
static int parse_generic(struct webhook_events *out, const json_t *root, const char *image,
                         struct error *err)
{
	if (!(out->items = calloc(1, sizeof(*out->items))))
		return IG_EFAIL;
	return add_reference(out, "push", image,
	                     webhook_parse_time(str_at(root, "timestamp", NULL)), err);
}

/* Harbor's Default payload: {"type": "PUSH_ARTIFACT", "occur_at": UNIX, "event_data":
 * {"resources": [{"resource_url": "host/repo:tag"}]}}; other types are "other" actions. */
static int parse_harbor(struct webhook_events *out, const json_t *root, const char *type,
                        struct error *err)
{
	const json_t *res = json_object_get(json_object_get(root, "event_data"), "resources");
	const json_t *at = json_object_get(root, "occur_at");
	const char *action = strcmp(type, "PUSH_ARTIFACT") == 0 ? "push" : "other";
	double ts = json_is_integer(at) ? (double)json_integer_value(at) : 0;
	size_t n = json_array_size(res);
	int error = 0;

	if (n > EVENTS_MAX)
		n = EVENTS_MAX;
	if (n && !(out->items = calloc(n, sizeof(*out->items))))
		return IG_EFAIL;
	for (size_t i = 0; i < n && !error; i++) {
		const char *url = str_at(json_array_get(res, i), "resource_url", NULL);

		if (url && *url)
			error = add_reference(out, action, url, ts, err);
	}
	return error;
}

int webhook_parse(struct webhook_events *out, const char *body, size_t len, struct error *err)
{
	json_error_t jerr;
	json_t *root, *events;
	const char *image, *harbor;
	int error;

	if (len > WEBHOOK_BODY_MAX)
		return error_set(err, IG_EINVALID, "body: over %zu bytes", WEBHOOK_BODY_MAX);
	if (!(root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr)))
		return error_set(err, IG_EINVALID, "body: not JSON (line %d: %s)", jerr.line,
		                 jerr.text);
	events = json_object_get(root, "events");
	image = str_at(root, "image", NULL);
	harbor =
	    json_is_object(json_object_get(root, "event_data")) ? str_at(root, "type", NULL) : NULL;
	if (json_is_array(events))
		error = parse_envelope(out, events);
	else if (image)
		error = parse_generic(out, root, image, err);
	else if (harbor)
		error = parse_harbor(out, root, harbor, err);
	else
		error = error_set(err, IG_EINVALID,
		                  "body: neither an envelope ('events' array), Harbor's "
		                  "'event_data' nor {\"image\": \"host/repo\"}");
	json_decref(root);
	if (error == IG_EFAIL)
		error_oom(err);
	if (error < 0)
		webhook_events_release(out);
	return error;
}

/* ---- the token ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int webhook_read_token(char **out, const char *path, struct error *err)
{
	struct buf b = BUF_INIT_MAX(WEBHOOK_TOKEN_MAX);
	size_t start = 0, end;
	int error;

	*out = NULL;
	if ((error = buf_read_file(&b, path)) < 0) {
		buf_release(&b);
		return error_set(err, error == IG_ENOTFOUND ? IG_ENOTFOUND : error,
		                 "webhook token file '%s': %s", path,
		                 error == IG_ETOOBIG ? "over 4096 bytes" : "cannot read it");
	}
	end = b.len;
	while (start < end && is_space(b.data[start]))
		start++;
	while (end > start && is_space(b.data[end - 1]))
		end--;
	for (size_t i = start; i < end; i++)
		if (is_space(b.data[i]) || (unsigned char)b.data[i] < 0x21) {
			buf_release(&b);
			return error_set(err, IG_EINVALID,
			                 "webhook token file '%s': one token on one line expected",
			                 path);
		}
	if (end == start) {
		buf_release(&b);
		return error_set(err, IG_EINVALID, "webhook token file '%s': empty", path);
	}
	*out = strndup(b.data + start, end - start);
	buf_release(&b);
	return *out ? 0 : error_set(err, IG_EFAIL, "webhook token file '%s': out of memory", path);
}

/* SHA-256 of both sides, compared with CRYPTO_memcmp: the time depends on neither the token's
 * content nor its length. */
bool webhook_token_matches(const struct webhook *w, const char *authorization)
{
	unsigned char got[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	const char *presented;

	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return false;
	presented = authorization + 7;
	while (*presented == ' ')
		presented++;
	if (EVP_Digest(presented, strlen(presented), got, &n, EVP_sha256(), NULL) != 1 ||
	    n != sizeof(w->token_hash))
		return false;
	return CRYPTO_memcmp(got, w->token_hash, sizeof(w->token_hash)) == 0;
}

/* ---- the hint set ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int webhook_new(struct webhook **out, const char *token, struct metrics *m, struct error *err)
{
	struct webhook *w;
	pthread_condattr_t attr;
	unsigned int n = 0;

	*out = NULL;
	if (!token || !*token)
		return error_set(err, IG_EINVALID, "webhook: empty token");
	if (!(w = calloc(1, sizeof(*w))))
		return error_oom(err);
	if (EVP_Digest(token, strlen(token), w->token_hash, &n, EVP_sha256(), NULL) != 1 ||
	    n != sizeof(w->token_hash)) {
		free(w);
		return error_set(err, IG_EFAIL, "webhook: cannot hash the token");
	}
	w->metrics = m;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &attr);
	pthread_condattr_destroy(&attr);
	*out = w;
	return 0;
}

static void known_release(struct webhook_known *k, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(k[i].registry);
		free(k[i].repository);
	}
	free(k);
}

void webhook_free(struct webhook *w)
{
	if (!w)
		return;
	webhook_stop_listener(w);
	known_release(w->known, w->known_len);
	free(w->wanted);
	free(w->taken_ms);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int webhook_set_known(struct webhook *w, const struct config *cfg)
{
	size_t n = cfg->repositories_len;
	struct webhook_known *k = n ? calloc(n, sizeof(*k)) : NULL;
	bool *wanted = n ? calloc(n, sizeof(*wanted)) : NULL;
	int64_t *taken = n ? calloc(n, sizeof(*taken)) : NULL;

	if (n && (!k || !wanted || !taken)) {
		free(k);
		free(wanted);
		free(taken);
		return IG_EFAIL;
	}
	for (size_t i = 0; i < n; i++) {
		k[i].registry = strdup(cfg->repositories[i].ref.registry);
		k[i].repository = strdup(cfg->repositories[i].ref.repository);
		if (!k[i].registry || !k[i].repository) {
			known_release(k, n);
			free(wanted);
			free(taken);
			return IG_EFAIL;
		}
	}
	pthread_mutex_lock(&w->lock);
	/* a burst pending over a reload: every repository of the new set is wanted */
	for (size_t i = 0; i < n; i++)
		wanted[i] = w->pending;
	known_release(w->known, w->known_len);
	free(w->wanted);
	free(w->taken_ms);
	w->known = k;
	w->wanted = wanted;
	w->taken_ms = taken;
	w->known_len = n;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

/* Marks every known repository ev names (normalised as imageref does; an event without a host
 * matches the path on any registry). Call locked. Returns whether one matched. */
static bool mark(struct webhook *w, const struct webhook_event *ev)
{
	struct imageref ref = IMAGEREF_INIT;
	struct buf name = BUF_INIT;
	bool hit = false;

	if (*ev->host && (buf_printf(&name, "%s/%s", ev->host, ev->repository) < 0 ||
	                  imageref_parse(&ref, name.data, IMAGEREF_ALLOW_TAG, NULL) < 0)) {
		buf_release(&name);
		return false;
	}
	for (size_t i = 0; i < w->known_len; i++) {
		const struct webhook_known *k = &w->known[i];
		bool same = *ev->host ? strcmp(k->registry, ref.registry) == 0 &&
		                            strcmp(k->repository, ref.repository) == 0
		                      : strcmp(k->repository, ev->repository) == 0;

		if (same)
			hit = w->wanted[i] = true;
	}
	imageref_release(&ref);
	buf_release(&name);
	return hit;
}

static void note_pending(struct webhook *w, double ts)
{
	int64_t now = mono_ms();

	if (!w->pending) {
		w->pending = true;
		w->first_ms = now;
		w->earliest = 0;
	}
	w->last_ms = now;
	if (ts > 0 && (w->earliest == 0 || ts < w->earliest))
		w->earliest = ts;
	pthread_cond_broadcast(&w->wake);
}

static enum webhook_result classify(struct webhook *w, const struct webhook_events *ev)
{
	enum webhook_result r = WEBHOOK_IGNORED;

	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < ev->len; i++) {
		const struct webhook_event *e = &ev->items[i];

		if (strcmp(e->action, "push") != 0 || !mark(w, e))
			continue;
		note_pending(w, e->timestamp);
		r = WEBHOOK_ACCEPTED;
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

enum webhook_result webhook_handle(struct webhook *w, const char *authorization, const char *body,
                                   size_t len, bool oversized)
{
	struct webhook_events ev = WEBHOOK_EVENTS_INIT;
	struct error err = ERROR_INIT;
	enum webhook_result r;
	const char *label[1];

	if (!webhook_token_matches(w, authorization))
		r = WEBHOOK_UNAUTHORIZED;
	else if (oversized || webhook_parse(&ev, body, len, &err) < 0)
		r = WEBHOOK_BAD_REQUEST;
	else
		r = classify(w, &ev);
	if (r == WEBHOOK_BAD_REQUEST)
		log_warn("webhook.request", "400: %s", oversized ? "body over 1 MiB" : err.msg);
	else if (r != WEBHOOK_UNAUTHORIZED) /* the listener logs those, rate-limited */
		log_debug("webhook.request", "%zu events: %s", ev.len, webhook_result_name(r));
	webhook_events_release(&ev);
	label[0] = webhook_result_name(r);
	if (w->metrics)
		metrics_add(w->metrics, "imageguard_webhook_requests_total", label, 1);
	return r;
}

/* When the wanted repositories allow an early pass: the soonest at which one of them has had
 * none in the last WEBHOOK_REPEAT_MS, so a flood of pushes for one repository is one early
 * pass per interval (a push whose notifications straddle that pass is seen by the next one,
 * at most WEBHOOK_REPEAT_MS later). The scheduled passes are full passes and are never held.
 * Locked. */
static int64_t repeat_ms(const struct webhook *w)
{
	int64_t soonest = -1;

	for (size_t i = 0; i < w->known_len; i++) {
		int64_t before = w->taken_ms[i];
		int64_t at = before ? before + WEBHOOK_REPEAT_MS : 0;

		if (w->wanted[i] && (soonest < 0 || at < soonest))
			soonest = at;
	}
	return soonest < 0 ? 0 : soonest;
}

/* When the pending burst falls due (monotonic ms), or -1 when nothing is pending. Locked. */
static int64_t due_ms(const struct webhook *w)
{
	int64_t quiet, cap, due, held;

	if (!w->pending)
		return -1;
	quiet = w->last_ms + WEBHOOK_QUIET_MS;
	cap = w->first_ms + WEBHOOK_MAX_DELAY_MS;
	due = quiet < cap ? quiet : cap;
	held = repeat_ms(w);
	return due > held ? due : held;
}

bool webhook_wait(struct webhook *w, long ms)
{
	int64_t until = mono_ms() + ms, due;
	bool ready;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		int64_t now = mono_ms(), wake = until;
		struct timespec ts;

		due = due_ms(w);
		if ((ready = due >= 0 && now >= due) || now >= until)
			break;
		if (due >= 0 && due < wake)
			wake = due;
		ts.tv_sec = (time_t)(wake / 1000);
		ts.tv_nsec = (long)(wake % 1000) * 1000000L;
		pthread_cond_timedwait(&w->wake, &w->lock, &ts);
	}
	pthread_mutex_unlock(&w->lock);
	return ready;
}

double webhook_take(struct webhook *w, bool *wanted, size_t n)
{
	double earliest = -1;
	int64_t due;

	pthread_mutex_lock(&w->lock);
	due = due_ms(w);
	if (due >= 0 && mono_ms() >= due) {
		earliest = w->earliest;
		int64_t now = mono_ms();

		for (size_t i = 0; i < w->known_len; i++) {
			if (wanted && i < n)
				wanted[i] = w->wanted[i];
			if (w->wanted[i])
				w->taken_ms[i] = now;
			w->wanted[i] = false;
		}
		w->pending = false;
	}
	pthread_mutex_unlock(&w->lock);
	return earliest;
}
