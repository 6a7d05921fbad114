/* Exact decimal numbers in Go's ParseFloat syntax, for the numerical order: a number is its
 * sign, significant digits and decimal exponent, so comparing never rounds. */
#include <string.h>

#include "imageguard/policy/number.h"

#define EXP_DIGITS_MAX 15 /* an exponent past 10^15 is not ordered */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool equals_nocase(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	if (len != n)
		return false;
	for (size_t k = 0; k < n; k++)
		if (lower(s[k]) != word[k])
			return false;
	return true;
}

/* Reads e[+-]digits at s[*i] into *out; true when there is none or it is well formed. */
static bool parse_exponent(long long *out, const char *s, size_t len, size_t *i)
{
	bool neg = false;
	size_t start, digits = 0;
	long long v = 0;

	*out = 0;
	if (*i >= len || lower(s[*i]) != 'e')
		return true;
	(*i)++;
	if (*i < len && (s[*i] == '+' || s[*i] == '-'))
		neg = s[(*i)++] == '-';
	start = *i;
	while (*i < len && is_digit(s[*i])) {
		if (v > 0 || s[*i] != '0')
			digits++;
		if (digits > EXP_DIGITS_MAX)
			return false;
		v = v * 10 + (s[*i] - '0');
		(*i)++;
	}
	*out = neg ? -v : v;
	return *i > start;
}

/* Strips the zeros that carry no value and sets the exponent from the integer digits. */
static void normalise(struct number *out, long long exp10)
{
	size_t z = 0;

	while (out->n1 > 0 && out->d1[0] == '0') {
		out->d1++;
		out->n1--;
	}
	if (out->n1 == 0)
		while (z < out->n2 && out->d2[z] == '0')
			z++;
	out->d2 += z;
	out->n2 -= z;
	out->exp = (out->n1 > 0 ? (long long)out->n1 : -(long long)z) + exp10;
	while (out->n2 > 0 && out->d2[out->n2 - 1] == '0')
		out->n2--;
	while (out->n2 == 0 && out->n1 > 0 && out->d1[out->n1 - 1] == '0')
		out->n1--;
	if (out->n1 + out->n2 == 0) {
		out->sign = 0;
		out->exp = 0;
	}
}

int number_parse(struct number *out, const char *s, size_t len)
{
	size_t i = 0;
	long long exp10;

	memset(out, 0, sizeof(*out));
	out->sign = 1;
	if (i < len && (s[i] == '+' || s[i] == '-'))
		out->sign = s[i++] == '-' ? -1 : 1;
	if (equals_nocase(s + i, len - i, "inf") || equals_nocase(s + i, len - i, "infinity")) {
		out->inf = true;
		return 0;
	}
	out->d1 = s + i;
	while (i < len && is_digit(s[i]))
		i++;
	out->n1 = (size_t)(s + i - out->d1);
	out->d2 = s + i;
	if (i < len && s[i] == '.') {
		out->d2 = s + ++i;
		while (i < len && is_digit(s[i]))
			i++;
		out->n2 = (size_t)(s + i - out->d2);
	}
	if (out->n1 + out->n2 == 0 || !parse_exponent(&exp10, s, len, &i) || i != len)
		return -1;
	normalise(out, exp10);
	return 0;
}

static char digit_at(const struct number *n, size_t k)
{
	return k < n->n1 ? n->d1[k] : n->d2[k - n->n1];
}

/* Magnitude of two finite non-zero numbers. */
static int magnitude_compare(const struct number *a, const struct number *b)
{
	size_t na = a->n1 + a->n2, nb = b->n1 + b->n2;

	if (a->exp != b->exp)
		return a->exp < b->exp ? -1 : 1;
	for (size_t k = 0; k < na && k < nb; k++) {
		char x = digit_at(a, k), y = digit_at(b, k);

		if (x != y)
			return x < y ? -1 : 1;
	}
	return (na > nb) - (na < nb);
}

int number_compare(const struct number *a, const struct number *b)
{
	int ca = a->inf ? 2 * a->sign : a->sign, cb = b->inf ? 2 * b->sign : b->sign;

	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (ca == 0 || a->inf)
		return 0;
	return a->sign * magnitude_compare(a, b);
}
