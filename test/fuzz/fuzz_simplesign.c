/* cosign's simple-signing payload and DSSE in-toto statements: whatever the registry serves,
 * a payload that parses names a valid digest, and a statement check ends in an answer. */
#include "fuzz.h"

#include "imageguard/registry/imageref.h"
#include "imageguard/sigstore/dsse.h"
#include "imageguard/sigstore/simplesign.h"
#include "imageguard/util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct simplesign ss;
	struct error err = ERROR_INIT;
	bool found = false;
	int rc;

	fuzz_quiet();
	rc = simplesign_parse(&ss, (const char *)data, size, &err);
	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_ETOOBIG);
	if (rc == 0)
		FUZZ_CHECK(imageref_is_valid_digest(ss.digest, strlen(ss.digest)));
	else
		FUZZ_CHECK(err.msg[0] && !strchr(err.msg, '\n'));
	rc = dsse_statement_has_subject(
	    &found, (const char *)data, size,
	    "sha256:634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00", &err);
	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_ETOOBIG);
	FUZZ_CHECK(rc == 0 || !found);
	return 0;
}
