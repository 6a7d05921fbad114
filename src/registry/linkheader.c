/* Link: <url>; rel="next" parsing. Registries differ: absolute or relative targets, quoted or
 * bare rel, several links in one header; what they share is the grammar below. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "imageguard/util/error.h"
#include "imageguard/util/http.h"
#include "imageguard/registry/linkheader.h"

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* True when the relation list [s, s+n) has "next" as one of its space-separated types. */
static bool rel_has_next(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t start;

		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		start = i;
		while (i < n && s[i] != ' ' && s[i] != '\t')
			i++;
		if (i - start == 4 && strncasecmp(s + start, "next", 4) == 0)
			return true;
	}
	return false;
}

/* Parses the parameters after "<url>" up to the next link or the end; sets *is_next. */
static int parse_params(const char **pp, bool *is_next)
{
	const char *p = *pp;

	*is_next = false;
	for (;;) {
		const char *name, *name_end, *v, *v_end;

		p = skip_ws(p);
		if (*p == '\0' || *p == ',')
			break;
		if (*p != ';')
			return IG_EINVALID;
		p = skip_ws(p + 1);
		name = p;
		while (*p && *p != '=' && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
			p++;
		name_end = p;
		if (name_end == name)
			return IG_EINVALID;
		p = skip_ws(p);
		if (*p != '=') /* a parameter without a value */
			continue;
		p = skip_ws(p + 1);
		if (*p == '"') {
			v = ++p;
			while (*p && *p != '"')
				p += (*p == '\\' && p[1]) ? 2 : 1;
			if (*p != '"')
				return IG_EINVALID;
			v_end = p++;
		} else {
			v = p;
			while (*p && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
				p++;
			v_end = p;
		}
		if (name_end - name == 3 && strncasecmp(name, "rel", 3) == 0 &&
		    rel_has_next(v, (size_t)(v_end - v)))
			*is_next = true;
	}
	*pp = p;
	return 0;
}

int linkheader_next(char **out, const char *value, const char *base_url, struct error *err)
{
	const char *p = value;

	*out = NULL;
	for (;;) {
		const char *url, *url_end;
		bool is_next;
		char *target;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			return 0;
		if (*p != '<')
			return error_set(err, IG_EINVALID, "Link header: expected '<'");
		url = p + 1;
		if (!(url_end = strchr(url, '>')))
			return error_set(err, IG_EINVALID, "Link header: unterminated '<'");
		p = url_end + 1;
		if (parse_params(&p, &is_next) < 0)
			return error_set(err, IG_EINVALID, "Link header: malformed parameters");
		if (!is_next)
			continue;
		if (url_end == url || !(target = malloc((size_t)(url_end - url) + 1)))
			return error_set(err, IG_EINVALID, "Link header: empty next link");
		memcpy(target, url, (size_t)(url_end - url));
		target[url_end - url] = '\0';
		*out = http_resolve(base_url, target);
		free(target);
		if (!*out)
			return error_set(err, IG_EINVALID,
			                 "Link header: next link does not resolve");
		return 0;
	}
}
