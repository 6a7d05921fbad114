/* Image references: imageref_split on raw bytes, imageref_parse under every flag combination,
 * and the parsed parts written back out parse to the same parts. */
#include "fuzz.h"

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_parsed(const struct imageref *r, unsigned flags)
{
	struct imageref again = IMAGEREF_INIT;
	struct error err = ERROR_INIT;
	struct buf s = BUF_INIT;
	char *name;

	FUZZ_CHECK(r->registry && r->registry[0] && r->repository && r->repository[0]);
	FUZZ_CHECK(!r->tag || (flags & IMAGEREF_ALLOW_TAG));
	FUZZ_CHECK(!r->digest || (flags & IMAGEREF_ALLOW_DIGEST));
	FUZZ_CHECK(!r->tag || imageref_is_valid_tag(r->tag, strlen(r->tag)));
	FUZZ_CHECK(!r->digest || imageref_is_valid_digest(r->digest, strlen(r->digest)));
	FUZZ_CHECK((name = imageref_name(r)) != NULL);
	FUZZ_CHECK(buf_puts(&s, name) == 0);
	if (r->tag)
		FUZZ_CHECK(buf_printf(&s, ":%s", r->tag) == 0);
	if (r->digest)
		FUZZ_CHECK(buf_printf(&s, "@%s", r->digest) == 0);
	/* The normalised form is a fixed point. */
	FUZZ_CHECK(imageref_parse(&again, s.data, flags, &err) == 0);
	FUZZ_CHECK(same(again.registry, r->registry) && same(again.repository, r->repository) &&
	           same(again.tag, r->tag) && same(again.digest, r->digest));
	FUZZ_CHECK(imageref_is_docker_hub(&again) == imageref_is_docker_hub(r));
	imageref_release(&again);
	buf_release(&s);
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct imageref_parts parts;
	char *s = fuzz_strndup(data, size);

	imageref_split(&parts, (const char *)data, size);
	FUZZ_CHECK(parts.name_len <= size);
	FUZZ_CHECK(!parts.tag_len ||
	           (parts.tag_start >= parts.name_len && parts.tag_start + parts.tag_len <= size));
	FUZZ_CHECK(!parts.digest_len || (parts.digest_start >= parts.name_len &&
	                                 parts.digest_start + parts.digest_len <= size));
	FUZZ_CHECK(!parts.tag_len || !parts.digest_len ||
	           parts.tag_start + parts.tag_len <= parts.digest_start);
	for (unsigned flags = 0; flags < 4; flags++) {
		struct imageref r = IMAGEREF_INIT;
		struct error err = ERROR_INIT;
		int rc = imageref_parse(&r, s, flags, &err);

		FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_EFAIL);
		if (rc == 0)
			check_parsed(&r, flags);
		else
			FUZZ_CHECK(err.msg[0]);
		imageref_release(&r);
	}
	free(s);
	return 0;
}
