/* Time text as Kubernetes objects write it: Go durations ("1h30m", "5m", "500ms") and RFC3339
 * instants ("2026-12-01T00:00:00Z"). */
#ifndef IMAGEGUARD_DURATION_H
#define IMAGEGUARD_DURATION_H

#include <stdint.h>
#include <time.h>

struct error;

/* Parses a Go duration (time.ParseDuration: optional sign, then one or more decimal numbers
 * with optional fraction, each with a unit ns, us, µs, ms, s, m, h; "0" alone is allowed) into
 * nanoseconds. Returns 0 or IG_EINVALID (bad syntax, unknown unit, overflow) with err set. */
int duration_parse(int64_t *out_ns, const char *s, struct error *err);

/* Parses an RFC3339 date-time ("2026-12-01T10:00:00Z", "...T10:00:00.5+02:00") into a time_t
 * (fractions of a second dropped). Returns 0 or IG_EINVALID with err set. */
int rfc3339_parse(time_t *out, const char *s, struct error *err);

#endif
