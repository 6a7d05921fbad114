/* provider: gcp. An access token of the pod's Google service account from the metadata server
 * (GKE workload identity), used with the username `oauth2accesstoken` for Artifact Registry and
 * GCR, as Flux's auth/gcp does. GCE_METADATA_HOST moves the server, as Google's libraries
 * allow. */
#include <stdlib.h>
#include <string.h>

#include "cloudauth_host.h"
#include "cloudauth_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define METADATA_HOST "metadata.google.internal"
#define TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define GCP_USER "oauth2accesstoken"

static bool is_gcp_registry(const char *host)
{
	return cloudauth_host_ends(host, "gcr.io") || cloudauth_host_ends(host, "-docker.pkg.dev");
}

/* Google's clients accept only answers that say they come from the metadata server. */
static bool is_google(const struct http_response *r)
{
	char *v = http_header(r, "Metadata-Flavor");
	bool ok = v && strcmp(v, "Google") == 0;

	free(v);
	return ok;
}

int cloudauth_gcp_fetch(struct cloudauth_token *out, const char *registry_host, struct error *err)
{
	static const char *const headers[] = {"Metadata-Flavor: Google", NULL};
	const char *host = cloudauth_env("GCE_METADATA_HOST");
	struct http_response r = HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT;
	long long expires_in;
	int error;

	memset(out, 0, sizeof(*out));
	if (!is_gcp_registry(registry_host))
		return error_set(err, IG_EINVALID,
		                 "provider 'gcp': registry '%s' is not Artifact Registry or GCR "
		                 "(*-docker.pkg.dev, *gcr.io)",
		                 registry_host);
	if (buf_printf(&url, "http://%s" TOKEN_PATH, host ? host : METADATA_HOST) < 0)
		return error_set(err, IG_EFAIL, "out of memory");
	struct http_request req = {.url = url.data,
	                           .headers = headers,
	                           .label = "gcp-metadata",
	                           .allow_http = true,
	                           .max_body = CLOUDAUTH_MAX_BODY};
	if ((error = cloudauth_http(&r, &req, err)) < 0)
		goto prefix;
	if (r.status != 200) {
		error = cloudauth_refused(err, "metadata server token", &r);
		goto prefix;
	}
	if (!is_google(&r)) {
		error = error_set(err, IG_EINVALID, "answer without 'Metadata-Flavor: Google'");
		goto prefix;
	}
	out->issued = cloudauth_now();
	if ((error = cloudauth_parse_oauth(&out->b, &expires_in, r.body.data, r.body.len,
	                                   "access_token", err)) < 0)
		goto prefix;
	out->expires = expires_in ? out->issued + expires_in : out->issued + 300;
	if (!(out->a = strdup(GCP_USER))) {
		cloudauth_token_release(out);
		error = error_set(err, IG_EFAIL, "out of memory");
	}
	goto done;
prefix:
	error_prefix(err, "provider 'gcp': metadata server '%s'", host ? host : METADATA_HOST);
done:
	buf_release(&url);
	http_response_release(&r);
	return error;
}

void cloudauth_gcp_forget(void)
{
	/* The metadata server's token is the registry credential itself: nothing else cached. */
}
