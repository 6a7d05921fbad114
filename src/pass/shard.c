/* Sharding by hash: which instance of `--shards N` owns an automation, decided from its
 * normalised (Git URL, push branch) pair, and the key naming an instance's shard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "imageguard/pass/shard.h"
#include "imageguard/config/config.h"
#include "imageguard/git/giturl.h"
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
	unsigned port;
} schemes[] = {{"ssh", 22}, {"https", 443}, {"http", 80}, {"git", 9418}};

static int put_lower(struct buf *b, const char *s, size_t n)
{
	int error = 0;

	for (size_t i = 0; i < n && error == 0; i++) {
		char c = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];

		error = buf_append(b, &c, 1);
	}
	return error;
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

/* A known network scheme loses its name and default port; another keeps both, lower-cased. */
static int put_scheme(struct buf *b, const struct giturl *u, unsigned *default_port)
{
	int error;

	*default_port = 0;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strlen(schemes[i].scheme) == u->scheme_len &&
		    !strncasecmp(u->scheme, schemes[i].scheme, u->scheme_len))
			return *default_port = schemes[i].port, 0;
	if ((error = put_lower(b, u->scheme, u->scheme_len)) < 0)
		return error;
	return buf_puts(b, "://");
}

/* url split by giturl_parse (the transport's own idea of host and port), then
 * host[:port]/path: the user dropped, the host lower-cased, a default port dropped. */
static int normalize(struct buf *b, const char *url)
{
	struct giturl u;
	unsigned def = 0;
	bool v6;
	int error;

	if ((error = giturl_parse(&u, url)) < 0)
		return error;
	if (!u.host) /* a local path or file:// */
		return (error = buf_puts(b, "file://")) < 0 ? error
		                                            : put_path(b, u.path, strlen(u.path));
	if (u.form == GITURL_SCHEME && (error = put_scheme(b, &u, &def)) < 0)
		return error;
	/* brackets only around an IPv6 literal: "[h]" and "h" are one host */
	v6 = memchr(u.host, ':', u.host_len) != NULL;
	if ((v6 && (error = buf_puts(b, "[")) < 0) ||
	    (error = put_lower(b, u.host, u.host_len)) < 0 ||
	    (v6 && (error = buf_puts(b, "]")) < 0) ||
	    (u.port && u.port != def && (error = buf_printf(b, ":%u", u.port)) < 0))
		return error;
	return put_path(b, u.path, strlen(u.path));
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
		return error_set(err, IG_EINVALID,
		                 "git url '%.200s': malformed (no host, or a bad scheme or port)",
		                 url);
	}
	if (error < 0 || !(*out = buf_detach(&b))) {
		buf_release(&b);
		return error_oom(err);
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
