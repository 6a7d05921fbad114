/* Image manifests, indexes and configs as data: which descriptor leads to the config blob, and
 * when the image was built. The registry client does the fetching; this file only reads. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/registry/imageconfig.h"
#include "imageguard/registry/imageref.h"

/* ---- time ---- */

static bool digits(int *out, const char **p, const char *end, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (*p >= end || **p < '0' || **p > '9')
			return false;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return true;
}

static bool expect(const char **p, const char *end, const char *set)
{
	if (*p >= end || !strchr(set, **p) || !**p)
		return false;
	(*p)++;
	return true;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil): no timegm, no TZ, and year 1 works. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

/* The fraction after '.', scaled to nanoseconds; digits past the ninth are read and dropped. */
static bool fraction(long *ns, const char **p, const char *end)
{
	long scale = 100000000;
	int n = 0;

	*ns = 0;
	if (*p >= end || **p != '.')
		return true;
	for ((*p)++; *p < end && **p >= '0' && **p <= '9'; (*p)++, n++) {
		*ns += (**p - '0') * scale;
		scale /= 10;
	}
	return n > 0;
}

static bool zone(int *offset, const char **p, const char *end)
{
	int sign, h, m;

	*offset = 0;
	if (expect(p, end, "Zz"))
		return true;
	if (*p >= end || (**p != '+' && **p != '-'))
		return false;
	sign = *(*p)++ == '-' ? -1 : 1;
	if (!digits(&h, p, end, 2) || !expect(p, end, ":") || !digits(&m, p, end, 2) || h > 23 ||
	    m > 59)
		return false;
	*offset = sign * (h * 3600 + m * 60);
	return true;
}

int imageconfig_parse_time(struct timespec *out, const char *s, size_t len, struct error *err)
{
	const char *p = s, *end = s + len;
	int y, mo, d, h, mi, sec, offset;
	long ns;

	if (!digits(&y, &p, end, 4) || !expect(&p, end, "-") || !digits(&mo, &p, end, 2) ||
	    !expect(&p, end, "-") || !digits(&d, &p, end, 2) || !expect(&p, end, "Tt") ||
	    !digits(&h, &p, end, 2) || !expect(&p, end, ":") || !digits(&mi, &p, end, 2) ||
	    !expect(&p, end, ":") || !digits(&sec, &p, end, 2) || !fraction(&ns, &p, end) ||
	    !zone(&offset, &p, end) || p != end)
		goto bad;
	/* Go's time.Parse (what builders use) rejects second 60 too. */
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
	    sec > 59)
		goto bad;
	out->tv_sec =
	    (time_t)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset);
	out->tv_nsec = ns;
	return 0;
bad:
	return error_set(err, IG_EINVALID,
	                 "time '%.*s': not an RFC3339 date-time (like 2026-12-01T10:00:00.5Z)",
	                 (int)(len > 64 ? 64 : len), s);
}

int imageconfig_time_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	if (a->tv_nsec != b->tv_nsec)
		return a->tv_nsec < b->tv_nsec ? -1 : 1;
	return 0;
}

void imageconfig_format_time(char *out, size_t n, const struct timespec *t)
{
	struct tm tm;
	char frac[16] = "";
	time_t sec = t->tv_sec;

	if (!gmtime_r(&sec, &tm)) {
		snprintf(out, n, "@%lld", (long long)sec);
		return;
	}
	if (t->tv_nsec > 0 && t->tv_nsec < 1000000000) {
		snprintf(frac, sizeof(frac), ".%09ld", t->tv_nsec);
		for (size_t i = strlen(frac); i > 1 && frac[i - 1] == '0'; i--)
			frac[i - 1] = '\0';
	}
	snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

/* ---- platforms ---- */

static bool platform_word(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* Splits "os/arch[/variant]" into three words (variant "" when absent). */
static bool platform_split(char os[], char arch[], char variant[], const char *s)
{
	const char *a = strchr(s, '/'), *v;
	size_t n = strlen(s);

	if (!a || n > IMAGECONFIG_PLATFORM_MAX)
		return false;
	v = strchr(a + 1, '/');
	if (v && strchr(v + 1, '/'))
		return false;
	if (!platform_word(s, (size_t)(a - s)) ||
	    !platform_word(a + 1, v ? (size_t)(v - a - 1) : strlen(a + 1)) ||
	    (v && !platform_word(v + 1, strlen(v + 1))))
		return false;
	memcpy(os, s, (size_t)(a - s));
	os[a - s] = '\0';
	n = v ? (size_t)(v - a - 1) : strlen(a + 1);
	memcpy(arch, a + 1, n);
	arch[n] = '\0';
	snprintf(variant, IMAGECONFIG_PLATFORM_MAX + 1, "%s", v ? v + 1 : "");
	return true;
}

bool imageconfig_is_valid_platform(const char *s)
{
	char os[IMAGECONFIG_PLATFORM_MAX + 1], arch[IMAGECONFIG_PLATFORM_MAX + 1],
	    variant[IMAGECONFIG_PLATFORM_MAX + 1];

	return platform_split(os, arch, variant, s);
}

/* arm64 images carry variant "v8" or none at all; both mean the same machine. */
static bool same_variant(const char *arch, const char *want, const char *have)
{
	if (!strcmp(arch, "arm64")) {
		if (!strcmp(want, "v8"))
			want = "";
		if (!strcmp(have, "v8"))
			have = "";
	}
	return !strcmp(want, have);
}

/* ---- manifests ---- */

static const char *json_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static int set_descriptor(struct imageconfig_ref *out, json_t *desc, const char *what,
                          struct error *err)
{
	const char *digest = json_str(desc, "digest");
	json_t *size = json_object_get(desc, "size");
	size_t n = strlen(digest);

	if (!json_is_object(desc) || !imageref_is_valid_digest(digest, n) ||
	    n > IMAGECONFIG_DIGEST_MAX)
		return error_set(err, IG_EINVALID, "%s: no valid digest", what);
	memcpy(out->digest, digest, n + 1);
	out->size = json_is_integer(size) ? (int64_t)json_integer_value(size) : -1;
	if (json_is_integer(size) && out->size < 0)
		return error_set(err, IG_EINVALID, "%s: negative size", what);
	return 0;
}

static int pick_platform(struct imageconfig_ref *out, json_t *list, const char *platform,
                         struct error *err)
{
	char os[IMAGECONFIG_PLATFORM_MAX + 1], arch[IMAGECONFIG_PLATFORM_MAX + 1],
	    variant[IMAGECONFIG_PLATFORM_MAX + 1];
	json_t *e, *best = NULL;
	size_t i;

	if (!platform_split(os, arch, variant, platform))
		return error_set(err, IG_EINVALID, "platform '%.128s': not os/arch[/variant]",
		                 platform);
	json_array_foreach(list, i, e)
	{
		json_t *p = json_object_get(e, "platform");
		const char *v = json_str(p, "variant");

		if (strcmp(json_str(p, "os"), os) != 0 ||
		    strcmp(json_str(p, "architecture"), arch) != 0)
			continue;
		if (same_variant(arch, variant, v)) {
			best = e;
			break;
		}
		if (!*variant && !best)
			best = e;
	}
	if (!best)
		return error_set(err, IG_ENOTFOUND, "the index has no %s entry", platform);
	out->is_index = true;
	snprintf(out->platform, sizeof(out->platform), "%s", platform);
	return set_descriptor(out, best, "index entry", err);
}

int imageconfig_manifest(struct imageconfig_ref *out, const struct buf *body, const char *platform,
                         struct error *err)
{
	json_t *root = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
	json_t *list = json_object_get(root, "manifests");
	int error;

	memset(out, 0, sizeof(*out));
	out->size = -1;
	if (!json_is_object(root)) {
		error = error_set(err, IG_EINVALID, "manifest: not a JSON object");
	} else if (json_integer_value(json_object_get(root, "schemaVersion")) == 1) {
		error = error_set(err, IG_EINVALID,
		                  "manifest: schema 1 (deprecated) has no image config");
	} else if (json_is_array(list)) {
		error = pick_platform(out, list, platform ? platform : IMAGECONFIG_DEFAULT_PLATFORM,
		                      err);
	} else if (json_is_object(json_object_get(root, "config"))) {
		error =
		    set_descriptor(out, json_object_get(root, "config"), "manifest config", err);
	} else {
		error = error_set(err, IG_EINVALID,
		                  "manifest: neither an index nor an image "
		                  "manifest (no manifests, no config)");
	}
	json_decref(root);
	return error;
}

/* ---- configs ---- */

int imageconfig_created(struct imageconfig_created *out, const struct buf *body, struct error *err)
{
	json_t *root = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
	json_t *created = json_object_get(root, "created");
	int error = 0;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(root)) {
		error = error_set(err, IG_EINVALID, "image config: not a JSON object");
	} else if (!created || json_is_null(created)) {
		snprintf(out->why, sizeof(out->why), "its image config has no 'created'");
	} else if (!json_is_string(created)) {
		error = error_set(err, IG_EINVALID, "image config: 'created' is not a string");
	} else if ((error = imageconfig_parse_time(&out->time, json_string_value(created),
	                                           json_string_length(created), err)) < 0) {
		error_prefix(err, "image config: 'created'");
	} else if (out->time.tv_sec <= 0) {
		snprintf(out->why, sizeof(out->why),
		         "its image config has a placeholder 'created' (%.40s): a reproducible "
		         "build without a date",
		         json_string_value(created));
		out->time = (struct timespec){0, 0};
	} else {
		out->known = true;
	}
	json_decref(root);
	return error;
}
