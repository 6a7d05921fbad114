/* Where and how to reach a Kubernetes API server: a kubeconfig file (current-context ->
 * cluster + user) or the in-cluster service account. The token and keys are secrets: never
 * log them or put them into errors. */
#ifndef IMAGEGUARD_KUBECONFIG_H
#define IMAGEGUARD_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct error;

/* Caps on outside input: a kubeconfig file, a token file, a certificate or key file. */
#define KUBECONFIG_MAX_FILE_BYTES (1u << 20)
#define KUBECONFIG_MAX_TOKEN_BYTES (64u << 10)

/* The in-cluster service account folder (token, ca.crt, namespace). */
#define KUBECONFIG_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Every string is owned, NULL when absent. PEM data is NUL-terminated and decoded from
 * base64 (`*-data` fields). */
struct kubeconfig {
	char *source;     /* for messages: "kubeconfig '/path'" or "in-cluster service account" */
	char *server;     /* "https://10.96.0.1:443" (no trailing '/') */
	char *ca_file;    /* certificate-authority, absolute (relative ones resolved) */
	char *ca_pem;     /* certificate-authority-data */
	bool insecure;    /* insecure-skip-tls-verify */
	char *token;      /* the bearer token (secret) */
	char *token_file; /* tokenFile / the service account token, read by kube_client_new */
	char *cert_file;  /* client-certificate */
	char *cert_pem;   /* client-certificate-data */
	char *key_file;   /* client-key */
	char *key_pem;    /* client-key-data (secret) */
	char *ns;         /* the context's namespace or the service account's; "default" */
};

#define KUBECONFIG_INIT                                                                            \
	{                                                                                          \
		NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL            \
	}

/* Reads a kubeconfig file: current-context, then its cluster (server, certificate-authority
 * or certificate-authority-data, insecure-skip-tls-verify) and user (token, tokenFile,
 * client-certificate(-data), client-key(-data)). Relative paths are relative to the file's
 * folder, as kubectl does. Unsupported user kinds (exec, auth-provider, username/password)
 * are IG_EINVALID naming the field. Errors name the file and the field, never a value.
 * Returns 0, IG_ENOTFOUND (no such file), IG_EINVALID, IG_ETOOBIG or IG_EFAIL. out is
 * caller-owned (KUBECONFIG_INIT); release with kubeconfig_release, also after a failure. */
int kubeconfig_load(struct kubeconfig *out, const char *path, struct error *err);

/* The same from bytes; name is the file name used in messages and to resolve relative
 * paths (its folder). */
int kubeconfig_parse(struct kubeconfig *out, const char *name, const char *data, size_t len,
                     struct error *err);

/* The in-cluster configuration: KUBERNETES_SERVICE_HOST and _PORT from the environment,
 * sa_dir (NULL: KUBECONFIG_SERVICE_ACCOUNT_DIR) for token, ca.crt and namespace. Returns 0,
 * or IG_ENOTFOUND when the environment or the token is missing (not running in a pod). */
int kubeconfig_in_cluster(struct kubeconfig *out, const char *sa_dir, struct error *err);

void kubeconfig_release(struct kubeconfig *c);

/* Decodes standard base64 (whitespace ignored, padding optional) into a new NUL-terminated
 * buffer (free() it); *len_out gets its length. Returns 0, IG_EINVALID or IG_EFAIL. */
int kubeconfig_base64_decode(char **out, size_t *len_out, const char *s);

#endif
