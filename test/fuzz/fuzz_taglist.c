/* Tag-list JSON (GET /v2/<name>/tags/list) through the streaming reader (taglist.h): every
 * page body a registry could send, whole and cut into pieces at arbitrary points, as curl
 * delivers it. The pieces must give exactly what the whole body gives. */
#include <string.h>

#include "fuzz.h"

#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/registry/taglist.h"
#include "imageguard/util/strvec.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

/* The body in pieces of 1 + (byte % 7) bytes, steered by the body itself. */
static int parse_in_pieces(struct strvec *tags, const uint8_t *data, size_t size, struct error *err)
{
	struct taglist *t = NULL;
	int rc;

	if ((rc = taglist_new(&t, tags, "fuzz.example/app", NULL, err)) < 0)
		return rc;
	if ((rc = taglist_page_begin(t, err)) < 0)
		goto done;
	for (size_t off = 0; off < size && rc == 0;) {
		size_t n = 1 + (size_t)(data[off] % 7);

		if (n > size - off)
			n = size - off;
		rc = taglist_push(t, (const char *)data + off, n, err);
		off += n;
	}
	if (rc == 0)
		rc = taglist_page_end(t, err);
	if (rc < 0) /* a dead page is forgotten by the next begin */
		FUZZ_CHECK(taglist_page_begin(t, err) == 0 && tags->len == 0);
done:
	taglist_free(t);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strvec tags = STRVEC_INIT, pieces = STRVEC_INIT;
	struct error err = ERROR_INIT, err2 = ERROR_INIT;
	char sha[65];
	int rc = registry_parse_tag_list(&tags, "fuzz.example/app", (const char *)data, size, &err);
	int rc2 = parse_in_pieces(&pieces, data, size, &err2);

	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL || rc == IG_ETOOBIG);
	FUZZ_CHECK(rc == 0 || err.msg[0]);
	FUZZ_CHECK(rc == 0 || tags.len == 0); /* a failed page leaves nothing behind */
	FUZZ_CHECK(rc == rc2 || rc == IG_EFAIL || rc2 == IG_EFAIL);
	if (rc == 0 && rc2 == 0) {
		FUZZ_CHECK(tags.len == pieces.len);
		for (size_t i = 0; i < tags.len; i++)
			FUZZ_CHECK(strcmp(tags.items[i], pieces.items[i]) == 0);
		/* What goes on to the policy and the state dir must be valid tags only. */
		for (size_t i = 0; i < tags.len; i++)
			FUZZ_CHECK(imageref_is_valid_tag(tags.items[i], strlen(tags.items[i])));
		strvec_sort_unique(&tags);
		registry_tags_sha256(sha, &tags);
		FUZZ_CHECK(strlen(sha) == 64);
	}
	strvec_release(&tags);
	strvec_release(&pieces);
	return 0;
}
