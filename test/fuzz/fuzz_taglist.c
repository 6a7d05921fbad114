/* Tag-list JSON (GET /v2/<name>/tags/list): every page body a registry could send. */
#include "fuzz.h"

#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/strvec.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strvec tags = STRVEC_INIT;
	struct error err = ERROR_INIT;
	char sha[65];
	int rc = registry_parse_tag_list(&tags, "fuzz.example/app", (const char *)data, size, &err);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
	FUZZ_CHECK(rc == 0 || err.msg[0]);
	if (rc == 0) {
		/* What goes on to the policy and the state dir must be valid tags only. */
		for (size_t i = 0; i < tags.len; i++)
			FUZZ_CHECK(imageref_is_valid_tag(tags.items[i], strlen(tags.items[i])));
		strvec_sort_unique(&tags);
		registry_tags_sha256(sha, &tags);
		FUZZ_CHECK(strlen(sha) == 64);
	}
	strvec_release(&tags);
	return 0;
}
