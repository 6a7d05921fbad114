/* SSH host key checking against an OpenSSH known_hosts file: plain and hashed (|1|salt|hash)
 * host names, `[host]:port`, comma lists, `*`/`?` wildcards, `!` negation and `@revoked`.
 * Never prompts: an unknown host is an error like a mismatch. */
#ifndef IMAGEGUARD_KNOWNHOSTS_H
#define IMAGEGUARD_KNOWNHOSTS_H

#include <stddef.h>

struct error;

/* The key the server presented: its raw SSH wire blob (as base64-decoded in known_hosts), or,
 * when the transport only gives a fingerprint, its SHA-256 (raw NULL). */
struct knownhosts_key {
	const unsigned char *raw;
	size_t raw_len;
	const unsigned char *sha256; /* 32 bytes, used when raw is NULL */
};

/* Checks key for host (port 22 means the bare name, otherwise `[host]:port`) against the
 * known_hosts text in data. Returns 0 when a line for the host holds this key, IG_ENOTFOUND
 * when no line names the host, IG_EAUTH when lines name it but none holds this key (or the key
 * is @revoked). Malformed lines are skipped, as OpenSSH does. The error names the host, never
 * a key. */
int knownhosts_check(const char *data, size_t len, const char *host, unsigned port,
                     const struct knownhosts_key *key, struct error *err);

#endif
