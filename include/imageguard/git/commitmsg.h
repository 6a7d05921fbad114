/* Commit messages for image updates: imageguard's default (a subject and one line per change)
 * or a Flux `messageTemplate` in a documented subset of Go template syntax (docs/git.md). */
#ifndef IMAGEGUARD_COMMITMSG_H
#define IMAGEGUARD_COMMITMSG_H

#include <stddef.h>

struct buf;
struct error;

struct commitmsg_change {
	const char *policy;    /* "ns/name" */
	const char *old_value; /* the value committed before */
	const char *new_value;
	const char *file;      /* relative to the repository root */
	const char *reason;    /* NULL, or a short note (an override's annotation) */
};

/* Appends the message for changes to out. tmpl NULL or "" gives the default:
 *   imageguard: update N image(s)
 *
 *   ns/name: old -> new (file)
 * with " [reason]" after a change that has one. automation is "ns/name" of the
 * ImageUpdateAutomation; tmpl_name names the template in errors. Returns 0, IG_EINVALID for a
 * template outside the supported subset (the error names tmpl_name, the line and the action),
 * or IG_ETOOBIG when out's cap is reached. */
int commitmsg_render(struct buf *out, const char *tmpl, const char *tmpl_name,
		     const char *automation, const struct commitmsg_change *changes, size_t n,
		     struct error *err);

/* Checks a template without rendering (for check-config); same errors as commitmsg_render. */
int commitmsg_check(const char *tmpl, const char *tmpl_name, struct error *err);

#endif
