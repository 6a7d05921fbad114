/* What plan, reconcile and run were asked to do: the COMMON FLAGS of CONTRACT §3 and run's own,
 * as cmd/cmdopts.c parses them. Defined here, at the deepest layer that reads all of it (the run
 * loop), so that the loop reads it without including the command layer. */
#ifndef IMAGEGUARD_RUNOPTS_H
#define IMAGEGUARD_RUNOPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imageguard/kube/lease.h"
#include "imageguard/pass/shard.h"
#include "imageguard/util/log.h"

struct cmdopts {
	const char *config;      /* borrowed from argv */
	char *state_dir;         /* owned: the flag's value or the default of §3 */
	const char *secrets_dir; /* NULL: none */
	const char *audit_log;   /* NULL: no audit log; "-" stdout */
	bool audit_tags;
	enum log_level log_level;
	enum log_format log_format;
	unsigned concurrency;        /* registry scans at once, default 8 */
	bool json;                   /* -o json */
	const char *listen;          /* NULL: no endpoint */
	int64_t verify_interval_ms;  /* --verify-interval; 0: no periodic verify */
	const char *kubeconfig;      /* --kubeconfig; NULL: in-cluster service account */
	int64_t pass_timeout_ms;     /* --pass-timeout: every tag listing of a pass ends by it */
	size_t memory_budget;        /* --memory-budget bytes: the listing cap is half of it */
	bool kube;                   /* --kube: objects from the API server, no --config */
	const char *watch_namespace; /* --watch-namespace; NULL: every namespace */
	const char *watch_label_selector; /* --watch-label-selector; NULL: all */
	int64_t kube_sync_timeout_ms;     /* --kube-sync-timeout: the first lists of --kube */
	bool kube_sync_timeout_set;       /* given (it needs --kube) */
	/* --watch-label-selector (selector, checked by labelsel_check) and --shards /
	 * --shard-index (both or neither, index below shards; "auto": the hostname's -N) */
	struct shard_spec shard;
	bool shard_index_set;
	const char *events_addr;        /* --events-addr: notification-controller URL */
	const char *webhook_listen;     /* --webhook-listen; NULL: no webhook */
	const char *webhook_token_file; /* --webhook-token-file (required with it) */
	/* leader election (run): --enable-leader-election, --leader-election-lease-duration,
	 * -renew-deadline, -retry-period (35s, 30s, 5s), -release-on-cancel (true) */
	bool leader_elect;
	struct lease_timing leader_timing;
	bool leader_release;
	/* --no-cross-namespace-refs (Flux's flag): config_load_options.no_cross_namespace_refs */
	bool no_cross_namespace_refs;
	bool help; /* --help seen: print usage, exit 0 */
};

#endif
