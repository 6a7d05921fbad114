/* What gitstore.c lends the modules that work on its clone (gitmarkers.c). */
#ifndef IMAGEGUARD_GITSTORE_PRIVATE_H
#define IMAGEGUARD_GITSTORE_PRIVATE_H

#include <git2.h>

struct gitstore;
struct markerindex;

/* The open repository (borrowed, valid until gitstore_free). */
git_repository *gitstore_repository(const struct gitstore *g);
/* The clone's directory, "<state_dir>/git/<key>" (borrowed). */
const char *gitstore_dir(const struct gitstore *g);
/* The marker index loaded for this open, NULL until gitmarkers_scan loads it; gitstore_free
 * frees it. */
struct markerindex **gitstore_markerindex(struct gitstore *g);

/* The work tree was rewritten wholesale (hard reset): bytes of an unchanged blob may differ
 * (attributes), so the marker index is forgotten, in memory and on disk. */
void gitmarkers_forget(struct gitstore *g);

#endif
