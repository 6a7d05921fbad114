/* Token response JSON from a Bearer realm ({"token"|"access_token", "expires_in"}). */
#include "fuzz.h"

#include "imageguard/registry/auth.h"
#include "imageguard/util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *token = NULL;
	long expires = -1;
	int rc = auth_parse_token(&token, &expires, (const char *)data, size);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
	if (rc == 0) {
		FUZZ_CHECK(token && token[0]);
		FUZZ_CHECK(expires >= 60 && expires <= 86400);
	} else {
		FUZZ_CHECK(!token);
	}
	free(token);
	return 0;
}
