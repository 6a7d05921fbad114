/* The template module's entry points: parse a source into a tree held in its own arena, and
 * free it (execution is in texec.c). */
#include <stdlib.h>
#include <string.h>

#include "template_private.h"

/* The tree of a source of TEMPLATE_SRC_MAX bytes needs far less than this. */
#define TREE_ARENA_MAX ((size_t)32 << 20)

int template_parse(struct template **out, const char *src, const char *name, struct error *err)
{
	struct template *t = calloc(1, sizeof(*t));
	size_t len = strlen(src);
	char *copy;
	int rc;

	*out = NULL;
	if (!t)
		return error_oom(err);
	t->arena = (struct tarena)TARENA_INIT(TREE_ARENA_MAX);
	if (!(t->name = strdup(name ? name : "template"))) {
		free(t);
		return error_oom(err);
	}
	if (len > TEMPLATE_SRC_MAX) {
		rc = error_set(err, IG_ETOOBIG, "template '%s': longer than %d bytes", t->name,
		               TEMPLATE_SRC_MAX);
		template_free(t);
		return rc;
	}
	/* text nodes point into the copy, which lives as long as the tree */
	if (!(copy = tarena_strndup(&t->arena, src, len))) {
		template_free(t);
		return error_oom(err);
	}
	if ((rc = tparse_run(t, copy, len, err)) < 0) {
		template_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void template_free(struct template *t)
{
	if (!t)
		return;
	tarena_release(&t->arena);
	free(t->name);
	free(t);
}
