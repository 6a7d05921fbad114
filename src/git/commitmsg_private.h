/* Shared by commitmsg.c and commitmsg_data.c: Flux's template data from a commit's changes. */
#ifndef IMAGEGUARD_COMMITMSG_PRIVATE_H
#define IMAGEGUARD_COMMITMSG_PRIVATE_H

#include "imageguard/git/commitmsg.h"
#include "imageguard/template/tval.h"

/* source.TemplateData for in, in arena a; NULL when the arena is exhausted. */
const struct tval *commitmsg_data(struct tarena *a, const struct commitmsg_input *in);

#endif
