/* What plan, reconcile and run share beyond option parsing: loading the configuration with
 * every diagnostic printed, and one pass printed as text or JSON. */
#ifndef IMAGEGUARD_CMDPASS_H
#define IMAGEGUARD_CMDPASS_H

#include <stdbool.h>

struct cmdopts;
struct config;

/* Loads o->config, printing every diagnostic to stderr as `imageguard: file:line: message`
 * (or, with as_log, as log lines, for run's reloads). Returns 0 with *out set, 2 when the
 * configuration is invalid or missing, 1 on a runtime failure: an exit code. */
int cmdpass_load_config(struct config **out, const char *path, bool as_log);

/* plan (dry_run) or reconcile: one pass, the report on stdout; returns the exit code of
 * CONTRACT §3 (0, 1 when any policy ended in error, 2 for invalid input). */
int cmdpass_once(const struct cmdopts *o, bool dry_run);

#endif
