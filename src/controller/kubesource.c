/* run --kube: the four Flux kinds watched from the API server (kubewatch), turned into a
 * configuration (config_load_documents over each object's JSON), and the Secrets they name
 * fetched from their own namespace into a private memory-backed folder; every pass reads
 * those Secrets and ServiceAccounts again (get by name) and reloads when one changed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "imageguard/pass/kubesa.h"
#include "imageguard/controller/kubesource.h"
#include "imageguard/config/config.h"
#include "imageguard/kube/kube.h"
#include "imageguard/kube/kubeconfig.h"
#include "imageguard/kube/kubename.h"
#include "imageguard/kube/kubewatch.h"
#include "imageguard/pass/shard.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"
#include "kubesource_private.h"

#define IMAGE_GROUP "image.toolkit.fluxcd.io"
#define SOURCE_GROUP "source.toolkit.fluxcd.io"
#define MAX_SECRET_KEYS 64
#define MAX_SECRET_BYTES (1u << 20) /* Kubernetes' own limit on a Secret */
#define READ_TIMEOUT_MS 10000       /* one try of a GET of a Secret or ServiceAccount */
#define READ_RETRIES 2              /* for the configuration's load */
#define CHECK_TIMEOUT_MS 5000       /* one GET of a pass's re-read, never retried */
#define CHECK_BUDGET_MS 10000       /* a pass's re-reads, and at most half the pass's time */
#define MIN_READ_MS 200             /* less left before the deadline: not sent */

enum { K_REPO, K_POLICY, K_AUTOMATION, K_GIT, K_COUNT };

static const struct {
	const char *group, *plural, *kind;
} kinds[K_COUNT] = {
    {IMAGE_GROUP, "imagerepositories", "ImageRepository"},
    {IMAGE_GROUP, "imagepolicies", "ImagePolicy"},
    {IMAGE_GROUP, "imageupdateautomations", "ImageUpdateAutomation"},
    {SOURCE_GROUP, "gitrepositories", "GitRepository"},
};

/* A Secret or ServiceAccount a configuration reads, and what its last read found. */
struct ref {
	bool account; /* a ServiceAccount (its imagePullSecrets), else a Secret */
	bool known;   /* false: the API did not answer, the next pass reloads */
	char *ns, *name;
	unsigned char sum[KUBESA_SUM_LEN]; /* of the content, or of the API's refusal */
};

struct refs {
	struct ref *items;
	size_t len, cap;
};

/* What the watches of ImagePolicies and ImageRepositories keep (their admit functions read it
 * on the watch threads): under hash sharding, a shard other than 0 needs only the policies its
 * own automations can select, those of their namespaces (config_automation_selects), and the
 * repositories those policies name. In a namespace where another shard owns an automation too
 * (every shard's, when all the objects share one), it needs only the policies that its own
 * automations' markers name: the passes and a standby's warm-up tell it which (kubesource_
 * marked_*). Shard 0 and an unsharded run keep every object. */
struct keep {
	pthread_mutex_t mu;
	bool all;
	/* namespace -> true: this shard owns every automation there (all its policies kept);
	 * false: it owns some (only the marked policies kept) */
	json_t *ns;
	json_t *repos; /* "ns/name" -> true: a kept policy of a shared namespace, or of another
	                * namespace, names it */
	/* "ns/name" -> the round (kubesource_marked_begin) whose markers last named it, negated
	 * while that round is the first (not listed yet) */
	json_t *marked;
	json_int_t round;
	bool unknown; /* this round: an automation's markers could not be read */
	bool missing; /* this round: a marker named a policy of a shared namespace not kept */
	bool added;   /* this round: a policy first named */
};

/* A client for Secrets and ServiceAccounts, which SIGTERM cuts, with its own timeout and
 * retries; made again with one short try when a deadline is nearer than its longest GET. */
struct reader {
	struct kube_client *c;
	long timeout_ms, base_timeout_ms;
	unsigned retries, base_retries;
};

struct kubesource {
	struct kubeconfig cfg;
	struct kube_client *client;
	struct kubewatch *watch[K_COUNT];
	/* the Namespaces, whose labels an ImageRepository's accessFrom selects (Flux's ACL);
	 * NULL with --watch-namespace, where no reference to another namespace resolves */
	struct kubewatch *namespaces;
	char image_api[128], source_api[128];
	char *secrets_dir; /* owned, made by mkdtemp */
	json_t *loaded;    /* "ns/name" -> ImageUpdateAutomation as the last load read it */
	/* Secrets and ServiceAccounts: the load's reader and the passes' re-reads' (active: the
	 * one in use), and while a pass reads, its deadline (CLOCK_MONOTONIC ms; 0: none) */
	struct reader load_reader, check_reader, *active;
	int64_t deadline_ms;
	const volatile sig_atomic_t *stop;
	unsigned shards;                /* --shards N, for the load (config_load_options.shards) */
	long sync_timeout_ms;           /* --kube-sync-timeout: the first lists, and a relist's */
	const struct shard_spec *shard; /* which automations are this shard's (NULL: all) */
	struct keep keep;
	bool no_cross_ns;    /* --no-cross-namespace-refs, for the load */
	struct refs refs;    /* what the configuration in use read */
	struct refs loading; /* what the load in progress reads */
};

/* ---- discovery ---- */

static const char *str(const json_t *j)
{
	const char *s = json_string_value(j);

	return s ? s : "";
}

int kubesource_preferred_api(char *out, size_t n, const char *group, const json_t *g,
                             const char *path, struct error *err)
{
	const char *v =
	    json_string_value(json_object_get(json_object_get(g, "preferredVersion"), "version"));

	if (!v || !*v || strchr(v, '/'))
		return error_set(err, IG_EINVALID, "kubernetes api 'GET %s': no preferredVersion",
		                 path);
	snprintf(out, n, "/apis/%s/%s", group, v);
	return 0;
}

/* "/apis/G/V" of group's preferred version into out. */
static int preferred(char *out, size_t n, struct kube_client *c, const char *group,
                     struct error *err)
{
	json_t *g = NULL;
	char path[160];
	int error;

	snprintf(path, sizeof(path), "/apis/%s", group);
	if ((error = kube_get(&g, c, path, err)) == IG_ENOTFOUND)
		return error_set(err, IG_ENOTFOUND,
		                 "kubernetes api: API group '%s' is not served: are Flux's CRDs "
		                 "installed?",
		                 group);
	if (error < 0)
		return error;
	error = kubesource_preferred_api(out, n, group, g, path, err);
	json_decref(g);
	return error;
}

int kubesource_served(const json_t *list, const char *api, const char *group, struct error *err)
{
	const json_t *r;
	size_t i;
	int error = 0;

	for (int k = 0; k < K_COUNT && !error; k++) {
		bool found = false;

		if (strcmp(kinds[k].group, group) != 0)
			continue;
		json_array_foreach(json_object_get(list, "resources"), i,
		                   r) if (strcmp(str(json_object_get(r, "name")),
		                                 kinds[k].plural) == 0) found = true;
		if (!found)
			error = error_set(err, IG_ENOTFOUND,
			                  "kubernetes api '%s': %s (%s) is not served: is its CRD "
			                  "installed?",
			                  api, kinds[k].kind, kinds[k].plural);
	}
	return error;
}

/* Every plural of group at api is served there. */
static int check_resources(struct kube_client *c, const char *api, const char *group,
                           struct error *err)
{
	json_t *list = NULL;
	int error;

	if ((error = kube_get(&list, c, api, err)) < 0)
		return error;
	error = kubesource_served(list, api, group, err);
	json_decref(list);
	return error;
}

static const char *api_of(const struct kubesource *ks, int k)
{
	return strcmp(kinds[k].group, IMAGE_GROUP) == 0 ? ks->image_api : ks->source_api;
}

/* ---- what a shard keeps ---- */

/* What a configuration and an Event read of a policy or repository (document(),
 * kubesource_object()): apiVersion, kind, spec, and metadata's name, namespace, labels, annotations
 * (without kubectl's copy of the whole object), uid and resourceVersion; never status or
 * managedFields. A new reference sharing obj's parts; NULL when out of memory. */
json_t *kubesource_slim(const json_t *obj)
{
	static const char *const fields[] = {"name", "namespace", "labels", "uid",
	                                     "resourceVersion"};
	const json_t *md = json_object_get(obj, "metadata");
	json_t *out = json_object(), *meta = json_object(), *ann;

	if (!out || !meta) {
		json_decref(out);
		json_decref(meta);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (json_object_get(md, fields[i]))
			json_object_set(meta, fields[i], json_object_get(md, fields[i]));
	if ((ann = json_object_get(md, "annotations")) &&
	    json_object_get(ann, "kubectl.kubernetes.io/last-applied-configuration")) {
		if ((ann = json_deep_copy(ann)))
			json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
		json_object_set_new(meta, "annotations", ann);
	} else if (ann) {
		json_object_set(meta, "annotations", ann);
	}
	json_object_set(out, "apiVersion", json_object_get(obj, "apiVersion"));
	json_object_set(out, "kind", json_object_get(obj, "kind"));
	json_object_set_new(out, "metadata", meta);
	if (json_object_get(obj, "spec"))
		json_object_set(out, "spec", json_object_get(obj, "spec"));
	return out;
}

static const char *ns_of(const json_t *obj)
{
	return str(json_object_get(json_object_get(obj, "metadata"), "namespace"));
}

/* "ns/name" of obj into key. */
static void id_of(char *key, size_t n, const json_t *obj)
{
	snprintf(key, n, "%s/%s", ns_of(obj),
	         str(json_object_get(json_object_get(obj, "metadata"), "name")));
}

static json_t *admit_policy(void *ctx, json_t *obj)
{
	struct kubesource *ks = ctx;
	const json_t *owned;
	char key[600];
	bool kept;

	id_of(key, sizeof(key), obj);
	pthread_mutex_lock(&ks->keep.mu);
	owned = json_object_get(ks->keep.ns, ns_of(obj));
	kept =
	    ks->keep.all || json_is_true(owned) || (owned && json_object_get(ks->keep.marked, key));
	pthread_mutex_unlock(&ks->keep.mu);
	return kept ? kubesource_pack(obj) : NULL;
}

static json_t *admit_repo(void *ctx, json_t *obj)
{
	struct kubesource *ks = ctx;
	char key[600];
	bool kept;

	id_of(key, sizeof(key), obj);
	pthread_mutex_lock(&ks->keep.mu);
	kept = ks->keep.all || json_is_true(json_object_get(ks->keep.ns, ns_of(obj))) ||
	       json_object_get(ks->keep.repos, key);
	pthread_mutex_unlock(&ks->keep.mu);
	return kept ? kubesource_pack(obj) : NULL;
}

/* Automations a list page holds: each carries Flux's status, whose observedPolicies names
 * every policy it selects (43 KB of JSON an automation at 625 policies; 80 of them parsed at
 * once took 33 MB), and a page is parsed whole. */
#define AUTOMATION_PAGE 10

/* An automation as the watch keeps it: kubesource_slim's object and its generation, never its
 * status (the status write reads the live object) or managedFields. Every shard watches every
 * automation, so at 80 automations of 625 policies this is 0.5 MB kept instead of 33 MB. */
static json_t *admit_automation(void *ctx, json_t *obj)
{
	json_t *out = kubesource_slim(obj);
	json_t *gen = json_object_get(json_object_get(obj, "metadata"), "generation");

	(void)ctx;
	if (!out)
		return json_incref(obj); /* out of memory: kept whole rather than dropped */
	if (gen)
		json_object_set(json_object_get(out, "metadata"), "generation", gen);
	return out;
}

/* The namespaces where this shard owns an automation of cfg: true where it owns every one
 * there, false where another shard owns one too; NULL out of memory. */
static json_t *owned_namespaces(const struct kubesource *ks, const struct config *cfg)
{
	json_t *set = json_object();

	for (size_t i = 0; set && cfg && i < cfg->automations_len; i++)
		if (shard_owns(ks->shard, &cfg->automations[i]) &&
		    json_object_set_new(set, cfg->automations[i].ns, json_true()) < 0) {
			json_decref(set);
			set = NULL;
		}
	for (size_t i = 0; set && cfg && i < cfg->automations_len; i++)
		if (!shard_owns(ks->shard, &cfg->automations[i]) &&
		    json_object_get(set, cfg->automations[i].ns) &&
		    json_object_set_new(set, cfg->automations[i].ns, json_false()) < 0) {
			json_decref(set);
			set = NULL;
		}
	return set;
}

/* The set of "ns/name" of the repositories that the policies (an array) of the namespaces ns
 * name, but for those in a namespace whose every object is kept (true in ns); NULL out of
 * memory. */
static json_t *named_repositories(const json_t *ns, const json_t *policies)
{
	json_t *set = json_object(), *it;
	size_t i;

	json_array_foreach(policies, i, it)
	{
		json_t *p = kubesource_unpack(it);
		const json_t *ref =
		    json_object_get(json_object_get(p, "spec"), "imageRepositoryRef");
		const char *rns = str(json_object_get(ref, "namespace"));
		char key[600];

		if (set && !p) {
			json_decref(set);
			set = NULL;
		}
		if (!*rns)
			rns = ns_of(p);
		if (!set || json_is_true(json_object_get(ns, rns)) ||
		    !json_object_get(ns, ns_of(p))) {
			json_decref(p);
			continue;
		}
		snprintf(key, sizeof(key), "%s/%s", rns, str(json_object_get(ref, "name")));
		json_decref(p);
		if (json_object_set_new(set, key, json_true()) < 0) {
			json_decref(set);
			set = NULL;
		}
	}
	return set;
}

static void log_shares(struct kubesource *ks);

/* Sets what this shard keeps (ns and repos stolen; NULL, out of memory: unchanged); the
 * watches whose objects change list again. */
static void keep_set(struct kubesource *ks, json_t *ns, json_t *repos)
{
	bool ns_changed, repos_changed;

	pthread_mutex_lock(&ks->keep.mu);
	ns_changed = ns && !json_equal(ns, ks->keep.ns);
	repos_changed = repos && !json_equal(repos, ks->keep.repos);
	if (ns_changed) {
		json_decref(ks->keep.ns);
		ks->keep.ns = json_incref(ns);
	}
	if (repos_changed) {
		json_decref(ks->keep.repos);
		ks->keep.repos = json_incref(repos);
	}
	pthread_mutex_unlock(&ks->keep.mu);
	json_decref(ns);
	json_decref(repos);
	if (ns_changed && ks->watch[K_POLICY])
		kubewatch_refilter(ks->watch[K_POLICY]);
	if ((ns_changed || repos_changed) && ks->watch[K_REPO])
		kubewatch_refilter(ks->watch[K_REPO]);
	if (ns_changed || repos_changed)
		log_shares(ks);
}

/* One kube.shard line: what this shard keeps. */
static void log_shares(struct kubesource *ks)
{
	size_t shared = 0, marked;
	const char *key;
	json_t *v;

	pthread_mutex_lock(&ks->keep.mu);
	json_object_foreach(ks->keep.ns, key, v) shared += json_is_false(v);
	marked = json_object_size(ks->keep.marked);
	log_info("kube.shard",
	         "shard %u/%u keeps the ImagePolicies and ImageRepositories of %zu namespaces "
	         "where it owns every automation, the %zu ImagePolicies that its markers name in "
	         "%zu namespaces it shares with other shards, and the %zu ImageRepositories "
	         "those policies and the policies of its namespaces name elsewhere",
	         ks->shard->index, ks->shard->shards, json_object_size(ks->keep.ns) - shared,
	         marked, shared, json_object_size(ks->keep.repos));
	pthread_mutex_unlock(&ks->keep.mu);
}

void kubesource_marked_begin(struct kubesource *ks)
{
	pthread_mutex_lock(&ks->keep.mu);
	ks->keep.round++;
	ks->keep.unknown = ks->keep.missing = ks->keep.added = false;
	pthread_mutex_unlock(&ks->keep.mu);
}

bool kubesource_marked_note(void *ctx, const char *policy)
{
	struct kubesource *ks = ctx;
	const char *slash = policy ? strchr(policy, '/') : NULL;
	char ns[320];
	const json_t *owned;
	json_t *at;
	bool kept = true;

	if (ks->keep.all)
		return true;
	snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - policy) : 0, policy ? policy : "");
	pthread_mutex_lock(&ks->keep.mu);
	if (!policy) {
		ks->keep.unknown = true;
	} else if ((owned = json_object_get(ks->keep.ns, ns))) {
		if (!(at = json_object_get(ks->keep.marked, policy))) {
			if (json_object_set_new(ks->keep.marked, policy,
			                        json_integer(-ks->keep.round)) < 0)
				ks->keep.unknown = true; /* out of memory: nothing is dropped */
			ks->keep.added = true;
			kept = json_is_true(owned);
		} else if (json_integer_value(at) == -ks->keep.round) {
			kept = json_is_true(owned); /* first named earlier in this round */
		} else {
			json_integer_set(at, ks->keep.round);
		}
		ks->keep.missing |= !kept;
	}
	pthread_mutex_unlock(&ks->keep.mu);
	return kept;
}

bool kubesource_marked_end(struct kubesource *ks)
{
	bool changed, missing;
	const char *key;
	json_t *at;
	void *tmp;

	if (ks->keep.all)
		return false;
	pthread_mutex_lock(&ks->keep.mu);
	changed = ks->keep.added;
	json_object_foreach_safe(ks->keep.marked, tmp, key, at)
	{
		json_int_t r = json_integer_value(at);

		if (r == -ks->keep.round)
			json_integer_set(at, ks->keep.round);
		else if (r != ks->keep.round && !ks->keep.unknown) {
			/* a round that read every automation's markers: what none named goes */
			json_object_del(ks->keep.marked, key);
			changed = true;
		}
	}
	missing = ks->keep.missing;
	pthread_mutex_unlock(&ks->keep.mu);
	if (changed) {
		log_shares(ks);
		kubewatch_refilter(ks->watch[K_POLICY]);
	}
	return missing; /* a policy not kept yet is first named in this round: changed */
}

/* The automations' and GitRepositories' documents alone, as a configuration: which
 * automations are this shard's before any policy is listed (their Secrets are not read:
 * kubesource_load reads them, and corrects the set if they change the answer). */
static struct config *owners_config(struct kubesource *ks)
{
	json_t *snap[2] = {kubewatch_snapshot(ks->watch[K_AUTOMATION]),
	                   kubewatch_snapshot(ks->watch[K_GIT])},
	       *it;
	const int kind[2] = {K_AUTOMATION, K_GIT};
	size_t total = json_array_size(snap[0]) + json_array_size(snap[1]), n = 0, i;
	struct config_document *docs = calloc(total + 1, sizeof(*docs));
	char **texts = calloc(total + 1, sizeof(*texts));
	struct config_load_options lo = {.keep_valid = true,
	                                 .kube = true,
	                                 .shards = ks->shards,
	                                 .no_cross_namespace_refs = ks->no_cross_ns};
	struct config_diags diags = CONFIG_DIAGS_INIT;
	struct error err = ERROR_INIT;
	struct config *cfg = NULL;

	for (int k = 0; docs && texts && k < 2; k++)
		json_array_foreach(snap[k], i, it)
		{
			json_t *doc = kubesource_document_json(kinds[kind[k]].kind, it);

			if ((texts[n] = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL)) {
				docs[n] = (struct config_document){kinds[kind[k]].kind, texts[n],
				                                   strlen(texts[n])};
				n++;
			}
			json_decref(doc);
		}
	if (docs && texts && n &&
	    config_load_documents(&cfg, docs, n, "kubernetes api", &lo, &diags, &err) < 0)
		cfg = NULL;
	config_diags_release(&diags);
	for (i = 0; texts && i < n; i++)
		free(texts[i]);
	free(texts);
	free(docs);
	json_decref(snap[0]);
	json_decref(snap[1]);
	return cfg;
}

static void keep_owned(struct kubesource *ks)
{
	struct config *cfg = owners_config(ks);

	keep_set(ks, owned_namespaces(ks, cfg), json_object());
	config_free(cfg);
}

static void keep_named(struct kubesource *ks)
{
	json_t *policies = kubewatch_snapshot(ks->watch[K_POLICY]), *ns;

	pthread_mutex_lock(&ks->keep.mu);
	ns = json_incref(ks->keep.ns);
	pthread_mutex_unlock(&ks->keep.mu);
	keep_set(ks, NULL, named_repositories(ns, policies));
	json_decref(ns);
	json_decref(policies);
}

static int64_t mono_ms(void);

/* Waits until w holds what its admit function now keeps, at most until deadline or SIGTERM;
 * says so when it gives up. */
static void wait_settled(struct kubesource *ks, int k, int64_t deadline)
{
	while (!kubewatch_settled(ks->watch[k])) {
		struct timespec ts = {0, 20000000L};

		if (mono_ms() >= deadline || (ks->stop && *ks->stop)) {
			log_warn(
			    "kube.shard",
			    "%s not listed again within %ld.%03lds (--kube-sync-timeout): this "
			    "load may miss some of them",
			    kinds[k].plural, ks->sync_timeout_ms / 1000,
			    ks->sync_timeout_ms % 1000);
			return;
		}
		nanosleep(&ts, NULL);
	}
}

/* Before a shard's load: when the last load changed the namespaces it keeps, their policies
 * are listed again, then the repositories those policies name, so that a load never sees a
 * newly kept policy without its repository (an invalid object for one load). */
static void settle(struct kubesource *ks)
{
	int64_t deadline = mono_ms() + ks->sync_timeout_ms;

	wait_settled(ks, K_POLICY, deadline);
	keep_named(ks);
	wait_settled(ks, K_REPO, deadline);
}

/* ---- lifecycle ---- */

/* Starts the watches of the kinds in mask (1 << K_...) not started yet; with K_AUTOMATION, the
 * Namespaces' too. */
static int start_watches(struct kubesource *ks, const struct kubesource_options *o, unsigned mask,
                         struct error *err)
{
	for (int k = 0; k < K_COUNT; k++) {
		kubewatch_admit_fn admit = k == K_POLICY       ? admit_policy
		                           : k == K_REPO       ? admit_repo
		                           : k == K_AUTOMATION ? admit_automation
		                                               : NULL;
		char path[400];
		int error;

		if (!(mask & (1u << k)) || ks->watch[k])
			continue;
		if (o->ns)
			snprintf(path, sizeof(path), "%s/namespaces/%s/%s", api_of(ks, k), o->ns,
			         kinds[k].plural);
		else
			snprintf(path, sizeof(path), "%s/%s", api_of(ks, k), kinds[k].plural);
		if ((error = kubewatch_start_admit(
		         &ks->watch[k], &ks->cfg, path, o->selector, admit, ks,
		         k == K_AUTOMATION ? AUTOMATION_PAGE : 0, o->stop, err)) < 0)
			return error;
	}
	/* every Namespace, whatever --watch-label-selector says (it selects Flux's objects) */
	return o->ns || ks->namespaces || !(mask & (1u << K_AUTOMATION))
	           ? 0
	           : kubewatch_start(&ks->namespaces, &ks->cfg, "/api/v1/namespaces", NULL, o->stop,
	                             err);
}

/* Waits until every watch started has its first list, at most until deadline (CLOCK_MONOTONIC
 * ms): kubesource_new's one wait of o->sync_timeout_ms, however many steps it starts. */
static int wait_synced(struct kubesource *ks, const struct kubesource_options *o, int64_t deadline,
                       struct error *err)
{
	long total = o->sync_timeout_ms ? o->sync_timeout_ms : 30000;

	for (;;) {
		int k;

		for (k = 0; k < K_COUNT && (!ks->watch[k] || kubewatch_synced(ks->watch[k])); k++)
			;
		if (k == K_COUNT && (!ks->namespaces || kubewatch_synced(ks->namespaces)))
			return 0;
		if (mono_ms() >= deadline || (o->stop && *o->stop)) {
			struct error last = ERROR_INIT;

			kubewatch_last_error(k < K_COUNT ? ks->watch[k] : ks->namespaces, &last);
			if (o->stop && *o->stop)
				return error_set(err, IG_ETIMEOUT,
				                 "kubernetes api: no first list of %s: %s",
				                 k < K_COUNT ? kinds[k].plural : "namespaces",
				                 last.msg[0] ? last.msg : "stopped");
			return error_set(err, IG_ETIMEOUT,
			                 "kubernetes api: no first list of %s within %ld.%03lds "
			                 "(--kube-sync-timeout): %s",
			                 k < K_COUNT ? kinds[k].plural : "namespaces", total / 1000,
			                 total % 1000, last.msg[0] ? last.msg : "timed out");
		}
		struct timespec ts = {0, 50000000L};
		nanosleep(&ts, NULL);
	}
}

static int make_secrets_dir(struct kubesource *ks, const char *parent, struct error *err)
{
	struct buf b = BUF_INIT;

	if (buf_printf(&b, "%s/imageguard-secrets.XXXXXX", parent ? parent : "/dev/shm") < 0)
		return error_oom(err);
	if (!mkdtemp(b.data)) {
		int e = errno;

		buf_release(&b);
		return error_set(err, IG_EFAIL, "secrets folder in '%s': %s",
		                 parent ? parent : "/dev/shm", strerror(e));
	}
	ks->secrets_dir = buf_detach(&b);
	log_info("kube.secrets", "Secrets read from the API are kept in memory under %s",
	         ks->secrets_dir);
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* (Re)makes r's client with a timeout of timeout_ms for each of 1 + retries tries. */
static int open_reader(struct reader *r, struct kubesource *ks, long timeout_ms, unsigned retries,
                       struct error *err)
{
	struct kube_client *c = NULL;
	struct kube_options ko;
	int error;

	kube_options_init(&ko);
	ko.stop = ks->stop;
	ko.timeout_ms = timeout_ms;
	if (timeout_ms < ko.connect_timeout_ms)
		ko.connect_timeout_ms = timeout_ms;
	ko.max_retries = retries;
	if ((error = kube_client_new(&c, &ks->cfg, &ko, err)) < 0)
		return error;
	kube_client_free(r->c);
	r->c = c;
	r->timeout_ms = timeout_ms;
	r->retries = retries;
	return 0;
}

static int start_reader(struct reader *r, struct kubesource *ks, long timeout_ms, unsigned retries,
                        struct error *err)
{
	r->base_timeout_ms = timeout_ms;
	r->base_retries = retries;
	return open_reader(r, ks, timeout_ms, retries, err);
}

/* The longest a GET with r takes: its tries and the backoff (under a second) between them. */
static int64_t longest_ms(const struct reader *r)
{
	return (int64_t)(r->retries + 1) * r->timeout_ms + (int64_t)r->retries * 1000;
}

/* The watches and their first lists. A shard that keeps part of the objects learns which from
 * the automations first, then lists the policies it keeps, then the repositories they name. */
static int start_all(struct kubesource *ks, const struct kubesource_options *o, struct error *err)
{
	const unsigned owners = 1u << K_AUTOMATION | 1u << K_GIT;
	int64_t deadline = mono_ms() + (o->sync_timeout_ms ? o->sync_timeout_ms : 30000);
	int error;

	if (ks->keep.all)
		return (error = start_watches(ks, o, ~0u, err)) < 0
		           ? error
		           : wait_synced(ks, o, deadline, err);
	if ((error = start_watches(ks, o, owners, err)) < 0 ||
	    (error = wait_synced(ks, o, deadline, err)) < 0)
		return error;
	keep_owned(ks);
	if ((error = start_watches(ks, o, owners | 1u << K_POLICY, err)) < 0 ||
	    (error = wait_synced(ks, o, deadline, err)) < 0)
		return error;
	keep_named(ks);
	return (error = start_watches(ks, o, ~0u, err)) < 0 ? error
	                                                    : wait_synced(ks, o, deadline, err);
}

int kubesource_new(struct kubesource **out, const struct kubesource_options *o, struct error *err)
{
	struct kubesource *ks = calloc(1, sizeof(*ks));
	struct kube_options ko;
	int error;

	*out = NULL;
	if (!ks)
		return error_oom(err);
	kube_options_init(&ko);
	ko.stop = o->write_stop;
	ks->stop = o->stop;
	ks->shards = o->shards;
	ks->sync_timeout_ms = o->sync_timeout_ms ? o->sync_timeout_ms : 30000;
	ks->shard = o->shard;
	pthread_mutex_init(&ks->keep.mu, NULL);
	ks->keep.all = !o->shard || o->shard->shards < 2 || o->shard->index == 0;
	ks->no_cross_ns = o->no_cross_namespace_refs;
	ks->active = &ks->load_reader;
	ks->cfg = (struct kubeconfig)KUBECONFIG_INIT;
	/* no marker read yet: of a shared namespace, no policy until the first pass or warm-up */
	if (!ks->keep.all && !(ks->keep.marked = json_object())) {
		kubesource_free(ks);
		return error_oom(err);
	}
	if ((error = o->kubeconfig ? kubeconfig_load(&ks->cfg, o->kubeconfig, err)
	                           : kubeconfig_in_cluster(&ks->cfg, NULL, err)) < 0 ||
	    (error = kube_client_new(&ks->client, &ks->cfg, &ko, err)) < 0 ||
	    (error = start_reader(&ks->load_reader, ks, READ_TIMEOUT_MS, READ_RETRIES, err)) < 0 ||
	    (error = start_reader(&ks->check_reader, ks, CHECK_TIMEOUT_MS, 0, err)) < 0 ||
	    (error = kubesa_start(&ks->cfg, o->stop, err)) < 0 ||
	    (error = preferred(ks->image_api, sizeof(ks->image_api), ks->client, IMAGE_GROUP,
	                       err)) < 0 ||
	    (error = preferred(ks->source_api, sizeof(ks->source_api), ks->client, SOURCE_GROUP,
	                       err)) < 0 ||
	    (error = check_resources(ks->client, ks->image_api, IMAGE_GROUP, err)) < 0 ||
	    (error = check_resources(ks->client, ks->source_api, SOURCE_GROUP, err)) < 0 ||
	    (error = make_secrets_dir(ks, o->secrets_parent, err)) < 0 ||
	    (error = start_all(ks, o, err)) < 0) {
		kubesource_free(ks);
		return error;
	}
	log_info("kube.watch", "watching %s and %s%s%s%s%s", ks->image_api, ks->source_api,
	         o->ns ? " in namespace " : " in every namespace", o->ns ? o->ns : "",
	         o->selector ? ", labels " : "", o->selector ? o->selector : "");
	*out = ks;
	return 0;
}

/* Removes dir and the files in it (one level: a secret's folder). */
static void remove_folder(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..") != 0))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

static void remove_secrets(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct buf p = BUF_INIT;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (buf_printf(&p, "%s/%s", root, e->d_name) == 0)
			remove_folder(p.data);
		buf_release(&p);
	}
	closedir(d);
	rmdir(root);
}

static void refs_release(struct refs *r)
{
	for (size_t i = 0; i < r->len; i++) {
		free(r->items[i].ns);
		free(r->items[i].name);
	}
	free(r->items);
	*r = (struct refs){0};
}

void kubesource_free(struct kubesource *ks)
{
	if (!ks)
		return;
	refs_release(&ks->refs);
	refs_release(&ks->loading);
	kube_client_free(ks->load_reader.c);
	kube_client_free(ks->check_reader.c);
	kubesa_stop();
	/* every watch told first: each ends within its own second, all at once, not in turn */
	for (int k = 0; k < K_COUNT; k++)
		kubewatch_cancel(ks->watch[k]);
	kubewatch_cancel(ks->namespaces);
	for (int k = 0; k < K_COUNT; k++)
		kubewatch_free(ks->watch[k]);
	kubewatch_free(ks->namespaces);
	if (ks->secrets_dir)
		remove_secrets(ks->secrets_dir);
	free(ks->secrets_dir);
	json_decref(ks->loaded);
	json_decref(ks->keep.ns);
	json_decref(ks->keep.repos);
	json_decref(ks->keep.marked);
	pthread_mutex_destroy(&ks->keep.mu);
	kube_client_free(ks->client);
	kubeconfig_release(&ks->cfg);
	free(ks);
}

uint64_t kubesource_changes(struct kubesource *ks)
{
	uint64_t n = 0;

	for (int k = 0; k < K_COUNT; k++)
		n += kubewatch_changes(ks->watch[k]);
	if (ks->namespaces) /* a namespace's labels change what accessFrom admits */
		n += kubewatch_changes(ks->namespaces);
	return n;
}

struct kube_client *kubesource_client(struct kubesource *ks)
{
	return ks->client;
}

const char *kubesource_image_api(const struct kubesource *ks)
{
	return ks->image_api;
}

json_t *kubesource_automation(struct kubesource *ks, const char *id)
{
	return json_incref(json_object_get(ks->loaded, id));
}

/* Remembers the automations of snap[K_AUTOMATION] as loaded: their generation and annotations
 * are what the status of the next pass reports. */
static void remember(struct kubesource *ks, const json_t *automations)
{
	json_t *loaded = json_object(), *it;
	size_t i;

	if (!loaded)
		return;
	json_array_foreach(automations, i, it)
	{
		const json_t *md = json_object_get(it, "metadata");
		char id[320];

		snprintf(id, sizeof(id), "%s/%s", str(json_object_get(md, "namespace")),
		         str(json_object_get(md, "name")));
		json_object_set(loaded, id, it);
	}
	json_decref(ks->loaded);
	ks->loaded = loaded;
}

json_t *kubesource_object(struct kubesource *ks, const char *kind, const char *ns, const char *name)
{
	char key[600];
	json_t *kept, *obj = NULL;

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	for (int k = 0; k < K_COUNT; k++)
		if (strcmp(kinds[k].kind, kind) == 0 && ks->watch[k] &&
		    (kept = kubewatch_get(ks->watch[k], key))) {
			obj = kubesource_unpack(kept);
			json_decref(kept);
			break;
		}
	return obj;
}

/* ---- secrets ---- */

/* A Secret data key as Kubernetes allows it: [-._a-zA-Z0-9]+, not "." or "..". */
static bool is_key(const char *k)
{
	if (!*k || strcmp(k, ".") == 0 || strcmp(k, "..") == 0 || strlen(k) > 253)
		return false;
	for (const char *p = k; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

static int write_value(const char *dir, const char *key, const char *b64, struct error *err,
                       const char *what)
{
	char *val = NULL;
	size_t len = 0;
	struct buf path = BUF_INIT;
	int fd = -1, error = 0;

	if (kubeconfig_base64_decode(&val, &len, b64) < 0) {
		error = error_set(err, IG_EINVALID, "%s: key '%s' is not base64", what, key);
		goto done;
	}
	if (buf_printf(&path, "%s/%s", dir, key) < 0 ||
	    (fd = open(path.data, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) <
	        0 ||
	    write(fd, val, len) != (ssize_t)len) {
		error = error_set(err, IG_EFAIL, "%s: cannot write key '%s'", what, key);
		goto done;
	}
done:
	if (fd >= 0)
		close(fd);
	if (val)
		memset(val, 0, len);
	free(val);
	buf_release(&path);
	return error;
}

int kubesource_secret_write(const char *dir, const json_t *s, const char *what, struct error *err)
{
	const json_t *data = json_object_get(s, "data"), *v;
	const char *key;
	int error = 0;

	if (json_object_size(data) > MAX_SECRET_KEYS) {
		error = error_set(err, IG_ETOOBIG, "%s: more than %d keys", what, MAX_SECRET_KEYS);
		goto done;
	}
	if (mkdir(dir, 0700) < 0) {
		error = error_set(err, IG_EFAIL, "%s: cannot make its folder: %s", what,
		                  strerror(errno));
		goto done;
	}
	json_object_foreach((json_t *)data, key, v)
	{
		if (!is_key(key) || !json_is_string(v)) {
			error = error_set(err, IG_EINVALID, "%s: invalid key", what);
			goto done;
		}
		if ((error = write_value(dir, key, json_string_value(v), err, what)) < 0)
			goto done;
	}
done:
	if (error < 0)
		remove_folder(dir);
	return error;
}

/* ---- what a configuration reads: noted by the load, read again by every pass ---- */

/* Whether a failure is the API's answer (404, 403, a bad object), which a sum records, rather
 * than no answer (a timeout, a 5xx, a stop, a local failure). */
static bool is_answer(int code)
{
	return code == 0 || code == IG_ENOTFOUND || code == IG_EAUTH || code == IG_EINVALID ||
	       code == IG_ETOOBIG;
}

/* A reader shortened for a deadline gets its own timeout and retries back. */
static void restore_reader(struct reader *r, struct kubesource *ks)
{
	struct error err = ERROR_INIT;

	if ((r->timeout_ms != r->base_timeout_ms || r->retries != r->base_retries) &&
	    open_reader(r, ks, r->base_timeout_ms, r->base_retries, &err) < 0)
		log_warn("kube.secrets", "%s", err.msg); /* the shortened client stays */
}

/* A pass's reads are over: the next ones (a load from a watch) have no deadline. The
 * re-reads' client stays as the deadline made it: every pass has the same --pass-timeout. */
static void end_deadline(struct kubesource *ks)
{
	ks->deadline_ms = 0;
	ks->active = &ks->load_reader;
	restore_reader(&ks->load_reader, ks);
}

/* GET path with the active reader; by the deadline while one is set (the client is made
 * again with one try of what is left when its longest GET would end later). */
static int read_get(json_t **out, void *ctx, const char *path, struct error *err)
{
	struct kubesource *ks = ctx;
	struct reader *r = ks->active;
	int64_t left;
	int error;

	*out = NULL;
	if (ks->deadline_ms) {
		if ((left = ks->deadline_ms - mono_ms()) < MIN_READ_MS)
			return error_set(err, IG_ETIMEOUT,
			                 "kubernetes api 'GET %s': the pass deadline has passed",
			                 path);
		if (longest_ms(r) > left && (error = open_reader(r, ks, (long)left, 0, err)) < 0)
			return error;
	}
	return kube_get(out, r->c, path, err);
}

/* Notes what a read of a Secret or account found (the last read of one wins). */
static void note(struct refs *r, bool account, const char *ns, const char *name,
                 const unsigned char sum[KUBESA_SUM_LEN], bool known)
{
	struct ref *it = NULL;

	for (size_t i = 0; i < r->len && !it; i++)
		if (r->items[i].account == account && strcmp(r->items[i].ns, ns) == 0 &&
		    strcmp(r->items[i].name, name) == 0)
			it = &r->items[i];
	if (!it) {
		if (r->len == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 8;
			struct ref *items = realloc(r->items, cap * sizeof(*items));

			if (!items)
				return; /* out of memory: not read again, as before */
			r->items = items;
			r->cap = cap;
		}
		it = &r->items[r->len];
		*it = (struct ref){account, false, strdup(ns), strdup(name), {0}};
		if (!it->ns || !it->name) {
			free(it->ns);
			free(it->name);
			return;
		}
		r->len++;
	}
	it->known = known;
	if (known)
		memcpy(it->sum, sum, KUBESA_SUM_LEN);
}

/* After a load: its notes replace the previous ones; a failed load (the configuration in use
 * stays) keeps the previous notes of what it did not read. */
static void finish_notes(struct kubesource *ks, bool loaded)
{
	for (size_t i = 0; !loaded && i < ks->refs.len; i++) {
		struct ref *old = &ks->refs.items[i];
		bool seen = false;

		for (size_t j = 0; j < ks->loading.len && !seen; j++)
			seen = ks->loading.items[j].account == old->account &&
			       strcmp(ks->loading.items[j].ns, old->ns) == 0 &&
			       strcmp(ks->loading.items[j].name, old->name) == 0;
		if (!seen)
			note(&ks->loading, old->account, old->ns, old->name, old->sum, old->known);
	}
	refs_release(&ks->refs);
	ks->refs = ks->loading;
	ks->loading = (struct refs){0};
}

void kubesource_secret_sum(unsigned char sum[KUBESA_SUM_LEN], const json_t *s, int code)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	const char *type = str(json_object_get(s, "type"));
	char *data =
	    s ? json_dumps(json_object_get(s, "data"), JSON_SORT_KEYS | JSON_COMPACT) : NULL;

	memset(sum, 0, KUBESA_SUM_LEN);
	if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
		EVP_DigestUpdate(md, &code, sizeof(code));
		EVP_DigestUpdate(md, type, strlen(type) + 1);
		if (data)
			EVP_DigestUpdate(md, data, strlen(data));
		EVP_DigestFinal_ex(md, sum, NULL);
	}
	if (data) {
		memset(data, 0, strlen(data));
		free(data);
	}
	EVP_MD_CTX_free(md);
}

/* GET Secret ns/name (*out: NULL when it failed) and the sum of the answer; *known false when
 * the API did not answer. */
static int get_secret(json_t **out, unsigned char sum[KUBESA_SUM_LEN], bool *known,
                      struct kubesource *ks, const char *ns, const char *name, struct error *err)
{
	struct buf path = BUF_INIT;
	int error;

	*out = NULL;
	*known = false;
	if ((error = kube_path(&path, "/api/v1", ns, "secrets", name, NULL, "secret", err)) < 0)
		return error; /* never requested: nothing to sum, nothing to read again */
	error = read_get(out, ks, path.data, err);
	buf_release(&path);
	*known = is_answer(error);
	if (*known)
		kubesource_secret_sum(sum, *out, error);
	return error;
}

/* Secret ns/name into <secrets_dir>/<ns>.<name>/<key>, replacing what was there, and noted for
 * the passes to read again; a Secret that is gone leaves no folder, so its users fail with
 * "no such secret", never anonymous. */
static int fetch_secret(struct kubesource *ks, const char *ns, const char *name, struct error *err)
{
	json_t *s = NULL;
	struct buf dir = BUF_INIT;
	unsigned char sum[KUBESA_SUM_LEN];
	char what[400];
	bool known;
	int error = 0;

	snprintf(what, sizeof(what), "secret '%s/%s'", ns, name);
	/* the folder is named from both: checked before any path or request is made of them */
	if (!kubename_is_namespace(ns) || !kubename_is_name(name))
		return error_set(err, IG_EINVALID, "%s: not a valid Kubernetes name", what);
	if (buf_printf(&dir, "%s/%s.%s", ks->secrets_dir, ns, name) < 0)
		return error_oom(err);
	remove_folder(dir.data);
	error = get_secret(&s, sum, &known, ks, ns, name, err);
	note(&ks->loading, false, ns, name, sum, known);
	if (error < 0) {
		error_prefix(err, "%s", what);
		remove_folder(dir.data);
	} else {
		error = kubesource_secret_write(dir.data, s, what, err);
	}
	if (error < 0 && !is_answer(error))
		note(&ks->loading, false, ns, name, sum, false); /* not written: read again */
	json_decref(s);
	buf_release(&dir);
	return error;
}

/* Reads ref r again: its sum now, *known false when the API did not answer. */
static void reread(unsigned char sum[KUBESA_SUM_LEN], bool *known, struct kubesource *ks,
                   const struct ref *r, struct error *err)
{
	json_t *s = NULL;

	if (r->account)
		kubesa_read(sum, known, read_get, ks, NULL, r->ns, r->name, err);
	else if (get_secret(&s, sum, known, ks, r->ns, r->name, err) < 0)
		error_prefix(err, "secret '%s/%s'", r->ns, r->name);
	json_decref(s);
}

bool kubesource_refs_changed(struct kubesource *ks, int64_t deadline_ms)
{
	int64_t now = mono_ms(), budget = (deadline_ms - now) / 2;
	bool changed = false;

	if (ks->refs.len == 0)
		return false; /* nothing read: no request */
	/* an API that does not answer leaves the pass most of its time, with what was read */
	ks->deadline_ms = now + (budget < CHECK_BUDGET_MS ? budget : CHECK_BUDGET_MS);
	ks->active = &ks->check_reader;
	for (size_t i = 0; i < ks->refs.len && !changed && !(ks->stop && *ks->stop); i++) {
		const struct ref *r = &ks->refs.items[i];
		unsigned char sum[KUBESA_SUM_LEN];
		struct error err = ERROR_INIT;
		bool known;

		reread(sum, &known, ks, r, &err);
		if (!known) {
			/* the API does not answer: the others would not either */
			if (!(ks->stop && *ks->stop))
				log_warn("kube.secrets", "not read again this pass: %s", err.msg);
			break;
		}
		if (!r->known || memcmp(sum, r->sum, sizeof(sum)) != 0) {
			log_info("kube.secrets",
			         "%s '%s/%s' changed (written, rotated or deleted): reading the "
			         "configuration again",
			         r->account ? "serviceaccount" : "secret", r->ns, r->name);
			changed = true;
		}
	}
	if (!changed) {
		end_deadline(ks);
		return false;
	}
	ks->deadline_ms = deadline_ms; /* the load that follows: by the pass's deadline */
	ks->active = &ks->load_reader;
	return true;
}

/* ---- documents ---- */

/* spec.<path>.name (path "a.b") rewritten to "<ns>.<name>" and its Secret fetched. A fetch
 * failure is logged: the folder is then missing and the object's use names the secret. */
static void secret_ref(struct kubesource *ks, json_t *spec, const char *const *path, const char *ns)
{
	json_t *o = spec, *name;
	char joined[320];

	for (; *path && o; path++)
		o = json_object_get(o, *path);
	/* a name that is not a Kubernetes name is left as written, never requested: the loader
	 * refuses it as the object's error, naming the field */
	if (!(name = json_object_get(o, "name")) || !kubename_is_name(json_string_value(name)) ||
	    !kubename_is_namespace(ns))
		return;
	{
		struct error err = ERROR_INIT;

		if (fetch_secret(ks, ns, json_string_value(name), &err) < 0)
			log_warn("kube.secret", "%s", err.msg);
	}
	snprintf(joined, sizeof(joined), "%s.%s", ns, json_string_value(name));
	json_object_set_new(o, "name", json_string(joined));
}

/* The signature gate's Secret named by the annotation imageguard.io/verify-secret (CONTRACT
 * §12): fetched and rewritten as secret_ref does a spec field. */
static void verify_annotation(struct kubesource *ks, json_t *doc, const char *ns)
{
	static const char *const ref[] = {"ref", NULL};
	json_t *ann = json_object_get(json_object_get(doc, "metadata"), "annotations");
	json_t *name = json_object_get(ann, "imageguard.io/verify-secret"), *holder;

	if (!json_is_string(name) || !(holder = json_pack("{s:{s:O}}", "ref", "name", name)))
		return;
	secret_ref(ks, holder, ref, ns);
	json_object_set(ann, "imageguard.io/verify-secret",
	                json_object_get(json_object_get(holder, "ref"), "name"));
	json_decref(holder);
}

static void rewrite_secrets(struct kubesource *ks, int k, json_t *spec, const char *ns)
{
	static const char *const verify_secret[] = {"verify", "secretRef", NULL};
	static const char *const repo_secret[] = {"secretRef", NULL};
	static const char *const repo_cert[] = {"certSecretRef", NULL};
	static const char *const signing[] = {"git", "commit", "signingKey", "secretRef", NULL};

	if (k == K_REPO) {
		secret_ref(ks, spec, repo_secret, ns);
		secret_ref(ks, spec, repo_cert, ns);
	} else if (k == K_GIT) {
		secret_ref(ks, spec, repo_secret, ns);
	} else if (k == K_AUTOMATION) {
		secret_ref(ks, spec, signing, ns);
	} else if (k == K_POLICY) {
		secret_ref(ks, spec, verify_secret, ns);
	}
}

/* spec.serviceAccountName's imagePullSecrets, read and noted (kubesa_fetch_spec). */
static void fetch_account(struct kubesource *ks, const char *ns, const json_t *spec)
{
	unsigned char sum[KUBESA_SUM_LEN];
	bool known;
	const char *sa = kubesa_fetch_spec(sum, &known, read_get, ks, ks->secrets_dir, ns, spec);

	if (sa)
		note(&ks->loading, true, ns, sa, sum, known);
}

json_t *kubesource_document_json(const char *kind, const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	json_t *doc = json_object(), *meta = json_object(), *spec, *ann;

	if (!doc || !meta) {
		json_decref(meta);
		json_decref(doc);
		return NULL;
	}
	json_object_set(doc, "apiVersion", json_object_get(obj, "apiVersion"));
	json_object_set_new(doc, "kind", json_string(kind));
	json_object_set(meta, "name", json_object_get(md, "name"));
	json_object_set(meta, "namespace", json_object_get(md, "namespace"));
	if (json_object_get(md, "labels"))
		json_object_set(meta, "labels", json_object_get(md, "labels"));
	if ((ann = json_deep_copy(json_object_get(md, "annotations")))) {
		json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
		json_object_set_new(meta, "annotations", ann);
	}
	json_object_set_new(doc, "metadata", meta);
	if ((spec = json_deep_copy(json_object_get(obj, "spec"))))
		json_object_set_new(doc, "spec", spec);
	return doc;
}

/* The document imageguard reads of one object (kubesource_document_json), its Secrets
 * fetched and their names rewritten, indented so that lines mean something in messages.
 * NULL when out of memory. */
static char *document(struct kubesource *ks, int k, const json_t *obj)
{
	const char *ns = str(json_object_get(json_object_get(obj, "metadata"), "namespace"));
	json_t *doc = kubesource_document_json(kinds[k].kind, obj), *spec;
	char *text;

	if (!doc)
		return NULL;
	if (k == K_POLICY)
		verify_annotation(ks, doc, ns);
	if ((spec = json_object_get(doc, "spec"))) {
		rewrite_secrets(ks, k, spec, ns);
		if (k == K_REPO)
			fetch_account(ks, ns, spec);
	}
	text = json_dumps(doc, JSON_INDENT(2));
	json_decref(doc);
	return text;
}

/* The documents of the Namespaces (name and labels, all accessFrom reads) at docs[*n] on. */
static int namespace_docs(struct config_document *docs, char **names, size_t *n, const json_t *snap,
                          struct error *err)
{
	const json_t *it;
	size_t i;

	json_array_foreach(snap, i, it)
	{
		const json_t *md = json_object_get(it, "metadata");
		json_t *doc =
		    json_pack("{s:s, s:s, s:{s:O, s:O*}}", "apiVersion", "v1", "kind", "Namespace",
		              "metadata", "name", json_object_get(md, "name"), "labels",
		              json_object_get(md, "labels"));
		char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
		struct buf name = BUF_INIT;

		json_decref(doc);
		if (!text ||
		    buf_printf(&name, "Namespace/%s", str(json_object_get(md, "name"))) < 0) {
			free(text);
			buf_release(&name);
			return error_oom(err);
		}
		names[*n] = buf_detach(&name);
		docs[*n] = (struct config_document){names[*n], text, strlen(text)};
		(*n)++;
	}
	return 0;
}

static void release_docs(struct config_document *docs, char **names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)docs[i].data);
		free(names[i]);
	}
	free(docs);
	free(names);
}

/* What kubesource_load's documents are made from when the loader reads them (lazy_text). */
struct lazy {
	struct kubesource *ks;
	const json_t **objs; /* borrowed from the snapshots */
	int *kinds;
};

static char *lazy_text(void *ctx, size_t i, size_t *len)
{
	struct lazy *z = ctx;
	json_t *obj = kubesource_unpack(z->objs[i]);
	char *text = obj ? document(z->ks, z->kinds[i], obj) : NULL;

	json_decref(obj);
	*len = text ? strlen(text) : 0;
	return text;
}

int kubesource_load(struct config **out, const char **secrets_dir, struct kubesource *ks,
                    struct config_diags *diags, struct error *err)
{
	json_t *snap[K_COUNT] = {0}, *keys[K_COUNT] = {0}, *nss = NULL, *it;
	struct config_document *docs = NULL;
	struct lazy z = {ks, NULL, NULL};
	char **names = NULL;
	size_t n = 0, total = 0, i;
	int error = 0;

	*out = NULL;
	*secrets_dir = ks->secrets_dir;
	refs_release(&ks->loading);
	if (!ks->keep.all)
		settle(ks);
	for (int k = 0; k < K_COUNT; k++) {
		if (!(snap[k] = kubewatch_snapshot_named(ks->watch[k], &keys[k]))) {
			error = error_oom(err);
			goto done;
		}
		total += json_array_size(snap[k]);
	}
	if (ks->namespaces && !(nss = kubewatch_snapshot(ks->namespaces))) {
		error = error_oom(err);
		goto done;
	}
	total += json_array_size(nss);
	if (!(docs = calloc(total + 1, sizeof(*docs))) ||
	    !(names = calloc(total + 1, sizeof(*names))) ||
	    !(z.objs = calloc(total + 1, sizeof(*z.objs))) ||
	    !(z.kinds = calloc(total + 1, sizeof(*z.kinds)))) {
		error = error_oom(err);
		goto done;
	}
	/* each object's text is made as the loader reads it (lazy_text): a load holds one */
	for (int k = 0; k < K_COUNT; k++)
		json_array_foreach(snap[k], i, it)
		{
			struct buf name = BUF_INIT;

			if (buf_printf(&name, "%s/%s", kinds[k].kind,
			               json_string_value(json_array_get(keys[k], i))) < 0) {
				error = error_oom(err);
				goto done;
			}
			names[n] = buf_detach(&name);
			docs[n] = (struct config_document){names[n], NULL, 0};
			z.objs[n] = it;
			z.kinds[n] = k;
			n++;
		}
	if ((error = namespace_docs(docs, names, &n, nss, err)) < 0)
		goto done;
	{
		/* as run's files: the valid objects run, each invalid one (a missing Secret too)
		 * is an error of its own */
		struct config_load_options lo = {.keep_valid = true,
		                                 .check_secrets = true,
		                                 .secrets_dir = ks->secrets_dir,
		                                 .kube = true,
		                                 .secrets_from_api = true,
		                                 .shards = ks->shards,
		                                 .no_cross_namespace_refs = ks->no_cross_ns,
		                                 .document_text = lazy_text,
		                                 .document_ctx = &z};

		error = config_load_documents(out, docs, n, "kubernetes api", &lo, diags, err);
	}
	if (error == 0)
		remember(ks, snap[K_AUTOMATION]);
	if (error == 0 && !ks->keep.all) {
		json_t *ns = owned_namespaces(ks, *out);

		keep_set(ks, json_incref(ns), named_repositories(ns, snap[K_POLICY]));
		json_decref(ns);
	}
done:
	finish_notes(ks, error == 0);
	end_deadline(ks);
	release_docs(docs, names, n);
	free(z.objs);
	free(z.kinds);
	for (int k = 0; k < K_COUNT; k++) {
		json_decref(snap[k]);
		json_decref(keys[k]);
	}
	json_decref(nss);
	return error;
}
