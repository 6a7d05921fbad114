/* The TCP stream libgit2 uses for every connection (HTTP, HTTPS under its TLS layer, SSH):
 * it connects only to the endpoint (host, port) of the operation running on this thread, so
 * a redirect to another port or host never receives a request, a header or a credential. */
#ifndef IMAGEGUARD_GITSTREAM_H
#define IMAGEGUARD_GITSTREAM_H

#include <signal.h>

/* How long a Git peer may stay silent (connect, read or write) by default: Flux's
 * GitRepository spec.timeout default. */
#define GITSTREAM_TIMEOUT_DEFAULT_MS 60000L

/* Registers the stream with libgit2 (once per process; after git_libgit2_init). Returns 0
 * or IG_EFAIL. */
int gitstream_install(void);

/* Sets the one endpoint this thread's libgit2 connections may reach (host as in the URL,
 * without brackets; compared case-insensitively), or none with host NULL: every connection
 * is then refused. host is borrowed until the next call. */
void gitstream_allow(const char *host, unsigned port);

/* Bounds this thread's libgit2 connections: a peer silent for timeout_ms (0: the default) ends
 * the operation ("timed out"), and so does stop, once set (SIGTERM), when the peer has then
 * been silent for a second; a transfer that is moving is not cut by stop (fetches end at their
 * progress callback). gitstore passes no stop for a push: the commit in flight is finished,
 * bounded by the host's silence alone. stop is borrowed until the next call. */
void gitstream_bound(const volatile sig_atomic_t *stop, long timeout_ms);

/* An instant (CLOCK_MONOTONIC ms; 0: none) by which every wait of this thread's libgit2
 * connections ends, however lively the peer ("past its deadline"): a fenced push ends before
 * the lease's renew deadline even when the host trickles. Until the next call; gitstream_bound
 * clears it. */
void gitstream_deadline(long deadline_ms);

#endif
