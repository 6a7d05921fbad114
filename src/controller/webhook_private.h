/* The webhook's state, shared by webhook.c (bodies, token, hints) and webhook_httpd.c (the
 * listener); not part of the app layer's interface. */
#ifndef IMAGEGUARD_WEBHOOK_PRIVATE_H
#define IMAGEGUARD_WEBHOOK_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct MHD_Daemon;
struct metrics;

#define WEBHOOK_CLIENTS 64 /* client addresses whose rejections are remembered */

/* One client address's rejected requests: when its last line was logged, and how many were
 * counted without a line since. */
struct webhook_client {
	char addr[64]; /* "" : free */
	int64_t logged_ms;
	unsigned long suppressed;
};

struct webhook_known {
	char *registry, *repository; /* normalised, as struct imageref */
};

struct webhook {
	unsigned char token_hash[32]; /* SHA-256 of the token */
	struct metrics *metrics;      /* borrowed; NULL: none */
	struct MHD_Daemon *daemon;    /* NULL until webhook_listen */
	unsigned port;
	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t wake;  /* CLOCK_MONOTONIC: a hint arrived */
	struct webhook_known *known;
	bool *wanted;      /* one per known */
	int64_t *taken_ms; /* one per known: when its last early pass was taken (0: never) */
	size_t known_len;
	bool pending;              /* a burst waits to be taken */
	int64_t first_ms, last_ms; /* monotonic times of its first and last hint */
	double earliest;           /* its earliest notification time, Unix s; 0: none */
	struct webhook_client clients[WEBHOOK_CLIENTS];
	int64_t window_ms;      /* start of the current log window (all clients) */
	unsigned window_lines;  /* rejection lines logged in it */
	unsigned long unlogged; /* rejections beyond the window's lines, not yet reported */
};

/* Whether authorization ("Bearer TOKEN", NULL: none) presents w's token (constant time). */
bool webhook_token_matches(const struct webhook *w, const char *authorization);
/* Counts a rejected request in imageguard_webhook_rejected_total{reason} and logs it, at most
 * once per WEBHOOK_REJECT_LOG_MS per client address and WEBHOOK_REJECT_LINES lines per
 * interval in all (a line says how many were counted without one). Returns whether it logged
 * (webhook_reject.c). */
bool webhook_rejected(struct webhook *w, const char *client, const char *reason,
                      const char *detail);
/* Stops the listener, if any (webhook_httpd.c). */
void webhook_stop_listener(struct webhook *w);

#endif
