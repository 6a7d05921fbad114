/* Sharding by hash: which instance of `--shards N` owns an automation, decided from its
 * normalised (Git URL, push branch) pair, and the key naming an instance's shard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "imageguard/app/shard.h"
#include "imageguard/config/config.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME 1099511628211ull

/* MurmurHash3's fmix64: FNV-1a's low bits depend only on the low bits of the input bytes (its
 * multiplier is odd), so without a finaliser a power-of-two N would split on byte parity. */
static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* The network schemes whose URLs name the same repository by host and path. */
static const struct {
	const char *scheme;
	const char *port;
} schemes[] = {{"ssh", "22"}, {"https", "443"}, {"http", "80"}, {"git", "9418"}};

/* The last c in the n bytes at s, or NULL (memrchr is a GNU extension). */
static const char *last_of(const char *s, char c, size_t n)
{
	while (n--)
		if (s[n] == c)
			return s + n;
	return NULL;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The path p (n bytes) with '/' runs folded, leading and trailing '/' and one ".git" dropped,
 * appended to b after a '/' when anything is left. */
static int put_path(struct buf *b, const char *p, size_t n)
{
	int error = 0;

	while (n && *p == '/')
		p++, n--;
	while (n && p[n - 1] == '/')
		n--;
	if (n >= 4 && !memcmp(p + n - 4, ".git", 4))
		n -= 4;
	while (n && p[n - 1] == '/')
		n--;
	if (n && (error = buf_puts(b, "/")) < 0)
		return error;
	for (size_t i = 0; i < n && error == 0; i++)
		if (p[i] != '/' || b->data[b->len - 1] != '/')
			error = buf_append(b, &p[i], 1);
	return error;
}

/* host[:port] of an authority (user dropped) lower-cased, port dropped when it is def. */
static int put_host(struct buf *b, const char *a, size_t n, const char *def)
{
	const char *at = last_of(a, '@', n), *colon;
	size_t hn;
	int error = 0;

	if (at)
		n -= (size_t)(at + 1 - a), a = at + 1;
	colon = last_of(a, ':', n);
	if (colon && memchr(colon, ']', n - (size_t)(colon - a)))
		colon = NULL; /* inside an IPv6 literal */
	hn = colon ? (size_t)(colon - a) : n;
	if (hn == 0)
		return IG_EINVALID;
	for (size_t i = 0; i < hn && error == 0; i++) {
		char c = lower(a[i]);

		error = buf_append(b, &c, 1);
	}
	if (error == 0 && colon && colon + 1 < a + n &&
	    (!def || strlen(def) != n - hn - 1 || memcmp(colon + 1, def, n - hn - 1)))
		error = buf_append(b, colon, n - hn);
	return error;
}

/* scheme://authority/path: a known network scheme loses its name and default port. */
static int put_url(struct buf *b, const char *url, const char *sep)
{
	const char *rest = sep + 3, *slash = strchr(rest, '/');
	const char *def = NULL;
	size_t sn = (size_t)(sep - url), an = slash ? (size_t)(slash - rest) : strlen(rest);
	int error = 0;

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]) && !def; i++)
		if (strlen(schemes[i].scheme) == sn && !strncasecmp(url, schemes[i].scheme, sn))
			def = schemes[i].port;
	for (size_t i = 0; !def && i < sn && error == 0; i++) {
		char c = lower(url[i]);

		error = buf_append(b, &c, 1);
	}
	if (error == 0 && !def)
		error = buf_puts(b, "://");
	if (error == 0)
		error = put_host(b, rest, an, def);
	if (error == 0 && slash)
		error = put_path(b, slash, strlen(slash));
	return error;
}

/* Whether url is scp-like: "[user@]host:path" with the ':' before any '/'. */
static const char *scp_colon(const char *url)
{
	const char *colon = strchr(url, ':'), *slash = strchr(url, '/');

	return colon && colon > url && (!slash || colon < slash) ? colon : NULL;
}

static int normalize(struct buf *b, const char *url)
{
	const char *sep = strstr(url, "://"), *colon;
	int error;

	if (!strncasecmp(url, "file://", 7)) {
		if ((error = buf_puts(b, "file://")) < 0)
			return error;
		return put_path(b, url + 7, strlen(url + 7)) < 0 ? IG_EFAIL : 0;
	}
	if (sep && sep > url && !memchr(url, '/', (size_t)(sep - url)))
		return put_url(b, url, sep);
	if ((colon = scp_colon(url))) {
		if ((error = put_host(b, url, (size_t)(colon - url), NULL)) < 0)
			return error;
		return put_path(b, colon + 1, strlen(colon + 1));
	}
	if ((error = buf_puts(b, "file://")) < 0)
		return error;
	return put_path(b, url, strlen(url));
}

int shard_normalize_url(char **out, const char *url, struct error *err)
{
	struct buf b = BUF_INIT;
	int error;

	*out = NULL;
	if (!*url || strlen(url) > SHARD_MAX_URL)
		return error_set(err, IG_EINVALID, "git url '%.64s': %s", url,
		                 *url ? "longer than 4096 bytes" : "empty");
	if ((error = normalize(&b, url)) == IG_EINVALID) {
		buf_release(&b);
		return error_set(err, IG_EINVALID, "git url '%.200s': no host", url);
	}
	if (error < 0 || !(*out = buf_detach(&b))) {
		buf_release(&b);
		return error_set(err, IG_EFAIL, "out of memory");
	}
	return 0;
}

const char *shard_push_branch(const struct config_automation *a)
{
	const char *colon, *dst;

	if (a->push_refspec && !a->push_branch_given && (colon = strrchr(a->push_refspec, ':'))) {
		dst = colon + 1;
		return strncmp(dst, "refs/heads/", 11) == 0 ? dst + 11 : dst;
	}
	if (a->push_branch)
		return a->push_branch;
	return a->checkout_branch ? a->checkout_branch : "";
}

uint64_t shard_hash(const char *normalised_url, const char *branch)
{
	uint64_t h = FNV_OFFSET;

	for (const char *s = normalised_url; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV_PRIME;
	h = (h ^ (unsigned char)'\n') * FNV_PRIME;
	for (const char *s = branch; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV_PRIME;
	return fmix64(h);
}

int shard_of(unsigned *out, const struct config_automation *a, unsigned shards, struct error *err)
{
	char *url = NULL;
	int error;

	*out = 0;
	if ((error = shard_normalize_url(&url, a->source->url, err)) < 0)
		return error;
	*out = (unsigned)(shard_hash(url, shard_push_branch(a)) % shards);
	free(url);
	return 0;
}

bool shard_owns(const struct shard_spec *s, const struct config_automation *a)
{
	struct error err = ERROR_INIT;
	unsigned owner;

	if (!s || s->shards == 0)
		return true;
	if (shard_of(&owner, a, s->shards, &err) < 0)
		owner = 0;
	return owner == s->index;
}

bool shard_reports_policy(const struct shard_spec *s, const struct config *c, const bool *owns,
                          const struct config_policy *p)
{
	bool selected = false;

	if (!s || s->shards == 0)
		return true;
	for (size_t i = 0; i < c->automations_len; i++) {
		if (!config_automation_selects(&c->automations[i], p))
			continue;
		if (owns ? !owns[i] : !shard_owns(s, &c->automations[i]))
			return false;
		selected = true;
	}
	return selected || s->index == 0;
}

char *shard_key(const struct shard_spec *s)
{
	struct buf b = BUF_INIT;
	int error = 0;

	if (s->selector)
		error = buf_puts(&b, s->selector);
	if (error == 0 && s->shards)
		error = buf_printf(&b, "%sshards=%u/index=%u", s->selector ? ";" : "", s->shards,
		                   s->index);
	if (error < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b);
}
