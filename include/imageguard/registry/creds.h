/* Registry credentials: from a Kubernetes-style secret folder (`.dockerconfigjson`, or
 * `username`/`password` files) or a Docker config file. Values are secrets: never log them. */
#ifndef IMAGEGUARD_CREDS_H
#define IMAGEGUARD_CREDS_H

struct error;

struct registry_creds {
	char *username; /* owned; NULL for anonymous */
	char *password; /* owned */
	char *token;    /* owned; an identity/registry token used as a bearer, or NULL */
};

#define REGISTRY_CREDS_INIT                                                                        \
	{                                                                                          \
		NULL, NULL, NULL                                                                   \
	}

/* Reads the credentials for registry_host ("ghcr.io", "127.0.0.1:5000") from a secret folder.
 * A secret is named to be used: a missing folder is IG_ENOTFOUND, a folder with no credentials
 * for registry_host (no file, or a .dockerconfigjson without its entry) IG_EINVALID, naming the
 * path; never anonymous. A malformed file is IG_EINVALID naming the file (never its content). */
int creds_load_secret(struct registry_creds *out, const char *secret_dir, const char *registry_host,
                      struct error *err);
/* The same from one Docker config JSON file (`auths`, keys with scheme/path, Docker Hub's
 * https://index.docker.io/v1/ key, `auth` base64 or username/password). */
int creds_load_docker_config(struct registry_creds *out, const char *path,
                             const char *registry_host, struct error *err);
void creds_release(struct registry_creds *c);

#endif
