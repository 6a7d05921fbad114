/* The COMMON FLAGS of CONTRACT §3 shared by plan, reconcile and run (--config, --state-dir,
 * --secrets-dir, --audit-log, --audit-tags, --log-format, --log-level, --concurrency, -o and
 * run's --listen, --verify-interval and --kubeconfig), parsed in one place so the three commands
 * accept exactly the same input. */
#ifndef IMAGEGUARD_CMDOPTS_H
#define IMAGEGUARD_CMDOPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "imageguard/controller/runopts.h"

struct error;

enum {
	CMDOPTS_OUTPUT = 1, /* -o text|json accepted */
	CMDOPTS_LISTEN = 2, /* --listen accepted */
	CMDOPTS_VERIFY = 4, /* --verify-interval and --kubeconfig accepted (run) */
	CMDOPTS_RUN =
	    8, /* --pass-timeout, --memory-budget, --webhook-*, --*leader-election* (run) */
	CMDOPTS_KUBE = 16, /* --kube, --watch-namespace, --watch-label-selector, --events-addr,
	                      --kube-sync-timeout */
	CMDOPTS_SHARD =
	    32, /* --watch-label-selector, --shards, --shard-index (plan, reconcile, run) */
	CMDOPTS_SHARD_VIEW = 64, /* --shards without --shard-index: every owner shown (plan) */
	CMDOPTS_TENANCY = 128,   /* --no-cross-namespace-refs (plan, reconcile, run) */
};

/* The most shards --shards takes. */
#define CMDOPTS_MAX_SHARDS 1024u

/* Defaults of --pass-timeout (10m), --kube-sync-timeout (30s) and --memory-budget (96Mi,
 * registry.h's default). */
#define CMDOPTS_PASS_TIMEOUT_MS (10 * 60 * 1000)
#define CMDOPTS_KUBE_SYNC_TIMEOUT_MS (30 * 1000)
#define CMDOPTS_MEMORY_BUDGET ((size_t)96 << 20)

/* Parses argv (argv[0] is the command name) accepting the COMMON FLAGS plus those in allow.
 * Returns 0 or IG_EUSAGE with a one-line message (unknown option, missing value, bad number,
 * bad duration, missing --config, --kubeconfig without --verify-interval). On success the log
 * configuration is applied. Release with cmdopts_release. */
int cmdopts_parse(struct cmdopts *out, int argc, char **argv, unsigned allow, struct error *err);
void cmdopts_release(struct cmdopts *o);

/* cmdopts_parse for a command's entry point: on --help prints usage to stdout, on a usage
 * error the one-line error and usage to stderr. Returns -1 when the command goes on, else the
 * exit code to return at once (0 or 2). The caller releases o in every case. */
int cmdopts_start(struct cmdopts *o, int argc, char **argv, unsigned allow,
                  void (*usage)(FILE *out));

/* The default state dir: /var/lib/imageguard for root, else $XDG_STATE_HOME/imageguard
 * (~/.local/state/imageguard). Newly allocated; NULL when out of memory. */
char *cmdopts_default_state_dir(void);

/* A byte count with an optional binary suffix (Ki, Mi, Gi), as Kubernetes writes limits, for
 * option flag. Returns 0 or IG_EUSAGE with a one-line message. */
int cmdopts_parse_bytes(size_t *out, const char *flag, const char *s, struct error *err);

#endif
