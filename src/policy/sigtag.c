/* Signature and attestation tags: see sigtag.h. */
#include <string.h>

#include "imageguard/policy/sigtag.h"

#define DIGEST_HEX 64 /* sha256 */

static bool ends_with(const char *s, size_t len, const char *x)
{
	size_t n = strlen(x);

	return len >= n && memcmp(s + len - n, x, n) == 0;
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* "sha256-" and 64 lowercase hex digits, then nothing or a "." suffix (".sig", ".att", ...). */
static bool is_digest_tag(const char *tag, size_t len)
{
	const size_t head = 7 + DIGEST_HEX;

	if (len < head || memcmp(tag, "sha256-", 7) != 0)
		return false;
	for (size_t i = 7; i < head; i++)
		if (!is_lower_hex(tag[i]))
			return false;
	return len == head || tag[head] == '.';
}

bool sigtag_is_signature(const char *tag, size_t len)
{
	return ends_with(tag, len, ".sig") || ends_with(tag, len, ".att") ||
	       is_digest_tag(tag, len);
}
