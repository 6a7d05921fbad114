/* Escaping of outside text for line-oriented sinks: one escape per byte or line-break code
 * point, backslash included, so the original is always recoverable and never spans lines. */
#include <string.h>

#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/escape.h"

/* Length of the UTF-8 line break (U+0085, U+2028, U+2029) at s, or 0. */
static size_t line_break_len(const unsigned char *s, unsigned *cp)
{
	if (s[0] == 0xc2 && s[1] == 0x85) {
		*cp = 0x85;
		return 2;
	}
	if (s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9)) {
		*cp = s[2] == 0xa8 ? 0x2028 : 0x2029;
		return 3;
	}
	return 0;
}

static bool needs_escape(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '\\';
}

static int escape_byte(struct buf *out, unsigned char c)
{
	switch (c) {
	case '\n':
		return buf_puts(out, "\\n");
	case '\r':
		return buf_puts(out, "\\r");
	case '\t':
		return buf_puts(out, "\\t");
	case 0x1b:
		return buf_puts(out, "\\e");
	case '\\':
		return buf_puts(out, "\\\\");
	default:
		return buf_printf(out, "\\x%02x", c);
	}
}

int escape_append(struct buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int error = 0;

	while (*p && error == 0) {
		size_t run = 0, n;
		unsigned cp;

		while (p[run] && !needs_escape(p[run]) && !line_break_len(p + run, &cp))
			run++;
		if (run) {
			error = buf_append(out, p, run);
			p += run;
		} else if ((n = line_break_len(p, &cp)) != 0) {
			error = buf_printf(out, "\\u{%04X}", cp);
			p += n;
		} else {
			error = escape_byte(out, *p++);
		}
	}
	return error < 0 ? IG_EFAIL : 0;
}

bool escape_is_plain(const char *s)
{
	unsigned cp;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (needs_escape(*p) || line_break_len(p, &cp))
			return false;
	return true;
}
