/* Go durations and RFC3339 instants, parsed strictly: the exact syntaxes Kubernetes objects
 * carry, so a typo is an error rather than a different interval. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "imageguard/util/duration.h"
#include "imageguard/util/error.h"

static const struct {
	const char *name;
	int64_t ns;
} units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
    {"\xce\xbcs", 1000}, /* U+03BC Greek mu */
    {"ms", 1000000},
    {"s", 1000000000},
    {"m", INT64_C(60) * 1000000000},
    {"h", INT64_C(3600) * 1000000000},
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Finds the unit at *p (longest match first is not needed: "ms" is listed before "m"). */
static int64_t unit_at(const char **p)
{
	size_t best = 0;
	int64_t ns = 0;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);

		if (n > best && strncmp(*p, units[i].name, n) == 0) {
			best = n;
			ns = units[i].ns;
		}
	}
	*p += best;
	return ns;
}

/* One "12.5h" component added to *total (unsigned, checked against INT64_MAX + 1). */
static int parse_component(uint64_t *total, const char **p, const char *s, struct error *err)
{
	uint64_t whole = 0, frac = 0, scale = 1, unit;
	bool digits = false, overflow = false;
	const char *q = *p;

	for (; is_digit(*q); q++, digits = true) {
		if (whole > (UINT64_MAX - 9) / 10)
			overflow = true;
		else
			whole = whole * 10 + (uint64_t)(*q - '0');
	}
	if (*q == '.') {
		for (q++; is_digit(*q); q++, digits = true) {
			if (scale <=
			    UINT64_C(1000000000000000000) / 10) { /* extra digits: dropped */
				frac = frac * 10 + (uint64_t)(*q - '0');
				scale *= 10;
			}
		}
	}
	if (!digits)
		return error_set(err, IG_EINVALID, "duration '%s': invalid syntax", s);
	unit = (uint64_t)unit_at(&q);
	if (unit == 0)
		return error_set(err, IG_EINVALID,
		                 "duration '%s': missing or unknown unit (ns, us, ms, s, m, h)", s);
	if (overflow || whole > (UINT64_C(1) << 63) / unit)
		return error_set(err, IG_EINVALID, "duration '%s': out of range", s);
	whole *= unit;
	/* frac/scale < 1, so frac * (unit/scale) stays below unit; compute in long double for
	 * precision that does not overflow. */
	whole += (uint64_t)((long double)frac * (long double)unit / (long double)scale);
	if (whole > (UINT64_C(1) << 63) - *total)
		return error_set(err, IG_EINVALID, "duration '%s': out of range", s);
	*total += whole;
	*p = q;
	return 0;
}

int duration_parse(int64_t *out_ns, const char *s, struct error *err)
{
	const char *p = s;
	bool negative = false;
	uint64_t total = 0;
	int rc;

	if (*p == '-' || *p == '+')
		negative = *p++ == '-';
	if (strcmp(p, "0") == 0) {
		*out_ns = 0;
		return 0;
	}
	if (*p == '\0')
		return error_set(err, IG_EINVALID, "duration '%s': invalid syntax", s);
	while (*p != '\0')
		if ((rc = parse_component(&total, &p, s, err)) < 0)
			return rc;
	if (!negative && total > (uint64_t)INT64_MAX)
		return error_set(err, IG_EINVALID, "duration '%s': out of range", s);
	*out_ns = negative ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}

/* Reads exactly n digits at *p. */
static bool digits_at(int *out, const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return true;
}

static bool expect(const char **p, const char *set)
{
	if (**p == '\0' || !strchr(set, **p))
		return false;
	(*p)++;
	return true;
}

static int days_in_month(int year, int month)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return month == 2 && leap ? 29 : days[month - 1];
}

int rfc3339_parse(time_t *out, const char *s, struct error *err)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	const char *p = s;

	if (!digits_at(&y, &p, 4) || !expect(&p, "-") || !digits_at(&mo, &p, 2) ||
	    !expect(&p, "-") || !digits_at(&d, &p, 2) || !expect(&p, "Tt") ||
	    !digits_at(&h, &p, 2) || !expect(&p, ":") || !digits_at(&mi, &p, 2) ||
	    !expect(&p, ":") || !digits_at(&sec, &p, 2))
		goto bad;
	if (*p == '.') {
		if (!is_digit(*++p))
			goto bad;
		while (is_digit(*p))
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (!digits_at(&oh, &p, 2) || !expect(&p, ":") || !digits_at(&om, &p, 2) ||
		    oh > 23 || om > 59)
			goto bad;
	} else {
		goto bad;
	}
	if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
	    mi > 59 || sec > 60)
		goto bad;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec; /* a leap second (60) rolls into the next minute, as timegm does */
	*out = timegm(&tm) - (time_t)sign * (oh * 3600 + om * 60);
	return 0;
bad:
	return error_set(err, IG_EINVALID,
	                 "time '%s': not an RFC3339 date-time (like 2026-12-01T10:00:00Z)", s);
}
