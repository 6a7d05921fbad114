/* A Secret's trust material: a trusted_root.json and PEM key and certificate files, whatever
 * they hold, load or fail with a one-line message naming the Secret and the key. */
#include "fuzz.h"

#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"trusted_root.json", "cosign.pub", "fulcio.crt.pem"};
	struct error err = ERROR_INIT;
	struct trustroot *tr;

	fuzz_quiet();
	for (size_t i = 0; i < 3; i++) {
		FUZZ_CHECK(trustroot_new(&tr, "fuzz", &err) == 0);
		if (trustroot_add(tr, keys[i], data, size, &err) < 0) {
			FUZZ_CHECK(strncmp(err.msg, "secret 'fuzz' key '", 19) == 0);
			FUZZ_CHECK(!strchr(err.msg, '\n'));
		} else if (trustroot_finish(tr, &err) == 0) {
			FUZZ_CHECK(strlen(trustroot_fingerprint(tr)) == 71);
		}
		trustroot_free(tr);
	}
	return 0;
}
