/* cosign's simple-signing payload, parsed strictly: exactly the fields cosign writes in
 * `critical`, a valid digest, the type cosign names. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/sigstore/simplesign.h"
#include "imageguard/util/error.h"

/* True when obj is an object whose keys are all in names (NULL-terminated). */
static bool only_keys(json_t *obj, const char *const *names)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		bool known = false;

		(void)v;
		for (const char *const *n = names; *n && !known; n++)
			known = strcmp(key, *n) == 0;
		if (!known)
			return false;
	}
	return true;
}

/* obj.name.inner as a string, obj.name an object with that one key. */
static const char *nested(json_t *obj, const char *name, const char *inner)
{
	json_t *o = json_object_get(obj, name);
	const char *const keys[] = {inner, NULL};

	if (!json_is_object(o) || !only_keys(o, keys))
		return NULL;
	return json_string_value(json_object_get(o, inner));
}

static int critical(struct simplesign *out, json_t *c, struct error *err)
{
	static const char *const keys[] = {"identity", "image", "type", NULL};
	const char *type = json_string_value(json_object_get(c, "type"));
	const char *digest = nested(c, "image", "docker-manifest-digest");
	const char *ref = nested(c, "identity", "docker-reference");

	if (!json_is_object(c) || !only_keys(c, keys))
		return error_set(err, IG_EINVALID, "payload: 'critical' is not cosign's");
	if (!type || strcmp(type, SIMPLESIGN_TYPE) != 0)
		return error_set(err, IG_EINVALID, "payload: type is not '%s'", SIMPLESIGN_TYPE);
	if (!digest || strlen(digest) >= sizeof(out->digest) ||
	    !imageref_is_valid_digest(digest, strlen(digest)))
		return error_set(err, IG_EINVALID, "payload: no valid docker-manifest-digest");
	if (!ref || strlen(ref) >= sizeof(out->reference))
		return error_set(err, IG_EINVALID, "payload: no valid docker-reference");
	snprintf(out->digest, sizeof(out->digest), "%s", digest);
	snprintf(out->reference, sizeof(out->reference), "%s", ref);
	return 0;
}

int simplesign_parse(struct simplesign *out, const char *data, size_t len, struct error *err)
{
	static const char *const keys[] = {"critical", "optional", NULL};
	json_t *root, *opt;
	int error;

	memset(out, 0, sizeof(*out));
	if (len > SIMPLESIGN_MAX)
		return error_set(err, IG_ETOOBIG, "payload: larger than %d bytes", SIMPLESIGN_MAX);
	root = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(root) || !only_keys(root, keys)) {
		error = error_set(err, IG_EINVALID, "payload: not a simple-signing JSON object");
		goto done;
	}
	opt = json_object_get(root, "optional");
	if (opt && !json_is_object(opt) && !json_is_null(opt)) {
		error = error_set(err, IG_EINVALID, "payload: 'optional' is not an object");
		goto done;
	}
	error = critical(out, json_object_get(root, "critical"), err);
done:
	json_decref(root);
	return error;
}
