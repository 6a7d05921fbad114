/* Numbers as Flux's numerical policy reads tags (Go's strconv.ParseFloat, decimal syntax), kept
 * exact: compared as decimals of any length instead of float64, which ties 17-digit
 * timestamps and so would make the pick depend on the listing's order. */
#ifndef IMAGEGUARD_NUMBER_H
#define IMAGEGUARD_NUMBER_H

#include <stdbool.h>
#include <stddef.h>

/* A parsed number; the digit pointers borrow the parsed string, which must outlive it. Value:
 * sign × 0.D × 10^exp, where D is d1[0..n1) followed by d2[0..n2), with no leading and no
 * trailing zeros (both empty for zero). */
struct number {
	int sign; /* -1, 0, 1 */
	bool inf; /* ±infinity (sign set) */
	const char *d1, *d2;
	size_t n1, n2;
	long long exp;
};

/* Parses s[0..len) in ParseFloat's decimal syntax: [+-] digits with an optional '.', an
 * optional exponent e[+-]digits (at most 15 digits after leading zeros), or inf/infinity in
 * any case. Returns 0 or -1 for anything else, including NaN (it has no order), hexadecimal
 * floats and underscores. */
int number_parse(struct number *out, const char *s, size_t len);

/* <0, 0, >0 as a is below, equal to or above b. */
int number_compare(const struct number *a, const struct number *b);

#endif
