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
	return *out ? 0 : error_set(err, IG_EFAIL, "out of memory");
}

static int image_value(char **out, const struct marker *m, const char *name, const char *tag,
                       const char *digest, struct error *err)
{
	struct imageref_parts p;
	struct buf b = BUF_INIT;
	int rc;

	imageref_split(&p, m->value, strlen(m->value));
	if (p.name_len > 0)
		rc = buf_append(&b, m->value, p.name_len);
	else if (name && *name)
		rc = buf_puts(&b, name);
	else
		return error_set(err, IG_EINVALID, "'%s:%zu': no image name to write", m->file,
		                 m->line);
	if (rc == 0)
		rc = buf_printf(&b, ":%s", tag);
	if (rc == 0 && digest && *digest)
		rc = buf_printf(&b, "@%s", digest);
	if (rc < 0) {
		buf_release(&b);
		return error_set(err, IG_EFAIL, "out of memory");
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

int markers_current_tag(char **out, const struct marker *m)
{
	struct imageref_parts p;

	*out = NULL;
	if (m->part == MARKER_TAG) {
		*out = strdup(m->value);
		return *out ? 0 : IG_EFAIL;
	}
	if (m->part != MARKER_IMAGE)
		return 0;
	imageref_split(&p, m->value, strlen(m->value));
	if (p.tag_len == 0)
		return 0;
	*out = strndup(m->value + p.tag_start, p.tag_len);
	return *out ? 0 : IG_EFAIL;
}
