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

/* Loads o->config for a pass (plan, reconcile, run): invalid objects are left out and listed
 * in (*out)->invalid while the valid ones load (config_load_options.keep_valid), and every
 * secret an object names is checked under o->secrets_dir (without --secrets-dir, naming one is
 * an error of that object). Diagnostics as cmdpass_load_config. Returns 0 with *out set
 * whenever some object was found, 2 when none was (or the path is missing), 1 on a runtime
 * failure. */
int cmdpass_load(struct config **out, const struct cmdopts *o, bool as_log);

/* plan (dry_run) or reconcile: one pass, the report on stdout; returns the exit code of
 * CONTRACT §3 (0, 1 when any policy ended in error, 2 for invalid input). */
int cmdpass_once(const struct cmdopts *o, bool dry_run);

#endif
