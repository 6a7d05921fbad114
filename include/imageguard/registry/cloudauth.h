/* Registry credentials from the pod's cloud identity, as Flux's ImageRepository `spec.provider`
 * gives them: `aws` (ECR, private and public), `gcp` (Artifact Registry, GCR) and `azure` (ACR).
 * Tokens are cached process-wide (like Flux's package-level auth cache) until shortly before
 * they expire. Every token, key and signed request is a secret: none reaches a log line, an
 * error message, an audit record or /metrics. Thread-safe. */
#ifndef IMAGEGUARD_CLOUDAUTH_H
#define IMAGEGUARD_CLOUDAUTH_H

#include <stdbool.h>
#include <stddef.h>

struct error;
struct registry_creds;

/* True for the provider names Flux's ImageRepository accepts: generic, aws, gcp, azure. */
bool cloudauth_is_provider(const char *name);

/* True when provider (NULL or "generic": no) fetches credentials from a cloud identity. */
bool cloudauth_is_cloud(const char *provider);

/* Fills out (released first) with the credentials provider gives for registry_host
 * ("123456789012.dkr.ecr.us-west-2.amazonaws.com", "europe-docker.pkg.dev",
 * "example.azurecr.io"); insecure: the registry (and ACR's exchange on it) is plain HTTP.
 * A cached credential is reused until a fifth of its lifetime is left. Returns 0; IG_EINVALID
 * for a host the provider does not serve or an environment that lacks what the provider needs
 * (one line naming the provider and what is missing); IG_EAUTH when the identity is refused;
 * IG_EFAIL/IG_ETIMEOUT for transport failures. Generic providers leave out untouched. */
int cloudauth_creds(struct registry_creds *out, const char *provider, const char *registry_host,
                    bool insecure, struct error *err);

/* An object's own identity: Flux's object-level workload identity, an ImageRepository's
 * serviceAccountName with a cloud provider. The ServiceAccount ns/name (the cache key and, for
 * aws, the role session name "<name>.<ns>.<region>.fluxcd.io"); aws: its role (the
 * eks.amazonaws.com/role-arn annotation); azure: its client and tenant ids (the
 * azure.workload.identity/client-id and tenant-id annotations); gcp: the Google service account
 * it impersonates (the iam.gke.io/gcp-service-account annotation; NULL: the federated token
 * itself, Flux's direct access); and token(), which asks the TokenRequest API for the
 * account's token for audience ("sts.amazonaws.com", "api://AzureADTokenExchange", gcp's
 * "identitynamespace:<project>.svc.id.goog:<cluster URL>"), newly allocated; called only when
 * a credential has to be fetched. */
struct cloudauth_identity {
	const char *ns, *name, *role_arn, *client_id, *tenant_id;
	int (*token)(char **out, void *ctx, const char *audience, struct error *err);
	void *ctx;
	const char *gcp_service_account;
};

/* cloudauth_creds with the identity id instead of the pod's (id NULL: the pod's). Cached
 * apart from the pod's and from every other account's. */
int cloudauth_creds_as(struct registry_creds *out, const char *provider, const char *registry_host,
                       bool insecure, const struct cloudauth_identity *id, struct error *err);

/* cloudauth_forget for the identity id (NULL: the pod's). */
void cloudauth_forget_as(const char *provider, const char *registry_host,
                         const struct cloudauth_identity *id);

struct registry_client;
struct registry_listing;
struct registry_target;

/* registry_list_tags, and when the registry refuses (IG_EAUTH) a provider's credential, as it
 * does a revoked one: forgets it, fetches a new one into creds (which t->creds points to) and
 * lists once more; a second refusal is the error. */
int cloudauth_list_tags(struct registry_listing *out, struct registry_client *c,
                        const struct registry_target *t, const char *provider,
                        struct registry_creds *creds, struct error *err);

/* Drops the cached credential for (provider, registry_host) and what it was made from, after
 * the registry refused it (a revoked token): the next cloudauth_creds fetches anew. */
void cloudauth_forget(const char *provider, const char *registry_host);

/* Empties the whole cache (tests; the end of the process). */
void cloudauth_reset(void);

/* ---- parsers of the cloud services' answers (exposed for tests and fuzzing) ---- */

struct cloudauth_aws_keys {
	char *access_key_id, *secret_access_key, *session_token; /* owned; token may be NULL */
	long long expires;                                       /* unix seconds, 0: never */
};

void cloudauth_aws_keys_release(struct cloudauth_aws_keys *k);

/* STS AssumeRoleWithWebIdentity's XML answer (the Credentials element). IG_EINVALID when a
 * field is missing or malformed; IG_EAUTH for an ErrorResponse (its Code named). */
int cloudauth_parse_sts(struct cloudauth_aws_keys *out, const char *xml, size_t len,
                        struct error *err);

/* The container credentials endpoint's JSON (AccessKeyId, SecretAccessKey, Token, Expiration). */
int cloudauth_parse_container(struct cloudauth_aws_keys *out, const char *json, size_t len,
                              struct error *err);

/* ECR's (public: ECR Public's) GetAuthorizationToken JSON: the base64 "user:password" token
 * split into user/pass (owned) and its expiry. */
int cloudauth_parse_ecr(char **user, char **pass, long long *expires, const char *json, size_t len,
                        bool public_ecr, struct error *err);

/* An OAuth2 token answer: field ("access_token", "refresh_token") and expires_in (seconds,
 * number or string; 0 when absent). */
int cloudauth_parse_oauth(char **token, long long *expires_in, const char *json, size_t len,
                          const char *field, struct error *err);

/* The `exp` claim of a JWT (not verified: the issuer checks it; only the cache lifetime is
 * read), or -1 when the token is not a JWT with a numeric exp. */
long long cloudauth_jwt_exp(const char *jwt);

/* The RFC 3339 UTC time ("2026-12-01T08:00:00Z", fractions allowed) as unix seconds, or -1. */
long long cloudauth_parse_time(const char *s);

/* The region of an ECR host (Flux's pattern, taken from the ECR credential helper), newly
 * allocated; "us-east-1" with *public_ecr set for public.ecr.aws; NULL when not ECR. */
char *cloudauth_ecr_region(const char *registry_host, bool *public_ecr);

#endif
