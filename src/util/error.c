/* The error struct: one-line messages carried up the stack with context added once per layer. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/util/error.h"

void error_flatten(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_token_char(char c)
{
	return is_alnum(c) || (c && strchr("-._~+/=", c));
}

/* Replaces msg[at, at+n) with "***" in place (the text never grows: n >= 3 or it is padded). */
static void replace_span(char *msg, size_t at, size_t n)
{
	size_t len = strlen(msg);

	if (n >= 3) {
		memcpy(msg + at, "***", 3);
		memmove(msg + at + 3, msg + at + n, len - at - n + 1);
	} else {
		/* a 1- or 2-byte secret: masked in place, never lengthened past the cap */
		memset(msg + at, '*', n);
	}
}

void error_scrub_secret(char *msg, size_t cap, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0, at = 0;
	char *hit;

	(void)cap; /* the text only shrinks */
	if (n == 0)
		return;
	while ((hit = strstr(msg + at, secret))) {
		size_t pos = (size_t)(hit - msg);
		bool alone = (pos == 0 || !is_alnum(msg[pos - 1])) && !is_alnum(hit[n]);

		if (n >= ERROR_SECRET_MIN || alone) {
			replace_span(msg, pos, n);
			at = pos + (n >= 3 ? 3 : n);
		} else {
			at = pos + 1;
		}
	}
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* strstr ignoring ASCII case; needle is lower case. */
static char *find_ci(char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++) {
		size_t i = 0;

		while (i < n && lower(hay[i]) == needle[i])
			i++;
		if (i == n)
			return hay;
	}
	return NULL;
}

/* True for a credential-looking token: long enough, and not a plain lower-case word. */
static bool looks_like_token(const char *s, size_t n)
{
	if (n < ERROR_SECRET_MIN)
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z'))
			return true;
	return false;
}

/* "Authorization" [quote] ":"/"=" [space/quote]: the value to the next quote, comma,
 * semicolon, brace or the end is replaced. */
static void scrub_headers(char *msg)
{
	static const char word[] = "authorization";
	char *p = msg;

	while ((p = find_ci(p, word))) {
		char *v = p + sizeof(word) - 1;
		size_t n;

		while (*v == '"' || *v == '\'' || *v == ' ')
			v++;
		if (*v != ':' && *v != '=') {
			p += sizeof(word) - 1;
			continue;
		}
		v++;
		while (*v == ' ' || *v == '"' || *v == '\'')
			v++;
		n = strcspn(v, "\"',;}\\");
		while (n > 0 && v[n - 1] == ' ')
			n--;
		if (n > 0 && !(n == 3 && strncmp(v, "***", 3) == 0))
			replace_span(msg, (size_t)(v - msg), n);
		p = v;
	}
}

static void scrub_schemes(char *msg)
{
	static const char *const schemes[] = {"basic ", "bearer "};

	for (size_t i = 0; i < 2; i++) {
		size_t len = strlen(schemes[i]);
		char *p = msg;

		while ((p = find_ci(p, schemes[i]))) {
			char *v = p + len;
			size_t n = 0;

			while (is_token_char(v[n]))
				n++;
			if ((p == msg || !is_alnum(p[-1])) && looks_like_token(v, n))
				replace_span(msg, (size_t)(v - msg), n);
			p = v;
		}
	}
}

/* "scheme://user:password@host" -> "scheme://user:***@host". */
static void scrub_userinfo(char *msg)
{
	char *p = msg;

	while ((p = strstr(p, "://"))) {
		char *auth = p + 3, *colon = NULL, *q;

		for (q = auth; *q && !strchr("/@ \t'\"", *q); q++)
			if (*q == ':' && !colon)
				colon = q;
		if (*q == '@' && colon && q > colon + 1 &&
		    !(q - colon - 1 == 3 && strncmp(colon + 1, "***", 3) == 0))
			replace_span(msg, (size_t)(colon + 1 - msg), (size_t)(q - colon - 1));
		p = auth;
	}
}

void error_scrub_credentials(char *msg)
{
	scrub_headers(msg);
	scrub_schemes(msg);
	scrub_userinfo(msg);
}

int error_set(struct error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	error_flatten(err->msg);
	error_scrub_credentials(err->msg);
	return code;
}

int error_prefix(struct error *err, const char *fmt, ...)
{
	char prefix[ERROR_MSG_MAX];
	size_t plen, mlen;
	va_list ap;

	if (!err)
		return IG_EFAIL;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix) - 2, fmt, ap);
	va_end(ap);
	memcpy(prefix + strlen(prefix), ": ", 3);
	plen = strlen(prefix);
	if (plen >= sizeof(err->msg))
		plen = sizeof(err->msg) - 1;
	mlen = strnlen(err->msg, sizeof(err->msg) - 1);
	if (plen + mlen >= sizeof(err->msg))
		mlen = sizeof(err->msg) - 1 - plen;
	memmove(err->msg + plen, err->msg, mlen);
	memcpy(err->msg, prefix, plen);
	err->msg[plen + mlen] = '\0';
	error_flatten(err->msg);
	error_scrub_credentials(err->msg);
	return err->code ? err->code : IG_EFAIL;
}

void error_clear(struct error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

const char *error_code_name(int code)
{
	switch (code) {
	case IG_OK:
		return "ok";
	case IG_ENOTFOUND:
		return "not found";
	case IG_EAUTH:
		return "unauthorized";
	case IG_ETIMEOUT:
		return "timeout";
	case IG_ECONFLICT:
		return "conflict";
	case IG_EINVALID:
		return "invalid";
	case IG_ETOOBIG:
		return "too big";
	case IG_EUSAGE:
		return "usage";
	default:
		return "failure";
	}
}

int error_oom(struct error *err)
{
	return error_set(err, IG_EFAIL, "out of memory");
}
