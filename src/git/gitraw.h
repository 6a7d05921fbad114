/* Byte-exact blobs: the cached clone's $GIT_DIR/info/attributes unsets every attribute that
 * makes Git convert content (CONTRACT §5). Private to src/git. */
#ifndef IMAGEGUARD_GITRAW_H
#define IMAGEGUARD_GITRAW_H

#include <stdbool.h>

struct error;

/* Makes <workdir>/.git/info/attributes unset text, eol, crlf, ident, filter and
 * working-tree-encoding for every path. Git reads that file before any .gitattributes of the
 * tree, so a checkout writes each blob's bytes and staging stores each file's bytes, whatever
 * the tree's attributes or core.autocrlf say. *changed is set when the file was missing or
 * different (files checked out before then may hold converted bytes). Returns 0 or IG_EFAIL
 * naming the file. */
int gitraw_pin(bool *changed, const char *workdir, struct error *err);

#endif
