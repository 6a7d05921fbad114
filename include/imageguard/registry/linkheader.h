/* Link header parsing (RFC 8288) for paginated tag lists: the rel="next" target, resolved
 * against the URL of the request that returned it. */
#ifndef IMAGEGUARD_LINKHEADER_H
#define IMAGEGUARD_LINKHEADER_H

struct error;

/* Finds the link whose rel (quoted or not, possibly a space-separated list, any case) contains
 * "next" in value (every Link value joined by ", "), resolves it against base_url and stores
 * the absolute URL in *out (owned, free() it). No next link: *out NULL and 0. A malformed value
 * is IG_EINVALID (a broken header must not read as "last page"). */
int linkheader_next(char **out, const char *value, const char *base_url, struct error *err);

#endif
