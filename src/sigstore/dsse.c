/* DSSE's pre-authentication encoding and the in-toto statement subject check. */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "imageguard/sigstore/dsse.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

int dsse_pae(struct buf *out, const char *type, const unsigned char *body, size_t len)
{
	int rc;

	if ((rc = buf_printf(out, "DSSEv1 %zu %s %zu ", strlen(type), type, len)) < 0)
		return rc;
	return buf_append(out, body, len);
}

/* True when the subject's digest map has algo: hex (hex compared without case). */
static bool subject_matches(json_t *subject, const char *algo, const char *hex)
{
	const char *v =
	    json_string_value(json_object_get(json_object_get(subject, "digest"), algo));

	return v && strlen(v) == strlen(hex) && strncasecmp(v, hex, strlen(hex)) == 0;
}

static bool is_statement_type(const char *t)
{
	return t && (strcmp(t, "https://in-toto.io/Statement/v0.1") == 0 ||
	             strcmp(t, "https://in-toto.io/Statement/v1") == 0);
}

int dsse_statement_has_subject(bool *found, const char *payload, size_t len, const char *digest,
                               struct error *err)
{
	const char *colon = strchr(digest, ':');
	char algo[16];
	json_t *root = NULL, *subjects, *s;
	int error = 0;
	size_t i;

	*found = false;
	if (len > DSSE_MAX_PAYLOAD)
		return error_set(err, IG_ETOOBIG, "statement: larger than %d bytes",
		                 DSSE_MAX_PAYLOAD);
	if (!colon || colon == digest || (size_t)(colon - digest) >= sizeof(algo))
		return error_set(err, IG_EINVALID, "statement: '%.80s' is not a digest", digest);
	snprintf(algo, sizeof(algo), "%.*s", (int)(colon - digest), digest);
	root = json_loadb(payload, len, JSON_REJECT_DUPLICATES, NULL);
	subjects = json_object_get(root, "subject");
	if (!json_is_object(root) ||
	    !is_statement_type(json_string_value(json_object_get(root, "_type"))) ||
	    !json_is_array(subjects)) {
		error = error_set(err, IG_EINVALID, "statement: not an in-toto statement");
		goto done;
	}
	if (json_array_size(subjects) > DSSE_MAX_SUBJECTS) {
		error = error_set(err, IG_ETOOBIG, "statement: more than %d subjects",
		                  DSSE_MAX_SUBJECTS);
		goto done;
	}
	json_array_foreach(subjects, i, s)
	{
		if (subject_matches(s, algo, colon + 1))
			*found = true;
	}
done:
	json_decref(root);
	return error;
}
