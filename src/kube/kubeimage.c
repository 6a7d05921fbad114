/* Parsing what container runtimes report in pod status: imageID schemes and digests, tags. */
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/kube/kubeimage.h"

static const char *const schemes[] = {"docker-pullable://", "docker://", "containerd://",
                                      "cri-o://"};

static bool is_sha256(const char *s, size_t len)
{
	if (len != 7 + 64 || strncmp(s, "sha256:", 7) != 0)
		return false;
	for (size_t i = 7; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int kubeimage_digest(char **out, const char *image_id, struct error *err)
{
	const char *s = image_id ? image_id : "", *at;

	*out = NULL;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(s, schemes[i], strlen(schemes[i])) == 0) {
			s += strlen(schemes[i]);
			break;
		}
	if (!*s)
		return error_set(err, IG_ENOTFOUND, "imageID is empty (container not started)");
	if (!(at = strrchr(s, '@')))
		return error_set(err, IG_ENOTFOUND,
		                 "imageID '%.200s' holds no repository digest (an image ID of a "
		                 "local or side-loaded image)",
		                 image_id);
	at++;
	if (!is_sha256(at, strlen(at)))
		return error_set(err, IG_EINVALID, "imageID '%.200s': not a sha256 digest",
		                 image_id);
	if (!(*out = strdup(at)))
		return error_oom(err);
	return 0;
}

int kubeimage_tag(char **out, const char *image)
{
	struct imageref_parts p;
	const char *s = image ? image : "";

	*out = NULL;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(s, schemes[i], strlen(schemes[i])) == 0) {
			s += strlen(schemes[i]);
			break;
		}
	if (strncmp(s, "sha256:", 7) == 0 && !strchr(s, '/'))
		return 0; /* an image ID, not a reference */
	imageref_split(&p, s, strlen(s));
	if (!p.tag_len)
		return 0;
	if (!(*out = strndup(s + p.tag_start, p.tag_len)))
		return IG_EFAIL;
	return 0;
}
