/* WWW-Authenticate header values (RFC 7235), as a registry or a proxy could send them. */
#include <ctype.h>

#include "fuzz.h"

#include "imageguard/util/error.h"
#include "imageguard/registry/wwwauth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wwwauth_challenge ch = WWWAUTH_CHALLENGE_INIT;
	struct error err = ERROR_INIT;
	char *header = fuzz_strndup(data, size);
	int rc = wwwauth_parse(&ch, header, &err);

	FUZZ_CHECK(rc == 0 || rc == IG_ENOTFOUND || rc == IG_EINVALID || rc == IG_EFAIL);
	FUZZ_CHECK(rc == 0 || err.msg[0]);
	if (rc == 0) {
		FUZZ_CHECK(ch.scheme && ch.scheme[0]);
		for (const char *s = ch.scheme; *s; s++)
			FUZZ_CHECK(!isupper((unsigned char)*s));
	}
	wwwauth_release(&ch);
	wwwauth_release(&ch); /* release leaves the struct reusable */
	free(header);
	return 0;
}
