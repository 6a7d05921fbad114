/* What a marker holds and what it should hold: full references split with imageref_split, so
 * registry ports and digests stay where they belong. */
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/markers/markers.h"

static int dup_out(char **out, const char *s, struct error *err)
{
	*out = strdup(s);
	return *out ? 0 : error_oom(err);
}

/* name:tag[@digest] with the policy's name whatever the marker held: exactly the string
 * Flux writes (its setter replaces the whole reference). */
static int image_value(char **out, const struct marker *m, const char *name, const char *tag,
                       const char *digest, struct error *err)
{
	struct buf b = BUF_INIT;
	int rc;

	if (!name || !*name)
		return error_set(err, IG_EINVALID, "'%s:%zu': no image name to write", m->file,
		                 m->line);
	rc = buf_printf(&b, "%s:%s", name, tag);
	if (rc == 0 && digest && *digest)
		rc = buf_printf(&b, "@%s", digest);
	if (rc < 0) {
		buf_release(&b);
		return error_oom(err);
	}
	*out = buf_detach(&b);
	return 0;
}

int markers_value_for(char **out, const struct marker *m, const char *name, const char *tag,
                      const char *digest, struct error *err)
{
	const char *v = m->part == MARKER_NAME     ? name
	                : m->part == MARKER_TAG    ? tag
	                : m->part == MARKER_DIGEST ? digest
	                                           : tag;

	*out = NULL;
	if (!v || !*v)
		return error_set(err, IG_EINVALID, "'%s:%zu': policy '%s' gives no %s to write",
		                 m->file, m->line, m->policy,
		                 m->part == MARKER_IMAGE ? "tag" : markers_part_name(m->part));
	if (m->part == MARKER_IMAGE)
		return image_value(out, m, name, tag, digest, err);
	return dup_out(out, v, err);
}

/* The `:tag` marker of the same policy nearest to m in its file, or NULL. */
static const struct marker *sibling_tag(const struct marker_set *s, const struct marker *m)
{
	const struct marker *best = NULL;
	size_t best_dist = (size_t)-1;

	for (size_t i = 0; i < s->len; i++) {
		const struct marker *o = &s->items[i];
		size_t dist = o->line > m->line ? o->line - m->line : m->line - o->line;

		if (o->part != MARKER_TAG || strcmp(o->file, m->file) != 0 ||
		    strcmp(o->policy, m->policy) != 0)
			continue;
		if (dist < best_dist) {
			best = o;
			best_dist = dist;
		}
	}
	return best;
}

static int dup_part(char **out, const char *s, size_t start, size_t len)
{
	*out = len ? strndup(s + start, len) : NULL;
	return !len || *out ? 0 : IG_EFAIL;
}

int markers_current(struct marker_current *out, const struct marker_set *s, const struct marker *m)
{
	const struct marker *tag = NULL;
	struct imageref_parts p;

	out->tag = out->digest = NULL;
	switch (m->part) {
	case MARKER_IMAGE:
		imageref_split(&p, m->value, strlen(m->value));
		if (dup_part(&out->tag, m->value, p.tag_start, p.tag_len) < 0 ||
		    dup_part(&out->digest, m->value, p.digest_start, p.digest_len) < 0)
			goto fail;
		return 0;
	case MARKER_TAG:
		return dup_part(&out->tag, m->value, 0, strlen(m->value));
	case MARKER_DIGEST:
	case MARKER_NAME:
		/* the digest is the value (a `:name` holds none), the tag is the sibling's */
		if (m->part == MARKER_DIGEST &&
		    dup_part(&out->digest, m->value, 0, strlen(m->value)) < 0)
			goto fail;
		tag = sibling_tag(s, m);
		if (tag && dup_part(&out->tag, tag->value, 0, strlen(tag->value)) < 0)
			goto fail;
		return 0;
	}
	return 0;
fail:
	markers_current_release(out);
	return IG_EFAIL;
}

void markers_current_release(struct marker_current *c)
{
	free(c->tag);
	free(c->digest);
	c->tag = c->digest = NULL;
}
