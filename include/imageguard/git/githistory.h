/* The earlier versions of one file in a Git clone: the memory that lets a re-pointed tag's
 * digest be judged when build times cannot order the builds (CONTRACT §6). */
#ifndef IMAGEGUARD_GITHISTORY_H
#define IMAGEGUARD_GITHISTORY_H

#include <stdbool.h>
#include <stddef.h>

struct buf;
struct error;

/* Commits walked at most, newest first: a bound on the work one decision can cost. */
#define GITHISTORY_MAX_COMMITS 2000

/* Called once per distinct version of the file (by blob id), newest first, with its bytes
 * (borrowed for the call); at_head says it is the version HEAD has. Return 0 to go on, 1 to
 * stop, negative to fail. */
typedef int (*githistory_fn)(void *ctx, const char *data, size_t len, bool at_head);

/* Walks the commits reachable from HEAD of the repository whose work tree is workdir (at most
 * max_commits, children before parents: HEAD first), and hands fn each distinct version of the file
 * at path (relative to the work tree) that is a regular blob no larger than max_bytes: symbolic
 * links and submodules are never read. Returns 0 (also when fn stopped it, or the file never
 * existed), fn's negative code, or IG_EFAIL with a one-line error. */
int githistory_file_versions(const char *workdir, const char *path, size_t max_commits,
                             size_t max_bytes, githistory_fn fn, void *ctx, struct error *err);

/* Walks the first-parent line from the head commit of the clone at workdir, newest first, at
 * most max_commits commits (the root ends it sooner), and appends to out the message of the
 * first one that match accepts (its cap applies: IG_ETOOBIG); out is left as it was when none
 * does. Returns 0 or IG_EFAIL with a one-line error. */
int githistory_first_message(struct buf *out, const char *workdir, size_t max_commits,
                             bool (*match)(void *ctx, const char *msg), void *ctx,
                             struct error *err);

#endif
