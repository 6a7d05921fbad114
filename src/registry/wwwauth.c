/* RFC 7235 challenge parsing: the grammar is small but registries stretch it (scopes with
 * commas inside quotes, Basic with a realm, several challenges in one header). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/wwwauth.h"

#define MAX_CHALLENGES 16
#define MAX_HEADER (64u << 10)

static bool is_tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool is_token68_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("-._~+/", ch));
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static const char *skip_token(const char *p)
{
	while (is_tchar(*p))
		p++;
	return p;
}

/* Reads a quoted-string starting at the opening quote into out (unescaped). */
static int read_quoted(char **out, const char **pp)
{
	struct buf b = BUF_INIT_MAX(MAX_HEADER);
	const char *p = *pp + 1;

	for (; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
		if (buf_append(&b, p, 1) < 0)
			goto fail;
	}
	if (*p != '"')
		goto fail;
	if (buf_append(&b, "", 0) < 0)
		goto fail;
	*out = b.data;
	*pp = p + 1;
	return 0;
fail:
	buf_release(&b);
	return IG_EINVALID;
}

static char *dup_n(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static void set_param(struct wwwauth_challenge *c, const char *name, size_t nlen, char *value)
{
	char **slot = NULL;

	if (nlen == 5 && strncasecmp(name, "realm", 5) == 0)
		slot = &c->realm;
	else if (nlen == 7 && strncasecmp(name, "service", 7) == 0)
		slot = &c->service;
	else if (nlen == 5 && strncasecmp(name, "scope", 5) == 0)
		slot = &c->scope;
	else if (nlen == 5 && strncasecmp(name, "error", 5) == 0)
		slot = &c->error;
	if (slot && !*slot)
		*slot = value;
	else
		free(value);
}

/* True when p (after a scheme) starts a token68 rather than an auth-param: a run of token68
 * characters, then only '=' padding, then the end or a comma. */
static bool at_token68(const char *p)
{
	const char *q = p;

	while (is_token68_char(*q))
		q++;
	if (q == p)
		return false;
	while (*q == '=')
		q++;
	q = skip_ws(q);
	return *q == '\0' || *q == ',';
}

static int parse_all(struct wwwauth_challenge *list, size_t *n, const char *p)
{
	struct wwwauth_challenge *cur = NULL;

	for (;;) {
		const char *name, *end;
		char *value = NULL;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			return 0;
		name = p;
		end = skip_token(p);
		if (end == name)
			return IG_EINVALID;
		p = skip_ws(end);
		if (*p != '=') { /* a new challenge: scheme [token68 | params] */
			if (*n == MAX_CHALLENGES)
				return IG_EINVALID;
			cur = &list[(*n)++];
			if (!(cur->scheme = dup_n(name, (size_t)(end - name))))
				return IG_EFAIL;
			for (char *s = cur->scheme; *s; s++)
				if (*s >= 'A' && *s <= 'Z')
					*s = (char)(*s - 'A' + 'a');
			if (at_token68(p)) {
				while (*p && *p != ',')
					p++;
			}
			continue;
		}
		if (!cur)
			return IG_EINVALID;
		p = skip_ws(p + 1);
		if (*p == '"') {
			if (read_quoted(&value, &p) < 0)
				return IG_EINVALID;
		} else {
			const char *v = p;

			p = skip_token(p);
			if (p == v)
				return IG_EINVALID;
			if (!(value = dup_n(v, (size_t)(p - v))))
				return IG_EFAIL;
		}
		set_param(cur, name, (size_t)(end - name), value);
		p = skip_ws(p);
		if (*p && *p != ',')
			return IG_EINVALID;
	}
}

static size_t preferred(const struct wwwauth_challenge *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].scheme, "bearer") == 0)
			return i;
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i].scheme, "basic") == 0)
			return i;
	return 0;
}

int wwwauth_parse(struct wwwauth_challenge *out, const char *header, struct error *err)
{
	struct wwwauth_challenge list[MAX_CHALLENGES];
	size_t n = 0, pick;
	int error;

	memset(out, 0, sizeof(*out));
	memset(list, 0, sizeof(list));
	if (strlen(header) > MAX_HEADER) {
		error = error_set(err, IG_EINVALID, "WWW-Authenticate: header too long");
		goto done;
	}
	if ((error = parse_all(list, &n, header)) < 0) {
		error_set(err, error, "WWW-Authenticate: %s",
		          error == IG_EFAIL ? "out of memory" : "malformed challenge");
		goto done;
	}
	if (n == 0) {
		error = error_set(err, IG_ENOTFOUND, "WWW-Authenticate: no challenge");
		goto done;
	}
	pick = preferred(list, n);
	*out = list[pick];
	memset(&list[pick], 0, sizeof(list[pick]));
done:
	for (size_t i = 0; i < n; i++)
		wwwauth_release(&list[i]);
	return error;
}

void wwwauth_release(struct wwwauth_challenge *c)
{
	if (!c)
		return;
	free(c->scheme);
	free(c->realm);
	free(c->service);
	free(c->scope);
	free(c->error);
	memset(c, 0, sizeof(*c));
}
