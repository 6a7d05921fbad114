/* Cloud registry credentials: the provider backends behind one table (cloudauth_aws.c,
 * cloudauth_gcp.c, cloudauth_azure.c; what they share is cloudauth_common.c), one fetch per
 * key at a time, and the refused-credential retry of a listing. The cache is module state on
 * purpose, as Flux keeps one package-level auth cache: tokens must outlive one pass of `run`
 * without every caller carrying a handle. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudauth_common.h"
#include "imageguard/registry/creds.h"
#include "imageguard/registry/imageref.h"
#include "imageguard/registry/registry.h"
#include "imageguard/util/error.h"
#include "imageguard/util/log.h"

#define INFLIGHT_MAX 256

static const struct cloudauth_backend *const backends[] = {&cloudauth_aws, &cloudauth_gcp,
                                                           &cloudauth_azure};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The keys being fetched now: a second asker waits for the first's answer rather than make
 * its own request (as Flux's cache does with its per-key lock). */
static pthread_cond_t fetched = PTHREAD_COND_INITIALIZER;
static char *inflight[INFLIGHT_MAX];
static size_t inflight_len;

/* The backend named provider, or NULL ("generic" and unknown names). */
static const struct cloudauth_backend *backend(const char *provider)
{
	for (size_t i = 0; provider && i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(provider, backends[i]->name) == 0)
			return backends[i];
	return NULL;
}

bool cloudauth_is_provider(const char *name)
{
	return name && (strcmp(name, "generic") == 0 || backend(name));
}

bool cloudauth_is_cloud(const char *provider)
{
	return backend(provider) != NULL;
}

/* "provider\nhost", and "\nns/name" for an object's own identity. */
static void cache_key(char *out, size_t n, const char *provider, const char *host,
                      const struct cloudauth_identity *id)
{
	if (id)
		snprintf(out, n, "%s\n%s\n%s/%s", provider, host, id->ns, id->name);
	else
		snprintf(out, n, "%s\n%s", provider, host);
}

static bool is_inflight(const char *key)
{
	for (size_t i = 0; i < inflight_len; i++)
		if (strcmp(inflight[i], key) == 0)
			return true;
	return false;
}

/* The fresh cached token under key into out (true); or, when none, false once this thread
 * holds the key's fetch, after waiting for another thread's fetch of it to end. A full table
 * or no memory only skips the coalescing. */
static bool get_or_claim(struct cloudauth_token *out, const char *key)
{
	bool hit = false;

	/* lock, then the cache's own: the cache never calls back here */
	pthread_mutex_lock(&lock);
	for (;;) {
		if (cloudauth_cache_get(out, key)) {
			hit = true;
			break;
		}
		if (!is_inflight(key)) {
			if (inflight_len < INFLIGHT_MAX && (inflight[inflight_len] = strdup(key)))
				inflight_len++;
			break;
		}
		/* the fetcher's HTTP requests have their timeouts: this wait ends with them */
		pthread_cond_wait(&fetched, &lock);
	}
	pthread_mutex_unlock(&lock);
	return hit;
}

static void release_claim(const char *key)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < inflight_len; i++)
		if (strcmp(inflight[i], key) == 0) {
			free(inflight[i]);
			inflight[i] = inflight[--inflight_len];
			break;
		}
	pthread_cond_broadcast(&fetched);
	pthread_mutex_unlock(&lock);
}

/* A failed fetch is not shared: each waiter then fetches in turn and gets its own error. */
static int obtain(struct cloudauth_token *t, const char *key, const char *provider,
                  const char *registry_host, bool insecure, const struct cloudauth_identity *id,
                  struct error *err)
{
	int error;

	if (get_or_claim(t, key))
		return 0;
	if ((error = backend(provider)->fetch(t, registry_host, insecure, id, err)) == 0)
		cloudauth_cache_put(key, t);
	release_claim(key);
	if (error == 0)
		log_info("cloudauth.token",
		         "provider '%s' registry '%s': new credential, %lld s left", provider,
		         registry_host, t->expires ? t->expires - cloudauth_now() : -1);
	return error;
}

int cloudauth_creds(struct registry_creds *out, const char *provider, const char *registry_host,
                    bool insecure, struct error *err)
{
	return cloudauth_creds_as(out, provider, registry_host, insecure, NULL, err);
}

int cloudauth_creds_as(struct registry_creds *out, const char *provider, const char *registry_host,
                       bool insecure, const struct cloudauth_identity *id, struct error *err)
{
	struct cloudauth_token t = {0};
	char key[1024];
	int error;

	if (!cloudauth_is_cloud(provider))
		return 0;
	cache_key(key, sizeof(key), provider, registry_host, id);
	if ((error = obtain(&t, key, provider, registry_host, insecure, id, err)) < 0)
		return error;
	creds_release(out);
	out->username = t.a;
	out->password = t.b;
	t.a = t.b = NULL;
	cloudauth_token_release(&t);
	return 0;
}

void cloudauth_forget(const char *provider, const char *registry_host)
{
	cloudauth_forget_as(provider, registry_host, NULL);
}

void cloudauth_forget_as(const char *provider, const char *registry_host,
                         const struct cloudauth_identity *id)
{
	const struct cloudauth_backend *b = backend(provider);
	char key[1024];

	if (!b)
		return;
	cache_key(key, sizeof(key), provider, registry_host, id);
	cloudauth_cache_drop(key);
	b->forget(id);
}

int cloudauth_list_tags(struct registry_listing *out, struct registry_client *c,
                        const struct registry_target *t, const char *provider,
                        struct registry_creds *creds, struct error *err)
{
	const char *host = t->ref->registry;
	int error = registry_list_tags(out, c, t, err);

	if (error != IG_EAUTH || !cloudauth_is_cloud(provider))
		return error;
	log_info("cloudauth.refused",
	         "provider '%s' registry '%s': credential refused, fetching a new one", provider,
	         host);
	cloudauth_forget(provider, host);
	registry_listing_release(out);
	error_clear(err);
	if ((error = cloudauth_creds(creds, provider, host, t->insecure, err)) < 0)
		return error;
	return registry_list_tags(out, c, t, err);
}
