/* The settle window's memory (CONTRACT §11): since when each policy's candidate has been listed
 * with the digest its HEAD confirmed, kept in <state-dir>/settle.json so that a restart or a
 * failover does not restart every clock. Not thread-safe: one pass at a time. */
#ifndef IMAGEGUARD_SETTLE_H
#define IMAGEGUARD_SETTLE_H

#include <stddef.h>
#include <time.h>

struct error;
struct settle;

/* Reads <state_dir>/settle.json when it exists (a missing file is an empty memory; a damaged
 * one is logged and treated as empty, so a bad file can only restart clocks, never skip a
 * window). Returns 0 or IG_EFAIL (out of memory, an unreadable file). */
int settle_open(struct settle **out, const char *state_dir, struct error *err);
void settle_free(struct settle *s);

/* Since when policy's candidate with digest (NULL: none confirmed) has been listed. A policy
 * seen with another candidate or digest than last time starts again at now: the one it had
 * vanished or was re-pointed. Returns the time, or (time_t)-1 when out of memory. */
time_t settle_since(struct settle *s, const char *policy, const char *candidate, const char *digest,
                    time_t now);

/* After a successful listing of policy's repository: forgets its candidate when the listing
 * (n tags) no longer holds it, so that a candidate that vanished starts again when it is back.
 * A failed listing says nothing and keeps the clock. */
void settle_keep_listed(struct settle *s, const char *policy, const char *const *tags, size_t n);

/* Writes the memory back when it changed: a temporary file (0600) in the state dir, fsync,
 * rename. Returns 0 or IG_EFAIL with a one-line error naming the file. */
int settle_save(struct settle *s, struct error *err);

#endif
