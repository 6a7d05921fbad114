/* C helpers for tests that need real peers: start/stop the Python fixtures of test/fixtures
 * (Debian's docker-registry, the fault server, the Kubernetes API fixtures) and run commands
 * capturing their output.
 * Paths come from $IMAGEGUARD_SRC (the repository root; "." when unset). */
#ifndef IMAGEGUARD_TEST_FIXTURE_H
#define IMAGEGUARD_TEST_FIXTURE_H

#include <sys/types.h>

#include "imageguard/util/buf.h"

struct fixture {
	char dir[256];  /* temp dir owned by the fixture (removed by stop) */
	char host[128]; /* "127.0.0.1:PORT" */
	pid_t pid;      /* the fault server's or API fixture's pid (0 for the registry, which
	                 * registry.py stops) */
};

/* Runs argv (argv[0] a path), stdout into out (capped at 1 MiB), stderr inherited. Returns the
 * exit status, or -1 when it could not run. */
int fixture_run(struct buf *out, const char *const argv[]);

/* Starts registry.py in a new temp dir with extra start options (NULL-terminated, may be NULL),
 * e.g. {"--tls", "--htpasswd", "u:p", NULL}. Returns 0 or -1. */
int fixture_registry_start(struct fixture *f, const char *const extra[]);
/* Pushes `tag` to repo; with multi_arch an OCI index. Writes the digest into digest (72+ bytes).
 * Returns 0 or -1. */
int fixture_registry_push(const struct fixture *f, const char *repo, const char *tag,
                          int multi_arch, char *digest, size_t digest_size);
void fixture_registry_stop(struct fixture *f);

/* Starts faultserver.py (upstream may be NULL) on a free port. Returns 0 or -1. */
int fixture_fault_start(struct fixture *f, const char *upstream);
void fixture_fault_stop(struct fixture *f);

/* Starts test/fixtures/<script> serve (kubeapi.py or kubeapi_etcd.py) in a new temp dir, with
 * extra options (NULL-terminated, may be NULL), and waits for it to listen: host is then
 * "127.0.0.1:PORT", and dir holds its ca.crt (and kubeapi_etcd.py's kubeconfig). Returns 0
 * or -1. */
int fixture_kubeapi_start(struct fixture *f, const char *script, const char *const extra[]);
/* Stops it (SIGTERM: kubeapi_etcd.py stops its etcd) and removes the dir. */
void fixture_kubeapi_stop(struct fixture *f);

/* An HTTP GET of url with libcurl into out (for asserting on fixture state). Returns the
 * status or -1. */
long fixture_http_get(struct buf *out, const char *url);

#endif
