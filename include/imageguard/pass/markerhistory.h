/* A marker's memory in Git: whether a digest it shows now was held there before and replaced
 * by a later commit (CONTRACT §6, for re-pointed tags whose builds cannot be ordered). */
#ifndef IMAGEGUARD_MARKERHISTORY_H
#define IMAGEGUARD_MARKERHISTORY_H

#include <stdbool.h>

struct error;
struct marker;

/* Sets *out true when digest was held by a marker of m's policy in an earlier version of m's
 * file (the clone at workdir, its last GITHISTORY_MAX_COMMITS commits) and is held by none of
 * them at HEAD: a later commit replaced it. Returns 0, or negative with a one-line error. */
int markerhistory_replaced(bool *out, const char *workdir, const struct marker *m,
                           const char *digest, struct error *err);

#endif
