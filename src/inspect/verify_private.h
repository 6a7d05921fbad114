/* Shared between verify.c and verify_report.c: what Git wants for one marked container and
 * how results are appended. Not a public interface. */
#ifndef IMAGEGUARD_VERIFY_PRIVATE_H
#define IMAGEGUARD_VERIFY_PRIVATE_H

#include <jansson.h>
#include <stdbool.h>

#include "imageguard/markers/markers.h"
#include "imageguard/inspect/verify.h"
#include "imageguard/markers/workload.h"

struct verify_want {
	const struct marker *m;             /* NULL for a failure of a whole checkout */
	const struct workload_container *c; /* NULL when the marker is not on a container */
	char *tag;                          /* the committed tag, or NULL (digest only) */
	char *digest;                       /* pinned in Git, or resolved from tag; NULL: unknown */
	const char *why_no_digest;          /* with digest NULL after a failed resolution */
	bool resolved;                      /* digest came from the registry */
};

/* Appends one result (strings copied) and counts it; a drift is logged. Returns 0 or
 * IG_EFAIL (out of memory). */
int verify_add(struct verify_report *r, const struct verify_want *w, const char *pod,
               enum verify_status status, bool failed, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Compares one pod's status of the container (NULL: none yet) with w and appends the result;
 * spec_image is what the live workload's template specifies (NULL: unknown). */
int verify_add_container(struct verify_report *r, const struct verify_want *w, const char *pod,
                         const json_t *status, const char *spec_image);

#endif
