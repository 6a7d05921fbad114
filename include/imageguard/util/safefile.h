/* Files inside an untrusted tree (a Git clone): every path is resolved from an open directory
 * one component at a time with O_NOFOLLOW, so no symbolic link is ever followed, and a file
 * is replaced through an O_EXCL temporary with a random name in its own directory. */
#ifndef IMAGEGUARD_SAFEFILE_H
#define IMAGEGUARD_SAFEFILE_H

#include <stddef.h>

#include "imageguard/util/error.h"

struct buf;

/* Opens root itself (it may be a symbolic link: the caller named it). Returns 0 with *out an
 * O_DIRECTORY descriptor the caller closes, IG_ENOTFOUND or IG_EINVALID (not a directory). */
int safefile_open_root(int *out, const char *root, struct error *err);

/* Opens the directory rel ("a/b"; "" or NULL: dirfd itself) below dirfd. "..", absolute paths
 * and symbolic links at any component are refused (IG_EINVALID); IG_ENOTFOUND when absent.
 * *out is a new descriptor the caller closes. */
int safefile_open_dir(int *out, int dirfd, const char *rel, struct error *err);

/* Opens rel below dirfd for reading: no component may be a symbolic link and the file must
 * be a regular file (a FIFO or device is refused without blocking: IG_EINVALID). *out is the
 * caller's. Messages read "'REL': REASON". */
int safefile_open_read(int *out, int dirfd, const char *rel, struct error *err);

/* Reads the regular file rel below dirfd into b (replacing its content, b->max is the cap:
 * IG_ETOOBIG above it). Returns 0, IG_ENOTFOUND, IG_EINVALID (symbolic link, not a regular
 * file, bad path), IG_ETOOBIG or IG_EFAIL. */
int safefile_read_at(struct buf *b, int dirfd, const char *rel, struct error *err);

/* safefile_read_at below the directory root (root itself may be a symbolic link). */
int safefile_read(struct buf *b, const char *root, const char *rel, struct error *err);

/* Replaces the regular file rel below root with len bytes of data, keeping its mode: a new
 * file created O_CREAT|O_EXCL|O_NOFOLLOW under a random name in the same directory, written,
 * fsync'ed and renamed over rel. rel must already be a regular file (a symbolic link or
 * anything else is refused, IG_EINVALID), and no component of its path may be a link. */
int safefile_replace(const char *root, const char *rel, const void *data, size_t len,
                     struct error *err);

/* Writes path whole, for a cache of this process's own (no fsync: a lost one is rebuilt): a
 * temporary "<path>.tmp-<pid>" created O_CREAT|O_EXCL|O_NOFOLLOW, 0600, renamed over path.
 * Returns 0, or -1 (nothing left behind). */
int safefile_write_cache(const char *path, const void *data, size_t len);

/* Writes all len bytes of data to fd, again after EINTR and short writes. Returns 0, or -1
 * with errno set (EIO when write(2) makes no progress). */
int safefile_write_all(int fd, const void *data, size_t len);

/* The part of a safefile message after "'REL': " (for callers that name the file themselves). */
const char *safefile_reason(const struct error *err);

#endif
