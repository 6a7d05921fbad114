/* `imageguard run`'s runtime: passes on the configured intervals (with jitter) until
 * SIGTERM/SIGINT, configuration reloads on SIGHUP, on file change or on a change of the
 * Kubernetes objects (a broken new configuration is reported and the old one kept), the
 * leader wait, the webhook's early passes, /healthz, /readyz, /metrics on --listen, and with
 * --verify-interval a verification of running images between passes. */
#ifndef IMAGEGUARD_LOOP_H
#define IMAGEGUARD_LOOP_H

#include <stdbool.h>

struct cmdopts;
struct config;

/* Loads o->config for a pass with every diagnostic printed (as_log: as log lines); returns 0
 * with *out set, 2 for an invalid or missing configuration, 1 on a runtime failure (the
 * command layer's cmdpass_load). */
typedef int (*loop_load_fn)(struct config **out, const struct cmdopts *o, bool as_log);

/* Runs until SIGTERM/SIGINT (0), a lost lease (1), or a start that failed (2 for invalid
 * input: an address, kubeconfig or service account; 1 otherwise). Takes the control signals
 * on a thread of its own. */
int loop_run(const struct cmdopts *o, loop_load_fn load);

#endif
