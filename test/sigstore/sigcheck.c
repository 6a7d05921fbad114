/* A test driver of the signature gate (not part of imageguard): verifies one Sigstore bundle
 * file, or one image digest in a real registry through registry/sigfetch.c, against a trust
 * folder (a Secret's keys), and prints the verdict on one line:
 *   STATUS requests=N http=N format=F signer="..." detail="..."
 * Exit 0 for ok, 1 for any other verdict, 2 when no verdict could be reached.
 * Used by test/integration/cli/sigstore_crosscheck.py.
 *   sigcheck bundle FILE --digest D --trust DIR [--issuer RE --subject RE]
 *   sigcheck registry HOST/REPO --digest D --trust DIR [--issuer RE --subject RE]
 *            [--insecure] [--listing] [--no-referrers-api] [--formats cosign|bundle|...]
 * --listing hands the repository's tag list to the check (as the pass does, not counted);
 * --no-referrers-api starts from what the pass remembers of a registry that answered 404. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/registry/sigfetch.h"
#include "imageguard/sigstore/bundle.h"
#include "imageguard/sigstore/sigverify.h"
#include "imageguard/sigstore/trustroot.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

struct args {
	const char *mode, *target, *digest, *trust, *issuer, *subject, *formats;
	bool insecure, listing, no_referrers;
};

static int usage(void)
{
	fprintf(stderr, "usage: sigcheck bundle FILE|registry HOST/REPO --digest D --trust DIR "
	                "[--issuer RE --subject RE] [--insecure] [--listing] [--formats F]\n");
	return 2;
}

static int parse_args(struct args *a, int argc, char **argv)
{
	memset(a, 0, sizeof(*a));
	if (argc < 3)
		return -1;
	a->mode = argv[1];
	a->target = argv[2];
	for (int i = 3; i < argc; i++) {
		const char **v = strcmp(argv[i], "--digest") == 0    ? &a->digest
		                 : strcmp(argv[i], "--trust") == 0   ? &a->trust
		                 : strcmp(argv[i], "--issuer") == 0  ? &a->issuer
		                 : strcmp(argv[i], "--subject") == 0 ? &a->subject
		                 : strcmp(argv[i], "--formats") == 0 ? &a->formats
		                                                     : NULL;

		if (strcmp(argv[i], "--insecure") == 0)
			a->insecure = true;
		else if (strcmp(argv[i], "--listing") == 0)
			a->listing = true;
		else if (strcmp(argv[i], "--no-referrers-api") == 0)
			a->no_referrers = true;
		else if (!v || i + 1 >= argc)
			return -1;
		else
			*v = argv[++i];
	}
	return a->digest && a->trust ? 0 : -1;
}

static int make_policy(struct sigverify_policy **p, const struct args *a, struct error *err)
{
	struct oidcmatch_rule rule = {a->issuer, a->subject};
	const char *formats[2];
	struct sigverify_options o = {&rule, a->issuer || a->subject ? 1 : 0, false, NULL, 0};
	struct trustroot *tr;
	char list[64], *comma;
	int rc;

	if (a->formats) {
		snprintf(list, sizeof(list), "%s", a->formats);
		formats[o.n_formats++] = list;
		if ((comma = strchr(list, ','))) {
			*comma = '\0';
			formats[o.n_formats++] = comma + 1;
		}
		o.formats = formats;
	}
	if ((rc = trustroot_load(&tr, a->trust, "trust", err)) < 0)
		return rc;
	return sigverify_policy_new(p, tr, &o, err);
}

static void print(const struct sigverify_result *r, unsigned http)
{
	printf("%s requests=%u http=%u format=%s signer=\"%s\" detail=\"%s\"\n",
	       sigverify_status_name(r->status), r->requests, http, r->format[0] ? r->format : "-",
	       r->signer, r->detail);
}

static int run_bundle(struct sigverify_result *r, const struct args *a,
                      const struct sigverify_policy *p, struct error *err)
{
	struct buf b = BUF_INIT_MAX(BUNDLE_MAX + 1);
	int rc = buf_read_file(&b, a->target);

	if (rc < 0)
		return error_set(err, rc, "cannot read '%s'", a->target);
	memset(r, 0, sizeof(*r));
	bundle_verify(r, p, a->digest, b.data ? b.data : "", b.len, "bundle");
	buf_release(&b);
	return 0;
}

static void observe(void *ctx, const char *registry, long code)
{
	(void)registry;
	(void)code;
	(*(unsigned *)ctx)++;
}

static int run_registry(struct sigverify_result *r, unsigned *http, const struct args *a,
                        const struct sigverify_policy *p, struct error *err)
{
	struct registry_listing listing = REGISTRY_LISTING_INIT;
	struct registry_options o;
	struct registry_client *c = NULL;
	struct registry_target t = {0};
	struct imageref ref = {0};
	struct sigfetch f = {0};
	struct sigverify_source src = {sigfetch_manifest, sigfetch_blob, sigfetch_referrers,
	                               sigfetch_has_tag, &f};
	int rc;

	registry_options_init(&o);
	o.max_retries = 1;
	if ((rc = imageref_parse(&ref, a->target, 0, err)) < 0 ||
	    (rc = registry_client_new(&c, &o, err)) < 0)
		goto done;
	t.ref = &ref;
	t.insecure = a->insecure;
	f.client = c;
	f.target = &t;
	f.no_referrers_api = a->no_referrers;
	if (a->no_referrers) /* as the pass does for a host it knows: the API is not asked */
		src.get_referrers = NULL;
	if (a->listing) { /* the pass holds its listing already: not counted */
		if ((rc = registry_list_tags(&listing, c, &t, err)) < 0)
			goto done;
		f.tags = (const char *const *)listing.tags.items;
		f.tags_len = listing.tags.len;
	}
	o.observe = observe; /* counted from here: the client is made again with the observer */
	o.observe_ctx = http;
	registry_client_free(c);
	if ((rc = registry_client_new(&c, &o, err)) < 0)
		goto done;
	f.client = c;
	rc = sigverify_check(r, p, a->digest, &src, err);
done:
	registry_listing_release(&listing);
	registry_client_free(c);
	imageref_release(&ref);
	return rc;
}

int main(int argc, char **argv)
{
	struct sigverify_policy *p = NULL;
	struct sigverify_result r;
	struct error err = ERROR_INIT;
	struct args a;
	unsigned http = 0;
	int rc;

	log_configure(LOG_ERROR, LOG_TEXT);
	if (parse_args(&a, argc, argv) < 0)
		return usage();
	if ((rc = make_policy(&p, &a, &err)) >= 0) {
		if (strcmp(a.mode, "bundle") == 0)
			rc = run_bundle(&r, &a, p, &err);
		else if (strcmp(a.mode, "registry") == 0)
			rc = run_registry(&r, &http, &a, p, &err);
		else
			rc = error_set(&err, IG_EUSAGE, "unknown mode '%s'", a.mode);
	}
	sigverify_policy_free(p);
	if (rc < 0) {
		fprintf(stderr, "sigcheck: %s\n", err.msg);
		return 2;
	}
	print(&r, http);
	return r.status == SIGVERIFY_OK ? 0 : 1;
}
