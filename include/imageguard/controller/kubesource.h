/* run --kube: Flux's objects from the Kubernetes API instead of files. Each kind
 * (ImageRepository, ImagePolicy, ImageUpdateAutomation, GitRepository) is watched once at the
 * preferred version that API discovery names, in every namespace or one, filtered by a label
 * selector; a configuration is built from the cached objects' JSON, and the Secrets they name
 * are read from their own namespace into a memory-backed folder. */
#ifndef IMAGEGUARD_KUBESOURCE_H
#define IMAGEGUARD_KUBESOURCE_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct config;
struct config_diags;
struct error;
struct kube_client;
struct kubesource;
struct shard_spec;

struct kubesource_options {
	const char *kubeconfig;     /* NULL: the in-cluster service account */
	const char *ns;             /* --watch-namespace; NULL: every namespace */
	const char *selector;       /* --watch-label-selector; NULL: all */
	const char *secrets_parent; /* where the secrets folder is made; NULL: /dev/shm */
	const volatile sig_atomic_t *stop;
	long sync_timeout_ms; /* the first lists; 0: 30 s */
	/* The stop flag of the client that writes status and Events (kubesource_client): under
	 * leader election, the lease's lost flag, so a deposed leader's request in flight is cut.
	 * NULL: none. */
	const volatile sig_atomic_t *write_stop;
	unsigned shards; /* --shards N (0: none): config_load_options.shards */
	/* --no-cross-namespace-refs: config_load_options.no_cross_namespace_refs */
	bool no_cross_namespace_refs;
	/* --shards N --shard-index I (NULL or N < 2: every object is kept). A shard other than
	 * 0 keeps only the ImagePolicies of the namespaces where it owns an automation (the
	 * policies an ImageUpdateAutomation can select are those of its own namespace) and the
	 * ImageRepositories of those namespaces or named by those policies; shard 0 keeps every
	 * object, as it reports the policies no automation selects and the invalid objects. */
	const struct shard_spec *shard;
};

/* Discovers the preferred versions, starts the four watches and waits for their first lists.
 * Returns 0; IG_ENOTFOUND when Flux's CRDs are not served (err names the group or kind),
 * IG_EINVALID for a bad kubeconfig, IG_ETIMEOUT when a first list does not arrive (err
 * names the last failure), IG_EAUTH, IG_EFAIL. Free with kubesource_free (also removes the
 * secrets folder). */
int kubesource_new(struct kubesource **out, const struct kubesource_options *o, struct error *err);
void kubesource_free(struct kubesource *ks);

/* Grows whenever an object changes in what a configuration reads (not its status). */
uint64_t kubesource_changes(struct kubesource *ks);

/* A configuration from the current objects (documents named "Kind/ns/name"), with the Secrets
 * they name (and the ServiceAccounts' imagePullSecrets) fetched now and noted for
 * kubesource_refs_changed; *secrets_dir (borrowed) is the folder to resolve them in. Returns
 * what config_load_documents returns. */
int kubesource_load(struct config **out, const char **secrets_dir, struct kubesource *ks,
                    struct config_diags *diags, struct error *err);

/* A shard other than 0 (--shards N --shard-index I) keeps, of a namespace where another shard
 * owns an automation too, only the ImagePolicies that its own automations' markers name, and
 * the ImageRepositories they name. A round of marker reads (a pass, a standby's warm-up) tells
 * it which: kubesource_marked_begin, then kubesource_marked_note (a reconcile_options
 * .marker_named, ctx the kubesource) with the policy ("ns/name") of every marker of an
 * automation this shard owns, or NULL when an automation's markers could not be read, then
 * kubesource_marked_end. note returns false when that policy is not kept yet: the round's end
 * lists the policies again, and the next kubesource_load has it. end keeps what the round's
 * markers named (and, after a NULL, what was kept before), and returns true when a policy
 * that was not kept is now listed: the caller loads and passes again. Every shard that keeps
 * every object (no sharding, shard 0) notes nothing: note returns true, end false. note may
 * be called from any thread. */
void kubesource_marked_begin(struct kubesource *ks);
bool kubesource_marked_note(void *ctx, const char *policy);
bool kubesource_marked_end(struct kubesource *ks);

/* Reads again, by name in their own namespaces, the Secrets and ServiceAccounts (with their
 * imagePullSecrets) that the last kubesource_load read, and compares each with what that load
 * found (a SHA-256 of the content, or of the API's refusal). Returns true at the first that
 * changed (written, rotated, deleted, created, refused): the caller then calls kubesource_load
 * at once, whose reads end by deadline_ms too. Returns false when nothing changed, when nothing
 * is referenced (no request is made), or when the API does not answer (logged once; what was
 * read last stays). The re-reads end by the earlier of 10 s and half the time left before
 * deadline_ms (CLOCK_MONOTONIC milliseconds, the pass's), 5 s each, so that a silent API leaves
 * the pass most of its time; the load after a change ends by deadline_ms; SIGTERM (the stop
 * flag) ends either within about a second. */
bool kubesource_refs_changed(struct kubesource *ks, int64_t deadline_ms);

/* The client for writes from the loop's thread (status, events); borrowed. */
struct kube_client *kubesource_client(struct kubesource *ks);

/* The ImageUpdateAutomation id ("ns/name") as the last successful kubesource_load read it (a
 * new reference, json_decref it), NULL when absent; and the API path of its group at the
 * preferred version ("/apis/G/V"). */
json_t *kubesource_automation(struct kubesource *ks, const char *id);
const char *kubesource_image_api(const struct kubesource *ks);

/* The object kind ("ImagePolicy", ...) ns/name as the watches hold it now (of a policy or
 * repository, kubesource_slim's object: its metadata has the uid and resourceVersion an Event
 * names), a new reference; NULL when they hold no such object. Thread-safe. */
json_t *kubesource_object(struct kubesource *ks, const char *kind, const char *ns,
                          const char *name);

#endif
