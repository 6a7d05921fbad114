/* Image reference parsing and Docker Hub normalisation (distribution/reference's grammar). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imageguard/util/error.h"
#include "imageguard/registry/imageref.h"

#define DOCKER_HUB "registry-1.docker.io"

void imageref_split(struct imageref_parts *out, const char *s, size_t len)
{
	const char *at = memchr(s, '@', len);
	size_t end = at ? (size_t)(at - s) : len;
	size_t slash = 0, i;

	memset(out, 0, sizeof(*out));
	if (at) {
		out->digest_start = end + 1;
		out->digest_len = len - end - 1;
	}
	for (i = 0; i < end; i++)
		if (s[i] == '/')
			slash = i + 1;
	out->name_len = end;
	for (i = end; i > slash; i--)
		if (s[i - 1] == ':') {
			out->name_len = i - 1;
			out->tag_start = i;
			out->tag_len = end - i;
			break;
		}
}

bool imageref_is_valid_tag(const char *s, size_t len)
{
	if (len == 0 || len > 128 || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

bool imageref_is_valid_digest(const char *s, size_t len)
{
	const char *colon = memchr(s, ':', len);
	size_t alg, hex;

	if (!colon)
		return false;
	alg = (size_t)(colon - s);
	hex = len - alg - 1;
	if (alg == 0 || hex < 32)
		return false;
	for (size_t i = 0; i < alg; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) ||
		      strchr("+._-", s[i])))
			return false;
	for (size_t i = alg + 1; i < len; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	if (alg == 6 && memcmp(s, "sha256", 6) == 0 && hex != 64)
		return false;
	return true;
}

/* One path component: [a-z0-9]+ joined by '.', '_', '__' or runs of '-'. */
static bool valid_component(const char *s, size_t len)
{
	size_t i = 0;

	if (len == 0 || !isalnum((unsigned char)s[0]))
		return false;
	while (i < len) {
		while (i < len && (islower((unsigned char)s[i]) || isdigit((unsigned char)s[i])))
			i++;
		if (i == len)
			return true;
		if (s[i] == '.' || (s[i] == '_' && !(i + 1 < len && s[i + 1] == '_')))
			i++;
		else if (s[i] == '_')
			i += 2;
		else if (s[i] == '-')
			while (i < len && s[i] == '-')
				i++;
		else
			return false;
		if (i == len || !(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i])))
			return false;
	}
	return true;
}

static bool valid_host(const char *s, size_t len)
{
	size_t i = 0;

	if (len == 0)
		return false;
	if (s[0] == '[') { /* IPv6 literal */
		const char *close = memchr(s, ']', len);
		if (!close)
			return false;
		i = (size_t)(close - s) + 1;
	} else {
		while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '-'))
			i++;
		if (i == 0)
			return false;
	}
	if (i == len)
		return true;
	if (s[i] != ':' || i + 1 == len)
		return false;
	for (i++; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* Docker's rule: the first component is a registry when it has a '.' or ':' or is localhost
 * (or has an upper-case letter, which a path component may not). */
static bool looks_like_host(const char *s, size_t len)
{
	if (len == 9 && memcmp(s, "localhost", 9) == 0)
		return true;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '.' || s[i] == ':' || isupper((unsigned char)s[i]))
			return true;
	return false;
}

static char *dup_range(const char *s, size_t len)
{
	char *p = malloc(len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

static int parse_name(struct imageref *out, const char *s, size_t len, struct error *err,
                      const char *whole)
{
	const char *slash = memchr(s, '/', len);
	const char *path = s;
	size_t path_len = len, host_len = 0;
	bool hub;

	if (slash && looks_like_host(s, (size_t)(slash - s))) {
		host_len = (size_t)(slash - s);
		if (!valid_host(s, host_len))
			return error_set(err, IG_EINVALID, "image '%s': invalid registry host",
			                 whole);
		path = slash + 1;
		path_len = len - host_len - 1;
	}
	hub = host_len == 0 || (host_len == 9 && memcmp(s, "docker.io", 9) == 0) ||
	      (host_len == 15 && memcmp(s, "index.docker.io", 15) == 0) ||
	      (host_len == 20 && memcmp(s, DOCKER_HUB, 20) == 0);
	for (size_t i = 0, start = 0; i <= path_len; i++)
		if (i == path_len || path[i] == '/') {
			if (!valid_component(path + start, i - start))
				return error_set(err, IG_EINVALID,
				                 "image '%s': invalid repository path '%.*s' "
				                 "(lower-case letters, digits and . _ - only)",
				                 whole, (int)path_len, path);
			start = i + 1;
		}
	out->registry = hub ? dup_range(DOCKER_HUB, 20) : dup_range(s, host_len);
	if (hub && !memchr(path, '/', path_len)) {
		out->repository = malloc(path_len + 9);
		if (out->repository)
			snprintf(out->repository, path_len + 9, "library/%.*s", (int)path_len,
			         path);
	} else {
		out->repository = dup_range(path, path_len);
	}
	if (!out->registry || !out->repository)
		return error_set(err, IG_EFAIL, "image '%s': out of memory", whole);
	return 0;
}

int imageref_parse(struct imageref *out, const char *s, unsigned flags, struct error *err)
{
	struct imageref_parts p;
	size_t len = strlen(s);
	int error;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len > 4096)
		return error_set(err, IG_EINVALID, "image '%.64s': empty or too long", s);
	imageref_split(&p, s, len);
	if (p.tag_len || (p.tag_start && !p.tag_len)) {
		if (!(flags & IMAGEREF_ALLOW_TAG))
			return error_set(
			    err, IG_EINVALID,
			    "image '%s': a tag is not allowed here (give the repository only)", s);
		if (!imageref_is_valid_tag(s + p.tag_start, p.tag_len))
			return error_set(err, IG_EINVALID, "image '%s': invalid tag", s);
	}
	if (p.digest_start) {
		if (!(flags & IMAGEREF_ALLOW_DIGEST))
			return error_set(
			    err, IG_EINVALID,
			    "image '%s': a digest is not allowed here (give the repository only)",
			    s);
		if (!imageref_is_valid_digest(s + p.digest_start, p.digest_len))
			return error_set(err, IG_EINVALID, "image '%s': invalid digest", s);
	}
	if ((error = parse_name(out, s, p.name_len, err, s)) < 0)
		goto fail;
	if ((p.tag_len && !(out->tag = dup_range(s + p.tag_start, p.tag_len))) ||
	    (p.digest_len && !(out->digest = dup_range(s + p.digest_start, p.digest_len)))) {
		error = error_set(err, IG_EFAIL, "image '%s': out of memory", s);
		goto fail;
	}
	return 0;
fail:
	imageref_release(out);
	return error;
}

void imageref_release(struct imageref *ref)
{
	if (!ref)
		return;
	free(ref->registry);
	free(ref->repository);
	free(ref->tag);
	free(ref->digest);
	memset(ref, 0, sizeof(*ref));
}

bool imageref_is_docker_hub(const struct imageref *ref)
{
	return ref->registry && strcmp(ref->registry, DOCKER_HUB) == 0;
}

char *imageref_name(const struct imageref *ref)
{
	size_t n = strlen(ref->registry) + strlen(ref->repository) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s/%s", ref->registry, ref->repository);
	return s;
}
