/* Host-name checks the providers share. */
#ifndef IMAGEGUARD_CLOUDAUTH_HOST_H
#define IMAGEGUARD_CLOUDAUTH_HOST_H

#include <stdbool.h>
#include <string.h>

/* True when registry_host's name (port and a trailing ".localhost" left out: RFC 6761 keeps
 * those names on loopback, which is how mirrors and tests stand in for the cloud) ends with
 * suffix. */
static inline bool cloudauth_host_ends(const char *host, const char *suffix)
{
	size_t n = strcspn(host, ":"), s = strlen(suffix);

	if (n > 10 && strncmp(host + n - 10, ".localhost", 10) == 0)
		n -= 10;
	return n >= s && strncmp(host + n - s, suffix, s) == 0;
}

#endif
