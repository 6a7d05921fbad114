/* A guard run before libyaml reads untrusted YAML: libyaml's scanner re-checks every open flow
 * level on each token, so a file of 100,000 nested '[' takes minutes. Deep flow nesting is
 * refused up front, at a cost linear in the input. */
#ifndef IMAGEGUARD_YAMLDEPTH_H
#define IMAGEGUARD_YAMLDEPTH_H

#include <stddef.h>

/* Deeper than any real manifest or configuration; cheap for libyaml (max² token checks). */
#define YAMLDEPTH_MAX 512

/* Returns 0 when data nests at most max_depth collections deep (or does not parse: the real
 * parse reports that), IG_ETOOBIG when deeper, with *line_out the 1-based line where the limit
 * was passed, IG_EFAIL when out of memory. */
int yamldepth_check(size_t *line_out, const char *data, size_t len, size_t max_depth);

#endif
