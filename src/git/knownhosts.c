/* known_hosts parsing and matching, written here because libgit2 1.5 leaves host key checking
 * to the caller: we get the raw key in the certificate callback and must decide ourselves. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "imageguard/util/error.h"
#include "imageguard/git/knownhosts.h"

#define KH_FIELD_MAX 16384 /* a base64 RSA-16384 key fits; longer fields are malformed */

struct kh_line {
	const char *marker, *hosts, *type, *key;
	size_t marker_len, hosts_len, type_len, key_len;
};

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes standard base64 (padding optional) into out; returns the length or -1. */
static long b64_decode(unsigned char *out, size_t cap, const char *s, size_t n)
{
	unsigned acc = 0;
	int bits = 0;
	size_t len = 0, i;

	for (i = 0; i < n; i++) {
		int v;

		if (s[i] == '=')
			break;
		if ((v = b64_value((unsigned char)s[i])) < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (len >= cap)
				return -1;
			out[len++] = (unsigned char)(acc >> bits);
		}
	}
	return (long)len;
}

/* Splits off the next whitespace-separated field; returns false at the end of the line. */
static bool next_field(const char **p, const char *end, const char **f, size_t *n)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
	if (*p >= end)
		return false;
	*f = *p;
	while (*p < end && **p != ' ' && **p != '\t')
		(*p)++;
	*n = (size_t)(*p - *f);
	return true;
}

static bool parse_line(struct kh_line *l, const char *p, const char *end)
{
	memset(l, 0, sizeof(*l));
	if (!next_field(&p, end, &l->hosts, &l->hosts_len))
		return false;
	if (l->hosts[0] == '#')
		return false;
	if (l->hosts[0] == '@') {
		l->marker = l->hosts;
		l->marker_len = l->hosts_len;
		if (!next_field(&p, end, &l->hosts, &l->hosts_len))
			return false;
	}
	return next_field(&p, end, &l->type, &l->type_len) &&
	       next_field(&p, end, &l->key, &l->key_len) && l->key_len < KH_FIELD_MAX &&
	       l->hosts_len < KH_FIELD_MAX;
}

/* |1|base64(salt)|base64(HMAC-SHA1(salt, name)) */
static bool hashed_matches(const char *f, size_t n, const char *name)
{
	unsigned char salt[64], want[64], got[EVP_MAX_MD_SIZE];
	unsigned got_len = 0;
	const char *bar;
	long salt_len, want_len;

	f += 3;
	n -= 3;
	if (!(bar = memchr(f, '|', n)))
		return false;
	salt_len = b64_decode(salt, sizeof(salt), f, (size_t)(bar - f));
	want_len = b64_decode(want, sizeof(want), bar + 1, n - (size_t)(bar - f) - 1);
	if (salt_len <= 0 || want_len != SHA_DIGEST_LENGTH)
		return false;
	if (!HMAC(EVP_sha1(), salt, (int)salt_len, (const unsigned char *)name, strlen(name), got,
	          &got_len))
		return false;
	return got_len == SHA_DIGEST_LENGTH && memcmp(got, want, SHA_DIGEST_LENGTH) == 0;
}

/* OpenSSH's host patterns: only `*` and `?` are special (so `[host]:port` is literal),
 * compared case-insensitively as host names are. */
static bool glob_match(const char *p, const char *s)
{
	for (; *p; p++, s++) {
		if (*p == '*') {
			for (; *s; s++)
				if (glob_match(p + 1, s))
					return true;
			return glob_match(p + 1, s);
		}
		if (!*s)
			return false;
		if (*p != '?' && tolower((unsigned char)*p) != tolower((unsigned char)*s))
			return false;
	}
	return *s == '\0';
}

/* A comma list of patterns; a matching `!pattern` excludes the line (OpenSSH's rule). */
static bool hosts_match(const char *f, size_t n, const char *name)
{
	char pat[1024];
	bool hit = false;
	const char *end = f + n;

	if (n > 3 && memcmp(f, "|1|", 3) == 0)
		return hashed_matches(f, n, name);
	while (f < end) {
		const char *comma = memchr(f, ',', (size_t)(end - f));
		size_t len = (size_t)((comma ? comma : end) - f);
		bool negate = len > 0 && f[0] == '!';

		if (len - negate < sizeof(pat)) {
			memcpy(pat, f + negate, len - negate);
			pat[len - negate] = '\0';
			if (glob_match(pat, name)) {
				if (negate)
					return false;
				hit = true;
			}
		}
		f += len + (comma ? 1 : 0);
	}
	return hit;
}

static bool key_matches(const struct kh_line *l, const struct knownhosts_key *key)
{
	unsigned char blob[KH_FIELD_MAX], digest[SHA256_DIGEST_LENGTH];
	long len = b64_decode(blob, sizeof(blob), l->key, l->key_len);

	if (len <= 0)
		return false;
	if (key->raw)
		return (size_t)len == key->raw_len && memcmp(blob, key->raw, key->raw_len) == 0;
	SHA256(blob, (size_t)len, digest);
	return memcmp(digest, key->sha256, sizeof(digest)) == 0;
}

int knownhosts_check(const char *data, size_t len, const char *host, unsigned port,
                     const struct knownhosts_key *key, struct error *err)
{
	const char *p = data, *end = data + len;
	char name[600];
	bool seen = false, ok = false;
	struct kh_line l;

	if (port == 22 || port == 0)
		snprintf(name, sizeof(name), "%s", host);
	else
		snprintf(name, sizeof(name), "[%s]:%u", host, port);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;

		if (line_end > p && line_end[-1] == '\r')
			line_end--;
		if (parse_line(&l, p, line_end) && hosts_match(l.hosts, l.hosts_len, name)) {
			bool revoked =
			    l.marker && l.marker_len == 8 && !memcmp(l.marker, "@revoked", 8);
			bool ca = l.marker && !revoked;

			if (revoked && key_matches(&l, key))
				return error_set(err, IG_EAUTH,
				                 "host '%s': host key is revoked in known_hosts",
				                 name);
			if (!ca && !revoked) {
				seen = true;
				ok = ok || key_matches(&l, key);
			}
		}
		p = eol ? eol + 1 : end;
	}
	if (ok)
		return 0;
	if (seen)
		return error_set(
		    err, IG_EAUTH,
		    "host '%s': host key does not match known_hosts (possible man-in-the-middle)",
		    name);
	return error_set(err, IG_ENOTFOUND, "host '%s': unknown host: not in known_hosts", name);
}
