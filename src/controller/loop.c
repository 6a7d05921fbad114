/* `imageguard run`: passes on the configured intervals (with jitter) until SIGTERM/SIGINT,
 * configuration reloads on SIGHUP and on file change (a broken new configuration is reported
 * and the old one kept), /healthz, /readyz, /metrics on --listen, and with --verify-interval
 * a verification of running images between passes. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/report/audit.h"
#include "imageguard/util/buf.h"
#include "imageguard/controller/loop.h"
#include "imageguard/controller/runopts.h"
#include "imageguard/config/config.h"
#include "imageguard/util/error.h"
#include "imageguard/controller/httpd.h"
#include "imageguard/controller/kubeevents.h"
#include "imageguard/controller/kubesource.h"
#include "imageguard/controller/kubestatus.h"
#include "imageguard/controller/leader.h"
#include "imageguard/util/log.h"
#include "imageguard/util/metrics.h"
#include "imageguard/pass/passmetrics.h"
#include "imageguard/pass/reconcile.h"
#include "imageguard/pass/shard.h"
#include "imageguard/pass/verifygate.h"
#include "imageguard/registry/registry.h"
#include "imageguard/report/report.h"
#include "imageguard/controller/runverify.h"
#include "imageguard/pass/shard.h"
#include "imageguard/controller/webhook.h"

#define MIN_INTERVAL_MS 100
/* Gauge, 1 with --shards: labels shard (the index) and shards (N). */
#define RUN_METRIC_SHARD_INFO "imageguard_shard_info"
#define WATCH_EVERY_MS 1000
#define STANDBY_WARM_MS (5 * 60 * 1000) /* a standby's Git fetches: at most this often */
#define STANDBY_REWARM_MS 10000         /* ... and after a reload, at most this often */
#define WATCH_MAX_DEPTH 16

/* Set by the signal thread, read by the loop and (stop) by reconcile between commits. */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested;
/* Set by the leader's renewal thread when the lease is lost: cuts the status/Event client. */
static volatile sig_atomic_t lease_lost;
static sigset_t control_signals; /* SIGTERM, SIGINT, SIGHUP */

/* Takes the control signals synchronously. Every other thread blocks them, so no blocking call
 * anywhere (a git push's socket read, libssh2's poll, a registry request) fails with EINTR: a
 * commit in flight finishes, and the loop sees the flags within one wait step. */
static void *signal_thread(void *arg)
{
	int sig;

	(void)arg;
	for (;;) {
		if (sigwait(&control_signals, &sig) != 0)
			continue;
		if (sig == SIGHUP)
			reload_requested = 1;
		else
			stop_requested = 1;
	}
	return NULL;
}

/* Blocks the control signals in this thread and every thread it starts later (httpd, pass
 * workers, resolvers), then hands them to the signal thread. Call before any thread starts. */
static int install_handlers(struct error *err)
{
	pthread_t t;
	int rc;

	sigemptyset(&control_signals);
	sigaddset(&control_signals, SIGTERM);
	sigaddset(&control_signals, SIGINT);
	sigaddset(&control_signals, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	if ((rc = pthread_sigmask(SIG_BLOCK, &control_signals, NULL)) != 0 ||
	    (rc = pthread_create(&t, NULL, signal_thread, NULL)) != 0)
		return error_set(err, IG_EFAIL, "signal thread: %s", strerror(rc));
	pthread_detach(t);
	return 0;
}

/* ---- configuration change detection: a hash of every YAML file's stat ---- */

static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		*h ^= b[i];
		*h *= 1099511628211ull; /* FNV-1a */
	}
}

static void hash_stat(uint64_t *h, const char *path, const struct stat *st)
{
	hash_bytes(h, path, strlen(path));
	hash_bytes(h, &st->st_mtim, sizeof(st->st_mtim));
	hash_bytes(h, &st->st_size, sizeof(st->st_size));
	hash_bytes(h, &st->st_ino, sizeof(st->st_ino));
}

static bool is_yaml(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
	       (n > 4 && strcmp(name + n - 4, ".yml") == 0);
}

static void hash_tree(uint64_t *h, const char *path, int depth)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (stat(path, &st) < 0) {
		hash_bytes(h, "missing", 7);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		hash_stat(h, path, &st);
		return;
	}
	if (depth >= WATCH_MAX_DEPTH || !(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		struct buf child = BUF_INIT;
		struct stat cst;

		if (e->d_name[0] == '.')
			continue;
		if (buf_printf(&child, "%s/%s", path, e->d_name) == 0 &&
		    stat(child.data, &cst) == 0) {
			if (S_ISDIR(cst.st_mode))
				hash_tree(h, child.data, depth + 1);
			else if (is_yaml(e->d_name))
				hash_stat(h, child.data, &cst);
		}
		buf_release(&child);
	}
	closedir(d);
}

static uint64_t fingerprint(const char *path)
{
	uint64_t h = 14695981039346656037ull;

	hash_tree(&h, path, 0);
	return h;
}

/* ---- scheduling ---- */

static int64_t pass_interval_ms(const struct config *cfg)
{
	int64_t ms = 0;

	for (size_t i = 0; i < cfg->automations_len; i++)
		if (!ms || cfg->automations[i].interval_ms < ms)
			ms = cfg->automations[i].interval_ms;
	for (size_t i = 0; i < cfg->repositories_len; i++)
		if (!ms || cfg->repositories[i].interval_ms < ms)
			ms = cfg->repositories[i].interval_ms;
	if (!ms)
		ms = 5 * 60 * 1000;
	return ms < MIN_INTERVAL_MS ? MIN_INTERVAL_MS : ms;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL); /* short steps: the caller re-checks the flags after each */
}

/* ---- the loop ---- */

struct runner {
	const struct cmdopts *o;
	loop_load_fn load;
	struct config *cfg;
	struct metrics *metrics;
	struct registry_client *client;
	struct httpd *httpd;
	struct audit *audit;
	struct runverify *verify; /* NULL: --verify-interval off */
	struct webhook *webhook;  /* NULL: --webhook-listen off */
	double pushed_at;         /* Unix s of the notification that started this pass; 0: none */
	int64_t verify_due;       /* monotonic ms of the next verification */
	unsigned seed;
	uint64_t fingerprint;
	struct kubesource *kube;      /* --kube: the objects' source, NULL for --config */
	uint64_t kube_changes;        /* kubesource_changes at the last load */
	const char *kube_secrets;     /* borrowed from kube: the Secrets fetched for the config */
	struct kubeevents *events;    /* --kube: the Events of each pass */
	struct leader *leader;        /* --enable-leader-election, NULL otherwise */
	struct verifycache *verdicts; /* the signature gate's, across passes */
};

static void log_report(const struct report *r, double seconds)
{
	for (size_t i = 0; i < r->len; i++) {
		struct report one = {&r->items[i], 1, 1, 0, 0, NULL, 0, 0};
		struct buf line = BUF_INIT;
		enum guard_decision_kind d = r->items[i].decision;
		enum log_level level = d == GUARD_ERROR  ? LOG_ERROR
		                       : d == GUARD_NONE ? LOG_DEBUG
		                                         : LOG_INFO;

		/* not formatted unless logged: an up-to-date pass is all debug lines */
		if (!log_is_enabled(level))
			continue;
		if (report_text(&line, &one) == 0 && line.len) {
			line.data[--line.len] = '\0';
			log_event(level, "decision", "%s", line.data);
		}
		buf_release(&line);
	}
	log_info("reconcile.pass", "%zu decisions, %zu commits, %zu errors in %.3fs", r->len,
	         r->commits, r->errors, seconds);
}

static void try_reload(struct runner *rn, const char *why);

/* --kube: a round of the markers' policy names begins; the pass or warm-up notes each name */
static void mark_round(struct runner *rn, struct reconcile_options *ro)
{
	if (!rn->kube)
		return;
	ro->marker_named = kubesource_marked_note;
	ro->marker_ctx = rn->kube;
	kubesource_marked_begin(rn->kube);
}

/* A pass. *again: under hash sharding with --kube, its markers named policies that this shard
 * did not keep yet (kubesource_marked_end: they are listed now) and may_repeat allows another
 * pass; then its status is not published unless it committed (at a shard's start the finding
 * pass decides nothing, and would show `flux get images update` an empty observedPolicies for
 * the second before the deciding pass). */
static int run_pass(struct runner *rn, bool may_repeat, bool *again)
{
	struct reconcile_options ro = {0};
	struct reconcile_fence fence;
	struct report report = REPORT_INIT;
	struct error err = ERROR_INIT;
	int64_t t0 = now_ms();
	int error;

	/* --kube: a Secret or ServiceAccount deleted or rotated since the load is read anew */
	if (rn->kube && kubesource_refs_changed(rn->kube, t0 + rn->o->pass_timeout_ms))
		try_reload(rn, "secrets changed");
	ro.config = rn->cfg;
	ro.state_dir = rn->o->state_dir;
	ro.secrets_dir = rn->kube ? rn->kube_secrets : rn->o->secrets_dir;
	ro.concurrency = rn->o->concurrency;
	ro.audit = rn->audit;
	ro.metrics = rn->metrics;
	ro.client = rn->client;
	ro.stop = &stop_requested;
	ro.shard = &rn->o->shard;
	ro.verify_cache = rn->verdicts;
	mark_round(rn, &ro);
	if (rn->leader) {
		leader_fence(&fence, rn->leader);
		ro.fence = &fence;
	}
	/* Every listing of the pass ends by its deadline (a registry that answers each page just
	 * in time cannot hold the pass, /readyz and the other tenants for hours). */
	registry_client_set_deadline(rn->client, t0 + rn->o->pass_timeout_ms);
	registry_client_next_pass(rn->client);
	error = reconcile_pass(&report, &ro, &err);
	if (error == 0 && rn->pushed_at > 0 && report.commits > 0) {
		double took = wall_s() - rn->pushed_at; /* the registry's clock may run ahead */

		metrics_observe(rn->metrics, "imageguard_push_to_commit_seconds", NULL,
		                took > 0 ? took : 0);
	}
	rn->pushed_at = 0;
	registry_client_set_deadline(rn->client, 0); /* verifications between passes: their own */
	if (error < 0)
		log_error("reconcile.pass", "%s", err.msg);
	else
		log_report(&report, (double)(now_ms() - t0) / 1000.0);
	*again = rn->kube && kubesource_marked_end(rn->kube) && may_repeat && !stop_requested;
	/* a deposed leader writes no status and no Event (the new leader does) */
	if (rn->kube && error == 0 && (!rn->leader || leader_is_leading(rn->leader)) &&
	    !(*again && report.commits == 0))
		kubestatus_publish(rn->kube, rn->events, rn->metrics, rn->cfg, &report,
		                   &rn->o->shard, rn->leader);
	report_release(&report);
	return error;
}

/* A pass; when its markers named policies that this shard did not keep yet, the configuration
 * is loaded again and the pass made once more, so that no marker waits an interval for its
 * policy (a second round's news are the next pass's). */
static int run_passes(struct runner *rn)
{
	bool again;
	int error = run_pass(rn, true, &again);

	if (again) {
		try_reload(rn, "policies named by new markers");
		error = run_pass(rn, false, &again);
	}
	return error;
}

/* --kube: a configuration from the watched objects; diagnostics are logged. */
static int load_kube(struct config **out, struct runner *rn)
{
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct error err = ERROR_INIT;
	int error;

	rn->kube_changes = kubesource_changes(rn->kube);
	if ((error = kubesource_load(out, &rn->kube_secrets, rn->kube, &diags, &err)) < 0)
		log_error("config.load", "%s", err.msg);
	for (size_t i = 0; i < diags.len; i++)
		log_event(diags.items[i].severity == CONFIG_ERROR     ? LOG_ERROR
		          : diags.items[i].severity == CONFIG_WARNING ? LOG_WARN
		                                                      : LOG_INFO,
		          "config.load", "%s:%zu: %s", diags.items[i].file, diags.items[i].line,
		          diags.items[i].message);
	config_diags_release(&diags);
	return error;
}

static void try_reload(struct runner *rn, const char *why)
{
	struct config *cfg = NULL;
	bool bad;

	if (rn->kube) {
		bad = load_kube(&cfg, rn) < 0;
	} else {
		rn->fingerprint = fingerprint(rn->o->config);
		bad = rn->load(&cfg, rn->o, true) != 0;
	}
	if (bad) {
		log_error("config.reload",
		          "%s: the new configuration is invalid; keeping the previous one", why);
		return;
	}
	config_free(rn->cfg);
	rn->cfg = cfg;
	/* the repositories whose notifications start a pass: --kube's change with the objects */
	if (rn->webhook && webhook_set_known(rn->webhook, cfg) < 0)
		log_error("webhook", "out of memory: the webhook keeps the previous repositories");
	/* images and policies may have gone: drop their gauges rather than report stale ones
	 * (--kube: the next pass sets them; its objects change too often to clear them) */
	if (!rn->kube)
		metrics_clear(rn->metrics, "imageguard_registry_tags");
	log_info("config.reload", "%s: configuration reloaded", why);
}

/* now + interval +-10% */
static int64_t jittered(struct runner *rn, int64_t interval)
{
	int64_t jitter = interval / 10;

	return now_ms() + interval - jitter +
	       (jitter ? (int64_t)(rand_r(&rn->seed) % (unsigned)(2 * jitter + 1)) : 0);
}

/* A debounced webhook hint is due: the next pass starts now (a full pass: the repositories
 * that are up to date cost one listing each). */
static bool take_hint(struct runner *rn)
{
	double at;

	if (!rn->webhook || (at = webhook_take(rn->webhook, NULL, 0)) < 0)
		return false;
	rn->pushed_at = at;
	log_info("webhook.pass", "registry notification: pass now");
	return true;
}

/* Waits for the next pass, running the verifications that fall due meanwhile (each one
 * delays a pass or a stop by at most its own duration): returns early on stop, or after a
 * reload. */
static void wait_next(struct runner *rn)
{
	int64_t due = jittered(rn, pass_interval_ms(rn->cfg));
	int64_t next_watch = now_ms() + WATCH_EVERY_MS;

	while (!stop_requested && !(rn->leader && leader_lost(rn->leader))) {
		int64_t now = now_ms(), wake;

		if (reload_requested) {
			reload_requested = 0;
			try_reload(rn, "SIGHUP");
			return;
		}
		if (rn->kube && kubesource_changes(rn->kube) != rn->kube_changes) {
			try_reload(rn, "objects changed");
			return; /* a change (a requested reconcile too) is taken up at once */
		}
		if (now >= next_watch && !rn->kube) {
			next_watch = now + WATCH_EVERY_MS;
			if (fingerprint(rn->o->config) != rn->fingerprint) {
				try_reload(rn, "configuration changed");
				return;
			}
		}
		if (rn->verify && now >= rn->verify_due) {
			runverify_once(rn->verify, rn->cfg);
			rn->verify_due = jittered(rn, rn->o->verify_interval_ms);
			continue;
		}
		if (now >= due || take_hint(rn))
			return;
		wake = rn->verify && rn->verify_due < due ? rn->verify_due : due;
		if (!rn->webhook)
			sleep_ms(wake - now < (rn->kube ? 50 : 200) ? (long)(wake - now)
			         : rn->kube                         ? 50
			                                            : 200);
		else if (webhook_wait(rn->webhook, wake - now < 200 ? (long)(wake - now) : 200) &&
		         take_hint(rn))
			return;
	}
}

static int start_webhook(struct runner *rn, struct error *err)
{
	char *token = NULL;
	int error;

	if ((error = passmetrics_declare_webhook(rn->metrics)) < 0)
		return error_oom(err);
	if ((error = webhook_read_token(&token, rn->o->webhook_token_file, err)) < 0)
		return error;
	error = webhook_new(&rn->webhook, token, rn->metrics, err);
	free(token);
	if (error < 0)
		return error;
	if (webhook_set_known(rn->webhook, rn->cfg) < 0)
		return error_oom(err);
	if ((error = webhook_listen(rn->webhook, rn->o->webhook_listen, err)) < 0)
		return error;
	log_info("webhook.listen", "serving POST /hooks/registry on port %u",
	         webhook_port(rn->webhook));
	return 0;
}

/* --verify-interval: of this shard's automations only, and only while leading (the leader's
 * drift Events; a standby writes nothing). After leader_start: it reads rn->leader. */
static int start_verify(struct runner *rn, struct error *err)
{
	struct runverify_options vo = {rn->o->kubeconfig,
	                               rn->o->state_dir,
	                               rn->kube ? rn->kube_secrets : rn->o->secrets_dir,
	                               rn->metrics,
	                               rn->client,
	                               rn->audit,
	                               &stop_requested,
	                               rn->events ? kubeevents_on_verify : NULL,
	                               rn->events,
	                               &rn->o->shard,
	                               rn->leader};
	int error;

	if ((error = runverify_new(&rn->verify, &vo, err)) < 0)
		return error_prefix(err, "--verify-interval");
	rn->verify_due = now_ms(); /* first verification right after the first pass */
	return 0;
}

/* Which shard and lease this instance is: one startup line (run.shard) and, by hash,
 * imageguard_shard_info{shard,shards} 1. Nothing without sharding or leader election. */
static int announce_shard(struct runner *rn, struct error *err)
{
	static const char *const labels[] = {"shard", "shards"};
	const struct shard_spec *s = &rn->o->shard;
	char index[16], shards[16], hash[48] = "none";
	const char *values[] = {index, shards};

	if (!s->shards && !s->selector && !rn->leader)
		return 0;
	if (s->shards) {
		snprintf(index, sizeof(index), "%u", s->index);
		snprintf(shards, sizeof(shards), "%u", s->shards);
		snprintf(hash, sizeof(hash), "%u/%u (--shards %u --shard-index %u)", s->index,
		         s->shards, s->shards, s->index);
		if (metrics_declare(
		        rn->metrics, RUN_METRIC_SHARD_INFO, METRICS_GAUGE,
		        "This instance's hash shard (--shards, --shard-index): always 1.", labels,
		        2, NULL, 0) < 0 ||
		    metrics_set(rn->metrics, RUN_METRIC_SHARD_INFO, values, 1) < 0)
			return error_oom(err);
	}
	log_info("run.shard", "shard %s, selector %s%s%s, lease %s%s%s", hash,
	         s->selector ? "'" : "", s->selector ? s->selector : "none", s->selector ? "'" : "",
	         rn->leader ? "'" : "", rn->leader ? leader_lease_name(rn->leader) : "none",
	         rn->leader ? "'" : "");
	return 0;
}

static int start(struct runner *rn, struct error *err)
{
	int error;

	if ((error = metrics_new(&rn->metrics)) < 0 ||
	    (error = passmetrics_declare(rn->metrics)) < 0 ||
	    !(rn->verdicts = verifycache_new(VERIFYCACHE_NEGATIVE_TTL_MS)))
		return error_oom(err);
	if ((error = passmetrics_client_new(&rn->client, rn->metrics, true, err)) < 0)
		return error;
	/* SIGTERM ends a request in flight (curl's progress callback reads the flag), so a stalled
	 * registry cannot hold a stop for its timeouts and retries. */
	registry_client_set_stop(rn->client, &stop_requested);
	registry_client_set_budget(rn->client, rn->o->memory_budget);
	if (rn->o->audit_log &&
	    (error = audit_open(&rn->audit, rn->o->audit_log, rn->o->audit_tags, err)) < 0)
		return error;
	if (rn->o->webhook_listen && (error = start_webhook(rn, err)) < 0)
		return error;
	if (rn->o->listen) {
		if ((error = httpd_start(&rn->httpd, rn->o->listen, rn->metrics, err)) < 0)
			return error;
		log_info("httpd.listen", "serving /healthz /readyz /metrics on port %u",
		         httpd_port(rn->httpd));
	}
	if (rn->o->leader_elect) {
		/* one Lease per shard: the selector and, by hash, shards=N/index=I (shard_key) */
		char *key = shard_key(&rn->o->shard);
		struct leader_options lo = {rn->o->kubeconfig,    key,
		                            rn->o->leader_timing, rn->o->leader_release,
		                            rn->metrics,          &lease_lost};

		if (!key)
			return error_oom(err);
		error = leader_start(&rn->leader, &lo, err);
		free(key);
		if (error < 0)
			return error;
		/* a standby is ready, as controller-runtime's are: a RollingUpdate can proceed */
		httpd_set_ready(rn->httpd, true);
	}
	if ((error = announce_shard(rn, err)) < 0)
		return error;
	if (rn->o->verify_interval_ms && (error = start_verify(rn, err)) < 0)
		return error;
	return 0;
}

/* The objects (--kube) or the configuration files changed since the last load. */
static bool config_changed(struct runner *rn)
{
	return rn->kube ? kubesource_changes(rn->kube) != rn->kube_changes
	                : fingerprint(rn->o->config) != rn->fingerprint;
}

static bool standing_by(const struct runner *rn)
{
	return !stop_requested && !leader_is_leading(rn->leader) && !leader_lost(rn->leader);
}

/* A standby's round: the Git cache of each automation this shard owns is cloned, or fetched,
 * as a pass would open it, so that the pass after a takeover starts from a warm cache instead
 * of cloning every remote. Nothing is written but the local cache; the round ends early when
 * the lease is taken (the clone in flight is finished: that pass needs it). */
static void warm_caches(struct runner *rn)
{
	struct reconcile_options ro = {0};
	size_t warmed = 0, owned = 0;
	int64_t t0 = now_ms();

	ro.config = rn->cfg;
	ro.state_dir = rn->o->state_dir;
	ro.secrets_dir = rn->kube ? rn->kube_secrets : rn->o->secrets_dir;
	ro.stop = &stop_requested;
	mark_round(rn, &ro); /* the policies their markers name are kept for the takeover's pass */
	for (size_t i = 0; rn->cfg && i < rn->cfg->automations_len && standing_by(rn); i++) {
		const struct config_automation *a = &rn->cfg->automations[i];
		struct error err = ERROR_INIT;

		if (!shard_owns(&rn->o->shard, a))
			continue;
		owned++;
		if (reconcile_warm_git(&ro, a, &err) < 0)
			log_warn("run.standby", "automation '%s': Git cache not warmed: %s", a->id,
			         err.msg);
		else
			warmed++;
	}
	if (owned)
		log_info("run.standby", "Git caches of %zu of %zu automations warmed in %lld ms",
		         warmed, owned, (long long)(now_ms() - t0));
	if (rn->kube) {
		if (!standing_by(rn)) /* cut short: some automations' markers were not read */
			kubesource_marked_note(rn->kube, NULL);
		kubesource_marked_end(rn->kube); /* a change lists again: the next watch reloads */
	}
}

/* Standby: no pass, no write, until this replica holds the lease (or a stop); meanwhile it
 * keeps the Git caches warm (warm_caches): at start, every pass interval but at most every
 * STANDBY_WARM_MS (a fetch at takeover brings the rest), and within STANDBY_REWARM_MS of a
 * reload. Then the configuration is brought up to date before the first pass. */
static void wait_leading(struct runner *rn)
{
	bool waited = false;
	int64_t warm_due = now_ms(), warmed = 0, next_watch = now_ms() + WATCH_EVERY_MS;

	while (standing_by(rn)) {
		int64_t every = pass_interval_ms(rn->cfg);

		waited = true;
		if (now_ms() >= next_watch) {
			next_watch = now_ms() + WATCH_EVERY_MS;
			if (config_changed(rn)) { /* new automations: warm soon, not per change */
				try_reload(rn, "standby");
				if (warm_due > warmed + STANDBY_REWARM_MS)
					warm_due = warmed + STANDBY_REWARM_MS;
			}
		}
		if (now_ms() >= warm_due) {
			warmed = now_ms();
			warm_caches(rn);
			warm_due = jittered(rn, every > STANDBY_WARM_MS ? every : STANDBY_WARM_MS);
		}
		sleep_ms(50);
	}
	if (!waited || stop_requested)
		return;
	if (config_changed(rn))
		try_reload(rn, "elected leader");
}

/* --kube: signals first (the watch threads must block them too), then the objects. Returns 0,
 * the exit code of a failure, or -1 when SIGTERM came before the objects were listed. */
static int start_kube(struct runner *rn)
{
	struct kubesource_options ko = {rn->o->kubeconfig,
	                                rn->o->watch_namespace,
	                                rn->o->watch_label_selector,
	                                NULL,
	                                &stop_requested,
	                                (long)rn->o->kube_sync_timeout_ms,
	                                rn->o->leader_elect ? &lease_lost : NULL,
	                                rn->o->shard.shards,
	                                rn->o->no_cross_namespace_refs,
	                                &rn->o->shard};
	struct error err = ERROR_INIT;
	int error;

	if ((error = install_handlers(&err)) < 0 ||
	    (error = kubesource_new(&rn->kube, &ko, &err)) < 0) {
		if (stop_requested) { /* SIGTERM before the first lists arrived: a clean stop */
			log_info("run.stop", "stopped before the first lists of the objects");
			return -1;
		}
		fprintf(stderr, "imageguard: run: %s\n", err.msg);
		return error == IG_EINVALID || error == IG_ENOTFOUND ? 2 : 1;
	}
	if ((error = kubeevents_new(&rn->events, rn->kube, rn->o->events_addr, &err)) < 0) {
		fprintf(stderr, "imageguard: run: %s\n", err.msg);
		return 1;
	}
	if (load_kube(&rn->cfg, rn) < 0) {
		fprintf(stderr, "imageguard: run: the objects in the API server are not a valid "
		                "configuration\n");
		return 2;
	}
	return 0;
}

int loop_run(const struct cmdopts *o, loop_load_fn load)
{
	struct runner rn = {.o = o, .load = load};
	struct error err = ERROR_INIT;
	int rc;

	rn.seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	if (o->kube) {
		if ((rc = start_kube(&rn)) != 0) {
			rc = rc < 0 ? 0 : rc; /* < 0: stopped while starting */
			goto done;
		}
	} else {
		rn.fingerprint = fingerprint(o->config);
		if ((rc = load(&rn.cfg, o, false)) != 0)
			goto done;
	}
	if ((!o->kube && install_handlers(&err) < 0) || start(&rn, &err) < 0) {
		fprintf(stderr, "imageguard: run: %s\n", err.msg);
		/* a bad address, kubeconfig or service account is invalid input, like a bad flag */
		rc = err.code == IG_EUSAGE || err.code == IG_EINVALID || err.code == IG_ENOTFOUND
		         ? 2
		         : 1;
		goto done;
	}
	if (rn.leader)
		wait_leading(&rn);
	while (!stop_requested) {
		if (rn.leader && leader_lost(rn.leader)) {
			log_error("run.stop",
			          "lease '%s' lost: this replica is no longer the leader, "
			          "exiting",
			          leader_lease_name(rn.leader));
			rc = 1;
			goto done;
		}
		if (run_passes(&rn) == 0)
			httpd_set_ready(rn.httpd, true);
		wait_next(&rn);
	}
	log_info("run.stop", "stopping");
	rc = 0;
done:
	leader_stop(rn.leader); /* after the last pass: the release hands over at once */
	httpd_stop(rn.httpd);
	webhook_free(rn.webhook);
	runverify_free(rn.verify);
	verifycache_free(rn.verdicts);
	audit_close(rn.audit);
	registry_client_free(rn.client);
	metrics_free(rn.metrics);
	config_free(rn.cfg);
	kubeevents_free(rn.events);
	kubesource_free(rn.kube);
	return rc;
}
