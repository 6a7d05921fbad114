/* Strict access to Sigstore's protobuf JSON: nulls as absent, unknown members refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/sigjson.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

json_t *sigjson_get(const json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name);

	return json_is_null(v) ? NULL : v;
}

bool sigjson_only(const json_t *obj, const char *const *keys)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return false;
	json_object_foreach((json_t *)obj, key, v)
	{
		const char *const *k = keys;

		(void)v;
		while (*k && strcmp(*k, key) != 0)
			k++;
		if (!*k)
			return false;
	}
	return true;
}

bool sigjson_int64(int64_t *out, const json_t *v)
{
	const char *s = json_string_value(v);
	char *end;
	long long n;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return *out >= 0;
	}
	if (!s || !*s || *s < '0' || *s > '9' || strlen(s) > 19)
		return false;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = n;
	return true;
}

bool sigjson_int64_or_zero(int64_t *out, const json_t *v)
{
	*out = 0;
	return !v || sigjson_int64(out, v);
}

int sigjson_b64(struct buf *out, const json_t *v, size_t max)
{
	const char *s = json_string_value(v);

	out->max = max;
	return s ? sigcrypto_b64decode(out, s, json_string_length(v)) : IG_EINVALID;
}
