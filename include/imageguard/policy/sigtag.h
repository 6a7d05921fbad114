/* Signature and attestation tags (CONTRACT §12): cosign's `sha256-<hex>.sig`, `.att` and
 * `.sbom`, any `*.sig` or `*.att`, and the OCI referrers tag scheme's `sha256-<hex>`. They name
 * artifacts about an image, never an image to deploy, so no policy counts them as candidates,
 * whatever its exclusionList and filterTags. */
#ifndef IMAGEGUARD_SIGTAG_H
#define IMAGEGUARD_SIGTAG_H

#include <stdbool.h>
#include <stddef.h>

/* True when the len bytes at tag are such a tag. */
bool sigtag_is_signature(const char *tag, size_t len);

#endif
