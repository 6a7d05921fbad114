/* run --kube: an ImageRepository's spec.serviceAccountName as Flux reads it. With provider
 * generic, the ServiceAccount's imagePullSecrets (in the object's namespace) are fetched with
 * the configuration and join spec.secretRef's Secret: the first with an entry for the registry
 * gives the credentials (fluxcd/image-reflector-controller internal/registry/options.go,
 * commit 157c5be4; fluxcd/pkg runtime/secrets PullSecretsFromServiceAccountRef). With provider
 * aws, azure or gcp, the account's own cloud identity (object-level workload identity): its
 * annotations and a TokenRequest token, through cloudauth_creds_as. */
#ifndef IMAGEGUARD_KUBESA_H
#define IMAGEGUARD_KUBESA_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>

struct config_repository;
struct error;
struct kube_client;
struct registry_creds;

#define KUBESA_MAX_PULL_SECRETS 32 /* imagePullSecrets read from one ServiceAccount */
#define KUBESA_SUM_LEN 32          /* a SHA-256: what one read of an account found */

/* One GET of an absolute API path, as kube_get answers it (*out a new reference). */
typedef int (*kubesa_get_fn)(json_t **out, void *ctx, const char *path, struct error *err);

/* Reads ServiceAccount ns/name and each Secret its imagePullSecrets name into
 * <secrets_dir>/<ns>.<name>@serviceaccount/: one Docker config JSON per Secret ("0.json",
 * "1.json", ... in the account's order; a kubernetes.io/dockercfg Secret is wrapped in
 * "auths"). A failure is written there as the one-line file "error" (never a Secret's
 * content), which kubesa_load_creds then reports. Returns 0, or the failure's code with err
 * naming the account: IG_ENOTFOUND (no such account or Secret), IG_EAUTH, IG_EINVALID (a Secret
 * without .dockerconfigjson/.dockercfg), IG_ETOOBIG, IG_EFAIL. */
int kubesa_fetch(struct kube_client *c, const char *secrets_dir, const char *ns, const char *name,
                 struct error *err);

/* kubesa_fetch through get, and what was read summed: SHA-256 over the imagePullSecrets'
 * names and Docker configs in order, or, when the read fails with the API's answer (404, 403,
 * a bad account or Secret), over that failure's code and message; *summed is false when the
 * API did not answer (a timeout, a 5xx, a stop) or out of memory. secrets_dir NULL: nothing
 * is written, only the sum (run --kube reads the accounts again at every pass and compares).
 * Returns what kubesa_fetch returns. */
int kubesa_read(unsigned char sum[KUBESA_SUM_LEN], bool *summed, kubesa_get_fn get, void *ctx,
                const char *secrets_dir, const char *ns, const char *name, struct error *err);

/* kubesa_read for an ImageRepository's spec (borrowed JSON) in namespace ns when it names a
 * serviceAccountName and no cloud provider: returns that name (borrowed from spec), with *sum
 * and *summed as kubesa_read fills them; NULL (nothing read) otherwise. A failure is logged
 * (it is also kept for the repository's scan). */
const char *kubesa_fetch_spec(unsigned char sum[KUBESA_SUM_LEN], bool *summed, kubesa_get_fn get,
                              void *ctx, const char *secrets_dir, const char *ns,
                              const json_t *spec);

/* The credentials of repository r (which names r->service_account) for its registry. With a
 * cloud provider, the account's own identity: its annotations (aws eks.amazonaws.com/role-arn;
 * azure azure.workload.identity/client-id and tenant-id; gcp the optional
 * iam.gke.io/gcp-service-account) and a TokenRequest token, through cloudauth_creds_as. Otherwise
 * its spec.secretRef's Secret first, then the account's pull secrets, the first with an entry for
 * the registry host. An account without pull secrets and no secretRef is anonymous, as in
 * Flux; pull secrets none of which has the host are IG_EINVALID naming them. Returns 0 with
 * out filled (release with creds_release), or IG_EINVALID / IG_ENOTFOUND / IG_EAUTH naming
 * the account and what failed. */
int kubesa_load_creds(struct registry_creds *out, const struct config_repository *r,
                      const char *secrets_dir, struct error *err);

/* ---- object-level workload identity: serviceAccountName with a cloud provider ---- */

struct kubeconfig;
struct registry_client;
struct registry_listing;
struct registry_target;

/* Makes the module's own API client for cfg (copied), used from the scan threads one request
 * at a time to read a ServiceAccount and ask the TokenRequest API for its tokens; a request in
 * flight ends within about a second once *stop is set (SIGTERM; stop may be NULL). run --kube
 * calls it once (kubesource_new), kubesa_stop frees it. Returns 0 or kube_client_new's
 * errors. Without it, object-level identity is IG_EINVALID "needs run --kube". */
int kubesa_start(const struct kubeconfig *cfg, const volatile sig_atomic_t *stop,
                 struct error *err);
void kubesa_stop(void);

/* registry_list_tags for repository r (which names r->service_account): with a cloud
 * provider, a refused credential (a revoked token) is forgotten, fetched anew through the
 * account and tried once more, as cloudauth_list_tags does for the pod's identity. */
int kubesa_list_tags(struct registry_listing *out, struct registry_client *c,
                     const struct registry_target *t, const struct config_repository *r,
                     struct registry_creds *creds, struct error *err);

#endif
