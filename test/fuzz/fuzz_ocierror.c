/* OCI error JSON ({"errors":[{"code","message"}]}): the registry's words end up in one-line
 * error messages and logs. */
#include "fuzz.h"

#include "imageguard/registry/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sizes[] = {512, 17, 1};
	char out[512];

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], len;

		memset(out, 'X', sizeof(out));
		registry_oci_errors(out, n, (const char *)data, size);
		len = strnlen(out, n);
		FUZZ_CHECK(len < n);
		/* Errors are one line (CONTRACT §3): no line breaks or other controls. */
		for (size_t i = 0; i < len; i++)
			FUZZ_CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7f);
	}
	return 0;
}
