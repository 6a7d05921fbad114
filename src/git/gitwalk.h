/* The work tree against Git's index by stat data alone (gitstore's fast path before libgit2's
 * status walk). Private to src/git. */
#ifndef IMAGEGUARD_GITWALK_H
#define IMAGEGUARD_GITWALK_H

#include <stdbool.h>

#include <git2.h>

struct strvec;
struct gitwalk_dirs;

/* Appends to out (sorted) every path whose work-tree file is not as index records it by
 * stat data (mode, size, inode, mtime, ctime): missing, new, or changed. An entry as new as
 * index_file (racy) is decided by hashing its file, as Git does, for a few small regular
 * files; *hashed (unless NULL) counts those found unchanged: an index written now settles
 * them. *undecided is set when the walk cannot settle it and libgit2's status must: more
 * racy entries, a conflict, gitlink or flagged entry, a nested .git, an unreadable
 * directory, a non-regular file. With dirs non-NULL, a decided walk also hands back its
 * directories and their stat data (*dirs, the caller's: gitwalk_dirs_free; NULL when
 * undecided). Returns 0 or IG_EFAIL (out of memory). */
int gitwalk_changes(struct strvec *out, bool *undecided, size_t *hashed, struct gitwalk_dirs **dirs,
                    git_index *index, const char *workdir, const char *index_file);

/* The same answer later in the same open, from one lookup per indexed file and per directory
 * of dirs: a directory is read again only when its inode or times moved, or when it is too
 * young (within a second of the walk) for its times to show an entry added since. Nothing but
 * the caller may have changed the tree since dirs were taken other than through files and
 * directories (a checkout in between must drop dirs). */
int gitwalk_changes_since(struct strvec *out, bool *undecided, size_t *hashed,
                          struct gitwalk_dirs *dirs, git_index *index, const char *workdir,
                          const char *index_file);
void gitwalk_dirs_free(struct gitwalk_dirs *d);

/* How many directories the last gitwalk_changes_since read again (moved or young). */
size_t gitwalk_dirs_moved(const struct gitwalk_dirs *d);

/* The directories of a clean walk kept for the next open (Git's untracked cache, in spirit):
 * saved to path with the checksum of the index they hold for, through a temporary and a
 * rename. They hold for that index as long as every index write since kept each file of an
 * unmoved directory tracked (staging what changed, rewriting tracked files): the caller saves
 * them again with the new checksum then, and any other writer of the index changes the
 * checksum. Returns 0 or IG_EFAIL (best effort: a failed save only costs a walk). */
int gitwalk_dirs_save(const struct gitwalk_dirs *d, const char *path, const git_oid *checksum);

/* What gitwalk_dirs_save wrote, when it was for this checksum: 0 and *out (the caller's),
 * else IG_ENOTFOUND (none, another index's, malformed). Moved directories are found by
 * gitwalk_changes_since as for dirs of this open. */
int gitwalk_dirs_load(struct gitwalk_dirs **out, const char *path, const git_oid *checksum);

/* Removes from the work tree every entry that is neither a regular file nor a directory
 * (links, FIFOs, sockets, devices), at any depth, never following a link; the top .git is
 * left alone. Before a hard reset: libgit2 1.5 writes through a link, and blocks opening a
 * FIFO, that stands where the target has a file or a directory; its checkout makes the
 * tracked links again. Returns 0, IG_ETOOBIG (deeper or larger than a walk goes) or
 * IG_EFAIL (an entry that cannot be read or removed). */
int gitwalk_remove_specials(const char *workdir);

#endif
