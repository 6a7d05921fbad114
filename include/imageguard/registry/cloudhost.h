/* Cloud registry hosts, matched as fluxcd/pkg's auth providers match them but anchored at both
 * ends: the one place that decides whether a cloud token may go to a host. Pure, thread-safe. */
#ifndef IMAGEGUARD_CLOUDHOST_H
#define IMAGEGUARD_CLOUDHOST_H

#include <stdbool.h>

enum cloudhost_kind {
	CLOUDHOST_NONE,       /* no cloud provider's registry: no token goes there */
	CLOUDHOST_ECR,        /* <account>.dkr.ecr[-fips].<region>.<partition> */
	CLOUDHOST_ECR_PUBLIC, /* public.ecr.aws */
	CLOUDHOST_GCP,        /* gcr.io, *.gcr.io, *-docker.pkg.dev */
	CLOUDHOST_ACR,        /* *.azurecr.io, .cn, .de, .us */
};

#define CLOUDHOST_REGION_MAX 64

struct cloudhost {
	enum cloudhost_kind kind;
	char region[CLOUDHOST_REGION_MAX]; /* ECR: the region ("us-east-1"); else "" */
	const char *partition; /* ECR: the partition's domain ("amazonaws.com.cn"), static */
	bool fips;             /* ECR: the dkr.ecr-fips endpoint */
};

/* Classifies host (a registry host as an image reference names it, without scheme or path).
 * The whole host must match one provider's pattern: fluxcd/pkg's
 *   aws   ([0-9]+).dkr.ecr(-fips)?.([a-z0-9-]+).(amazonaws.com|amazonaws.com.cn|amazonaws.eu|
 *         sc2s.sgov.gov|c2s.ic.gov|cloud.adc-e.uk|csp.hci.ic.gov), and public.ecr.aws
 *   gcp   ((.+\.)?gcr\.io|.+-docker\.pkg\.dev)
 *   azure .+\.(azurecr\.io|azurecr\.cn|azurecr\.de|azurecr\.us)
 * anchored at both ends, over a host of lower-case letters, digits, '-' and '.' with no empty
 * label (no port: `gcr.io:443` is no cloud host, as in Flux). For the test fixtures only, a
 * host ending in ".localhost" (which resolves to loopback, never through DNS), with an
 * optional ":port", is classified by what precedes that suffix. Returns out->kind. */
enum cloudhost_kind cloudhost_match(struct cloudhost *out, const char *host);

/* The provider name (aws, gcp, azure) a kind belongs to; "" for CLOUDHOST_NONE. */
const char *cloudhost_provider(enum cloudhost_kind kind);

#endif
