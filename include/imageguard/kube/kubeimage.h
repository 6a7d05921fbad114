/* What a pod reports about the image a container runs: the repository digest inside
 * status.containerStatuses[].imageID and the tag inside .image, as the different container
 * runtimes write them. */
#ifndef IMAGEGUARD_KUBEIMAGE_H
#define IMAGEGUARD_KUBEIMAGE_H

struct error;

/* The manifest digest ("sha256:<64 lower-case hex>") an imageID names:
 * `docker-pullable://repo@sha256:...`, `repo@sha256:...`, `docker://repo@sha256:...`.
 * Returns 0 with *out newly allocated (free() it); IG_ENOTFOUND when the imageID holds no
 * repository digest (an image ID like `docker://sha256:...` or `sha256:...` of a locally
 * built or side-loaded image, or an empty imageID of a container that never started);
 * IG_EINVALID for a malformed digest; IG_EFAIL out of memory. */
int kubeimage_digest(char **out, const char *image_id, struct error *err);

/* The tag of a reference as a pod reports it in .image ("ghcr.io/org/app:v1.2",
 * "nginx:1.25@sha256:..."); *out NULL when it names no tag. Returns 0 or IG_EFAIL. */
int kubeimage_tag(char **out, const char *image);

#endif
