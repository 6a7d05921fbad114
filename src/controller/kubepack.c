/* What the watches of run --kube keep of an ImagePolicy or ImageRepository: the slim object
 * (kubesource_slim) as one compact JSON text, not a tree. A tree of jansson values costs about
 * 2.5 KiB an object (an allocation per value, a hashtable per object); the text about 0.6 KiB
 * with its holder (docs/performance.md, "Where a shard's memory goes"). */
#include <stdlib.h>
#include <string.h>

#include "kubesource_private.h"

/* One string, no holder: the text, then a NUL and the resourceVersion. The watch compares a
 * kept string up to its first NUL (kubewatch_same), which is what the resourceVersion must be
 * to it: a write of an object's status alone changes the version and nothing a configuration
 * reads. */
json_t *kubesource_pack(const json_t *obj)
{
	json_t *slim = kubesource_slim(obj), *md, *out = NULL;
	char *rv = NULL, *dump = NULL, *both;
	size_t n, r = 0;

	if (!slim)
		return NULL;
	md = json_object_get(slim, "metadata");
	if (json_string_length(json_object_get(md, "resourceVersion"))) {
		if (!(rv = strdup(json_string_value(json_object_get(md, "resourceVersion")))))
			goto done;
		r = strlen(rv);
		json_object_del(md, "resourceVersion");
	}
	if (!(dump = json_dumps(slim, JSON_COMPACT)))
		goto done;
	n = strlen(dump);
	if (!rv) {
		out = json_stringn_nocheck(dump, n);
	} else if ((both = realloc(dump, n + 1 + r + 1))) {
		dump = both;
		memcpy(dump + n + 1, rv, r + 1);
		out = json_stringn_nocheck(dump, n + 1 + r);
	}
done:
	free(dump);
	free(rv);
	json_decref(slim);
	return out;
}

json_t *kubesource_unpack(const json_t *kept)
{
	const char *text = json_string_value(kept);
	size_t len = json_string_length(kept), n;
	json_t *obj, *md;

	if (!text)
		return json_incref((json_t *)kept);
	n = strlen(text);
	if (!(obj = json_loadb(text, n, 0, NULL)))
		return NULL;
	if (len > n + 1 && (md = json_object_get(obj, "metadata")) &&
	    json_object_set_new(md, "resourceVersion", json_string(text + n + 1)) < 0) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}
