/* Link header values (RFC 8288) of paginated tag lists, resolved against the request URL. */
#include "fuzz.h"

#include "imageguard/util/error.h"
#include "imageguard/registry/linkheader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const bases[] = {
	    "https://registry.example:5000/v2/org/app/tags/list?n=100",
	    "http://127.0.0.1:5000/v2/library/nginx/tags/list",
	};
	char *value = fuzz_strndup(data, size);

	for (size_t k = 0; k < sizeof(bases) / sizeof(bases[0]); k++) {
		struct error err = ERROR_INIT;
		char *next = (char *)"unset";
		int rc = linkheader_next(&next, value, bases[k], &err);

		FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
		if (rc == 0)
			FUZZ_CHECK(!next || next[0]);
		else
			FUZZ_CHECK(err.msg[0]);
		if (rc == 0)
			free(next);
	}
	free(value);
	return 0;
}
