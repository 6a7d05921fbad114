/* What an image says about itself, without I/O: the manifest or index a registry serves (which
 * config blob, which platform's manifest) and the image config's `created` time, so that two
 * builds pushed under one mutable tag can be ordered by when they were built. */
#ifndef IMAGEGUARD_IMAGECONFIG_H
#define IMAGEGUARD_IMAGECONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct buf;
struct error;

#define IMAGECONFIG_DIGEST_MAX 160   /* "sha512:" + 128 hex, with room */
#define IMAGECONFIG_PLATFORM_MAX 128 /* "os/arch/variant" */
#define IMAGECONFIG_DEFAULT_PLATFORM "linux/amd64"

/* One step from a manifest body towards the image config. */
struct imageconfig_ref {
	bool is_index;                               /* digest names a platform's manifest */
	char digest[IMAGECONFIG_DIGEST_MAX + 1];     /* the child manifest, or the config blob */
	int64_t size;                                /* the descriptor's size; -1 when absent */
	char platform[IMAGECONFIG_PLATFORM_MAX + 1]; /* with is_index: the entry chosen */
};

/* Parses a manifest body (OCI or Docker v2; image manifest or index/manifest list). For an
 * index, picks the entry of platform ("os/arch[/variant]", NULL: linux/amd64): os and
 * architecture must match; a variant asked for must match too (arm64's "v8" and no variant
 * are the same), and without one an entry without variant is preferred over the first with
 * one. Returns 0; IG_ENOTFOUND when the index has no such entry; IG_EINVALID (schema 1,
 * not JSON, no config descriptor, a malformed digest) with err set. */
int imageconfig_manifest(struct imageconfig_ref *out, const struct buf *body, const char *platform,
                         struct error *err);

/* The `created` of an image config. */
struct imageconfig_created {
	bool known;           /* false: missing, null or a placeholder (see why) */
	struct timespec time; /* with known: UTC seconds and nanoseconds */
	char why[160];        /* without known: one line saying why, for a hold's message */
};

/* Parses an image config body's `created`. A missing or null field, or a placeholder at or
 * before 1970-01-01T00:00:00Z (reproducible builds write the epoch, Go tools its zero time)
 * gives known false with why set: nobody can tell when such an image was built. Returns 0;
 * IG_EINVALID when the body is not a JSON object or `created` is not an RFC3339 string. */
int imageconfig_created(struct imageconfig_created *out, const struct buf *body, struct error *err);

/* Parses an RFC3339 date-time with optional fraction (digits past nanoseconds ignored) and a
 * Z or +hh:mm zone into UTC seconds (years 0001-9999) and nanoseconds. Returns 0 or
 * IG_EINVALID with err set. */
int imageconfig_parse_time(struct timespec *out, const char *s, size_t len, struct error *err);

/* True for "os/arch" or "os/arch/variant" (lower-case letters, digits, '_', '.', '-'). */
bool imageconfig_is_valid_platform(const char *s);

/* Writes t as RFC3339 UTC ("2026-01-02T03:04:05.5Z", fraction without trailing zeros) into
 * out (48 bytes suffice). */
void imageconfig_format_time(char *out, size_t n, const struct timespec *t);

/* <0, 0, >0 as a is before, equal to, after b. */
int imageconfig_time_cmp(const struct timespec *a, const struct timespec *b);

#endif
