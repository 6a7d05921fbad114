/* The Lease of leader election in the API server: GET, POST and PUT of
 * /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME through the kube client, as
 * client-go's resourcelock.LeaseLock does them (the object read or written last is kept, and
 * the next update carries its resourceVersion: 409 when another writer came first), plus the
 * names: the Lease's (Flux's naming), its namespace (the pod's) and the candidate's identity
 * (controller-runtime's hostname_uuid). */
#ifndef IMAGEGUARD_KUBE_LEASECLIENT_H
#define IMAGEGUARD_KUBE_LEASECLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "imageguard/kube/lease.h"

struct error;
struct kube_client;
struct kubeconfig;

#define LEASE_NAME_BASE "imageguard-leader-election"
#define LEASE_MAX_NAME 64

/* Flux's GenerateID (fluxcd/pkg runtime/leaderelection): base, "-" and the first 8 hex digits
 * of the SHA-256 of the additions concatenated ("bar", "", "baz" hash as "barbaz"); base alone
 * when no addition has text; "" when base is empty. Writes at most n bytes, NUL-terminated;
 * "" also when the digest cannot be made (out of memory). */
void lease_generate_id(char *out, size_t n, const char *base, const char *const *additions,
                       size_t k);

/* The Lease name, as Flux names its controllers' own: "imageguard-leader-election" (Flux:
 * "<controller>-leader-election"), and for a shard GenerateID over the shard's key (shard_key:
 * the --watch-label-selector, as Flux hashes it, and/or "--shards N --shard-index I" text;
 * NULL or "" for none), so each shard elects its own leader. Writes the NUL-terminated name
 * to out (LEASE_MAX_NAME bytes); "" when it cannot be made (out of memory). */
void lease_name(char out[LEASE_MAX_NAME], const char *shard_key);

/* The namespace the Lease lives in: $POD_NAMESPACE when set, else cfg's (the kubeconfig
 * context's, or the service account's namespace file; "default"). Borrowed. */
const char *lease_namespace(const struct kubeconfig *cfg);

/* controller-runtime's identity: the host name, "_" and a random UUID (newly allocated, free()
 * it); NULL out of memory or when no randomness could be read. */
char *lease_identity(void);

struct leaseclient;

/* A Lease client for ns/name over c (borrowed: used by this client's thread only). Returns 0,
 * IG_EINVALID when ns or name is not a Kubernetes name (kube_path), or IG_EFAIL; free with
 * leaseclient_free. */
int leaseclient_new(struct leaseclient **out, struct kube_client *c, const char *ns,
                    const char *name, struct error *err);
void leaseclient_free(struct leaseclient *lc);

/* Sends lc's next requests through c (borrowed), keeping the Lease object read last. */
void leaseclient_use(struct leaseclient *lc, struct kube_client *c);

/* Fills out with lc's get, create and update for lease_init. */
void leaseclient_bind(struct lease_client *out, struct leaseclient *lc);

/* The wall clock as a Kubernetes MicroTime, UTC: "2026-12-01T10:21:03.123456Z". */
/* The record of a Lease object's spec (a get's answer, or a watch's object); absent fields are
 * empty or 0, as client-go reads them. */
void leaseclient_record(struct lease_record *out, const json_t *obj);

void leaseclient_wall(void *ctx, char out[LEASE_MAX_TIME]);

#endif
