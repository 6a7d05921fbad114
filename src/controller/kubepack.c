/* What the watches of run --kube keep of an ImagePolicy or ImageRepository: the slim object
 * (kubesource_slim) as one compact JSON text, not a tree. A tree of jansson values costs about
 * 2.5 KiB an object (an allocation per value, a hashtable per object); the text about 0.6 KiB
 * with its holder (docs/performance.md, "Where a shard's memory goes"). */
#include <stdlib.h>
#include <string.h>

#include "kubesource_private.h"

/* The holder: {"status": resourceVersion, "packed": text}. The watch compares objects without
 * their "status" (kubewatch_changes), which is what the resourceVersion must be to it: a
 * write of an object's status alone changes the version and nothing a configuration reads. */
json_t *kubesource_pack(const json_t *obj)
{
	json_t *slim = kubesource_slim(obj), *md, *rv = NULL, *out = NULL, *text;
	char *dump = NULL;

	if (!slim)
		return NULL;
	if ((md = json_object_get(slim, "metadata")) &&
	    (rv = json_incref(json_object_get(md, "resourceVersion"))))
		json_object_del(md, "resourceVersion");
	if ((dump = json_dumps(slim, JSON_COMPACT)) &&
	    (text = json_stringn_nocheck(dump, strlen(dump))) && (out = json_object()) &&
	    json_object_set_new(out, "packed", text) == 0 &&
	    (!rv || json_object_set(out, "status", rv) == 0)) {
		free(dump);
		json_decref(rv);
		json_decref(slim);
		return out;
	}
	free(dump);
	json_decref(out);
	json_decref(rv);
	json_decref(slim);
	return NULL;
}

json_t *kubesource_unpack(const json_t *kept)
{
	const char *text = json_string_value(json_object_get(kept, "packed"));
	json_t *obj, *md, *rv = json_object_get(kept, "status");

	if (!text)
		return json_incref((json_t *)kept);
	if (!(obj = json_loads(text, 0, NULL)))
		return NULL;
	if (json_is_string(rv) && (md = json_object_get(obj, "metadata")) &&
	    json_object_set(md, "resourceVersion", rv) < 0) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}
