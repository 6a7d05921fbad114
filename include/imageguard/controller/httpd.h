/* The health and metrics endpoint of `run --listen`: /healthz, /readyz and /metrics served by
 * libmicrohttpd on its own internal polling thread. */
#ifndef IMAGEGUARD_HTTPD_H
#define IMAGEGUARD_HTTPD_H

#include <stdbool.h>

struct error;
struct metrics;

struct httpd;

/* Listens on `listen` ("ADDR:PORT", "[v6]:PORT" or ":PORT" for every address; port 0 picks a
 * free one) and serves m (borrowed: must outlive the server). /readyz answers 503 until
 * httpd_set_ready(h, true). Returns 0, IG_EUSAGE for a malformed address, IG_EFAIL when the
 * socket cannot be bound. Stop and free with httpd_stop. */
int httpd_start(struct httpd **out, const char *listen, struct metrics *m, struct error *err);
/* Stops serving (in-flight requests finish) and frees h; NULL-safe. */
void httpd_stop(struct httpd *h);
void httpd_set_ready(struct httpd *h, bool ready);
/* The port actually bound. */
unsigned httpd_port(const struct httpd *h);

/* Parses "ADDR:PORT" into a socket address usable by bind(); exported for tests. */
struct sockaddr_storage;
int httpd_parse_listen(struct sockaddr_storage *out, const char *listen, struct error *err);

#endif
