/* The signature gate's dispatcher: the policy (trust root, identity rules, formats) and the one
 * check that asks each format backend in turn, keeping the verdict that got furthest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/sigstore/oidcmatch.h"
#include "imageguard/sigstore/sigcrypto.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "sigstore_private.h"

static const struct sigverify_backend *const backends[] = {
    &sigverify_backend_bundle,
    &sigverify_backend_cosign,
};

static const char *const status_names[] = {
    "ok",
    "unsigned",
    "bad-signature",
    "untrusted-signer",
    "no-transparency-proof",
    "identity-mismatch",
    "digest-mismatch",
};

const char *sigverify_status_name(enum sigverify_status s)
{
	return (size_t)s < sizeof(status_names) / sizeof(status_names[0]) ? status_names[s]
	                                                                  : "unknown";
}

void sigverify_policy_free(struct sigverify_policy *p)
{
	if (!p)
		return;
	trustroot_free(p->tr);
	oidcmatch_free(p->match);
	free(p);
}

static const struct sigverify_backend *backend_named(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

static int set_formats(struct sigverify_policy *p, const struct sigverify_options *o,
                       struct error *err)
{
	if (!o->formats || !o->n_formats) {
		for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
			p->formats[p->n_formats++] = backends[i];
		return 0;
	}
	if (o->n_formats > SIGSTORE_MAX_FORMATS)
		return error_set(err, IG_EINVALID, "verify: more than %d formats",
		                 SIGSTORE_MAX_FORMATS);
	for (size_t i = 0; i < o->n_formats; i++)
		if (!(p->formats[p->n_formats++] = backend_named(o->formats[i])))
			return error_set(
			    err, IG_EINVALID,
			    "verify: unknown signature format '%.40s' (cosign, bundle)",
			    o->formats[i]);
	return 0;
}

static int fingerprint(struct sigverify_policy *p)
{
	struct buf t = BUF_INIT;
	unsigned char md[32];
	int rc;

	rc = buf_printf(&t, "trust %s\nidentities %s\ntlog %d\nformats",
	                trustroot_fingerprint(p->tr), p->match ? oidcmatch_text(p->match) : "",
	                p->require_tlog);
	for (size_t i = 0; rc == 0 && i < p->n_formats; i++)
		rc = buf_printf(&t, " %s", p->formats[i]->name);
	if (rc == 0)
		rc = sigcrypto_sha256(md, t.data, t.len);
	buf_release(&t);
	if (rc < 0)
		return IG_EFAIL;
	memcpy(p->fingerprint, "sha256:", 7);
	sigcrypto_hex(p->fingerprint + 7, md, 32);
	return 0;
}

int sigverify_policy_new(struct sigverify_policy **out, struct trustroot *tr,
                         const struct sigverify_options *opts, struct error *err)
{
	struct sigverify_policy *p = calloc(1, sizeof(*p));
	int error = 0;

	*out = NULL;
	if (!p) {
		trustroot_free(tr);
		return error_set(err, IG_EFAIL, "verify: out of memory");
	}
	p->tr = tr;
	p->require_tlog = opts->require_tlog;
	if (trustroot_has_keyless(tr)) {
		if (!opts->n_identities)
			error =
			    error_set(err, IG_EINVALID,
			              "secret '%s': a keyless trust root needs matchOIDCIdentity "
			              "(issuer and subject)",
			              trustroot_secret(tr));
		else
			error = oidcmatch_new(&p->match, opts->identities, opts->n_identities, err);
	}
	if (error >= 0 && (error = set_formats(p, opts, err)) >= 0 && fingerprint(p) < 0)
		error = error_set(err, IG_EFAIL, "verify: out of memory");
	if (error < 0) {
		sigverify_policy_free(p);
		return error;
	}
	*out = p;
	return 0;
}

const char *sigverify_policy_fingerprint(const struct sigverify_policy *p)
{
	return p->fingerprint;
}

int sigverify_check(struct sigverify_result *out, const struct sigverify_policy *p,
                    const char *digest, const struct sigverify_source *src, struct error *err)
{
	struct sigverify_job job = {p, digest, src, &out->requests};
	int error;

	memset(out, 0, sizeof(*out));
	out->status = SIGVERIFY_UNSIGNED;
	if (!imageref_is_valid_digest(digest, strlen(digest)) || strlen(digest) > 136)
		return error_set(err, IG_EINVALID, "verify: '%.80s' is not a digest", digest);
	snprintf(out->detail, sizeof(out->detail), "no signature in any format");
	for (size_t i = 0; i < p->n_formats; i++) {
		struct sigverify_result r = {.status = SIGVERIFY_UNSIGNED};

		if ((error = p->formats[i]->check(&r, &job, err)) < 0) {
			error_prefix(err, "verify %s", p->formats[i]->name);
			return error;
		}
		if (r.status != SIGVERIFY_UNSIGNED)
			snprintf(r.format, sizeof(r.format), "%s", p->formats[i]->name);
		sigtrust_keep_best(out, &r);
		if (out->status == SIGVERIFY_OK)
			break;
	}
	return 0;
}
