/* Git URLs split into scheme, user info, host, port and path, the one reading of a URL that the
 * transport (gitauth) and shard units share. */
#include <string.h>
#include <strings.h>

#include "imageguard/git/giturl.h"
#include "imageguard/util/error.h"

/* The port of an authority: digits only, 1..65535. */
static int parse_port(unsigned *out, const char *s, const char *end)
{
	unsigned long v = 0;

	for (const char *p = s; p < end; p++) {
		if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned long)(*p - '0')) > 65535)
			return IG_EINVALID;
	}
	if (v == 0)
		return IG_EINVALID;
	*out = (unsigned)v;
	return 0;
}

/* Splits "[user[:pass]@]host[:port]" (host may be "[v6]") out of an authority: the user
 * info ends at the last '@'. */
static int parse_authority(struct giturl *u, const char *s, size_t n)
{
	const char *at = NULL, *host, *end = s + n, *colon = NULL, *p;

	for (p = s; p < end; p++)
		if (*p == '@')
			at = p;
	if (at) {
		const char *c = memchr(s, ':', (size_t)(at - s));

		u->user = s;
		u->user_len = (size_t)((c ? c : at) - s);
		if (c)
			u->password = c + 1, u->password_len = (size_t)(at - c - 1);
	}
	host = at ? at + 1 : s;
	if (host < end && *host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));

		if (!close || (close + 1 < end && close[1] != ':'))
			return IG_EINVALID;
		u->host = host + 1;
		u->host_len = (size_t)(close - host - 1);
		colon = close + 1 < end ? close + 1 : NULL;
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
		u->host = host;
		u->host_len = (size_t)((colon ? colon : end) - host);
	}
	if (colon && colon + 1 < end && parse_port(&u->port, colon + 1, end) < 0)
		return IG_EINVALID;
	return u->host_len ? 0 : IG_EINVALID;
}

/* RFC 3986's scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). */
static bool is_scheme(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');

		if (!alpha && (i == 0 || !((c >= '0' && c <= '9') || strchr("+-.", c))))
			return false;
	}
	return n > 0;
}

int giturl_parse(struct giturl *u, const char *url)
{
	const char *sep = strstr(url, "://"), *colon, *slash;

	memset(u, 0, sizeof(*u));
	if (sep) {
		const char *rest = sep + 3;

		u->form = GITURL_SCHEME;
		u->scheme = url;
		u->scheme_len = (size_t)(sep - url);
		if (!is_scheme(url, u->scheme_len))
			return IG_EINVALID;
		if (u->scheme_len == 4 && !strncasecmp(url, "file", 4))
			return u->path = rest, 0;
		slash = strchr(rest, '/');
		u->path = slash ? slash : rest + strlen(rest);
		return parse_authority(u, rest, (size_t)(u->path - rest));
	}
	colon = strchr(url, ':');
	slash = strchr(url, '/');
	if (colon && colon > url && (!slash || colon < slash) && url[0] != '.') {
		u->form = GITURL_SCP;
		u->path = colon + 1;
		return parse_authority(u, url, (size_t)(colon - url));
	}
	u->form = GITURL_PATH;
	u->path = url;
	return 0;
}
