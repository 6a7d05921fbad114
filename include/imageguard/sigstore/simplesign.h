/* cosign's simple-signing payload, the JSON a legacy `.sig` signature covers:
 * {"critical": {"identity": {"docker-reference": R}, "image": {"docker-manifest-digest": D},
 *  "type": "cosign container image signature"}, "optional": {...} | null}. */
#ifndef IMAGEGUARD_SIMPLESIGN_H
#define IMAGEGUARD_SIMPLESIGN_H

#include <stddef.h>

struct error;

#define SIMPLESIGN_MAX (64 * 1024) /* a payload larger than this is refused */
#define SIMPLESIGN_TYPE "cosign container image signature"

struct simplesign {
	char digest[136];    /* critical.image.docker-manifest-digest ("sha256:<hex>") */
	char reference[512]; /* critical.identity.docker-reference (informative only) */
};

/* Parses data[0..len) strictly: one JSON object (duplicate keys refused), `critical` an object
 * with `type` exactly SIMPLESIGN_TYPE, `image.docker-manifest-digest` a valid digest and
 * `identity.docker-reference` a string; `optional` an object or null when present. Returns 0,
 * IG_ETOOBIG (over SIMPLESIGN_MAX) or IG_EINVALID with the reason in err. */
int simplesign_parse(struct simplesign *out, const char *data, size_t len, struct error *err);

#endif
