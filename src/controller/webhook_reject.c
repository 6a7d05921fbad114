/* Rejected webhook requests (401, 413, 408): every one counted by reason, and logged at most
 * once per interval per client address, so a flood of bad requests cannot flood the log. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "imageguard/controller/webhook.h"
#include "imageguard/util/log.h"
#include "imageguard/util/metrics.h"
#include "webhook_private.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* client's slot: its own, else a free one, else the one logged longest ago. Locked. */
static struct webhook_client *slot_of(struct webhook *w, const char *client, int64_t now)
{
	struct webhook_client *oldest = &w->clients[0];

	for (size_t i = 0; i < WEBHOOK_CLIENTS; i++) {
		struct webhook_client *c = &w->clients[i];

		if (strcmp(c->addr, client) == 0)
			return c;
		if (!c->addr[0] || (oldest->addr[0] && c->logged_ms < oldest->logged_ms))
			oldest = c;
	}
	snprintf(oldest->addr, sizeof(oldest->addr), "%s", client);
	oldest->logged_ms = now - WEBHOOK_REJECT_LOG_MS; /* due at once */
	oldest->suppressed = 0;
	return oldest;
}

/* Whether the window of all clients has room for one more line (a new window opens every
 * WEBHOOK_REJECT_LOG_MS). Locked. */
static bool window_has_room(struct webhook *w, int64_t now)
{
	if (w->window_lines == 0 || now - w->window_ms >= WEBHOOK_REJECT_LOG_MS) {
		w->window_ms = now;
		w->window_lines = 0;
	}
	return w->window_lines < WEBHOOK_REJECT_LINES;
}

bool webhook_rejected(struct webhook *w, const char *client, const char *reason, const char *detail)
{
	const char *label[1] = {reason};
	struct webhook_client *c;
	unsigned long mine = 0, others = 0;
	char addr[sizeof(c->addr)];
	int64_t now = now_ms();
	bool log;

	if (w->metrics)
		metrics_add(w->metrics, "imageguard_webhook_rejected_total", label, 1);
	pthread_mutex_lock(&w->lock);
	c = slot_of(w, client && *client ? client : "unknown", now);
	log = now - c->logged_ms >= WEBHOOK_REJECT_LOG_MS && window_has_room(w, now);
	if (log) {
		mine = c->suppressed, others = w->unlogged;
		c->suppressed = 0, w->unlogged = 0;
		c->logged_ms = now;
		w->window_lines++;
		snprintf(addr, sizeof(addr), "%s", c->addr);
	} else {
		c->suppressed++;
		w->unlogged++;
	}
	pthread_mutex_unlock(&w->lock);
	if (log)
		log_warn("webhook.rejected",
		         "%s from %s: %s (%lu more from it, %lu in all, not logged since its last "
		         "line; imageguard_webhook_rejected_total counts each)",
		         reason, addr, detail, mine, others);
	return log;
}
