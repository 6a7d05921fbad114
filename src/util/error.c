/* The error struct: one-line messages carried up the stack with context added once per layer. */
#include <stdio.h>
#include <string.h>

#include "imageguard/util/error.h"

void error_flatten(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
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
	case IG_OK: return "ok";
	case IG_ENOTFOUND: return "not found";
	case IG_EAUTH: return "unauthorized";
	case IG_ETIMEOUT: return "timeout";
	case IG_ECONFLICT: return "conflict";
	case IG_EINVALID: return "invalid";
	case IG_ETOOBIG: return "too big";
	case IG_EUSAGE: return "usage";
	default: return "failure";
	}
}
