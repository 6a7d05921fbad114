/* Go text/template parse and execution through commitmsg on Flux's data. Property: any input
 * either fails with a one-line error or renders within the output cap, never crashing, leaking
 * or hanging (range iterations, template depth, arena and output are all capped), and a
 * rendered message always ends with imageguard's trailer block. */
#include "fuzz.h"

#include "imageguard/git/commitmsg.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static const struct commitmsg_change changes[] = {
    {.policy = "flux-system/web",
     .old_value = "ghcr.io/o/web:1.0.0",
     .new_value = "ghcr.io/o/web:1.1.0",
     .file = "apps/web.yaml",
     .setter = "flux-system:web",
     .api_version = "apps/v1",
     .kind = "Deployment",
     .name = "web",
     .namespace = "apps",
     .decision = "update/forward",
     .tags_sha256 = "ab"},
    {.policy = "flux-system/api",
     .old_value = "1.0",
     .new_value = "1.1",
     .file = "apps/api.yaml",
     .setter = "flux-system:api:tag",
     .kind = "HelmRelease",
     .name = "api",
     .decision = "rollback/override",
     .tags_sha256 = "cd",
     .rollback_reason = "bad\nrelease"},
};

static const char *const values[] = {"cluster", "prod", "region", "eu"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *src = malloc(size + 1);
	struct buf out = BUF_INIT_MAX(64 * 1024);
	struct error err = ERROR_INIT;
	struct commitmsg_input in = {
	    src, "messageTemplate", "flux-system", "apps", "./", values, 2, changes, 2};
	int rc;

	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = 0;
	fuzz_quiet();
	rc = commitmsg_check(src, "messageTemplate", &err);
	FUZZ_CHECK(rc == 0 || (err.msg[0] && !strchr(err.msg, '\n')));
	rc = commitmsg_render(&out, &in, &err);
	FUZZ_CHECK(rc == 0 || rc == IG_EINVALID || rc == IG_ETOOBIG || rc == IG_EFAIL);
	FUZZ_CHECK(rc != 0 || strstr(out.data, "Imageguard-Tags-Sha256: cd\n"));
	FUZZ_CHECK(rc == 0 || (err.msg[0] && !strchr(err.msg, '\n')));
	buf_release(&out);
	free(src);
	return 0;
}
