/* COMMON FLAGS parsing for plan, reconcile and run: `--flag VALUE` and `--flag=VALUE`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imageguard/util/buf.h"
#include "imageguard/cmd/cmdopts.h"
#include "imageguard/config/labelsel.h"
#include "imageguard/util/duration.h"
#include "imageguard/util/error.h"
#include "imageguard/kube/kubename.h"
#include "imageguard/kube/lease.h"

enum opt_id {
	O_CONFIG,
	O_STATE_DIR,
	O_SECRETS_DIR,
	O_AUDIT_LOG,
	O_AUDIT_TAGS,
	O_LOG_FORMAT,
	O_LOG_LEVEL,
	O_CONCURRENCY,
	O_OUTPUT,
	O_LISTEN,
	O_VERIFY_INTERVAL,
	O_KUBECONFIG,
	O_PASS_TIMEOUT,
	O_MEMORY_BUDGET,
	O_KUBE,
	O_WATCH_NAMESPACE,
	O_WATCH_SELECTOR,
	O_KUBE_SYNC_TIMEOUT,
	O_SHARDS,
	O_SHARD_INDEX,
	O_EVENTS_ADDR,
	O_WEBHOOK_LISTEN,
	O_WEBHOOK_TOKEN_FILE,
	/* leader election (run) */
	O_LEADER_ELECT,
	O_LEADER_LEASE,
	O_LEADER_RENEW,
	O_LEADER_RETRY,
	O_LEADER_RELEASE,
	O_NO_CROSS_NS,
	O_HELP
};

static const struct {
	const char *name;
	enum opt_id id;
	bool has_value;
	unsigned needs; /* allow bit required, 0: always accepted */
} opts[] = {
    {"--config", O_CONFIG, true, 0},
    {"--state-dir", O_STATE_DIR, true, 0},
    {"--secrets-dir", O_SECRETS_DIR, true, 0},
    {"--audit-log", O_AUDIT_LOG, true, 0},
    {"--audit-tags", O_AUDIT_TAGS, false, 0},
    {"--log-format", O_LOG_FORMAT, true, 0},
    {"--log-level", O_LOG_LEVEL, true, 0},
    {"--concurrency", O_CONCURRENCY, true, 0},
    {"-o", O_OUTPUT, true, CMDOPTS_OUTPUT},
    {"--output", O_OUTPUT, true, CMDOPTS_OUTPUT},
    {"--listen", O_LISTEN, true, CMDOPTS_LISTEN},
    {"--verify-interval", O_VERIFY_INTERVAL, true, CMDOPTS_VERIFY},
    {"--kubeconfig", O_KUBECONFIG, true, CMDOPTS_VERIFY},
    {"--pass-timeout", O_PASS_TIMEOUT, true, CMDOPTS_RUN},
    {"--memory-budget", O_MEMORY_BUDGET, true, CMDOPTS_RUN},
    {"--kube", O_KUBE, false, CMDOPTS_KUBE},
    {"--watch-namespace", O_WATCH_NAMESPACE, true, CMDOPTS_KUBE},
    {"--watch-label-selector", O_WATCH_SELECTOR, true, CMDOPTS_KUBE | CMDOPTS_SHARD},
    {"--kube-sync-timeout", O_KUBE_SYNC_TIMEOUT, true, CMDOPTS_KUBE},
    {"--shards", O_SHARDS, true, CMDOPTS_SHARD},
    {"--shard-index", O_SHARD_INDEX, true, CMDOPTS_SHARD},
    {"--events-addr", O_EVENTS_ADDR, true, CMDOPTS_KUBE},
    {"--webhook-listen", O_WEBHOOK_LISTEN, true, CMDOPTS_RUN},
    {"--webhook-token-file", O_WEBHOOK_TOKEN_FILE, true, CMDOPTS_RUN},
    /* leader election: Flux's flags (fluxcd/pkg runtime/leaderelection); the booleans take
     * no value or "=true"/"=false", as Go's flag package reads them */
    {"--enable-leader-election", O_LEADER_ELECT, true, CMDOPTS_RUN},
    {"--leader-election-lease-duration", O_LEADER_LEASE, true, CMDOPTS_RUN},
    {"--leader-election-renew-deadline", O_LEADER_RENEW, true, CMDOPTS_RUN},
    {"--leader-election-retry-period", O_LEADER_RETRY, true, CMDOPTS_RUN},
    {"--leader-election-release-on-cancel", O_LEADER_RELEASE, true, CMDOPTS_RUN},
    /* Flux's multi-tenancy lockdown flag (fluxcd/pkg runtime/acl), a boolean as Go reads it */
    {"--no-cross-namespace-refs", O_NO_CROSS_NS, true, CMDOPTS_TENANCY},
    {"--help", O_HELP, false, 0},
    {"-h", O_HELP, false, 0},
};

char *cmdopts_default_state_dir(void)
{
	struct buf b = BUF_INIT;
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int error;

	if (geteuid() == 0)
		error = buf_puts(&b, "/var/lib/imageguard");
	else if (xdg && *xdg == '/')
		error = buf_printf(&b, "%s/imageguard", xdg);
	else
		error = buf_printf(&b, "%s/.local/state/imageguard", home && *home ? home : "/tmp");
	if (error < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b);
}

static int parse_concurrency(unsigned *out, const char *v, struct error *err)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (*v < '0' || *v > '9' || *end || n < 1 || n > 256)
		return error_set(
		    err, IG_EUSAGE,
		    "option '--concurrency': expected a number from 1 to 256, got '%s'", v);
	*out = (unsigned)n;
	return 0;
}

/* A Go duration; 0 disables. Below a millisecond (but not 0) or above a week is a mistake. */
static int parse_verify_interval(int64_t *out_ms, const char *v, struct error *err)
{
	struct error derr = ERROR_INIT;
	int64_t ns;

	if (duration_parse(&ns, v, &derr) < 0)
		return error_set(err, IG_EUSAGE, "option '--verify-interval': %s", derr.msg);
	if (ns < 0 || (ns > 0 && ns < 1000000) || ns > 7 * 24 * 3600 * 1000000000ll)
		return error_set(err, IG_EUSAGE,
		                 "option '--verify-interval': expected 0 (off) or 1ms to 168h, got "
		                 "'%s'",
		                 v);
	*out_ms = ns / 1000000;
	return 0;
}

/* A Go duration from 1s to 24h: the whole pass's deadline. */
static int parse_pass_timeout(int64_t *out_ms, const char *v, struct error *err)
{
	struct error derr = ERROR_INIT;
	int64_t ns;

	if (duration_parse(&ns, v, &derr) < 0)
		return error_set(err, IG_EUSAGE, "option '--pass-timeout': %s", derr.msg);
	if (ns < 1000000000ll || ns > 24 * 3600 * 1000000000ll)
		return error_set(err, IG_EUSAGE,
		                 "option '--pass-timeout': expected 1s to 24h, got '%s'", v);
	*out_ms = ns / 1000000;
	return 0;
}

int cmdopts_parse_bytes(size_t *out, const char *flag, const char *s, struct error *err)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {{"", 0}, {"Ki", 10}, {"Mi", 20}, {"Gi", 30}};
	char *end;
	unsigned long long v;

	if (*s >= '0' && *s <= '9' && (v = strtoull(s, &end, 10)) > 0)
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(end, units[i].suffix) == 0 &&
			    v <= ((unsigned long long)SIZE_MAX >> units[i].shift)) {
				*out = (size_t)(v << units[i].shift);
				return 0;
			}
	return error_set(err, IG_EUSAGE,
	                 "option '%s': expected a positive size (bytes, Ki, Mi or Gi), got '%s'",
	                 flag, s);
}

/* A Go duration from 1s to 24h: how long run --kube waits for its first lists. */
static int parse_kube_sync_timeout(int64_t *out_ms, const char *v, struct error *err)
{
	struct error derr = ERROR_INIT;
	int64_t ns;

	if (duration_parse(&ns, v, &derr) < 0)
		return error_set(err, IG_EUSAGE, "option '--kube-sync-timeout': %s", derr.msg);
	if (ns < 1000000000ll || ns > 24 * 3600 * 1000000000ll)
		return error_set(err, IG_EUSAGE,
		                 "option '--kube-sync-timeout': expected 1s to 24h, got '%s'", v);
	*out_ms = ns / 1000000;
	return 0;
}

/* ---- sharding: --watch-label-selector, --shards N, --shard-index I|auto ---- */

/* A decimal from 0 to max, or -1. */
static long parse_small(const char *v, unsigned long max)
{
	char *end;
	unsigned long n;

	if (*v < '0' || *v > '9')
		return -1;
	n = strtoul(v, &end, 10);
	return *end || n > max ? -1 : (long)n;
}

/* The StatefulSet ordinal: the digits after the hostname's last '-'. */
static int shard_index_auto(unsigned *out, struct error *err)
{
	char host[256] = "";
	const char *dash;
	long n;

	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	dash = strrchr(host, '-');
	if (!dash || (n = parse_small(dash + 1, CMDOPTS_MAX_SHARDS - 1)) < 0)
		return error_set(err, IG_EUSAGE,
		                 "option '--shard-index': auto needs a hostname ending in -N (a "
		                 "StatefulSet ordinal), got '%.200s'",
		                 host);
	*out = (unsigned)n;
	return 0;
}

static int apply_shard(struct cmdopts *o, enum opt_id id, const char *v, struct error *err)
{
	long n;

	if (id == O_SHARDS) {
		if ((n = parse_small(v, CMDOPTS_MAX_SHARDS)) < 1)
			return error_set(
			    err, IG_EUSAGE,
			    "option '--shards': expected a number from 1 to %u, got '%s'",
			    CMDOPTS_MAX_SHARDS, v);
		o->shard.shards = (unsigned)n;
		return 0;
	}
	o->shard_index_set = true;
	if (!strcmp(v, "auto"))
		return shard_index_auto(&o->shard.index, err);
	if ((n = parse_small(v, CMDOPTS_MAX_SHARDS - 1)) < 0)
		return error_set(
		    err, IG_EUSAGE,
		    "option '--shard-index': expected a number from 0 to %u or 'auto', got '%s'",
		    CMDOPTS_MAX_SHARDS - 1, v);
	o->shard.index = (unsigned)n;
	return 0;
}

/* Both or neither of --shards and --shard-index (plan: --shards alone shows every owner), the
 * index below the count; a selector that parses. */
static int check_shard(struct cmdopts *o, unsigned allow, struct error *err)
{
	struct error serr = ERROR_INIT;

	if (o->watch_label_selector && labelsel_check(o->watch_label_selector, &serr) < 0)
		return error_set(err, serr.code == IG_EFAIL ? IG_EFAIL : IG_EUSAGE,
		                 "option '--watch-label-selector': %s", serr.msg);
	o->shard.selector = o->watch_label_selector;
	if (o->shard_index_set && !o->shard.shards)
		return error_set(err, IG_EUSAGE, "option '--shard-index': needs --shards");
	if (o->shard.shards && !o->shard_index_set && !(allow & CMDOPTS_SHARD_VIEW))
		return error_set(err, IG_EUSAGE, "option '--shards': needs --shard-index");
	if (o->shard.shards && o->shard.index >= o->shard.shards)
		return error_set(err, IG_EUSAGE,
		                 "option '--shard-index': %u is not below --shards %u",
		                 o->shard.index, o->shard.shards);
	return 0;
}

/* run --kube's own flags: empty values are mistakes (an empty namespace is not "all"). */
static int apply_kube(struct cmdopts *o, enum opt_id id, const char *v, struct error *err)
{
	const char *name = id == O_WATCH_NAMESPACE  ? "--watch-namespace"
	                   : id == O_WATCH_SELECTOR ? "--watch-label-selector"
	                                            : "--events-addr";

	if (!*v)
		return error_set(err, IG_EUSAGE, "option '%s': empty value", name);
	if (id == O_WATCH_NAMESPACE && !kubename_is_namespace(v))
		return error_set(err, IG_EUSAGE,
		                 "option '--watch-namespace': '%s' is not a valid namespace", v);
	if (id == O_WATCH_NAMESPACE)
		o->watch_namespace = v;
	else if (id == O_WATCH_SELECTOR)
		o->watch_label_selector = v;
	else if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
		return error_set(err, IG_EUSAGE, "option '--events-addr': expected an http(s) URL");
	else
		o->events_addr = v;
	return 0;
}

/* ---- leader election ---- */

static bool is_bool_opt(enum opt_id id)
{
	return id == O_LEADER_ELECT || id == O_LEADER_RELEASE || id == O_NO_CROSS_NS;
}

static const char *leader_flag(enum opt_id id)
{
	return id == O_LEADER_ELECT   ? "--enable-leader-election"
	       : id == O_LEADER_LEASE ? "--leader-election-lease-duration"
	       : id == O_LEADER_RENEW ? "--leader-election-renew-deadline"
	       : id == O_LEADER_RETRY ? "--leader-election-retry-period"
	       : id == O_NO_CROSS_NS  ? "--no-cross-namespace-refs"
	                              : "--leader-election-release-on-cancel";
}

/* A Go duration from 1ms to 1h. */
static int parse_leader_duration(int64_t *out_ms, enum opt_id id, const char *v, struct error *err)
{
	struct error derr = ERROR_INIT;
	int64_t ns;

	if (duration_parse(&ns, v, &derr) < 0)
		return error_set(err, IG_EUSAGE, "option '%s': %s", leader_flag(id), derr.msg);
	if (ns < 1000000 || ns > 3600 * 1000000000ll)
		return error_set(err, IG_EUSAGE, "option '%s': expected 1ms to 1h, got '%s'",
		                 leader_flag(id), v);
	*out_ms = ns / 1000000;
	return 0;
}

static int apply_leader(struct cmdopts *o, enum opt_id id, const char *v, struct error *err)
{
	bool *flag = id == O_LEADER_ELECT  ? &o->leader_elect
	             : id == O_NO_CROSS_NS ? &o->no_cross_namespace_refs
	                                   : &o->leader_release;

	switch (id) {
	case O_LEADER_LEASE:
		return parse_leader_duration(&o->leader_timing.lease_ms, id, v, err);
	case O_LEADER_RENEW:
		return parse_leader_duration(&o->leader_timing.renew_ms, id, v, err);
	case O_LEADER_RETRY:
		return parse_leader_duration(&o->leader_timing.retry_ms, id, v, err);
	default:
		break;
	}
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
		*flag = true;
	else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		*flag = false;
	else
		return error_set(err, IG_EUSAGE, "option '%s': expected true or false, got '%s'",
		                 leader_flag(id), v);
	return 0;
}

/* --enable-leader-election needs the API server; the timing obeys client-go's rules. */
static int check_leader(const struct cmdopts *o, struct error *err)
{
	struct error terr = ERROR_INIT;

	if (!o->leader_elect)
		return 0;
	if (!o->kube && !o->kubeconfig)
		return error_set(err, IG_EUSAGE,
		                 "option '--enable-leader-election': needs --kube or --kubeconfig "
		                 "(the Lease lives in the API server)");
	if (lease_timing_check(&o->leader_timing, &terr) < 0)
		return error_set(err, IG_EUSAGE, "option '--enable-leader-election': %s", terr.msg);
	return 0;
}

static int apply(struct cmdopts *o, enum opt_id id, const char *v, struct error *err)
{
	switch (id) {
	case O_CONFIG:
		o->config = v;
		break;
	case O_STATE_DIR:
		free(o->state_dir);
		if (!(o->state_dir = strdup(v)))
			return error_oom(err);
		break;
	case O_SECRETS_DIR:
		o->secrets_dir = v;
		break;
	case O_AUDIT_LOG:
		o->audit_log = v;
		break;
	case O_AUDIT_TAGS:
		o->audit_tags = true;
		break;
	case O_LOG_FORMAT:
		if (log_parse_format(&o->log_format, v) < 0)
			return error_set(err, IG_EUSAGE,
			                 "option '--log-format': expected json or text, got '%s'",
			                 v);
		break;
	case O_LOG_LEVEL:
		if (log_parse_level(&o->log_level, v) < 0)
			return error_set(
			    err, IG_EUSAGE,
			    "option '--log-level': expected error, warn, info or debug, "
			    "got '%s'",
			    v);
		break;
	case O_CONCURRENCY:
		return parse_concurrency(&o->concurrency, v, err);
	case O_OUTPUT:
		if (strcmp(v, "json") != 0 && strcmp(v, "text") != 0)
			return error_set(err, IG_EUSAGE,
			                 "option '-o': expected text or json, got '%s'", v);
		o->json = strcmp(v, "json") == 0;
		break;
	case O_LISTEN:
		o->listen = v;
		break;
	case O_VERIFY_INTERVAL:
		return parse_verify_interval(&o->verify_interval_ms, v, err);
	case O_KUBECONFIG:
		if (!*v)
			return error_set(err, IG_EUSAGE, "option '--kubeconfig': empty value");
		o->kubeconfig = v;
		break;
	case O_PASS_TIMEOUT:
		return parse_pass_timeout(&o->pass_timeout_ms, v, err);
	case O_MEMORY_BUDGET:
		return cmdopts_parse_bytes(&o->memory_budget, "--memory-budget", v, err);
	case O_KUBE:
		o->kube = true;
		break;
	case O_KUBE_SYNC_TIMEOUT:
		o->kube_sync_timeout_set = true;
		return parse_kube_sync_timeout(&o->kube_sync_timeout_ms, v, err);
	case O_SHARDS:
	case O_SHARD_INDEX:
		return apply_shard(o, id, v, err);
	case O_WATCH_NAMESPACE:
	case O_WATCH_SELECTOR:
	case O_EVENTS_ADDR:
		return apply_kube(o, id, v, err);
	case O_WEBHOOK_LISTEN:
		o->webhook_listen = v;
		break;
	case O_WEBHOOK_TOKEN_FILE:
		if (!*v)
			return error_set(err, IG_EUSAGE,
			                 "option '--webhook-token-file': empty value");
		o->webhook_token_file = v;
		break;
	case O_LEADER_ELECT:
	case O_LEADER_LEASE:
	case O_LEADER_RENEW:
	case O_LEADER_RETRY:
	case O_LEADER_RELEASE:
	case O_NO_CROSS_NS:
		return apply_leader(o, id, v, err);
	case O_HELP:
		o->help = true;
		break;
	}
	return 0;
}

/* Finds the option arg names; *value is the text after '=' or NULL. */
static int lookup(const char *arg, unsigned allow, const char **value)
{
	for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
		size_t n = strlen(opts[k].name);

		if (opts[k].needs && !(allow & opts[k].needs))
			continue;
		if (strncmp(arg, opts[k].name, n) != 0)
			continue;
		if (arg[n] == '\0' || (arg[n] == '=' && opts[k].has_value)) {
			*value = arg[n] ? arg + n + 1 : NULL;
			return (int)k;
		}
	}
	return -1;
}

static int parse_args(struct cmdopts *o, int argc, char **argv, unsigned allow, struct error *err)
{
	for (int i = 1; i < argc; i++) {
		const char *value;
		int k = lookup(argv[i], allow, &value);
		int error;

		if (k < 0)
			return error_set(err, IG_EUSAGE, "option '%s': unknown (see %s --help)",
			                 argv[i], argv[0]);
		if (opts[k].has_value && !value && is_bool_opt(opts[k].id)) {
			value = "true";
		} else if (opts[k].has_value && !value) {
			if (i + 1 >= argc)
				return error_set(err, IG_EUSAGE, "option '%s': missing value",
				                 argv[i]);
			value = argv[++i];
		}
		if ((error = apply(o, opts[k].id, value, err)) < 0)
			return error;
	}
	return 0;
}

int cmdopts_parse(struct cmdopts *out, int argc, char **argv, unsigned allow, struct error *err)
{
	int error;

	memset(out, 0, sizeof(*out));
	out->log_level = LOG_INFO;
	out->log_format = LOG_TEXT;
	out->concurrency = 8;
	out->pass_timeout_ms = CMDOPTS_PASS_TIMEOUT_MS;
	out->memory_budget = CMDOPTS_MEMORY_BUDGET;
	out->kube_sync_timeout_ms = CMDOPTS_KUBE_SYNC_TIMEOUT_MS;
	out->leader_timing = (struct lease_timing)LEASE_TIMING_DEFAULT;
	out->leader_release = true;
	if ((error = parse_args(out, argc, argv, allow, err)) < 0)
		return error;
	if (out->help)
		return 0;
	if (out->kube && (out->config || out->secrets_dir))
		return error_set(err, IG_EUSAGE, "option '%s': not used with --kube",
		                 out->config ? "--config" : "--secrets-dir");
	if (!out->kube && (out->watch_namespace || out->events_addr || out->kube_sync_timeout_set))
		return error_set(err, IG_EUSAGE, "option '%s': only used with --kube",
		                 out->watch_namespace ? "--watch-namespace"
		                 : out->events_addr   ? "--events-addr"
		                                      : "--kube-sync-timeout");
	if ((error = check_shard(out, allow, err)) < 0)
		return error;
	if (!out->kube && (!out->config || !*out->config))
		return error_set(err, IG_EUSAGE, "option '--config': required");
	if ((error = check_leader(out, err)) < 0)
		return error;
	if (out->kubeconfig && !out->verify_interval_ms && !out->kube && !out->leader_elect)
		return error_set(err, IG_EUSAGE,
		                 "option '--kubeconfig': only used with --verify-interval");
	if (!out->webhook_listen != !out->webhook_token_file)
		return error_set(err, IG_EUSAGE, "option '%s': needs %s",
		                 out->webhook_listen ? "--webhook-listen" : "--webhook-token-file",
		                 out->webhook_listen ? "--webhook-token-file" : "--webhook-listen");
	if (!out->state_dir && !(out->state_dir = cmdopts_default_state_dir()))
		return error_oom(err);
	log_configure(out->log_level, out->log_format);
	return 0;
}

void cmdopts_release(struct cmdopts *o)
{
	free(o->state_dir);
	o->state_dir = NULL;
}

int cmdopts_start(struct cmdopts *o, int argc, char **argv, unsigned allow,
                  void (*usage)(FILE *out))
{
	struct error err = ERROR_INIT;

	if (cmdopts_parse(o, argc, argv, allow, &err) < 0) {
		fprintf(stderr, "imageguard: %s: %s\n", argv[0], err.msg);
		usage(stderr);
		return 2;
	}
	if (o->help) {
		usage(stdout);
		return 0;
	}
	return -1;
}
