/* The work tree against Git's index by stat data alone (gitstore's fast path before libgit2's
 * status walk). Private to src/git. */
#ifndef IMAGEGUARD_GITWALK_H
#define IMAGEGUARD_GITWALK_H

#include <stdbool.h>

#include <git2.h>

struct strvec;

/* Appends to out (sorted) every path whose work-tree file is not as index records it by
 * stat data (mode, size, inode, mtime, ctime): missing, new, or changed. *undecided is set
 * when stat data cannot settle it and libgit2's status must: an entry as new as index_file
 * (racy), a conflict, gitlink or flagged entry, a nested .git, an unreadable directory, a
 * non-regular file. Returns 0 or IG_EFAIL (out of memory). */
int gitwalk_changes(struct strvec *out, bool *undecided, git_index *index, const char *workdir,
                    const char *index_file);

#endif
