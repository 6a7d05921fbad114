/* The webhook's state, shared by webhook.c (bodies, token, hints) and webhook_httpd.c (the
 * listener); not part of the app layer's interface. */
#ifndef IMAGEGUARD_WEBHOOK_PRIVATE_H
#define IMAGEGUARD_WEBHOOK_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct MHD_Daemon;
struct metrics;

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
	bool *wanted; /* one per known */
	size_t known_len;
	bool pending;              /* a burst waits to be taken */
	int64_t first_ms, last_ms; /* monotonic times of its first and last hint */
	double earliest;           /* its earliest notification time, Unix s; 0: none */
};

/* Whether authorization ("Bearer TOKEN", NULL: none) presents w's token (constant time). */
bool webhook_token_matches(const struct webhook *w, const char *authorization);
/* Stops the listener, if any (webhook_httpd.c). */
void webhook_stop_listener(struct webhook *w);

#endif
