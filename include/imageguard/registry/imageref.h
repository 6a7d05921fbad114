/* Image references: `[host[:port]/]path[:tag][@algo:hex]`, split as written and normalised the
 * way Docker does (`nginx` -> registry-1.docker.io/library/nginx). */
#ifndef IMAGEGUARD_IMAGEREF_H
#define IMAGEGUARD_IMAGEREF_H

#include <stdbool.h>
#include <stddef.h>

struct error;

/* Where the parts of a reference lie in the string it was split from (no allocation). */
struct imageref_parts {
	size_t name_len;  /* [0, name_len) is the name as written, host and path */
	size_t tag_start; /* the tag, without ':' (tag_len 0: none) */
	size_t tag_len;
	size_t digest_start; /* the digest, without '@' (digest_len 0: none) */
	size_t digest_len;
};

/* Splits s into name, tag and digest without validating them: a ':' belongs to the tag only
 * after the last '/', so registry ports stay in the name. */
void imageref_split(struct imageref_parts *out, const char *s, size_t len);

struct imageref {
	char *registry;   /* "registry-1.docker.io", "ghcr.io", "127.0.0.1:5000" */
	char *repository; /* "library/nginx", "org/app" */
	char *tag;        /* NULL when absent */
	char *digest;     /* NULL when absent */
};

#define IMAGEREF_INIT                                                                              \
	{                                                                                          \
		NULL, NULL, NULL, NULL                                                             \
	}

enum {
	IMAGEREF_ALLOW_TAG = 1,    /* a tag may be present */
	IMAGEREF_ALLOW_DIGEST = 2, /* a digest may be present */
};

/* Parses and validates s (lower-case path components, tag and digest grammar), normalising
 * Docker Hub names. A tag or digest not allowed by flags is IG_EINVALID with a clear message.
 * out is caller-owned; release it with imageref_release. */
int imageref_parse(struct imageref *out, const char *s, unsigned flags, struct error *err);
void imageref_release(struct imageref *ref);

/* True for the Docker Hub registry host after normalisation. */
bool imageref_is_docker_hub(const struct imageref *ref);

/* "host/repository" in a newly allocated string (free() it); NULL when out of memory. */
char *imageref_name(const struct imageref *ref);

/* Grammar checks, exported for the marker and config layers. */
bool imageref_is_valid_tag(const char *s, size_t len);
bool imageref_is_valid_digest(const char *s, size_t len);

#endif
